"""S520: h2c (HTTP/2 over clear text, by Upgrade) offered on a server behind a proxy."""

from __future__ import annotations

from advisor.config.model import Directive
from advisor.lint.context import LintContext
from advisor.lint.edits import set_value
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import parse_flag

from ._http2 import ProtocolOffer, http2_loaded, offer_name, protocol_offers

REMOTEIP_MODULES = ("remoteip_module", "mod_remoteip.c")

DOC = Doc(
    summary="h2c offered on a clear-text server that a proxy fronts (RemoteIPHeader): h2c smuggling",
    what=(
        "Flags a Protocols line that offers h2c to a clear-text server (main server or "
        "virtual host) which, by the config's own word, is reached through an HTTP proxy: "
        "mod_remoteip is loaded and RemoteIPHeader is in effect for that server (its own, or "
        "the main server's). Needs mod_http2 under a threaded MPM (prefork never negotiates "
        "HTTP/2); `H2Upgrade off` for the server closes the Upgrade path and silences it. "
        "A public listener without a proxy is not flagged: there a client reaches httpd "
        "directly and h2c lets it past nothing."
    ),
    why=(
        "With h2c offered, httpd answers a request carrying `Upgrade: h2c` by switching the "
        "connection to HTTP/2 (H2Upgrade is on by default for clear text). A proxy that "
        "forwards the Upgrade and Connection headers, as many do to carry WebSockets, then "
        "sees a protocol switch and relays the connection as an opaque tunnel: every further "
        "request on it reaches httpd without the proxy's path rules, authentication or WAF "
        "(h2c smuggling, Bishop Fox 2020). Browsers never send `Upgrade: h2c` (they speak h2 "
        "over TLS), and RFC 9113 deprecated the h2c upgrade token, so behind a proxy h2c "
        "serves only that tunnel. The proxy is what turns the Upgrade into a bypass; "
        "RemoteIPHeader is the config saying that one is there, so it is the condition. "
        "Debian's http2.conf offers h2c to every server: on a host that clients reach "
        "directly this rule stays quiet."
    ),
    evidence=(
        "RFC 9113 section 3.1 deprecates the h2c Upgrade token (IANA lists it obsolete); "
        "Bishop Fox (2020) tunnelled requests past proxies that forward `Upgrade: h2c`."
    ),
    bad="RemoteIPHeader X-Forwarded-For\nProtocols h2 h2c http/1.1",
    good="RemoteIPHeader X-Forwarded-For\nProtocols h2 http/1.1",
    fix=(
        "Drop h2c from the Protocols line (keep h2 for TLS sites). If something on the "
        "inside needs clear-text HTTP/2, give it a listener the proxy does not reach, or set "
        "`H2Upgrade off` so only the prior-knowledge preface (H2Direct) starts HTTP/2."
    ),
    references=(
        "RFC 9113, section 3.1 (the h2c upgrade token, deprecated)",
        "https://www.iana.org/assignments/http-upgrade-tokens (h2c: OBSOLETE)",
        "Bishop Fox 2020, 'h2c Smuggling: Request Smuggling Via HTTP/2 Cleartext (h2c)'",
        "https://httpd.apache.org/docs/2.4/mod/mod_http2.html#h2upgrade",
        "https://httpd.apache.org/docs/2.4/mod/mod_remoteip.html#remoteipheader",
    ),
)


def _in_effect(ctx: LintContext, offer: ProtocolOffer, name: str) -> Directive | None:
    """The server's own `name`, else the main server's (both server-scope settings)."""
    if offer.vhost is not None:
        own = ctx.own_value(offer.vhost, name)
        if own is not None:
            return own
    return ctx.server_value(name)


def _upgrade_off(ctx: LintContext, offer: ProtocolOffer) -> bool:
    node = _in_effect(ctx, offer, "H2Upgrade")
    return node is not None and bool(node.args) and parse_flag(node.args[0]) is False


def _without_h2c(line: Directive) -> str:
    kept = [arg for arg in line.args if arg.lower() != "h2c"]
    return " ".join(kept) if kept else "http/1.1"


def check(ctx: LintContext, report: Report) -> None:
    if not http2_loaded(ctx) or ctx.mpm == "prefork" or not ctx.has_module(*REMOTEIP_MODULES):
        return
    # Protocols line -> the proxied servers it offers h2c to, and the first one's RemoteIPHeader.
    by_line: dict[int, tuple[Directive, list[ProtocolOffer], Directive]] = {}
    for offer in protocol_offers(ctx):
        if offer.line is None or not offer.h2c or offer.tls or _upgrade_off(ctx, offer):
            continue
        header = _in_effect(ctx, offer, "RemoteIPHeader")
        if header is None:
            continue
        by_line.setdefault(id(offer.line), (offer.line, [], header))[1].append(offer)
    for line, offers, header in by_line.values():
        offers.sort(key=lambda offer: offer.vhost is None)  # virtual hosts first: clients meet them
        who = offer_name(offers[0]) + (f" and {len(offers) - 1} more" if len(offers) > 1 else "")
        at = f"line {header.line}" if header.file == line.file else f"{header.file}:{header.line}"
        report(line,
               f"h2c is offered to {who}, which a proxy fronts (RemoteIPHeader {' '.join(header.args)}"
               f" at {at}): a client can send `Upgrade: h2c` through the "
               "proxy, and once httpd switches protocols the proxy relays the connection as a "
               "tunnel, so the requests that follow skip the proxy's rules (h2c smuggling). "
               "Browsers never use h2c: drop it from Protocols.",
               fix=f"Protocols {_without_h2c(line)}", edit=set_value(ctx, line, _without_h2c(line)))


RULE = Rule(code="S520", slug="h2c-offered", severity="warning", category="security",
            directives=("Protocols", "RemoteIPHeader", "H2Upgrade"), doc=DOC, check=check,
            fixable=True)
