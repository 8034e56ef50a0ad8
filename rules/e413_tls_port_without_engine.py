"""E413: a virtual host on port 443, or with a certificate, that does not turn TLS on."""

from __future__ import annotations

from advisor.lint.context import LintContext, per_argument_list
from advisor.lint.rule import Doc, Report, Rule

from ._tls import by_owner, is_on, setting

# Other TLS engines for httpd: their virtual hosts need no SSLEngine.
_OTHER_ENGINES = ("GnuTLSEnable", "NSSEngine")

DOC = Doc(
    summary="<VirtualHost *:443> or one with SSLCertificateFile, without SSLEngine on: plain HTTP",
    what=(
        "Flags a virtual host that listens on port 443 or has an SSLCertificateFile of its own "
        "while the SSLEngine in effect for it (its own, else the main server's) is not `on`: "
        "at its `SSLEngine off`/`optional` line when it has one, else at its <VirtualHost> "
        "line. A host that mod_gnutls (GnuTLSEnable on) or mod_nss (NSSEngine on) serves is "
        "left alone. A port-443 host without any certificate line is only flagged in a whole "
        "config, where the main server's SSLEngine is known."
    ),
    why=(
        "A certificate line does not make a host speak TLS: without SSLEngine on mod_ssl "
        "leaves the connection to plain HTTP, so the host answers a TLS ClientHello with an "
        "HTTP 400 page in clear text. Browsers then fail with a protocol error "
        "(ERR_SSL_PROTOCOL_ERROR, SSL_ERROR_RX_RECORD_TOO_LONG) and no page loads; anything "
        "that does speak plain HTTP to port 443 gets its cookies and credentials across the "
        "network unencrypted. httpd starts without a word, since nothing in the config is "
        "invalid."
    ),
    evidence=(
        "mod_ssl docs: SSLEngine must be on for a virtual host to use SSL/TLS; RFC 2818 sec. "
        "2.3 (HTTP over TLS on port 443); CIS Apache HTTP Server 2.4 Benchmark, SSL/TLS "
        "configuration."
    ),
    bad=("<VirtualHost *:443>\n    ServerName www.example.org\n"
         "    SSLCertificateFile /etc/ssl/certs/www.pem\n</VirtualHost>"),
    good=("<VirtualHost *:443>\n    ServerName www.example.org\n    SSLEngine on\n"
          "    SSLCertificateFile /etc/ssl/certs/www.pem\n</VirtualHost>"),
    fix="Add `SSLEngine on` inside the virtual host, next to its certificate lines.",
    references=(
        "https://httpd.apache.org/docs/2.4/mod/mod_ssl.html#sslengine",
        "https://httpd.apache.org/docs/2.4/ssl/ssl_howto.html",
        "RFC 2818, 'HTTP Over TLS', sec. 2.3",
    ),
)


def _port_443(addresses: list[str]) -> bool:
    return any(address.rsplit(":", 1)[-1] == "443" for address in addresses if ":" in address)


def check(ctx: LintContext, report: Report) -> None:
    certificates = by_owner(ctx, "SSLCertificateFile")
    engines = setting(ctx, "SSLEngine")
    others = [setting(ctx, name) for name in _OTHER_ENGINES]
    complete = ctx.complete
    # Once per address list: the reader shares one among identical <VirtualHost> lines.
    port_443 = per_argument_list(_port_443)
    for vhost in ctx.virtual_hosts():
        certificate = certificates.get(vhost)
        if certificate is None and not (complete and port_443(vhost.args)):
            continue
        engine = engines.of(vhost)
        if is_on(engine) or any(is_on(other.of(vhost)) for other in others):
            continue
        why = (f"has SSLCertificateFile {certificate[-1].args[0] if certificate[-1].args else ''}"
               if certificate else "listens on port 443")
        own_engine = engine if engine is not None and engine.parent is vhost else None
        state = (f"SSLEngine {own_engine.args[0] if own_engine.args else ''}" if own_engine is not None
                 else "no SSLEngine on in effect")
        report(own_engine or vhost,
               f"<VirtualHost {' '.join(vhost.args)}> {why} but {state}: it serves plain HTTP, and "
               "browsers connecting with https:// fail with a protocol error.",
               fix="SSLEngine on")


RULE = Rule(code="E413", slug="tls-host-without-sslengine", severity="error", category="correctness",
            directives=("SSLEngine", "SSLCertificateFile", "VirtualHost"), doc=DOC, check=check)
