"""E415: a backend's redirects reach the browser with the backend's address.

This module also holds the reverse-proxy routes that E416 and S530 read:
each ProxyPass, ProxyPassMatch and `RewriteRule ... [P]` of the effective
tree with its backend URL and the server (virtual host or main server) it
belongs to, made once per run.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from advisor.config.model import Directive, Section
from advisor.lint.context import LintContext, enclosing_vhost, per_argument_list
from advisor.lint.edits import add_directive
from advisor.lint.rule import Doc, Report, Rule

DOC = Doc(
    summary="ProxyPass or RewriteRule [P] to an HTTP backend with no ProxyPassReverse for its redirects",
    what=(
        "For each ProxyPass, ProxyPassMatch and `RewriteRule ... [P]` (with RewriteEngine on) "
        "that sends requests to an http, https, h2 or h2c backend or to a balancer, looks "
        "in the same virtual host (and the main server, which it inherits) for a "
        "ProxyPassReverse, or a `Header edit Location`, whose URL covers the backend's. Silent "
        "where ProxyPreserveHost is on (the backend then builds its redirects with the "
        "public host name, which ProxyPassReverse would not match anyway) and for backends "
        "whose host comes from the request. AJP is left out: it hands the backend the "
        "client's host and scheme, so its redirects name the public URL already."
    ),
    why=(
        "A backend that redirects (a missing trailing slash, a login page, a POST answered "
        "with 303) writes its own address in the Location header: http://127.0.0.1:8080/app/. "
        "ProxyPassReverse is what rewrites that header (and Content-Location and URI) back to "
        "the public URL; without it the browser follows the redirect to an address it "
        "cannot reach, or leaves TLS for the backend's plain HTTP. mod_proxy's manual pairs "
        "every reverse-proxy example with its ProxyPassReverse, and httpd's own advisory "
        "for CVE-2023-25690 shows the RewriteRule [P] form with one."
    ),
    evidence=(
        "httpd's mod_proxy manual: ProxyPassReverse adjusts the Location, Content-Location "
        "and URI headers of a reverse proxy's responses, which redirects need."
    ),
    bad="ProxyPass /app/ http://127.0.0.1:8080/app/",
    good="ProxyPass /app/ http://127.0.0.1:8080/app/\nProxyPassReverse /app/ http://127.0.0.1:8080/app/",
    fix=(
        "Add `ProxyPassReverse PATH URL` with the same path and URL as the ProxyPass line "
        "(`apache-advisor fix` writes it after a ProxyPass line); for a RewriteRule [P] or "
        "ProxyPassMatch, a ProxyPassReverse from the public path to the backend's base URL."
    ),
    references=(
        "https://httpd.apache.org/docs/2.4/mod/mod_proxy.html#proxypassreverse",
        "https://httpd.apache.org/docs/2.4/mod/mod_proxy.html#proxypreservehost",
        "https://httpd.apache.org/security/vulnerabilities_24.html (CVE-2023-25690)",
    ),
)


# ---- the routes (shared with E416 and S530) --------------------------------------


@dataclass(slots=True)
class ProxyRoute:
    """One line of the effective tree that hands requests to a backend."""

    node: Directive
    url: str
    """The backend URL as written (for `unix:/path|http://host/`, the part after '|')."""
    owner: Section
    """The <VirtualHost> the line is in, or the root (the main server)."""
    path: str | None = None
    """The public path a ProxyPass line names (None inside <Location>, or another kind)."""

    @property
    def scheme(self) -> str:
        return self.url.partition("://")[0].lower() if "://" in self.url else ""

    @property
    def static_url(self) -> str:
        """The URL up to its first substitution ($1, %{VAR}, ${VAR})."""
        if "$" not in self.url and "%" not in self.url:
            return self.url  # nearly every ProxyPass: no mark to look for
        cut = len(self.url)
        for mark in ("$", "%{", "%1", "%2", "%3", "%4", "%5", "%6", "%7", "%8", "%9"):
            found = self.url.find(mark)
            if 0 <= found < cut:
                cut = found
        return self.url[:cut]

    @property
    def static_host(self) -> bool:
        """Whether the backend's scheme, host and port are written out."""
        static = self.static_url
        if static == self.url:
            return "://" in static
        _, sep, rest = static.partition("://")
        return bool(sep) and "/" in rest and rest.index("/") > 0


def _looks_like_url(word: str) -> bool:
    lowered = word.lower()
    return "://" in lowered or lowered.startswith("unix:")


def _backend(word: str) -> str:
    """`unix:/run/app.sock|http://localhost/` -> `http://localhost/`."""
    if word.lower().startswith("unix:"):
        return word.partition("|")[2]
    return word


def owner_of(ctx: LintContext, node: Directive) -> Section:
    return enclosing_vhost(node) or ctx.config.effective


def server_label(ctx: LintContext, owner: Section) -> str:
    if owner is ctx.config.effective:
        return "the main server"
    return f"<VirtualHost {' '.join(owner.args)}>"


def rewrite_flags(node: Directive) -> list[str]:
    """The flags of a RewriteRule, lower case, without their values: [P,L] -> ['p', 'l']."""
    return _flags(node.args)


def _flags(args: list[str]) -> list[str]:
    if len(args) < 3:
        return []
    text = args[2].strip()
    if not (text.startswith("[") and text.endswith("]")):
        return []
    return [flag.strip().partition("=")[0].lower() for flag in text[1:-1].split(",")]


def rewrite_engine_on(ctx: LintContext, node: Directive) -> bool:
    """Whether mod_rewrite runs the rule: RewriteEngine On in its section or an
    enclosing one, up to its server (a server's line also sets the base that
    its <Directory> and <Location> sections merge onto; the main server's does
    not reach a virtual host's own rules)."""
    section = node.parent
    while section is not None:
        found = ctx.own_value(section, "RewriteEngine")
        if found is not None:
            return found.arg(0).lower() == "on"
        if section.is_root or section.lname == "virtualhost":
            return False
        section = section.parent
    return False


def _proxypass_route(ctx: LintContext, node: Directive) -> ProxyRoute | None:
    args = node.args
    if not args:
        return None
    if args[0] == "!" or _looks_like_url(args[0]):
        word, path = args[0], None
    elif len(args) > 1 and (args[1] == "!" or _looks_like_url(args[1])):
        word, path = args[1], args[0]
    else:
        return None
    if word == "!":
        return None
    return ProxyRoute(node, _backend(word), owner_of(ctx, node), path if node.lname == "proxypass" else None)


def _proxying_rule(args: list[str]) -> bool:
    """A RewriteRule to a URL with the P flag."""
    if len(args) < 3 or not _looks_like_url(args[1]):
        return False
    flags = _flags(args)
    return "p" in flags or "proxy" in flags


def proxy_routes(ctx: LintContext) -> list[ProxyRoute]:
    """Every ProxyPass, ProxyPassMatch and working RewriteRule [P], in file
    order within each kind; made once per run."""
    cached = ctx.shared.get("proxy_routes")
    if cached is not None:
        return cached
    routes: list[ProxyRoute] = []
    for name in ("ProxyPass", "ProxyPassMatch"):
        for node in ctx.directives(name):
            route = _proxypass_route(ctx, node)
            if route is not None:
                routes.append(route)
    # Judged once per argument list: every host's identical RewriteRule line
    # (certbot's redirect to https:// on 20,000 sites) shares one.
    proxying = per_argument_list(_proxying_rule)
    for node in ctx.directives("RewriteRule"):
        if proxying(node.args) and rewrite_engine_on(ctx, node):
            routes.append(ProxyRoute(node, _backend(node.args[1]), owner_of(ctx, node)))
    ctx.shared["proxy_routes"] = routes
    return routes


def balancer_members(ctx: LintContext) -> dict[str, list[str]]:
    """'balancer://name' (lower case) -> its BalancerMember URLs."""
    cached = ctx.shared.get("balancer_members")
    if cached is not None:
        return cached
    members: dict[str, list[str]] = {}
    for node in ctx.directives("BalancerMember"):
        parent = node.parent
        if parent is not None and parent.lname == "proxy" and parent.args and node.args:
            name, url = parent.args[0], node.args[0]
        elif len(node.args) >= 2:
            name, url = node.args[0], node.args[1]
        else:
            continue
        members.setdefault(normal_origin(name), []).append(_backend(url))
    ctx.shared["balancer_members"] = members
    return members


_DEFAULT_PORTS = {"http": ":80", "https": ":443", "ws": ":80", "wss": ":443"}


@lru_cache(maxsize=4096)
def normal_url(url: str) -> str:
    """Scheme and host in lower case, a default port and the final '/' dropped."""
    scheme, sep, rest = url.strip().partition("://")
    if not sep:
        return url.strip().rstrip("/")
    authority, slash, path = rest.partition("/")
    scheme, authority = scheme.lower(), authority.lower()
    port = _DEFAULT_PORTS.get(scheme)
    if port and authority.endswith(port):
        authority = authority[:-len(port)]
    return f"{scheme}://{authority}{slash}{path}".rstrip("/")


def normal_origin(url: str) -> str:
    """`normal_url` of the scheme and authority alone: balancer://cluster/app -> balancer://cluster."""
    scheme, sep, rest = normal_url(url).partition("://")
    return f"{scheme}{sep}{rest.partition('/')[0]}"


def by_owner(ctx: LintContext, *names: str) -> dict[Section, list[Directive]]:
    """Directives with these names grouped by their server (made once per run per name set)."""
    cache = ctx.shared.get("proxy_by_owner")
    if cache is None:
        cache = ctx.shared["proxy_by_owner"] = {}
    grouped = cache.get(names)  # callers spell each name one way
    if grouped is None:
        grouped = cache[names] = {}
        # A line's server follows from its parent: worked out once per
        # section (40,000 RewriteCond lines sit in 20,000 hosts).
        owners: dict[Section, Section] = {}
        for name in names:
            for node in ctx.directives(name):
                owner = owners.get(node.parent)  # type: ignore[arg-type]
                if owner is None:
                    owner = owners[node.parent] = owner_of(ctx, node)  # type: ignore[index]
                grouped.setdefault(owner, []).append(node)
    return grouped


# ---- E415 itself ----------------------------------------------------------------

# Backends that write their own address into redirects. Not AJP: the protocol
# hands Tomcat the client's host, port and scheme, so its redirects already name
# the public URL. Not WebSocket tunnels, nor FastCGI/SCGI/uwsgi applications,
# whose headers httpd takes as a CGI script's.
_REDIRECTING = frozenset(("http", "https", "h2", "h2c", "balancer"))


def _reverse_urls(reverse: dict[Section, list[Directive]], owner: Section, root: Section) -> list[str]:
    """The backend URLs the server's ProxyPassReverse lines (and the main server's) map back."""
    nodes = list(reverse.get(owner, []))
    if owner is not root:
        nodes += reverse.get(root, [])
    urls = []
    for node in nodes:
        word = next((arg for arg in node.args if _looks_like_url(arg)), None)
        if word is not None:
            urls.append(normal_url(_backend(word)))
    return urls


def _edits_location(headers: dict[Section, list[Directive]], owner: Section, root: Section) -> bool:
    """A `Header edit Location ...` rewrites redirects by hand."""
    nodes = headers.get(owner, []) + (headers.get(root, []) if owner is not root else [])
    for node in nodes:
        words = [arg.lower() for arg in node.args[:3]]
        if ("edit" in words or "edit*" in words) and "location" in words:
            return True
    return False


def preserves_host(ctx: LintContext, owner: Section) -> bool:
    return _preserves(by_owner(ctx, "ProxyPreserveHost"), owner, ctx.config.effective)


def _preserves(preserving: dict[Section, list[Directive]], owner: Section, root: Section) -> bool:
    for where in (owner, root):
        nodes = preserving.get(where)
        if nodes:
            return nodes[-1].arg(0).lower() == "on"
    return False


def _covered(url: str, reverse: list[str]) -> bool:
    for known in reverse:
        if url == known or url.startswith(known + "/") or known.startswith(url + "/"):
            return True
    return False


def check(ctx: LintContext, report: Report) -> None:
    routes = [route for route in proxy_routes(ctx) if route.scheme in _REDIRECTING and route.static_host]
    if not routes:
        return
    members = balancer_members(ctx)
    seen: set[tuple[Section, str]] = set()
    verdicts: dict[Section, tuple[list[str], bool]] = {}
    # Each grouping fetched once, not once per route (6,666 proxying hosts).
    root = ctx.config.effective
    reversing, headers = by_owner(ctx, "ProxyPassReverse"), by_owner(ctx, "Header")
    preserving = by_owner(ctx, "ProxyPreserveHost")
    for route in routes:
        url = normal_url(route.static_url)
        key = (route.owner, url)
        if key in seen:
            continue
        seen.add(key)
        verdict = verdicts.get(route.owner)
        if verdict is None:
            skip = _preserves(preserving, route.owner, root) or _edits_location(headers, route.owner, root)
            verdict = verdicts[route.owner] = (_reverse_urls(reversing, route.owner, root), skip)
        reverse, skip = verdict
        if skip:
            continue
        found = members.get(normal_origin(url), []) if route.scheme == "balancer" else []
        if found and not any(member.partition("://")[0].lower() in _REDIRECTING for member in found):
            continue  # a balancer of AJP (or other) members
        candidates = [url] + [normal_url(member) for member in found]
        if any(_covered(candidate, reverse) for candidate in candidates):
            continue
        _report(ctx, report, route)


def _report(ctx: LintContext, report: Report, route: ProxyRoute) -> None:
    node = route.node
    where = server_label(ctx, route.owner)
    message = (f"{node.name} in {where} sends requests to {route.url} and no ProxyPassReverse maps "
               "that address back: a redirect from the backend reaches the browser with the "
               "backend's own address in its Location header.")
    if node.lname == "proxypass":
        line = f"ProxyPassReverse {route.path} {route.url}" if route.path else f"ProxyPassReverse {route.url}"
        report(node, message, fix=line, edit=add_directive(ctx, line, after=node))
    else:
        report(node, message + " Add a ProxyPassReverse from the public path to the backend's base URL.")


RULE = Rule(code="E415", slug="proxy-without-reverse", severity="warning", category="correctness",
            directives=("ProxyPass", "ProxyPassMatch", "RewriteRule", "ProxyPassReverse",
                        "ProxyPreserveHost"),
            doc=DOC, check=check, fixable=True)
