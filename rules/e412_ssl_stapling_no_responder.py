"""E412: OCSP stapling on for a certificate from a CA that runs no OCSP responder."""

from __future__ import annotations

from advisor.config.model import Directive
from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._tls import is_on, setting, ssl_absent, tls_hosts, who

# certbot keeps what it obtains from Let's Encrypt under /etc/letsencrypt
# (live/NAME/fullchain.pem, links into archive/); a path there is the
# static sign of a Let's Encrypt certificate.
LETS_ENCRYPT = "/letsencrypt/"

DOC = Doc(
    summary="SSLUseStapling on with a Let's Encrypt certificate: no OCSP responder, nothing to staple",
    what=(
        "For each server with SSLEngine on, SSLUseStapling on in effect (its own or the main "
        "server's) and an SSLCertificateFile under certbot's /etc/letsencrypt/ (the static "
        "sign of a Let's Encrypt certificate), flags the SSLUseStapling line, naming the "
        "hosts. A host with SSLStaplingForceURL (a responder named by hand) is left alone. "
        "Certificates from other CAs, or Let's Encrypt ones kept elsewhere, are not seen."
    ),
    why=(
        "Let's Encrypt stopped putting an OCSP responder address in its certificates in May "
        "2025 and shut its responders down in August 2025 (certificates last 90 days, so none "
        "issued before still runs); revocation is published through CRLs instead. mod_ssl "
        "then has nothing to ask and nothing to staple. Checked on this machine (httpd "
        "2.4.71) with a certificate that carries no OCSP address: httpd started and logged "
        "AH02218 ('no OCSP URI in certificate and no SSLStaplingForceURL set') and AH02604 "
        "('Unable to configure certificate ... for stapling') at level error, at every start. "
        "The stapling lines do nothing but put errors in the log, and an admin reading the "
        "config believes the site staples. Nothing breaks for clients, so this is "
        "information, and a reminder to take the lines out."
    ),
    evidence=(
        "Let's Encrypt, 'Ending OCSP Support in 2025': OCSP URLs dropped from certificates on "
        "7 May 2025, responders turned off on 6 August 2025; RFC 6066 sec. 8 (stapling needs "
        "a responder)."
    ),
    bad=("SSLUseStapling on\n<VirtualHost *:443>\n    SSLEngine on\n"
         "    SSLCertificateFile /etc/letsencrypt/live/example.org/fullchain.pem\n</VirtualHost>"),
    good=("<VirtualHost *:443>\n    SSLEngine on\n"
          "    SSLCertificateFile /etc/letsencrypt/live/example.org/fullchain.pem\n</VirtualHost>"),
    fix=(
        "Remove SSLUseStapling (and SSLStaplingCache, if no other host staples), or "
        "`SSLUseStapling off` in the Let's Encrypt hosts; keep stapling for certificates from "
        "CAs that still run OCSP responders."
    ),
    references=(
        "Let's Encrypt, 'Ending OCSP Support in 2025' (5 December 2024) and 'OCSP Service Has Reached End of Life' (https://letsencrypt.org/2025/08/06/ocsp-service-has-reached-end-of-life.html)",
        "https://httpd.apache.org/docs/2.4/mod/mod_ssl.html#sslusestapling",
        "RFC 6066 sec. 8 (certificate status request)",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    if ssl_absent(ctx) or not any(is_on(node) for node in ctx.directives("SSLUseStapling")):
        return  # no server staples: no host to look at
    stapling: dict[Directive, list[str]] = {}
    use_stapling, force_url = setting(ctx, "SSLUseStapling"), setting(ctx, "SSLStaplingForceURL")
    certificates = setting(ctx, "SSLCertificateFile")
    for host in tls_hosts(ctx):
        node = use_stapling.of(host.vhost)
        if not is_on(node) or force_url.of(host.vhost) is not None:
            continue
        certificate = certificates.of(host.vhost)
        if certificate is None or not certificate.args or LETS_ENCRYPT not in certificate.args[0]:
            continue
        stapling.setdefault(node, []).append(host.label)  # type: ignore[arg-type]
    for node, labels in stapling.items():
        report(node, f"SSLUseStapling on for {who(labels)}, whose certificate comes from Let's Encrypt "
                     "(/etc/letsencrypt/): Let's Encrypt ended OCSP in 2025, so there is nothing to "
                     "staple and httpd logs AH02218 at each start.",
               fix="SSLUseStapling off")


RULE = Rule(code="E412", slug="ssl-stapling-no-responder", severity="info", category="correctness",
            directives=("SSLUseStapling", "SSLCertificateFile", "SSLStaplingForceURL"), doc=DOC, check=check)
