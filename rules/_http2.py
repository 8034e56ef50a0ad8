"""Which protocols each server offers, as httpd resolves `Protocols` (HTTP/2 rules).

`Protocols` is a server-scope directive: a virtual host without one of its
own offers what the main server offers, and a server nobody configured offers
httpd's default, `http/1.1` alone. `h2` is HTTP/2 over TLS (negotiated with
ALPN), `h2c` HTTP/2 in clear text (an `Upgrade: h2c` or the prior-knowledge
preface). Worked out once per run and shared by the rules that need it.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.config.model import Directive, Section
from advisor.lint.context import LintContext

from ._served import owned

DEFAULT_PROTOCOLS = ("http/1.1",)
HTTP2_MODULES = ("http2_module", "mod_http2.c")


@dataclass(frozen=True)
class ProtocolOffer:
    """What one server (the main one, or a virtual host) offers."""

    vhost: Section | None
    """The virtual host, or None for the main server."""
    protocols: tuple[str, ...]
    """Lower-cased, in the order written."""
    line: Directive | None
    """The `Protocols` line in effect; None for httpd's default."""
    tls: bool
    """`SSLEngine on` in effect for this server."""

    @property
    def h2(self) -> bool:
        return "h2" in self.protocols

    @property
    def h2c(self) -> bool:
        return "h2c" in self.protocols


def http2_loaded(ctx: LintContext) -> bool:
    return ctx.has_module(*HTTP2_MODULES)


def _flag_on(node: Directive | None) -> bool:
    return node is not None and bool(node.args) and node.args[0].lower() in ("on", "optional")


def protocol_offers(ctx: LintContext) -> list[ProtocolOffer]:
    """The main server's offer, then each virtual host's, in file order."""
    cached = ctx.shared.get("protocol_offers")
    if cached is not None:
        return cached
    main_line = ctx.server_value("Protocols")
    main_protocols = tuple(a.lower() for a in main_line.args) if main_line is not None else DEFAULT_PROTOCOLS
    main_tls = _flag_on(ctx.server_value("SSLEngine"))
    offers = [ProtocolOffer(None, main_protocols, main_line, main_tls)]
    # Each host's own lines looked up in one grouping per name (a scan of
    # each host's children cost 150 ms on 40,000 hosts that set neither).
    own_protocols, own_engines = owned(ctx, "Protocols").get, owned(ctx, "SSLEngine").get
    for vhost in ctx.virtual_hosts():
        protocols, engines = own_protocols(vhost), own_engines(vhost)
        own = protocols[-1] if protocols else None
        offers.append(ProtocolOffer(
            vhost,
            tuple(a.lower() for a in own.args) if own is not None else main_protocols,
            own if own is not None else main_line,
            _flag_on(engines[-1]) if engines else main_tls,
        ))
    ctx.shared["protocol_offers"] = offers
    return offers


def offer_name(offer: ProtocolOffer) -> str:
    """How a finding names the server: `<VirtualHost *:443>` or the main server."""
    if offer.vhost is None:
        return "the main server"
    return f"<VirtualHost {' '.join(offer.vhost.args)}>"
