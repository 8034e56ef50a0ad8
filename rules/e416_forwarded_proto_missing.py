"""E416: TLS ends at the proxy and the backend is not told so."""

from __future__ import annotations

from advisor.config.model import Directive, Section
from advisor.lint.context import LintContext
from advisor.lint.edits import add_directive
from advisor.lint.rule import Doc, Report, Rule

from ._served import owned
from .e415_proxy_without_reverse import (ProxyRoute, balancer_members, by_owner, normal_origin, proxy_routes,
                                         server_label)

DOC = Doc(
    summary="TLS virtual host proxies to plain HTTP and sends no X-Forwarded-Proto (or Forwarded)",
    what=(
        "For each server with SSLEngine on (a virtual host's own, or the main server's) that "
        "proxies to an http:// or h2c:// backend (ProxyPass, ProxyPassMatch or RewriteRule "
        "[P]; a balancer counts when a member is plain HTTP), looks for a `RequestHeader` "
        "that sets X-Forwarded-Proto, X-Forwarded-Ssl, X-Forwarded-Scheme, X-Url-Scheme, "
        "Front-End-Https or Forwarded, in the server or the main server. Flags the first "
        "proxying line when there is none. AJP, FastCGI, SCGI and uwsgi backends are left "
        "out: those protocols carry the scheme (HTTPS) themselves."
    ),
    why=(
        "mod_proxy_http adds X-Forwarded-For, X-Forwarded-Host and X-Forwarded-Server, but "
        "nothing says the client spoke HTTPS. The backend sees a plain http:// request, so "
        "it builds http:// absolute links, redirects and cookies without the Secure flag: "
        "browsers block the links as mixed content, and an application that forces HTTPS "
        "redirects the already-secure request again, in a loop. Frameworks read "
        "X-Forwarded-Proto (or the standard Forwarded header of RFC 7239) from a trusted "
        "proxy for exactly this; `RequestHeader set` overwrites whatever the client sent."
    ),
    evidence=(
        "RFC 7239 (Forwarded: proto=) and the de facto X-Forwarded-Proto header tell a "
        "backend the scheme the client used; mod_proxy_http sends neither by itself."
    ),
    bad=("<VirtualHost *:443>\n    SSLEngine on\n    ProxyPass / http://127.0.0.1:8000/\n"
         "    ProxyPassReverse / http://127.0.0.1:8000/\n</VirtualHost>"),
    good=("<VirtualHost *:443>\n    SSLEngine on\n    RequestHeader set X-Forwarded-Proto \"https\"\n"
          "    ProxyPass / http://127.0.0.1:8000/\n    ProxyPassReverse / http://127.0.0.1:8000/\n"
          "</VirtualHost>"),
    fix=(
        "Add `RequestHeader set X-Forwarded-Proto \"https\"` to the TLS virtual host (needs "
        "mod_headers; `apache-advisor fix` writes it after the host's SSLEngine line when "
        "mod_headers is loaded), and have the backend trust it from this proxy only."
    ),
    references=(
        "RFC 7239 (Forwarded HTTP Extension), section 5.4 (proto)",
        "https://httpd.apache.org/docs/2.4/mod/mod_proxy.html#x-headers",
        "https://httpd.apache.org/docs/2.4/mod/mod_headers.html#requestheader",
        "https://developer.mozilla.org/en-US/docs/Web/HTTP/Headers/X-Forwarded-Proto",
    ),
)

# Headers that carry the client's scheme to a backend, in the forms frameworks read.
SCHEME_HEADERS = frozenset(("x-forwarded-proto", "x-forwarded-ssl", "x-forwarded-scheme",
                            "x-url-scheme", "front-end-https", "forwarded"))
_SETTING = frozenset(("set", "add", "append", "merge", "setifempty"))
_PLAIN = frozenset(("http", "h2c"))
FIX_LINE = 'RequestHeader set X-Forwarded-Proto "https"'


def _engine_on(nodes: list[Directive] | None) -> Directive | None:
    """The SSLEngine line that decides, when it says on."""
    if not nodes:
        return None
    last = nodes[-1]
    return last if last.arg(0).lower() == "on" else None


def _tells_scheme(nodes: list[Directive]) -> bool:
    for node in nodes:
        args = node.args
        if len(args) > 1 and args[0].lower() in _SETTING and args[1].lower() in SCHEME_HEADERS:
            return True
    return False


def _plain(route: ProxyRoute, members: dict[str, list[str]]) -> bool:
    scheme = route.scheme
    if scheme == "balancer":
        found = members.get(normal_origin(route.static_url), [])
        return not found or any(url.partition("://")[0].lower() in _PLAIN for url in found)
    return scheme in _PLAIN


def check(ctx: LintContext, report: Report) -> None:
    if ctx.modules_known and not ctx.has_module("ssl_module", "mod_ssl.c"):
        return
    routes = proxy_routes(ctx)
    if not routes:
        return
    root = ctx.config.effective
    members = balancer_members(ctx)
    headers = by_owner(ctx, "RequestHeader")
    server_tells = _tells_scheme(headers.get(root, []))
    # Each server's own SSLEngine lines, grouped once (not a scan of each proxying host's lines).
    engines = owned(ctx, "SSLEngine")
    server_engine = _engine_on(engines.get(root))
    done: set[Section] = set()
    for route in routes:
        owner = route.owner
        if owner in done or not _plain(route, members):
            continue
        done.add(owner)
        own = engines.get(owner) if owner is not root else None
        engine = _engine_on(own) if own else server_engine
        if engine is None or server_tells or _tells_scheme(headers.get(owner, [])):
            continue
        edit = None
        if own and ctx.has_module("headers_module", "mod_headers.c"):
            edit = add_directive(ctx, FIX_LINE, after=engine)
        report(route.node,
               f"{server_label(ctx, owner)} ends TLS and proxies to {route.url} over plain HTTP, "
               "and no RequestHeader tells the backend the client used HTTPS (X-Forwarded-Proto or "
               "Forwarded): it builds http:// links and redirects, which browsers block as mixed "
               "content or follow in a redirect loop.",
               fix=FIX_LINE, edit=edit)


RULE = Rule(code="E416", slug="forwarded-proto-missing", severity="warning", category="correctness",
            directives=("SSLEngine", "ProxyPass", "ProxyPassMatch", "RewriteRule", "RequestHeader"),
            doc=DOC, check=check, fixable=True)
