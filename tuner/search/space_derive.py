"""The search space derived from the config in use: its MPM's pool, the
common dimensions, the guards RAM and the kernel set, and the config's own
values as the starting point (advisor.tuner.search.space holds the
dimensions and the Space itself)."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Mapping, Sequence

from advisor.errors import UsageError
from advisor.tuner.search.space import (ALIASES, ASYNC_FACTOR_GUARD, CORE_DEFAULTS, DEFAULT_SOMAXCONN,
                                        H2_PROTOCOL_CHOICES, MAX_SPAWN_RATE, MCPC_ERROR_LIMIT, MCPC_TOP, MPMS, ON_OFF,
                                        THREADED, THREADS_PER_CHILD_GUARD, Dimension, Space, Value, fix_dimension)

if TYPE_CHECKING:
    from advisor.config.model import Config


def derive_space(cfg: "Config", ram_workers: int | Mapping[str, int], *, allow_mpm_switch: bool = False,
                 somaxconn: int = DEFAULT_SOMAXCONN, ram_why: str = "", over_tls: bool = False,
                 http2: bool = False, protocol: str | None = None, h2_idle_ms: float | None = None) -> Space:
    """The search space for the config in use.

    `ram_workers`: how many workers RAM holds, from capacity's sizing
    (`advisor.capacity.sizing.recommend(...).max_request_workers`), for the
    config's MPM, or per MPM when the MPM may switch (a threaded worker costs
    far less memory than a prefork child). `somaxconn`: the kernel's cap on
    any listen backlog (/proc/sys/net/core/somaxconn on the target).
    `over_tls`: every request of the trials is HTTPS, where EnableSendfile
    does nothing (TLS_LEAVES_OUT). `http2`: every visitor speaks HTTP/2
    (--protocol h2), which mod_http2 never negotiates under prefork
    (AH10034): prefork is not a point of the MPM switch. `protocol` (h1, h2
    or mix; h2 when only `http2` is given) adds mod_http2's dimensions when
    the config loads it (h2_dimensions).
    """
    protocol = protocol or ("h2" if http2 else "h1")
    http2 = http2 or protocol == "h2"
    mpm = cfg.mpm
    if mpm not in MPMS:
        raise UsageError(
            f"the config loads {'no MPM' if mpm is None else 'the ' + str(mpm) + ' MPM'}; "
            "tune knows prefork, worker and event",
            file=cfg.main_file, hint="load one of them with LoadModule")
    kept = mpm_kept_by(cfg) if allow_mpm_switch else None
    if kept is not None:
        allow_mpm_switch = False
    switchable = tuple(m for m in MPMS if not (http2 and m == "prefork"))
    bounds = _ram_bounds(ram_workers, mpm, allow_mpm_switch, switchable)
    mpms = switchable if allow_mpm_switch else (mpm,)
    dims: list[Dimension] = []
    notes: list[str] = []
    if allow_mpm_switch:
        dims.append(Dimension("MPM", "choice", choices=switchable, guard=switchable,
                              why="--allow-mpm-switch: changing it needs a full restart, not a reload"))
        if http2:
            notes.append("prefork left out of the MPM switch: mod_http2 does not run under it (AH10034), "
                         "so its HTTP/2 visitors would be served HTTP/1.1")
    dims.extend(_pool_dimensions(mpms, bounds, ram_why))
    common = _common_dimensions(somaxconn)
    if over_tls:
        common = [d for d in common if d.name not in TLS_LEAVES_OUT]
        notes.extend(f"{name} left out: {why}" for name, why in TLS_LEAVES_OUT.items())
    dims.extend(common)
    if _writes_access_log(cfg):
        dims.append(_choice("BufferedLogs", "collects log lines in memory and writes them in batches; "
                            "Arlitt & Williamson (2004, sec. 5.1.2) measured the access log at about -10 % "
                            "of the peak, Almeida et al. at about 23 ms per connection"))
    else:
        notes.append("BufferedLogs left out: the config writes no access log, so there is nothing to buffer")
    h2_dims, h2_notes = h2_dimensions(cfg, protocol, mpms)
    dims.extend(h2_dims)
    notes.extend(h2_notes)
    if h2_dims and h2_idle_ms:
        dims = keep_h2_connections_open(dims, h2_idle_ms)
    if kept is not None:
        notes.insert(0, kept)
    space = Space(mpm=mpm, dimensions=dims, start={}, notes=notes, ram_workers=dict(bounds),
                  source=cfg.main_file)
    space.start, space.start_notes, space.start_written = _start_point(cfg, space)
    for d in list(space.dimensions):
        if d.kind == "int" and d.low == d.high:
            fix_dimension(space, d, d.low)
    return space


def loaded_mpm_line(cfg: "Config"):
    """The active `LoadModule mpm_X_module` line of the config's MPM, or None.
    LoadModule acts while httpd reads, so it is found in the raw tree."""
    wanted = f"mpm_{cfg.mpm}_module"
    return next((d for d in cfg.raw.directives("LoadModule")
                 if getattr(d, "active", True) and d.args[:1] == [wanted]), None)


def mpm_kept_by(cfg: "Config") -> str | None:
    """Why the MPM may not switch (one line), or None: a loaded module that is
    not thread-safe (lint P113's list: mod_php, mod_python, mod_ruid2...)
    pins the server to prefork, the only MPM without threads."""
    from advisor.rules.p113_prefork_not_needed import NEEDS_PREFORK

    for node in cfg.raw.directives("LoadModule"):
        if getattr(node, "active", True) and node.args and node.args[0] in NEEDS_PREFORK:
            return (f"MPM kept at {cfg.mpm}: {node.file}:{node.line} loads {node.args[0]}, which is not "
                    "thread-safe and needs prefork (lint P113); --allow-mpm-switch leaves the MPM alone")
    return None


def _ram_bounds(ram_workers: int | Mapping[str, int], mpm: str, switch: bool,
                switchable: tuple[str, ...] = MPMS) -> dict[str, int]:
    if isinstance(ram_workers, Mapping):
        bounds = {str(k): int(v) for k, v in ram_workers.items()}
        wanted = switchable if switch else (mpm,)
        missing = [m for m in wanted if m not in bounds]
        if missing:
            raise UsageError(f"no RAM sizing for the {', '.join(missing)} MPM",
                             hint="size the pool with capacity for every MPM the search may use")
        bounds = {m: bounds[m] for m in wanted}
    else:
        bounds = {m: int(ram_workers) for m in (switchable if switch else (mpm,))}
    for name, value in bounds.items():
        if value < 1:
            raise UsageError(f"no {name} worker fits in RAM (capacity's sizing gave {value})",
                             hint="give the host more RAM or stop other services, then size again")
    return bounds


def _choice(name: str, why: str, mpms: tuple[str, ...] = MPMS) -> Dimension:
    return Dimension(name, "choice", choices=ON_OFF, guard=ON_OFF, why=why, mpms=mpms)


def _int(name: str, low: int, high: int, why: str, *, log: bool = False, unit: str = "",
         unlimited_at_top: bool = False, mpms: tuple[str, ...] = MPMS) -> Dimension:
    high = max(high, low)
    return Dimension(name, "int", low=low, high=high, log=log and high > low, why=why, unit=unit,
                     guard=(low, high), unlimited_at_top=unlimited_at_top, mpms=mpms)


def _pool_dimensions(mpms: Sequence[str], bounds: Mapping[str, int], ram_why: str) -> list[Dimension]:
    top = max(bounds.values())
    floor = min(16, top)
    sized = ", ".join(f"{m} {bounds[m]:,}" for m in mpms) if len(mpms) > 1 else f"{top:,}"
    why = (f"{floor}: fewer and a few slow clients hold the whole pool; {sized}: what RAM holds by "
           "capacity's sizing (Kegel 1997: RAM = OS + per process + per connection + hot documents; "
           "a pool past RAM swaps and stops answering)")
    if ram_why:
        why += f" [{ram_why}]"
    dims = [_int("MaxRequestWorkers", floor, top, why, log=True)]
    if "prefork" in mpms:
        prefork = ("prefork",)
        # Only a limit the RAM bound allows (a pool of 10 cannot keep 64 spare).
        cap = bounds.get("prefork", top)
        dims += [
            _int("StartServers", 1, min(MAX_SPAWN_RATE, cap),
                 f"children forked at start and after a restart; prefork forks up to {MAX_SPAWN_RATE} a "
                 "second by itself, so a larger start only matters in the first seconds", mpms=prefork),
            _int("MinSpareServers", 1, min(64, cap),
                 "idle children kept ready for a burst; past 64 they only hold RAM", mpms=prefork),
            _int("MaxSpareServers", 2, min(128, max(2, cap)),
                 "idle children above this are stopped; Arlitt & Williamson (2004, sec. 5.1.5, Fig. 9) "
                 "measured every static pool below the dynamic default", mpms=prefork),
        ]
    threaded = tuple(m for m in mpms if m in THREADED)
    if threaded:
        cap = max(bounds[m] for m in threaded)
        dims += [
            _int("ThreadsPerChild", min(THREADS_PER_CHILD_GUARD[0], cap), min(THREADS_PER_CHILD_GUARD[1], cap),
                 "8: fewer threads per child gives up the threaded MPM's memory saving; 64: httpd's default "
                 "ThreadLimit (ThreadLimit follows ThreadsPerChild)", mpms=threaded),
            _int("MinSpareThreads", 1, min(256, cap),
                 "idle threads kept ready for a burst; beyond 256 they only hold memory", mpms=threaded),
            _int("MaxSpareThreads", 2, min(512, max(2, cap)),
                 "idle threads above this stop their child; raised to MinSpareThreads + ThreadsPerChild "
                 "when lower, as httpd would", mpms=threaded),
        ]
    if "event" in mpms:
        dims.append(_int("AsyncRequestWorkerFactor", *ASYNC_FACTOR_GUARD,
                         "event only: each child takes connections up to ThreadsPerChild + this factor x its "
                         "idle threads, kept-alive and lingering ones parked without a thread; 1 parks little, "
                         "past 8 a burst of parked connections wakes more requests than there are threads "
                         "(httpd's default 2)", mpms=("event",)))
    return dims


def _common_dimensions(somaxconn: int) -> list[Dimension]:
    backlog_top = max(128, int(somaxconn))
    return [
        _int("MaxConnectionsPerChild", MCPC_ERROR_LIMIT + 1, MCPC_TOP,
             "lint calls 1,000 or less an error: Arlitt & Williamson (2004, sec. 5.1.3) measured the peak "
             "cut in half at 1,000 and by about 15 % at 10,000; the top stands for 0 (never recycle)",
             log=True, unlimited_at_top=True),
        _choice("KeepAlive", "persistent connections: Arlitt & Williamson (2004, sec. 5.1.6) measured "
                             "+32 % at 2 requests per connection, +53 % at 8; under prefork each open "
                             "connection holds a worker while its client thinks"),
        _int("KeepAliveTimeout", 100, 15_000,
             "100 ms: httpd 2.4 takes milliseconds, and below this even a fast client misses the window; "
             "15 s: Debian's own value, each idle second holds a prefork or worker thread (lint P104)",
             log=True, unit="ms"),
        _int("MaxKeepAliveRequests", 10, 1000,
             "10: throughput was still rising at 8 requests per connection (Arlitt & Williamson 2004, "
             "sec. 5.1.6); the top stands for 0 (unlimited)", log=True, unlimited_at_top=True),
        _choice("EnableSendfile", "send files from the page cache without a copy: what Hu, Nanda & Yang "
                                  "(1999) proposed next after their +61 %"),
        _choice("EnableMMAP", "map files instead of reading them when sendfile is not used; no seed "
                              "measured it: the +28 % of Arlitt & Williamson (2004, sec. 5.1.4) came "
                              "from MMapFile (mod_file_cache mapping one file at start-up), not EnableMMAP"),
        _choice("HostnameLookups", "a reverse DNS lookup per request holds the worker meanwhile "
                                   "(lint P107; no seed measured it)"),
        _int("ListenBacklog", 128, backlog_top,
             f"128: lint P112's floor; {backlog_top:,}: the kernel caps any backlog at net.core.somaxconn; "
             "Arlitt & Williamson (2004, sec. 5.1.7) saw little effect while the CPU is the bottleneck",
             log=True),
    ]


# Dimensions the trials cannot move when every request is HTTPS. mod_ssl
# encrypts in user space, so httpd 2.4 writes a TLS reply's body through the
# SSL filter and never hands the file to sendfile(): a strace of this
# sandbox serving a 1 MiB file once over HTTP and once over HTTPS showed one
# sendfile() call, the plain one (tests/test_tls_sendfile.py keeps that true).
TLS_LEAVES_OUT = {
    "EnableSendfile": "every trial request is HTTPS, and httpd never sends a file with sendfile() over TLS "
                      "(mod_ssl encrypts the body in user space): the trials could not measure it, and the "
                      "config's value stays",
}


HTTP2_MODULES = ("http2_module", "mod_http2.c")
H2_SESSION_STREAMS_GUARD = (6, 400)
H2_WORKERS_GUARD = (8, 96)


def h2_dimensions(cfg: "Config", protocol: str, mpms: Sequence[str]) -> tuple[list[Dimension], list[str]]:
    """mod_http2's dimensions for trials with HTTP/2 visitors, and the notes
    on what is left out. Only with mod_http2 loaded and --protocol h2 or mix.

    `Protocols` (h2 offered or not) is a dimension under a mix only: its
    "off" point serves the HTTP/2 share HTTP/1.1, as a server without h2
    does, which a mix measures; under h2 alone that point is refused (a
    trial that asks for HTTP/2 and gets HTTP/1.1 is not measured). A prefork
    point of a mix writes `Protocols http/1.1` (Space.settings): mod_http2
    does not run there, and the line says what its visitors get."""
    if protocol not in ("h2", "mix") or not any(name in cfg.modules for name in HTTP2_MODULES):
        return [], []
    dims: list[Dimension] = []
    notes = ["H2WindowSize left out: it is the flow-control window of what a client uploads, and the browser "
             "workload uploads nothing; replies go out under the client's window"]
    threaded = tuple(m for m in mpms if m in THREADED)
    if protocol == "mix" and not threaded:
        notes.append("Protocols left out: prefork serves HTTP/1.1 whatever is offered (AH10034), so offering h2 "
                     "or not is the same point")
    elif protocol == "mix":
        dims.append(Dimension("Protocols", "choice", choices=H2_PROTOCOL_CHOICES, guard=H2_PROTOCOL_CHOICES,
                              why="h2 offered or not: without it the HTTP/2 share of a mix speaks HTTP/1.1 (six "
                                  "connections and handshakes a visitor instead of one); prefork serves "
                                  "HTTP/1.1 whatever is offered (AH10034)"))
    else:
        notes.append("Protocols left out: under --protocol h2 every visitor speaks HTTP/2, and a point that "
                     "stops offering h2 would serve them HTTP/1.1, which an h2 trial refuses to measure")
    if threaded:
        dims.append(_int("H2MaxSessionStreams", *H2_SESSION_STREAMS_GUARD,
                         "streams a visitor's connection may have open at once: 6, lint C209's floor (fewer "
                         "than the six connections of an HTTP/1.1 browser); 100, mod_http2's documented "
                         "default; 400, four times it", log=True, mpms=threaded))
        dims.append(_int("H2MaxWorkers", *H2_WORKERS_GUARD,
                         "mod_http2's threads a child (a stream runs on one until its reply is produced): "
                         "8, the fewest ThreadsPerChild the search tries; 96, 3/2 of its most (64), mod_http2's "
                         "default ratio (it logged workers_max=37 at 25 threads); raised to ThreadsPerChild "
                         "when lower, as lint C209 asks", log=True, mpms=threaded))
    return dims, notes


def keep_h2_connections_open(dims: list[Dimension], idle_ms: float) -> list[Dimension]:
    """KeepAliveTimeout's floor where visitors speak HTTP/2: half again how
    long a visitor's connection idles between pages (`idle_ms`: think time
    and round trip).

    mod_http2 closes a connection idle past KeepAliveTimeout. A browser then
    opens a new one for its next page; h2load does not, and counts the rest
    of the visit as failed requests: in the README's HTTP/2 session every
    point with a timeout of 138-356 ms read exactly 60 % errors (the later
    two pages of three) and 0 under the SLO. Checked with h2load on this
    httpd 2.4.71 (event): a request 600 ms after the first on the same
    connection failed under KeepAliveTimeout 200ms and succeeded under 2 s
    and under KeepAlive Off, so KeepAlive itself stays in the search."""
    floor = int(math.ceil(1.5 * idle_ms / 100.0) * 100)
    kept: list[Dimension] = []
    for dim in dims:
        if dim.name == "KeepAliveTimeout" and dim.low < floor <= dim.high:
            dim = replace(dim, low=floor, guard=(floor, dim.high),
                          why=f"{floor:,} ms: half again the {idle_ms:,.0f} ms a visitor's HTTP/2 connection idles "
                              "between pages (think time and round trip); mod_http2 closes it after "
                              "KeepAliveTimeout, and h2load does not reconnect as a browser does. " + dim.why)
        kept.append(dim)
    return kept


def _writes_access_log(cfg: "Config") -> bool:
    """An access log anywhere in what httpd applies (server or a virtual host)."""
    if "log_config_module" not in cfg.modules and "mod_log_config.c" not in cfg.modules:
        return False
    for node in cfg.effective.walk():
        if getattr(node, "name", "").lower() in ("customlog", "transferlog"):
            return True
    return False


# --------------------------------------------------------------------------
# The starting config as a point


_TIME = re.compile(r"^\s*(\d+)\s*(ms|s|mi|h)?\s*$", re.IGNORECASE)
_TIME_MS = {"ms": 1, "s": 1000, "mi": 60_000, "h": 3_600_000}


def parse_timeout_ms(text: str) -> int | None:
    """httpd's time argument ("5", "500ms", "2mi") in milliseconds."""
    match = _TIME.match(text or "")
    if not match:
        return None
    return int(match.group(1)) * _TIME_MS[(match.group(2) or "s").lower()]


def _written(cfg: "Config", name: str):
    """The directive httpd applies for `name` at server scope, old spelling
    included: the last one read wins, whichever name it used."""
    found = cfg.server_directives(*ALIASES.get(name, (name,)))
    return found[-1] if found else None


def _defaults_for(mpm: str) -> dict[str, Value]:
    from advisor.rules._mpm import DEFAULTS

    canonical = {"startservers": "StartServers", "minspareservers": "MinSpareServers",
                 "maxspareservers": "MaxSpareServers", "minsparethreads": "MinSpareThreads",
                 "maxsparethreads": "MaxSpareThreads", "threadsperchild": "ThreadsPerChild",
                 "maxrequestworkers": "MaxRequestWorkers"}
    out: dict[str, Value] = dict(CORE_DEFAULTS)
    for key, value in DEFAULTS.get(mpm, {}).items():
        if key in canonical:
            out[canonical[key]] = value
    out.update(h2_defaults(out.get("ThreadsPerChild")))
    return out


def h2_defaults(threads_per_child: Value | None) -> dict[str, Value]:
    """mod_http2's values when unset: 100 streams a connection, and workers
    3/2 of the MPM's threads a child (it logged workers_max=37 at 25)."""
    out: dict[str, Value] = {"H2MaxSessionStreams": 100}
    if threads_per_child is not None:
        out["H2MaxWorkers"] = int(threads_per_child) * 3 // 2
    return out


def _read_value(dim: Dimension, text: str) -> Value | None:
    if dim.name == "KeepAliveTimeout":
        return parse_timeout_ms(text)
    if dim.name == "Protocols":
        return H2_PROTOCOL_CHOICES[0] if "h2" in text.lower().split() else H2_PROTOCOL_CHOICES[1]
    if dim.kind == "choice":
        word = text.strip().lower()
        if dim.name == "HostnameLookups" and word == "double":
            return "On"  # two lookups instead of one: the same dimension's costly end
        return next((c for c in dim.choices if c.lower() == word), None)
    try:
        return int(text.strip())
    except ValueError:
        return None


def _start_point(cfg: "Config", space: Space) -> tuple[dict[str, Value], list[str], dict[str, Value]]:
    defaults = _defaults_for(space.mpm)
    point: dict[str, Value] = {}
    notes: list[str] = []
    written: dict[str, Value] = {}
    for d in space.dimensions:
        if d.name == "MPM":
            point[d.name] = space.mpm
            continue
        node = _written(cfg, d.name)
        value: Value | None = None
        if node is not None:
            value = _read_value(d, node.args[0] if node.args else "")
            if value is None:
                notes.append(f"{node.file}:{node.line}: {d.name} {node.raw_args!r} is not a value the "
                             f"search can start from; starting from httpd's default")
        if value is None:
            value = defaults.get(d.name)
        if d.kind == "int" and space.mpm not in d.mpms:
            # A directive of another MPM (only with an MPM switch): what a fresh
            # install of that MPM runs, httpd's default.
            value = _defaults_for(d.mpms[0]).get(d.name)
        if value is None:
            value = d.choices[0] if d.kind == "choice" else _middle(d)
        if d.unlimited_at_top and value == 0:
            value = d.high
        if not d.contains(value):
            clipped = d.clip(value)
            where = f"{node.file}:{node.line}: " if node is not None else ""
            notes.append(f"{where}{d.name} {value} is outside the search ({d.low:,}..{d.high:,}): the start is "
                         f"measured as written, and {clipped} stands for it in the search; moving off it is a "
                         f"change measured like any other")
            written[d.name] = value
            value = clipped
        point[d.name] = value
    return point, notes, written


def _middle(d: Dimension) -> int:
    if d.log:
        return d.clip(int(round(math.sqrt(d.low * d.high))))
    return (d.low + d.high) // 2
