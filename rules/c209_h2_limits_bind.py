"""C209: mod_http2's own limits set where they hold HTTP/2 visitors back."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.config.model import Directive
from advisor.lint.context import LintContext
from advisor.lint.edits import set_value
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import parse_int

from ._http2 import ProtocolOffer, http2_loaded, offer_name, protocol_offers
from ._mpm import THREADED, setting

HTTP1_CONNECTIONS = 6
"""Connections a browser opens to one host over HTTP/1.1: the parallelism an
HTTP/2 session must at least match."""
FRAME = 16384
"""The smallest maximum DATA frame (RFC 9113 sec. 4.2, SETTINGS_MAX_FRAME_SIZE's
initial value): a window or buffer below it cannot hold one full frame."""
RTT = 0.050
"""The round trip the findings quote (the tuner's README session uses 50 ms)."""


@dataclass(frozen=True)
class Limit:
    """One per-server limit of mod_http2 and where it starts to hurt."""

    name: str
    default: int
    floor: int


LIMITS = (
    Limit("H2MaxSessionStreams", 100, HTTP1_CONNECTIONS),
    Limit("H2WindowSize", 65535, FRAME),
    Limit("H2StreamMaxMemSize", 65536, FRAME),
)

DOC = Doc(
    summary=("H2MaxSessionStreams, H2WindowSize, H2StreamMaxMemSize or H2MaxWorkers set low "
             "on an h2 host"),
    what=(
        "Where mod_http2 is loaded, the MPM runs HTTP/2 (not prefork) and a server offers "
        "HTTP/2 (h2 or h2c in the Protocols in effect), reads the limits in effect for it "
        "(its own line, else the main server's) and flags: H2MaxSessionStreams below 6 "
        "(the default is 100); H2WindowSize below 16,384 bytes (default 65,535); "
        "H2StreamMaxMemSize below 16,384 bytes (documented default 65,536); and, under "
        "worker or event, H2MaxWorkers below ThreadsPerChild (mod_http2's default starts "
        "ThreadsPerChild h2 workers a child and grows to 1.5 times that). A line that only "
        "applies to servers without HTTP/2 is not flagged. One finding per line, naming "
        "the servers that use it; the fix writes mod_http2's default back."
    ),
    why=(
        "A browser speaking HTTP/2 opens one connection to a site and asks for a page's "
        "files on it at once, each as a stream. Almeida et al. (sec. 3, Table 1) measured a "
        "workload (A) in which HTML pages were 0.192 of the requests and their images, "
        "sound and video 0.808: 4.2 embedded files a page, all wanted as soon as the page "
        "arrives (pages hold far more today). H2MaxSessionStreams below 6 gives an HTTP/2 "
        "visitor fewer requests in flight than the six connections an HTTP/1.1 browser "
        "opens to one host: the page then needs more round trips over HTTP/2 than over "
        "HTTP/1.1, each one RTT "
        "(50 ms at 50 ms); RFC 9113 sec. 5.1.2 recommends allowing at least 100. Arlitt & "
        "Williamson (2004, sec. 5.1.6) measured what requests in flight on one connection "
        "are worth: 8 pipelined requests a connection served 16,000 replies/s, 8 sent one "
        "after the other 11,200. H2WindowSize is the flow-control window of each request "
        "body a client uploads, so an upload moves at most one window a round trip: 65,535 "
        "bytes at 50 ms is 1.3 MB/s (10.5 Mbit/s), 8,192 bytes only 164 KB/s, and below "
        "16,384 bytes not one full DATA frame fits. H2StreamMaxMemSize is the response data "
        "a stream may hold before its h2 worker stops until the connection has sent it: "
        "below one frame every frame leaves short and the worker is parked and woken once "
        "a buffer, more system calls a byte where Hu, Nanda & Yang (1999) found system calls "
        "already 35-50 % of Apache's CPU. H2MaxWorkers: mod_http2 runs streams on threads of "
        "its own, which mod_status does not show and MaxRequestWorkers does not count; "
        "below ThreadsPerChild a child takes more busy connections than it has h2 workers, "
        "and HTTP/2 requests queue while MPM threads are free."
    ),
    evidence=(
        "Almeida et al. (sec. 3, Table 1, workload A): 0.808 of requests were embedded "
        "files against 0.192 HTML pages, 4.2 files a page wanted at once; Arlitt & "
        "Williamson (2004, sec. 5.1.6): "
        "8 requests in flight a connection served 16,000 replies/s against 11,200 one at a time."
    ),
    bad=("Protocols h2 http/1.1\nH2MaxSessionStreams 4\nH2WindowSize 8192\n"
         "ThreadsPerChild 64\nH2MaxWorkers 16"),
    good=("Protocols h2 http/1.1\n# H2MaxSessionStreams 100, H2WindowSize 65535 (defaults)\n"
          "ThreadsPerChild 64\n# H2MaxWorkers unset: 64 a child, growing to 96"),
    fix=(
        "Remove the line or write mod_http2's default back: H2MaxSessionStreams 100, "
        "H2WindowSize 65535, H2StreamMaxMemSize 65536, H2MaxWorkers at least ThreadsPerChild "
        "(1.5 times it is the default). To bound what HTTP/2 costs, lower the number of "
        "connections (MaxRequestWorkers) instead."
    ),
    references=(
        "Almeida et al., WebMonitor study of Apache 1.1.1, sec. 3, Table 1 (workload A)",
        "Arlitt & Williamson 2004, sec. 5.1.6",
        "Hu, Nanda & Yang 1999 (IPCCC'99): 35-50 % of CPU in system calls",
        "https://httpd.apache.org/docs/2.4/mod/mod_http2.html#dimensioning",
        "RFC 9113, HTTP/2, sec. 4.2, 5.1.2 and 6.9 (frame size, concurrent streams, flow control)",
    ),
)


def _servers(ctx: LintContext) -> list[ProtocolOffer]:
    """The servers that speak HTTP/2: the virtual hosts, or the main server
    when there is none (it serves no request a virtual host takes)."""
    offers = protocol_offers(ctx)
    hosts = [offer for offer in offers if offer.vhost is not None] or offers[:1]
    return [offer for offer in hosts if offer.h2 or offer.h2c]


def _in_effect(ctx: LintContext, offer: ProtocolOffer, name: str) -> Directive | None:
    own = ctx.own_value(offer.vhost, name) if offer.vhost is not None else None
    return own or ctx.server_value(name)


def _who(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else f"{labels[0]} and {len(labels) - 1} more"


def _explain(limit: Limit, value: int, who: str) -> str:
    ms = f"{RTT * 1000:.0f} ms"
    if limit.name == "H2MaxSessionStreams":
        return (f"H2MaxSessionStreams {value} lets an HTTP/2 visitor of {who} have {value} "
                f"requests in flight on its one connection, fewer than the "
                f"{HTTP1_CONNECTIONS} connections an HTTP/1.1 browser opens: a page's files "
                f"then take more round trips over HTTP/2 than over HTTP/1.1, {ms} each at a "
                f"{ms} RTT (mod_http2's default is {limit.default}).")
    if limit.name == "H2WindowSize":
        return (f"H2WindowSize {value} lets a client of {who} upload {value:,} bytes of a "
                f"request body a round trip: {value / RTT / 1000:,.0f} KB/s at a {ms} RTT, "
                f"and not one full {FRAME:,}-byte DATA frame fits the window (the default "
                f"{limit.default:,} allows {limit.default / RTT / 1e6:.1f} MB/s).")
    return (f"H2StreamMaxMemSize {value} stops each response's h2 worker on {who} every "
            f"{value:,} bytes until the connection has sent them, less than one full "
            f"{FRAME:,}-byte DATA frame: short frames and a wake-up a buffer (documented "
            f"default {limit.default:,}).")


def _check_limits(ctx: LintContext, servers: list[ProtocolOffer], report: Report) -> None:
    for limit in LIMITS:
        users: dict[int, tuple[Directive, list[str]]] = {}
        for offer in servers:
            node = _in_effect(ctx, offer, limit.name)
            if node is not None:
                users.setdefault(id(node), (node, []))[1].append(offer_name(offer))
        for node, labels in users.values():
            value = parse_int(node.arg(0))
            if value is None or value >= limit.floor:
                continue
            report(node, _explain(limit, value, _who(labels)),
                   fix=f"{limit.name} {limit.default}",
                   edit=set_value(ctx, node, str(limit.default)))


def _check_workers(ctx: LintContext, report: Report) -> None:
    node = ctx.server_value("H2MaxWorkers")
    value = parse_int(node.arg(0)) if node is not None else None
    if node is None or value is None or ctx.mpm not in THREADED:
        return
    threads = setting(ctx, "threadsperchild", "ThreadsPerChild")
    limit = setting(ctx, "threadlimit", "ThreadLimit")
    if threads.value is None or threads.value < 1:
        return
    per_child = min(threads.value, limit.value) if limit.value else threads.value
    if value >= per_child:
        return
    minimum = ctx.server_value("H2MinWorkers")
    floor = parse_int(minimum.arg(0)) if minimum is not None else None
    wanted = max(4, 3 * per_child // 2, floor or 0)
    report(node, f"H2MaxWorkers {value} is below {threads.describe()}: each child takes "
                 f"{per_child} busy connections, but all their HTTP/2 requests share {value} "
                 f"h2 workers, so HTTP/2 visitors queue while MPM threads are free. Without "
                 f"the line mod_http2 starts {per_child} h2 workers a child and grows to "
                 f"{max(4, 3 * per_child // 2)}.",
           fix=f"H2MaxWorkers {wanted}", edit=set_value(ctx, node, str(wanted)))


def check(ctx: LintContext, report: Report) -> None:
    if not http2_loaded(ctx) or ctx.mpm == "prefork":
        return  # no HTTP/2 is negotiated then (E408's finding)
    servers = _servers(ctx)
    if not servers:
        return
    _check_limits(ctx, servers, report)
    _check_workers(ctx, report)


RULE = Rule(code="C209", slug="h2-limits-bind", severity="warning", category="capacity",
            directives=("H2MaxSessionStreams", "H2WindowSize", "H2StreamMaxMemSize",
                        "H2MaxWorkers", "H2MinWorkers", "ThreadsPerChild", "Protocols"),
            doc=DOC, check=check, fixable=True)
