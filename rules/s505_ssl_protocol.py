"""S505: TLS configuration that admits broken protocol versions."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.edits import add_directive, set_value
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.tls_profile import TlsProfile

from ._served import owned

# Versions mod_ssl knows, oldest first. `all` is every version the OpenSSL
# build has: SSLv3 only in builds without no-ssl3, which current
# distributions no longer ship, so it is not counted in `all` here.
_VERSIONS = ("sslv2", "sslv3", "tlsv1", "tlsv1.1", "tlsv1.2", "tlsv1.3")
_ALL = set(_VERSIONS[2:])
_BROKEN = ("sslv2", "sslv3")
_NAMES = {"sslv2": "SSLv2", "sslv3": "SSLv3", "tlsv1": "TLSv1", "tlsv1.1": "TLSv1.1",
          "tlsv1.2": "TLSv1.2", "tlsv1.3": "TLSv1.3"}
RECOMMENDED = "SSLProtocol -all +TLSv1.2 +TLSv1.3"
DEFAULT_24 = ["all", "-SSLv3"]

DOC = Doc(
    summary="SSLProtocol admits SSLv3, TLSv1 or TLSv1.1",
    what=(
        "Evaluates SSLProtocol the way mod_ssl does (a bare name replaces the set, +/- "
        "adjust it, `all` is every version) at server scope and in each virtual host, and "
        "flags SSLv2/SSLv3 (error) or a TLS version older than the TLS profile admits "
        "(warning): TLSv1 and TLSv1.1 under Mozilla's intermediate profile, the default; "
        "TLSv1.2 too under modern; none under old. An SSL virtual host without SSLProtocol "
        "gets httpd's default, `all -SSLv3`, which still admits TLSv1 and TLSv1.1. A line "
        "that admits no refused version but leaves TLSv1.3 out is S523's."
    ),
    why=(
        "SSLv3 is broken (POODLE) and TLS 1.0 and 1.1 were deprecated by RFC 8996 in 2021; "
        "browsers no longer offer them, so admitting them only serves clients that cannot "
        "be protected. CIS's Apache benchmark requires TLS 1.2 or later. Depending on the "
        "OpenSSL build the library may refuse them anyway, but the config should not rely "
        "on that. A security measure with no performance claim."
    ),
    evidence="RFC 8996 (2021) deprecates TLS 1.0 and 1.1; CIS Apache HTTP Server 2.4 Benchmark requires TLS 1.2 or later.",
    bad="SSLProtocol all -SSLv3",
    good=RECOMMENDED,
    fix=(f"Write `{RECOMMENDED}` (intermediate; `-all +TLSv1.3` for modern) at server scope and "
         "drop per-vhost SSLProtocol lines that widen it."),
    references=(
        "RFC 8996, 'Deprecating TLS 1.0 and TLS 1.1' (2021)",
        "CIS Apache HTTP Server 2.4 Benchmark (TLS protocol versions)",
        "Mozilla Server Side TLS guidelines, modern/intermediate/old configurations (https://wiki.mozilla.org/Security/Server_Side_TLS)",
        "https://httpd.apache.org/docs/2.4/mod/mod_ssl.html#sslprotocol",
    ),
)


def admitted(args: list[str]) -> set[str]:
    """The protocol set mod_ssl builds from SSLProtocol's arguments."""
    result: set[str] = set()
    for word in args:
        action = word[0] if word[:1] in "+-" else ""
        name = word[1:].lower() if action else word.lower()
        chosen = _ALL if name == "all" else ({name} if name in _VERSIONS else set())
        if action == "-":
            result -= chosen
        elif action == "+":
            result |= chosen
        else:
            result = set(chosen)
    return result


def recommended(tls: TlsProfile) -> str:
    """The SSLProtocol value of the profile: its oldest version up to TLSv1.3."""
    first = _VERSIONS.index(tls.oldest_protocol)
    return "-all " + " ".join(f"+{_NAMES[version]}" for version in _VERSIONS[first:])


def problem(args: list[str], tls: TlsProfile) -> tuple[str, list[str]] | None:
    """(severity, version names) when the arguments admit SSLv2/SSLv3 (an
    error under every profile) or a TLS version older than the profile's
    oldest (a warning); None when they admit nothing the profile refuses."""
    versions = admitted(args)
    broken = [_NAMES[v] for v in _BROKEN if v in versions]
    oldest = _VERSIONS.index(tls.oldest_protocol)
    below = [_NAMES[v] for v in _VERSIONS[2:oldest] if v in versions]
    if broken:
        return "error", broken + below
    if below:
        return "warning", below
    return None


def check(ctx: LintContext, report: Report) -> None:
    if ctx.modules_known and not ctx.has_module("ssl_module", "mod_ssl.c"):
        return
    tls = ctx.tls_profile
    value = recommended(tls)
    fix = f"SSLProtocol {value}"
    # Judged once per value: 20,000 TLS hosts repeat one or two SSLProtocol lines.
    verdicts: dict[tuple[str, ...], tuple[str, list[str]] | None] = {}
    for node in ctx.directives("SSLProtocol"):
        key = tuple(node.args)
        try:
            found = verdicts[key]
        except KeyError:
            found = verdicts[key] = problem(node.args, tls)
        if found:
            severity, names = found
            report(node, f"SSLProtocol {' '.join(node.args)} admits {', '.join(names)} "
                         f"({_refusal(severity, tls)}).",
                   fix=fix, severity=severity, edit=set_value(ctx, node, value))
    server = ctx.server_value("SSLProtocol")
    if server is not None or not ctx.at_least(2, 4, 17):
        return
    default = problem(DEFAULT_24, tls)
    if default is None:
        return
    # Each host's own lines from one grouping per name, not a scan of its lines.
    engines, protocols = owned(ctx, "SSLEngine").get, owned(ctx, "SSLProtocol").get
    for vhost in ctx.virtual_hosts():
        own = engines(vhost)
        engine = own[-1] if own else None
        if engine is None or engine.arg(0).lower() != "on":
            continue
        if protocols(vhost):
            continue
        report(engine, f"SSLProtocol is `all -SSLv3`: httpd's default, not written anywhere; it "
                       f"admits {', '.join(default[1])} ({_refusal(default[0], tls)}).", fix=fix,
               edit=add_directive(ctx, fix, after=engine))


def _refusal(severity: str, tls: TlsProfile) -> str:
    if severity == "error":
        return "broken: no profile admits SSL 3.0 or 2.0"
    return f"older than {_NAMES[tls.oldest_protocol]}, the oldest the {tls.name} TLS profile admits"


RULE = Rule(code="S505", slug="weak-tls-protocols", severity="warning", category="security",
            directives=("SSLProtocol", "SSLEngine"), doc=DOC, check=check, fixable=True,
            tls_profiles=(
                ("modern", "TLSv1.3 only: TLSv1.2 and older are flagged; the fix writes `SSLProtocol -all +TLSv1.3`."),
                ("intermediate", "TLSv1.2 and TLSv1.3: TLSv1 and TLSv1.1 are flagged; the fix writes "
                                 "`SSLProtocol -all +TLSv1.2 +TLSv1.3`."),
                ("old", "TLSv1 to TLSv1.3: only SSLv2 and SSLv3 are flagged; the fix writes "
                        "`SSLProtocol -all +TLSv1 +TLSv1.1 +TLSv1.2 +TLSv1.3`."),
            ))
