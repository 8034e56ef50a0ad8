"""P114: HTTP/2 server push configured where HTTP/2 is spoken."""

from __future__ import annotations

import re

from advisor.config.model import Directive, Section
from advisor.lint.context import LintContext, enclosing_vhost
from advisor.lint.edits import add_directive, set_value
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import parse_flag

from ._http2 import ProtocolOffer, http2_loaded, offer_name, protocol_offers

DOC = Doc(
    summary="HTTP/2 server push configured (H2PushResource, or preload Link headers with H2Push on)",
    what=(
        "Where mod_http2 runs under a threaded MPM and a server speaks HTTP/2 (h2 with TLS, "
        "h2c in clear text), flags what makes mod_http2 push: each H2PushResource line, and "
        "each `Header set|add|append|merge|setifempty Link` whose value has a same-site link "
        "(`</path>`) with rel=preload and no `nopush`, unless `H2Push off` is in effect there "
        "(H2Push is on by default in httpd 2.4). `H2Push off` on the line's own section or an "
        "enclosing one, or in any <Location> of the same server (which may cover its URLs), "
        "silences it. Links set by the application are not seen."
    ),
    why=(
        "A push sends a resource before the client asks for it, whether or not the client "
        "already has it in its cache; mod_http2's documentation itself calls pushing what the "
        "client has or does not need a waste of bandwidth. Browsers have given up on it: "
        "Chrome 106 (2022) turned it off and tells servers so (SETTINGS_ENABLE_PUSH 0, RFC "
        "9113 section 6.5.2), Firefox 132 (2024) followed; for them the lines only keep "
        "work in the server's path, and clients that still accept pushes get bytes they may "
        "discard. Bytes are a server resource like CPU: Arlitt & Williamson (2004, sec. 4.4) "
        "saw 1 MB replies fill a 1 Gb/s link at about 110 replies/s, the CPU then reading "
        "100 % only as a consequence; past that point every byte pushed unasked takes the "
        "place of one a client asked for. The preload Link headers themselves stay useful: "
        "browsers fetch what they name, from their cache when they can."
    ),
    evidence=(
        "Arlitt & Williamson (2004, sec. 4.4): 1 MB replies filled the 1 Gb/s link at about "
        "110 replies/s; pushed bytes compete with requested ones for that link."
    ),
    bad='H2Push on\n<Location /index.html>\n    Header add Link "</css/site.css>; rel=preload; as=style"\n</Location>',
    good='H2Push off\n<Location /index.html>\n    Header add Link "</css/site.css>; rel=preload; as=style"\n</Location>',
    fix=(
        "Write `H2Push off` (server, virtual host or the section), keeping the preload Link "
        "headers for browsers, or mark each link `nopush`; drop H2PushResource lines. To "
        "start fetches before the page is ready, send 103 Early Hints instead (H2EarlyHints)."
    ),
    references=(
        "Arlitt & Williamson 2004, sec. 4.4 (1 MB replies: the network link as the bottleneck)",
        "https://httpd.apache.org/docs/2.4/mod/mod_http2.html#h2push",
        "https://developer.chrome.com/blog/removing-push (Chrome 106 disables push, 2022)",
        "Firefox 132 release notes (HTTP/2 server push off by default, 2024)",
        "RFC 9113, section 8.4 (Server Push) and 6.5.2 (SETTINGS_ENABLE_PUSH)",
    ),
)

_PUSH_ACTIONS = {"set", "add", "append", "merge", "setifempty"}
# One link-value of a Link header: `<uri>` and its parameters up to the next comma.
_LINK = re.compile(r"<([^>]*)>([^,]*)")
_PRELOAD = re.compile(r"""\brel\s*=\s*["']?[^;,"']*\bpreload\b""", re.IGNORECASE)
_NOPUSH = re.compile(r"\bnopush\b", re.IGNORECASE)
_LOCATIONS = ("location", "locationmatch")


def pushed_paths(args: list[str]) -> list[str]:
    """The same-site paths a `Header ... Link ...` line asks mod_http2 to push."""
    words = list(args)
    if words and words[0].lower() in ("always", "onsuccess"):
        words = words[1:]
    if len(words) < 3 or words[0].lower() not in _PUSH_ACTIONS or words[1].lower() != "link":
        return []
    value = words[2]
    if value.lower().startswith("expr="):
        return []  # computed per request: not judged here
    return [uri for uri, params in _LINK.findall(value)
            if uri.startswith("/") and not uri.startswith("//")
            and _PRELOAD.search(params) and not _NOPUSH.search(params)]


def negotiated(offer: ProtocolOffer) -> bool:
    """A client can speak HTTP/2 here: h2 (ALPN) needs TLS, h2c needs clear text."""
    return (offer.h2 and offer.tls) or (offer.h2c and not offer.tls)


def _push_setting(ctx: LintContext, section: Section | None) -> Directive | None:
    """The nearest H2Push from `section` up to the main server."""
    while section is not None:
        own = ctx.own_value(section, "H2Push")
        if own is not None:
            return own
        section = section.parent
    return None


def _is_off(node: Directive | None) -> bool:
    return node is not None and bool(node.args) and parse_flag(node.args[0]) is False


def _location_offs(ctx: LintContext) -> set[int | None]:
    """The servers (id of the virtual host, None: main server) with `H2Push off`
    in a <Location>: it may cover any URL, so pushes there are not judged."""
    found: set[int | None] = set()
    for node in ctx.directives("H2Push"):
        parent = node.parent
        if _is_off(node) and parent is not None and parent.lname in _LOCATIONS:
            vhost = enclosing_vhost(node)
            found.add(None if vhost is None else id(vhost))
    return found


def _pushing_servers(ctx: LintContext, node: Directive, offers: dict[int | None, ProtocolOffer],
                     location_offs: set[int | None]) -> list[ProtocolOffer]:
    """The servers that speak HTTP/2 and push what `node` names."""
    if None in location_offs or _is_off(_push_setting(ctx, node.parent)):
        return []
    vhost = enclosing_vhost(node)
    if vhost is not None:
        offer = offers.get(id(vhost))
        return [offer] if offer is not None and id(vhost) not in location_offs else []
    # A line of the main server reaches every virtual host too: those first,
    # where browsers meet them.
    reached = [offer for key, offer in offers.items() if key is not None and key not in location_offs
               and not _is_off(ctx.own_value(offer.vhost, "H2Push"))]
    return reached + ([offers[None]] if None in offers else [])


def _edit(ctx: LintContext, node: Directive, done: set[int]):
    """`H2Push off` in the line's section, once per section."""
    section = node.parent
    if section is None or id(section) in done:
        return None
    done.add(id(section))
    own = ctx.own_value(section, "H2Push")
    return set_value(ctx, own, "off") if own is not None else add_directive(ctx, "H2Push off", after=node)


def check(ctx: LintContext, report: Report) -> None:
    if not http2_loaded(ctx) or ctx.mpm == "prefork":
        return
    offers = {None if offer.vhost is None else id(offer.vhost): offer
              for offer in protocol_offers(ctx) if negotiated(offer)}
    if not offers:
        return
    location_offs = _location_offs(ctx)
    done: set[int] = set()
    # Two lookups rather than one merged in file order: the merge would walk the
    # whole tree to order them, and findings are sorted afterwards anyway.
    for node in [*ctx.directives("H2PushResource"), *ctx.directives("Header")]:
        if node.lname == "header":
            paths = pushed_paths(node.args)
            what = "This preload Link header"
        else:
            paths = [arg for arg in node.args if arg.lower() not in ("add", "critical")][:1]
            what = "H2PushResource"
        if not paths:
            continue
        servers = _pushing_servers(ctx, node, offers, location_offs)
        if not servers:
            continue
        who = offer_name(servers[0]) + (f" and {len(servers) - 1} more" if len(servers) > 1 else "")
        report(node, f"{what} makes mod_http2 push {', '.join(paths)} over HTTP/2 on {who} "
                     "(H2Push is on). Browsers refuse pushes (Chrome since 106, Firefox since "
                     "132) and other clients get them even when cached. H2Push off stops them; "
                     "preload links still guide browsers, and 103 Early Hints (H2EarlyHints) "
                     "can start fetches early.",
               fix="H2Push off", edit=_edit(ctx, node, done))


RULE = Rule(code="P114", slug="h2-server-push", severity="info", category="performance",
            directives=("H2Push", "H2PushResource", "Header"), doc=DOC, check=check,
            fixable=True)
