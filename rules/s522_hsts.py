"""S522: HSTS missing where plain HTTP is redirected to HTTPS, too short, or sent over plain HTTP."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from advisor.config.model import Directive, Section
from advisor.lint.context import LintContext, enclosing_vhost, per_argument_list
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.tls_profile import PROFILES, TWO_YEARS, describe_age

from ._tls import by_owner, tls_hosts

HEADER = "strict-transport-security"
_SETTING = ("set", "add", "append", "merge", "setifempty")
_MAX_AGE = re.compile(r"max-age\s*=\s*\"?(\d+)", re.IGNORECASE)
GOOD = f'Header always set Strict-Transport-Security "max-age={TWO_YEARS}"'

DOC = Doc(
    summary="HSTS missing on an HTTPS site that HTTP redirects to, max-age too short, or sent over HTTP",
    what=(
        "Reads every `Header ... Strict-Transport-Security` line (mod_headers) and flags: a "
        "TLS virtual host without one (its own, or one at server scope) when a plain-HTTP "
        "virtual host sends the whole site to it (`Redirect / https://NAME/`, a RedirectMatch "
        "or RewriteRule that matches every path, to NAME or to %{HTTP_HOST}/%{SERVER_NAME} of "
        "a host with that name), as a warning at the TLS host's <VirtualHost> line; a max-age "
        "below the TLS profile's floor (six months under intermediate and old, two years "
        "under modern) or none at all, as a warning; and an unconditional header set at "
        "server scope, or in a plain-HTTP virtual host, while a plain-HTTP host exists, as "
        "information. A TLS host that hands every request to a backend (ProxyPass /) is left "
        "alone, since the backend may send the header; max-age=0 (withdrawing HSTS) is "
        "accepted."
    ),
    why=(
        "A site that redirects HTTP to HTTPS has decided to be HTTPS only, but without HSTS "
        "every visit that starts from a typed name or an old http:// link makes its first "
        "request in clear text, and anyone on the path can answer it instead of the "
        "redirect (SSL stripping). The header tells the browser to go straight to HTTPS for "
        "max-age seconds; a week lets a traveller's laptop fall back to HTTP after a week "
        "away, which is why Mozilla's guidelines ask for six months at least and its "
        "generator writes two years (63072000). RFC 6797 sec. 7.2 says a host must not send "
        "the header over plain HTTP; browsers ignore it there (sec. 8.1), so a server-wide "
        "line is a spec violation that works only by accident: scope it to the TLS hosts, or "
        "add `env=HTTPS`."
    ),
    evidence=(
        "RFC 6797 (HSTS) sec. 7.2: no STS header over non-secure transport; sec. 6.1.1: "
        "max-age is required; Mozilla Web Security guidelines: max-age of six months at "
        "least, two years (63072000) recommended; CIS Apache HTTP Server 2.4 Benchmark "
        "(TLS configuration)."
    ),
    bad=("<VirtualHost *:80>\n    ServerName www.example.org\n    Redirect permanent / "
         "https://www.example.org/\n</VirtualHost>\n<VirtualHost *:443>\n    ServerName "
         "www.example.org\n    SSLEngine on\n</VirtualHost>"),
    good=("<VirtualHost *:443>\n    ServerName www.example.org\n    SSLEngine on\n    "
          f"{GOOD}\n</VirtualHost>"),
    fix=(
        f"In each TLS virtual host: `{GOOD}` (mod_headers loaded; add `; includeSubDomains` "
        "only once every subdomain serves HTTPS). Keep it out of server scope and plain-HTTP "
        "hosts, or make it conditional with `env=HTTPS`."
    ),
    references=(
        "RFC 6797, 'HTTP Strict Transport Security (HSTS)', sec. 6.1, 7.2, 8.1",
        "Mozilla Web Security guidelines, HTTP Strict Transport Security (https://infosec.mozilla.org/guidelines/web_security)",
        "Mozilla SSL Configuration Generator, Apache (https://ssl-config.mozilla.org/)",
        "CIS Apache HTTP Server 2.4 Benchmark, SSL/TLS configuration",
        "https://httpd.apache.org/docs/2.4/mod/mod_headers.html#header",
    ),
)


@dataclass(slots=True)
class HstsLine:
    node: Directive
    vhost: Section | None
    max_age: int | None
    conditional: bool
    """`env=`/`expr=`, or inside an <If> on HTTPS: the admin limited where it goes."""


def _scope(node: Directive, rest: list[str]) -> tuple[Section | None, bool]:
    """The line's virtual host (None: server scope), and whether it is
    conditional: `env=`/`expr=`, or inside an <If> on HTTPS below the host.
    One walk up for both."""
    conditional = any(word.lower().startswith(("env=", "expr=")) for word in rest)
    parent = node.parent
    while parent is not None and not parent.is_root:
        lname = parent.lname
        if lname == "virtualhost":
            return parent, conditional
        if not conditional and lname in ("if", "elseif") and "https" in " ".join(parent.args).lower():
            conditional = True
        parent = parent.parent
    return None, conditional


_NOT_HSTS = (False, None, ())


def _parsed(args: list[str]) -> tuple[bool, int | None, list[str]]:
    """(sets Strict-Transport-Security, its max-age, the words after the value)."""
    first = 1 if args and args[0].lower() in ("always", "onsuccess") else 0
    if len(args) < first + 3 or args[first].lower() not in _SETTING or args[first + 1].lower() != HEADER:
        return _NOT_HSTS
    age = _MAX_AGE.search(args[first + 2])
    return True, int(age.group(1)) if age else None, args[first + 3:]


def hsts_lines(ctx: LintContext) -> list[HstsLine]:
    # Judged once per argument list: the reader shares one among every host's
    # identical Header line (20,000 TLS hosts, one HSTS line each).
    parsed = per_argument_list(_parsed)
    found: list[HstsLine] = []
    for node in ctx.directives("Header"):
        if HEADER not in node.raw_args.lower():
            # Cannot name the header (its words are this text's, expanded):
            # not looked up, since a host's own `Header set X-Site "siteN"`
            # has a list of its own that the memo would miss.
            continue
        hsts, max_age, rest = parsed(node.args)
        if hsts:
            vhost, conditional = _scope(node, rest)
            found.append(HstsLine(node, vhost, max_age, conditional))
    return found


def _host_of(name: str) -> str:
    """'https://www.example.org:443' -> 'www.example.org'."""
    name = name.lower().split("://", 1)[-1]
    return name.split("/", 1)[0].rsplit(":", 1)[0] if not name.startswith("[") else name


def _names(ctx: LintContext, vhost: Section, main_name: str | None) -> set[str]:
    """The host names a virtual host answers to (ServerName, else the main
    server's, and its ServerAlias words without wildcards); made once per host."""
    cache = ctx.shared.get("s522_names")
    if cache is None:
        cache = ctx.shared["s522_names"] = {}
    found = cache.get(vhost)
    if found is None:
        found = cache[vhost] = _names_of(ctx, vhost, main_name)
    return found


def _names_of(ctx: LintContext, vhost: Section, main_name: str | None) -> set[str]:
    own = by_owner(ctx, "ServerName").get(vhost)
    names = {_host_of(own[-1].args[0])} if own and own[-1].args else ({main_name} if main_name else set())
    for alias in by_owner(ctx, "ServerAlias").get(vhost, ()):
        names.update(_host_of(word) for word in alias.args if "*" not in word and "?" not in word)
    return names


@lru_cache(maxsize=4096)
def _whole_site(pattern: str) -> bool:
    """Whether a regex matches every path (as RedirectMatch or RewriteRule
    sees one); remembered per pattern, which thousands of hosts share."""
    return _matches_every_path(pattern)


def _matches_every_path(pattern: str) -> bool:
    try:
        compiled = re.compile(pattern)
    except re.error:
        return False
    return all(compiled.search(path) for path in ("/", "/a/b.html", "a/b.html"))


_STATUS = ("permanent", "temp", "seeother", "301", "302", "303", "307", "308")


def _redirect_target(node: Directive) -> str | None:
    """The https:// URL a whole-site redirect sends to, else None."""
    if node.lname == "rewriterule":  # pattern substitution [flags]
        args = node.args
        flags = args[2].lower() if len(args) >= 3 else ""
        whole = (len(args) >= 2 and _whole_site(args[0]) and args[1].lower().startswith("https://")
                 and not re.search(r"[\[,]\s*p\s*[,\]]", flags))
    else:
        args = [arg for arg in node.args if arg.lower() not in _STATUS]
        matches_all = _whole_site(args[0]) if node.lname == "redirectmatch" and args else args[:1] == ["/"]
        whole = len(args) >= 2 and matches_all and args[1].lower().startswith("https://")
    return args[1] if whole else None


def redirected_names(ctx: LintContext, plain: set[Section], main_name: str | None) -> dict[str, Directive]:
    """Host name -> the redirect that sends a plain-HTTP host's whole site to https://NAME."""
    rewriting = {enclosing_vhost(node) for node in ctx.directives("RewriteEngine")
                 if node.args and node.args[0].lower() == "on"}
    targets: dict[str, Directive] = {}
    for node in ctx.directives("Redirect", "RedirectPermanent", "RedirectTemp", "RedirectMatch", "RewriteRule"):
        vhost = enclosing_vhost(node)
        if vhost is None or vhost not in plain or (node.lname == "rewriterule" and vhost not in rewriting):
            continue
        target = _redirect_target(node)
        if target is None:
            continue
        host = target[len("https://"):].split("/", 1)[0]
        if host.lower().startswith(("%{http_host}", "%{server_name}")):
            names = _names(ctx, vhost, main_name)
        elif "%" in host or "$" in host:
            continue
        else:
            names = {_host_of(host)}
        for name in names:
            targets.setdefault(name, node)
    return targets


def _missing(ctx: LintContext, report: Report, lines: list[HstsLine], plain: set[Section],
             main_name: str | None) -> None:
    if not plain or not tls_hosts(ctx) or any(line.vhost is None for line in lines):
        return  # a server-wide header reaches every TLS host (its scope is judged below)
    with_header = {line.vhost for line in lines}
    proxied = {enclosing_vhost(node) for node in ctx.directives("ProxyPass")
               if len(node.args) >= 2 and node.args[0] == "/"}
    bare = [host.vhost for host in tls_hosts(ctx)
            if host.vhost is not None and host.vhost not in with_header and host.vhost not in proxied]
    if not bare:
        return  # every TLS host sends the header: no redirect need be read
    targets = redirected_names(ctx, plain, main_name)
    if not targets:
        return
    for vhost in bare:
        redirect = next((targets[name] for name in sorted(_names(ctx, vhost, main_name)) if name in targets), None)
        if redirect is None:
            continue
        report(vhost, f"<VirtualHost {' '.join(vhost.args)}> serves HTTPS for a site that "
                      f"{redirect.file}:{redirect.line} redirects plain HTTP to, but sends no "
                      "Strict-Transport-Security: each visit's first request still goes out in clear "
                      "text, open to SSL stripping.", fix=GOOD, severity="warning",
               related=(redirect.file, redirect.line))


def check(ctx: LintContext, report: Report) -> None:
    lines = hsts_lines(ctx)
    if not lines and not tls_hosts(ctx):
        return  # no header to judge, no TLS host that could lack one
    tls = {host.vhost for host in tls_hosts(ctx)}
    plain = {vhost for vhost in ctx.virtual_hosts() if vhost not in tls}
    main_line = ctx.server_value("ServerName")
    main_name = _host_of(main_line.args[0]) if main_line is not None and main_line.args else None
    floor = ctx.tls_profile.hsts_min_age
    for line in lines:
        if line.max_age is None:
            report(line.node, "Strict-Transport-Security without max-age: browsers ignore the header "
                              "(RFC 6797 sec. 6.1.1 requires max-age).", fix=GOOD, severity="warning")
        elif 0 < line.max_age < floor:
            report(line.node, f"Strict-Transport-Security max-age={line.max_age} ({describe_age(line.max_age)}) "
                              f"is below the {ctx.tls_profile.name} TLS profile's {describe_age(floor)} "
                              f"({floor}); Mozilla's generator writes two years ({TWO_YEARS}).",
                   fix=GOOD, severity="warning")
        if line.conditional:
            continue
        if (line.vhost is None and (plain or (not ctx.virtual_hosts() and None not in tls))) or line.vhost in plain:
            where = "at server scope" if line.vhost is None else f"in plain-HTTP <VirtualHost {' '.join(line.vhost.args)}>"
            report(line.node, f"Strict-Transport-Security set {where} also goes out over plain HTTP, "
                              "which RFC 6797 sec. 7.2 forbids (browsers ignore it there): set it in the TLS "
                              "virtual hosts, or add env=HTTPS.", severity="info")
    _missing(ctx, report, lines, plain, main_name)


RULE = Rule(code="S522", slug="hsts", severity="warning", category="security",
            directives=("Header", "Redirect", "RedirectMatch", "RewriteRule", "SSLEngine"), doc=DOC,
            check=check,
            tls_profiles=tuple((name, f"max-age of {describe_age(profile.hsts_min_age)} "
                                      f"({profile.hsts_min_age} s) at least.")
                               for name, profile in PROFILES.items()))
