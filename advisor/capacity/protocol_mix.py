"""A protocol mix: what a share of HTTP/2 visitors changes for the pool (issue 57).

Pure arithmetic, like sizing.py: the command reads the config (and the log)
and hands the facts in; nothing here reads files or prints.

The unit is a page view: a page and the assets a browser fetches with it,
on average 1 / 0.192 = 5.2 requests (Almeida et al. 1996, Table 1, workload
A: HTML files draw 19.2 % of the requests). An HTTP/1.1 browser spreads a
page's assets over up to six connections to the host; an HTTP/2 browser sends
them as streams on its one connection. Each new connection over HTTPS costs
a TLS handshake. What a connection holds while it waits for the next request
depends on the MPM and the protocol:

- prefork, worker: an idle HTTP/1.1 keep-alive connection holds its process
  or thread for KeepAliveTimeout;
- event: an idle HTTP/1.1 connection waits in the listener and holds no worker;
- HTTP/2 under worker: the connection keeps its MPM thread for its whole life
  (mod_http2's h2_c1_run loops on a synchronous MPM), its idle time included;
- HTTP/2 under event: an idle connection goes back to the listener (httpd's
  CHANGES, 2.4.19: "idle connections are returned to async mpms"); while its
  streams run it holds one MPM worker;
- HTTP/2 under prefork: never negotiated since 2.4.27 (CHANGES: "Disable and
  give warning when using Prefork"; the error log's AH10034): an HTTP/2
  visitor is served HTTP/1.1.

mod_http2 runs the streams on its own h2 workers, per child process
H2MinWorkers (default ThreadsPerChild) growing to H2MaxWorkers (default
max(4, 3/2 x H2MinWorkers)), beside the MPM's threads; it times an idle
connection out with KeepAliveTimeout (httpd 2.4 has no H2KeepAliveTimeout).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# Almeida et al. (1996, Table 1, workload A): HTML is 19.2 % of the requests,
# so a page brings 1 / 0.192 = 5.2 requests (3.9 images, 0.26 sounds, ...).
ALMEIDA_HTML_SHARE = 0.192
REQUESTS_PER_PAGE = round(1 / ALMEIDA_HTML_SHARE, 2)
# The connections an HTTP/1.1 browser opens to one host.
BROWSER_H1_CONNECTIONS = 6
# mod_http2 lets a new connection use 4 h2 workers at once and doubles that
# while the client keeps up with the flow (CHANGES, 2.4.19).
H2_WORKERS_PER_CONNECTION_AT_FIRST = 4
DEFAULT_KEEPALIVE_TIMEOUT = 5.0
H2_FIRST_VERSION = (2, 4, 17)
H2_IDLE_TO_LISTENER = (2, 4, 19)
H2_PREFORK_DISABLED = (2, 4, 27)
# Mean h2 workers busy above this share of their pool: the pool is the limit.
H2_WORKERS_TIGHT = 0.8

HTTP1 = "HTTP/1.1"
HTTP2 = "HTTP/2"


@dataclass(frozen=True)
class MixSettings:
    """What the config and the flags say, as the command read them."""

    mpm: str
    asked_share: float
    """Share of visitors who would speak HTTP/2 (0..1), as given."""
    share_source: str
    version: tuple[int, int, int] = (2, 4, 999)
    requests_per_page: float = REQUESTS_PER_PAGE
    keepalive: bool = True
    keepalive_timeout: float = DEFAULT_KEEPALIVE_TIMEOUT
    tls: bool = True
    """The config serves HTTPS somewhere (each new connection is a handshake)."""
    h2_loaded: bool = True
    h2_offered: bool = True
    """Some Protocols line offers h2 (httpd's default is http/1.1 alone)."""
    threads_per_child: int = 25
    processes: int = 16
    """Child processes of the pool in effect (each runs its own h2 workers)."""
    h2_min_workers: int | None = None
    h2_max_workers: int | None = None
    h2_workers_where: str = ""
    """file:line of H2MaxWorkers (or H2MinWorkers) when written."""
    log_hold: float | None = None
    """The log's mean hold time: the service time when the command has none."""
    log_rate: float | None = None
    """The log's busiest minute (req/s): the rate when the command predicts at none."""
    thread_bytes: int | None = None
    """Memory of one extra thread (the sum's --thread-memory): what each h2 worker costs."""
    notes: tuple[str, ...] = ()


@dataclass
class ProtocolRow:
    """One page view on one protocol (or the mix), per page."""

    protocol: str
    share: float
    connections: float
    handshakes: float
    idle_worker_seconds: float
    """MPM worker-seconds held by the page's connections while idle."""
    mpm_worker_seconds: float | None
    """MPM worker-seconds in all (busy and idle); None without a service time."""
    h2_worker_seconds: float | None


@dataclass
class MixAtRate:
    """Mean counts at one request rate (Little's law), with the mix and with every visitor on HTTP/1.1."""

    rate: float
    pages: float
    connections: float
    handshakes: float
    mpm_workers: float
    idle_workers: float
    h2_workers: float
    h1_connections: float
    h1_handshakes: float
    h1_mpm_workers: float
    h1_idle_workers: float


@dataclass
class ProtocolMix:
    asked_share: float
    share: float
    """The share served over HTTP/2 (0 where h2 is never negotiated)."""
    source: str
    mpm: str
    requests_per_page: float
    keepalive_timeout: float
    rows: list[ProtocolRow]
    """HTTP/1.1, HTTP/2, the mix, and every visitor on HTTP/1.1."""
    h2_min_workers: int
    h2_max_workers: int
    h2_worker_pool: int
    """H2MaxWorkers x child processes."""
    h2_workers_source: str
    at_rates: list[MixAtRate] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    """What the mix changed against every visitor on HTTP/1.1, in sentences."""
    notes: list[str] = field(default_factory=list)


def served_share(settings: MixSettings) -> tuple[float, list[str]]:
    """The share of visitors that get HTTP/2, and why it differs from the one asked."""
    asked = settings.asked_share
    if asked <= 0:
        return 0.0, []
    if settings.version < H2_FIRST_VERSION:
        return 0.0, [f"httpd {'.'.join(map(str, settings.version))} has no mod_http2 (it came with 2.4.17): "
                     f"every visitor is on HTTP/1.1"]
    if settings.mpm == "prefork" and settings.version >= H2_PREFORK_DISABLED:
        return 0.0, [f"prefork: mod_http2 does not negotiate HTTP/2 under prefork (httpd 2.4.27 on; the error log "
                     f"says AH10034), so the {asked * 100:.0f} % of visitors whose browsers would speak HTTP/2 are "
                     f"served HTTP/1.1: switch to event (PHP through php-fpm, not mod_php) to serve them HTTP/2"]
    notes = []
    if not settings.h2_loaded:
        notes.append(f"the config loads no mod_http2: the {asked * 100:.0f} % HTTP/2 share is a what-if "
                     f"(a2enmod http2)")
    elif not settings.h2_offered:
        notes.append(f"no Protocols line offers h2 (httpd's default is http/1.1 alone): the {asked * 100:.0f} % "
                     f"HTTP/2 share is a what-if (Protocols h2 http/1.1)")
    if not settings.tls:
        notes.append("the config serves no HTTPS (no SSLEngine on): browsers speak HTTP/2 only over TLS, so the "
                     "HTTP/2 share is a what-if")
    return asked, notes


def h2_holds_idle_worker(mpm: str, version: tuple[int, int, int]) -> bool:
    """Does an idle HTTP/2 connection keep an MPM worker? (prefork before 2.4.27 ran h2 too.)"""
    if mpm == "event":
        return version < H2_IDLE_TO_LISTENER
    return True


def h1_holds_idle_worker(mpm: str, keepalive: bool) -> bool:
    return keepalive and mpm in ("prefork", "worker")


def h1_connections(requests_per_page: float, keepalive: bool) -> float:
    """Connections an HTTP/1.1 browser opens for one page: the HTML's, and the
    assets spread over up to six (the HTML's carries one of them); without
    keep-alive one per request."""
    if not keepalive:
        return requests_per_page
    return max(1.0, min(float(BROWSER_H1_CONNECTIONS), requests_per_page - 1.0))


def _waves(assets: float, parallel: float) -> float:
    """Rounds of `parallel` fetches the assets take (a fraction: a mean over pages)."""
    return assets / parallel if assets > parallel else min(assets, 1.0)


def h2_active_seconds(requests_per_page: float, service_time: float) -> float:
    """How long a page's HTTP/2 connection has streams running: the HTML, then
    the assets, H2_WORKERS_PER_CONNECTION_AT_FIRST at a time (an upper bound:
    the allowance doubles while the client keeps up)."""
    assets = max(requests_per_page - 1.0, 0.0)
    return service_time * (1.0 + _waves(assets, H2_WORKERS_PER_CONNECTION_AT_FIRST))


def h2_worker_limits(settings: MixSettings) -> tuple[int, int, str]:
    """H2MinWorkers and H2MaxWorkers per child, as mod_http2 sets them, and where they come from."""
    threads = settings.threads_per_child if settings.mpm != "prefork" else 1
    low = settings.h2_min_workers if settings.h2_min_workers is not None else threads
    if settings.h2_max_workers is not None:
        return low, settings.h2_max_workers, settings.h2_workers_where or "H2MaxWorkers"
    high = max(4, 3 * low // 2)
    return low, high, f"mod_http2's default max(4, 3/2 x H2MinWorkers {low})"


def _row(protocol: str, share: float, connections: float, handshake: bool, idle: float,
         mpm_busy: float | None, h2_busy: float | None) -> ProtocolRow:
    mpm = None if mpm_busy is None else mpm_busy + idle
    return ProtocolRow(protocol, share, connections, connections if handshake else 0.0, idle, mpm, h2_busy)


def protocol_rows(settings: MixSettings, share: float, service_time: float | None) -> list[ProtocolRow]:
    """Per page: HTTP/1.1, HTTP/2, the mix of the two, and every visitor on HTTP/1.1."""
    r = settings.requests_per_page
    timeout = settings.keepalive_timeout
    c1 = h1_connections(r, settings.keepalive)
    idle1 = c1 * timeout if h1_holds_idle_worker(settings.mpm, settings.keepalive) else 0.0
    idle2 = timeout if h2_holds_idle_worker(settings.mpm, settings.version) else 0.0
    busy1 = None if service_time is None else r * service_time
    active2 = None if service_time is None else h2_active_seconds(r, service_time)
    h1 = _row(HTTP1, 1.0 - share, c1, settings.tls, idle1, busy1, 0.0 if busy1 is not None else None)
    h2 = _row(HTTP2, share, 1.0, settings.tls, idle2, active2, busy1)
    mixed = ProtocolRow(
        "mix", 1.0,
        _blend(h1.connections, h2.connections, share), _blend(h1.handshakes, h2.handshakes, share),
        _blend(h1.idle_worker_seconds, h2.idle_worker_seconds, share),
        None if service_time is None else _blend(h1.mpm_worker_seconds, h2.mpm_worker_seconds, share),
        None if service_time is None else _blend(h1.h2_worker_seconds, h2.h2_worker_seconds, share))
    baseline = ProtocolRow(f"all {HTTP1}", 1.0, h1.connections, h1.handshakes, h1.idle_worker_seconds,
                           h1.mpm_worker_seconds, h1.h2_worker_seconds)
    return [h1, h2, mixed, baseline]


def _blend(h1: float, h2: float, share: float) -> float:
    return (1.0 - share) * h1 + share * h2


def at_rate(rate: float, rows: list[ProtocolRow], requests_per_page: float) -> MixAtRate:
    """Little's law at `rate` requests/s: pages/s times each per-page figure."""
    _h1, _h2, mixed, baseline = rows
    pages = rate / requests_per_page
    return MixAtRate(
        rate=rate, pages=pages, connections=pages * mixed.connections, handshakes=pages * mixed.handshakes,
        mpm_workers=pages * (mixed.mpm_worker_seconds or 0.0), idle_workers=pages * mixed.idle_worker_seconds,
        h2_workers=pages * (mixed.h2_worker_seconds or 0.0),
        h1_connections=pages * baseline.connections, h1_handshakes=pages * baseline.handshakes,
        h1_mpm_workers=pages * (baseline.mpm_worker_seconds or 0.0),
        h1_idle_workers=pages * baseline.idle_worker_seconds)


def build_mix(settings: MixSettings, service_time: float | None, rates: list[float],
              max_request_workers: int) -> ProtocolMix:
    share, notes = served_share(settings)
    if service_time is None:
        service_time = settings.log_hold
    if not rates and settings.log_rate:
        rates = [settings.log_rate]
    rows = protocol_rows(settings, share, service_time)
    low, high, source = h2_worker_limits(settings)
    mix = ProtocolMix(
        asked_share=settings.asked_share, share=share, source=settings.share_source, mpm=settings.mpm,
        requests_per_page=settings.requests_per_page, keepalive_timeout=settings.keepalive_timeout, rows=rows,
        h2_min_workers=low, h2_max_workers=high, h2_worker_pool=high * settings.processes, h2_workers_source=source,
        notes=list(settings.notes) + notes)
    if service_time is not None:
        mix.at_rates = [at_rate(rate, rows, settings.requests_per_page) for rate in rates]
    mix.changes = describe_changes(mix, settings, max_request_workers)
    if settings.h2_loaded and settings.thread_bytes and settings.version >= H2_FIRST_VERSION \
            and not (settings.mpm == "prefork" and settings.version >= H2_PREFORK_DISABLED):
        mix.notes.append(h2_thread_memory_note(low, high, settings.processes, settings.thread_bytes))
    return mix


def h2_thread_memory_note(low: int, high: int, processes: int, thread_bytes: int) -> str:
    """mod_http2 starts H2MinWorkers threads in every child whatever the traffic (and grows to H2MaxWorkers)."""
    mib = 1024 * 1024
    least, most = low * processes * thread_bytes / mib, high * processes * thread_bytes / mib
    return (f"mod_http2 starts H2MinWorkers {low} threads in each of {processes} children and grows to "
            f"H2MaxWorkers {high}: at {thread_bytes / 1024:.0f} KiB a thread {least:,.0f} to {most:,.0f} MiB "
            f"that the memory sum above does not count")


def holder(mpm: str, plural: bool = True) -> str:
    """What the MPM gives a connection: a process (prefork) or a thread."""
    noun = "process" if mpm == "prefork" else "thread"
    return f"{mpm} {noun}" + (("es" if mpm == "prefork" else "s") if plural else "")


def _percent_change(before: float, after: float) -> str:
    if before == 0:
        return "no change" if after == 0 else "new"
    return f"{(after - before) / before * 100:+.0f} %"


def describe_changes(mix: ProtocolMix, settings: MixSettings, max_request_workers: int) -> list[str]:
    """What the mix changed against every visitor on HTTP/1.1, one sentence each."""
    if mix.share <= 0:
        return []
    _h1, h2, mixed, base = mix.rows
    out = [f"connections per page {base.connections:.2f} -> {mixed.connections:.2f} "
           f"({_percent_change(base.connections, mixed.connections)}), TLS handshakes likewise"
           + ("" if settings.tls else " (none: no HTTPS)")]
    before, after = base.idle_worker_seconds, mixed.idle_worker_seconds
    if before or after:
        out.append(f"{holder(settings.mpm)} held by idle connections per page {before:.1f} s -> {after:.1f} s "
                   f"({_percent_change(before, after)}): each idle connection holds one for KeepAliveTimeout "
                   f"{settings.keepalive_timeout:g} s")
    else:
        out.append(f"{settings.mpm}: idle connections of either protocol wait in the listener and hold no worker")
    if h2.idle_worker_seconds and settings.mpm == "worker":
        out.append("under worker an HTTP/2 connection keeps its thread for its whole life, idle time included "
                   "(event hands an idle one back to the listener)")
    for row in mix.at_rates:
        line = (f"at {row.rate:,.4g} req/s: {holder(settings.mpm)} held {row.h1_mpm_workers:,.1f} -> "
                f"{row.mpm_workers:,.1f} of MaxRequestWorkers {max_request_workers}; h2 workers busy "
                f"{row.h2_workers:,.1f} of {mix.h2_worker_pool} ({mix.h2_max_workers} a child)")
        if row.mpm_workers > max_request_workers:
            line += ": the pool is short, requests wait for idle connections to time out"
        elif row.h1_mpm_workers > max_request_workers:
            line += ": all on HTTP/1.1 the pool would be short, with the mix it holds"
        if row.h2_workers > H2_WORKERS_TIGHT * mix.h2_worker_pool:
            line += f": the h2 workers are the limit, raise H2MaxWorkers ({mix.h2_workers_source})"
        out.append(line)
    return out


def parse_share(text: str, option: str = "--h2-share") -> float:
    """'0.4' -> 0.4; ValueError with the reason otherwise."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{option} {text!r}: not a number (a share between 0 and 1, e.g. 0.6)") from None
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"{option} {text}: a share must lie between 0 and 1 (e.g. 0.6 for 60 % of visitors)")
    return value
