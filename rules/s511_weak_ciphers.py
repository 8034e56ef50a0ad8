"""S511: an SSL host whose cipher list still admits weak ciphers."""

from __future__ import annotations

from advisor.config.model import Directive, Section
from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import parse_flag

from ._ciphers import weak_families
from ._served import owned

DOC = Doc(
    summary="SSLCipherSuite admits RC4, DES/3DES, EXPORT, NULL, aNULL or MD5 on an SSL host",
    what=(
        "For the main server and each virtual host with SSLEngine on (its own or the main "
        "server's), reads the SSLCipherSuite in effect (its own, else the main server's) the "
        "way OpenSSL 1.1 and later expand it, and flags the line when RC4, single DES, 3DES, "
        "EXPORT, NULL-encryption, anonymous (aNULL) or MD5 suites remain. A warning with "
        "SSLHonorCipherOrder off (the default: the client's preference wins), information "
        "with it on. A list of strong suites only is fine whatever SSLHonorCipherOrder says. "
        "Under `--tls-profile old` 3DES is accepted, as Mozilla's old profile lists it."
    ),
    why=(
        "RC4 is broken by keystream biases (RFC 7465 forbids it in TLS), 3DES's 64-bit "
        "blocks fall to Sweet32 on long connections, single DES and EXPORT suites are "
        "brute-forced in hours (FREAK, Logjam), NULL suites do not encrypt and aNULL ones do "
        "not authenticate the server, so anyone in the path can impersonate it. While such "
        "suites are listed and the client's order wins, an old or hostile client gets them. "
        "dev-sec's apache-baseline (apache-13) asks for `SSLHonorCipherOrder On` everywhere; "
        "that only helps while weak suites remain. Mozilla's generator writes an all-strong "
        "list with `SSLHonorCipherOrder off`, since every suite on it is acceptable and "
        "clients know best which one their hardware runs fastest, and this rule accepts it."
    ),
    evidence=(
        "CIS Apache HTTP Server 2.4 Benchmark (disable weak SSL/TLS ciphers); RFC 7465 "
        "prohibits RC4; dev-sec apache-baseline apache-13 (SSLHonorCipherOrder On)."
    ),
    bad="SSLCipherSuite ALL:!ADH:RC4+RSA:+HIGH:+MEDIUM\nSSLHonorCipherOrder off",
    good=(
        "SSLCipherSuite ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
        "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305\nSSLHonorCipherOrder off"
    ),
    fix=(
        "Use a list of strong suites only, e.g. Mozilla's intermediate list or "
        "`HIGH:!aNULL:!MD5:!3DES`; then SSLHonorCipherOrder may stay off. Until the weak "
        "suites can go, `SSLHonorCipherOrder on` keeps them for clients that offer nothing "
        "better."
    ),
    references=(
        "dev-sec apache-baseline apache-13 (SSL honor cipher order)",
        "CIS Apache HTTP Server 2.4 Benchmark, SSL/TLS configuration (ensure weak SSL/TLS ciphers are disabled)",
        "RFC 7465 (Prohibiting RC4 Cipher Suites)",
        "https://httpd.apache.org/docs/2.4/mod/mod_ssl.html#sslciphersuite",
        "https://ssl-config.mozilla.org/",
    ),
)


def _engine_on(node: Directive | None) -> bool:
    return node is not None and bool(node.args) and node.arg(0).lower() in ("on", "optional")


def _cipher_spec(nodes: list[Directive]) -> tuple[Directive, str] | None:
    """The last SSLCipherSuite for TLS up to 1.2 ([SSL] spec); TLSv1.3
    suites, set with the protocol word, are all strong."""
    for node in reversed(nodes):
        if len(node.args) >= 2:
            if node.arg(0).lower() == "ssl":
                return node, node.args[1]
            continue  # TLSv1.3 (or another protocol word)
        if node.args:
            return node, node.args[0]
    return None


def _label(host: Section | None) -> str:
    return "the main server" if host is None else f"<VirtualHost {' '.join(host.args)}>"


def check(ctx: LintContext, report: Report) -> None:
    if ctx.modules_known and not ctx.has_module("ssl_module", "mod_ssl.c"):
        return
    server_engine = ctx.server_value("SSLEngine")
    server_suite = _cipher_spec(ctx.server("SSLCipherSuite"))
    server_honor = ctx.server_value("SSLHonorCipherOrder")
    # (cipher line, honour order) -> the hosts that use that pair (None: the main server)
    uses: dict[tuple[int, bool], tuple[Directive, str, bool, list[Section | None]]] = {}

    def judge(host: Section | None, engine, suite, honor) -> None:
        if not _engine_on(engine) or suite is None:
            return
        node, spec = suite
        honored = honor is not None and parse_flag(honor.arg(0)) is True
        key = (id(node), honored)
        entry = uses.get(key)
        if entry is None:
            entry = uses[key] = (node, spec, honored, [])
        entry[3].append(host)

    if not ctx.virtual_hosts() or _engine_on(server_engine):
        judge(None, server_engine, server_suite, server_honor)
    # Each host's own lines from one grouping per name (three scans of every
    # host's lines cost 0.2 s on 40,000 hosts), its label made only to report.
    engines, suites = owned(ctx, "SSLEngine").get, owned(ctx, "SSLCipherSuite").get
    honors = owned(ctx, "SSLHonorCipherOrder").get
    for vhost in ctx.virtual_hosts():
        own_engine, own_suites, own_honor = engines(vhost), suites(vhost), honors(vhost)
        judge(vhost,
              own_engine[-1] if own_engine else server_engine,
              (_cipher_spec(own_suites) if own_suites else None) or server_suite,
              own_honor[-1] if own_honor else server_honor)
    cache: dict[str, list[str]] = {}
    # Mozilla's old profile keeps one 3DES suite for IE 8 on Windows XP.
    accepted = ("3DES",) if ctx.tls_profile.triple_des else ()
    for node, spec, honored, hosts in uses.values():
        weak = cache.get(spec)
        if weak is None:
            weak = cache[spec] = [family for family in weak_families(spec) if family not in accepted]
        if not weak:
            continue
        who = _label(hosts[0]) if len(hosts) == 1 else f"{_label(hosts[0])} and {len(hosts) - 1} more"
        if honored:
            report(node, f"SSLCipherSuite still admits {', '.join(weak)} for {who}; "
                         "SSLHonorCipherOrder on keeps them for clients that offer nothing "
                         "better. Drop them from the list.", severity="info")
        else:
            report(node, f"SSLCipherSuite admits {', '.join(weak)} for {who}, and with "
                         "SSLHonorCipherOrder off the client's preference picks among them.",
                   severity="warning")


RULE = Rule(code="S511", slug="weak-ciphers", severity="warning", category="security",
            directives=("SSLCipherSuite", "SSLHonorCipherOrder", "SSLEngine"), doc=DOC, check=check,
            baseline=("apache-13",),
            tls_profiles=(
                ("modern", "no weak family at all (TLS 1.3 suites are all strong)."),
                ("intermediate", "no weak family at all."),
                ("old", "3DES is accepted (Mozilla's old profile keeps DES-CBC3-SHA for IE 8 on "
                        "Windows XP); the other weak families are still flagged."),
            ))
