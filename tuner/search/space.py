"""The search space of `apache-advisor tune`: which directives it may change, and how far.

Every dimension is bounded by a guard with a reason, never by hope: the
worker pool by what RAM holds (capacity's Kegel sum, passed in as a number),
MaxConnectionsPerChild by what lint calls an error, the rest by httpd's own
limits or by the point past which the measured studies saw nothing to gain.

A point is a plain dict {dimension name: int | str}. `Space.settings` turns it
into the directive values httpd will be given, after the consistency fixes a
careful admin would make (ServerLimit covering MaxRequestWorkers, a threaded
pool a whole number of children, MaxSpare above MinSpare), so that no point
the optimizer proposes asks httpd to silently correct it.

Pure Python: skopt is imported only by `skopt_dimensions`, and the config
model only through the `Config` object the caller passes in.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from advisor.errors import UsageError

if TYPE_CHECKING:
    from advisor.config.model import Config

MPMS = ("prefork", "worker", "event")
THREADED = ("worker", "event")
ON_OFF = ("On", "Off")

Value = int | str

# httpd's prefork parent doubles the children it forks per second while idle
# workers are short, up to this many (MAX_SPAWN_RATE in prefork.c).
MAX_SPAWN_RATE = 32
# Linux's default net.core.somaxconn since 5.4; older kernels used 128.
DEFAULT_SOMAXCONN = 4096
# Lint (P101) calls a MaxConnectionsPerChild of 1,000 or less an error:
# Arlitt & Williamson (2004, sec. 5.1.3) saw the peak cut in half or worse.
MCPC_ERROR_LIMIT = 1000
# The threaded pool's guards. RAM sizing (tune's ram_workers) takes a worker
# at its costliest point of the space: the fewest threads sharing a child's
# memory, and under event the most parked connections per worker.
THREADS_PER_CHILD_GUARD = (8, 64)
ASYNC_FACTOR_GUARD = (1, 8)
# At a million connections per child a child is recycled less than once an
# hour at the rates a staging box sustains: no different from unlimited.
MCPC_TOP = 1_000_000

# httpd 2.4's defaults for what the space reads when the config is silent.
# (The MPM pool's own defaults live in advisor.rules._mpm.DEFAULTS.)
CORE_DEFAULTS: dict[str, Value] = {
    "KeepAlive": "On", "KeepAliveTimeout": 5000, "MaxKeepAliveRequests": 100,
    "EnableSendfile": "Off", "EnableMMAP": "On", "HostnameLookups": "Off",
    "BufferedLogs": "Off", "ListenBacklog": 511, "MaxConnectionsPerChild": 0,
    "AsyncRequestWorkerFactor": 2,
}
# Old spellings httpd 2.4 still reads for the same setting.
ALIASES = {"MaxRequestWorkers": ("MaxRequestWorkers", "MaxClients"),
           "MaxConnectionsPerChild": ("MaxConnectionsPerChild", "MaxRequestsPerChild")}
# Set from other dimensions, never searched on their own.
DERIVED = {
    "ServerLimit": "it follows MaxRequestWorkers (and ThreadsPerChild); narrow those instead",
    "ThreadLimit": "it follows ThreadsPerChild; narrow that instead",
}


@dataclass(frozen=True)
class Dimension:
    """One thing the tuner may change, with the guard that bounds it."""

    name: str
    """The directive it sets (httpd's spelling), or "MPM"."""
    kind: str
    """"int" (a range) or "choice" (a few words)."""
    low: int = 0
    high: int = 0
    choices: tuple[str, ...] = ()
    log: bool = False
    """Search on a log scale: its effects are multiplicative (pool sizes, limits)."""
    why: str = ""
    """Why the bounds are where they are (shown in the plan)."""
    unit: str = ""
    guard: tuple[int, int] | tuple[str, ...] = ()
    """The widest range allowed (a --space file may narrow, never widen)."""
    fixed: Value | None = None
    unlimited_at_top: bool = False
    """The top of the range is written as 0 (httpd's "unlimited")."""
    mpms: tuple[str, ...] = MPMS
    """The MPMs the directive exists for (only matters with an MPM switch)."""

    @property
    def is_fixed(self) -> bool:
        return self.fixed is not None

    def contains(self, value: Value) -> bool:
        if self.kind == "choice":
            return value in self.choices
        return isinstance(value, int) and self.low <= value <= self.high

    def clip(self, value: Value) -> Value:
        if self.kind == "choice":
            return value if value in self.choices else self.choices[0]
        return min(max(int(value), self.low), self.high)

    def describe(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        if self.is_fixed:
            span = f"fixed at {self.fixed}{unit}"
        elif self.kind == "choice":
            span = " | ".join(self.choices)
        else:
            span = f"{self.low:,}..{self.high:,}{unit}" + (" (log scale)" if self.log else "")
            if self.unlimited_at_top:
                span += f"; {self.high:,} is written as 0 (unlimited)"
        return f"{self.name}: {span}. {self.why}".rstrip()

    def signature(self) -> dict[str, Any]:
        """What makes two dimensions the same search (the `why` text is not)."""
        return {"name": self.name, "kind": self.kind, "low": self.low, "high": self.high,
                "choices": list(self.choices), "log": self.log, "fixed": self.fixed,
                "unlimited_at_top": self.unlimited_at_top, "mpms": list(self.mpms)}


@dataclass
class Space:
    """The dimensions for one config, and how a point becomes directives."""

    mpm: str
    """The MPM of the config in use."""
    dimensions: list[Dimension]
    start: dict[str, Value]
    """The starting config as a point of this space (clipped into it)."""
    start_notes: list[str] = field(default_factory=list)
    """Where the starting config lies outside the space, and what stands for it."""
    notes: list[str] = field(default_factory=list)
    """Directives left out of the search, and why."""
    ram_workers: dict[str, int] = field(default_factory=dict)
    source: str = ""
    """The main config file the space was derived from."""
    unwritten: list[str] = field(default_factory=list)
    """Directives no trial writes: a later line of the config overrides them (see leave_out)."""
    start_written: dict[str, Value] = field(default_factory=dict)
    """The config's own value of each dimension whose start lies outside the
    space (MaxConnectionsPerChild 100 below 1,001): a point that keeps the
    start's clipped value stands for it, so the start is measured, and
    recommended against, as written, and moving off it (the clip included)
    is a change like any other."""

    # ---- the dimensions --------------------------------------------------

    def dimension(self, name: str) -> Dimension | None:
        wanted = name.lower()
        return next((d for d in self.dimensions if d.name.lower() == wanted), None)

    def value_text(self, name: str, value: Value) -> str:
        """A searched value as httpd.conf writes it: a dimension's top that
        stands for 0 (unlimited) is 0, what the admin wrote, whatever a
        --space file narrowed the top to (format_value knows no dimension)."""
        dim = self.dimension(name)
        if dim is not None and dim.unlimited_at_top and value == dim.high:
            return "0"
        return format_value(name, value)

    @property
    def free(self) -> list[Dimension]:
        """The dimensions the optimizer searches, in a fixed order."""
        return [d for d in self.dimensions if not d.is_fixed]

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.free]

    def skopt_dimensions(self) -> list:
        """The free dimensions as scikit-optimize sees them."""
        from skopt.space import Categorical, Integer

        out = []
        for d in self.free:
            if d.kind == "choice":
                out.append(Categorical(list(d.choices), name=d.name))
            else:
                out.append(Integer(d.low, d.high, prior="log-uniform" if d.log else "uniform", name=d.name))
        return out

    def to_values(self, point: Mapping[str, Value]) -> list[Value]:
        """A point as the list skopt takes (free dimensions only)."""
        return [point[d.name] for d in self.free]

    def to_point(self, values: Sequence[Any]) -> dict[str, Value]:
        """skopt's list back to a point, fixed dimensions included.

        skopt hands out numpy integers and strings; httpd.conf and JSON want
        plain Python, so every value is cast here, once.
        """
        if len(values) != len(self.free):
            raise ValueError(f"expected {len(self.free)} values, got {len(values)}")
        point: dict[str, Value] = {}
        for d in self.dimensions:
            point[d.name] = d.fixed  # type: ignore[assignment]
        for d, value in zip(self.free, values):
            point[d.name] = str(value) if d.kind == "choice" else int(value)
        return point

    def contains(self, point: Mapping[str, Value]) -> bool:
        return all(d.name in point and d.contains(point[d.name]) for d in self.dimensions)

    def random_points(self, count: int, seed: int) -> list[dict[str, Value]]:
        """Uniform (log-uniform where marked) points, without skopt."""
        import random

        rng = random.Random(seed)
        points = []
        for _ in range(count):
            point: dict[str, Value] = {}
            for d in self.dimensions:
                if d.is_fixed:
                    point[d.name] = d.fixed  # type: ignore[assignment]
                elif d.kind == "choice":
                    point[d.name] = rng.choice(d.choices)
                elif d.log:
                    point[d.name] = d.clip(int(round(math.exp(rng.uniform(math.log(d.low), math.log(d.high))))))
                else:
                    point[d.name] = rng.randint(d.low, d.high)
            points.append(point)
        return points

    def evidence_point(self, base: Mapping[str, Value] | None = None) -> dict[str, Value]:
        """`base` (the starting config by default) with what lint and the
        evidence page recommend applied: for the start, the point an admin
        reaches by fixing the warnings alone.

        Worth a trial of its own: a tuner that cannot beat it has not earned
        its budget, and it gives the surrogate a second well-chosen point.
        KeepAlive and its timeout are the trade-off the search is for, so
        for any base other than the start they stay as the base has them.
        """
        base = self.start if base is None else base
        wanted: dict[str, Value] = {
            "KeepAlive": "On",                       # P102; Arlitt & Williamson sec. 5.1.6
            "EnableSendfile": "On", "EnableMMAP": "On",   # P108; Hu et al.; sec. 5.1.4
            "HostnameLookups": "Off",                # P107
            "BufferedLogs": "On",                    # P106; Almeida et al.
        }
        for name in ("MaxConnectionsPerChild", "MaxKeepAliveRequests"):  # P101, P103
            d = self.dimension(name)
            if d is not None:
                wanted[name] = d.high
        d = self.dimension("MaxRequestWorkers")
        if d is not None:
            wanted["MaxRequestWorkers"] = d.high     # Kegel: what RAM allows
        timeout = self.dimension("KeepAliveTimeout")
        if timeout is not None:                      # P104: 5 s at most
            wanted["KeepAliveTimeout"] = min(int(base["KeepAliveTimeout"]), 5000)
        backlog = self.dimension("ListenBacklog")
        if backlog is not None:                      # P112: httpd's 511 at least
            wanted["ListenBacklog"] = max(int(base["ListenBacklog"]), 511)
        wanted.update(_spare_band_fix(base))
        if base is not self.start:
            wanted.pop("KeepAlive")
            wanted.pop("KeepAliveTimeout", None)
        point = dict(base)
        for name, value in wanted.items():
            d = self.dimension(name)
            if d is not None and not d.is_fixed:
                point[d.name] = d.clip(value)
        return point

    # ---- a point as httpd settings ---------------------------------------

    def mpm_of(self, point: Mapping[str, Value]) -> str:
        return str(point.get("MPM", self.mpm))

    def as_written(self, point: Mapping[str, Value]) -> dict[str, Value]:
        """The point with the config's own value wherever it keeps the start's clipped one (start_written)."""
        out = dict(point)
        for name, value in self.start_written.items():
            if name in out and out[name] == self.start.get(name):
                out[name] = value
        return out

    def keeps_written_start(self, point: Mapping[str, Value], name: str) -> bool:
        """Whether the point keeps a clipped start's value, which then stands for the config's own line."""
        return name in self.start_written and point.get(name) == self.start.get(name)

    def settings(self, point: Mapping[str, Value], *, reload_safe: bool = False) -> dict[str, Value]:
        """The directive values for a point, made consistent.

        `reload_safe`: ServerLimit and ThreadLimit take the largest values any
        point of the space needs, instead of following this point. httpd
        ignores a change to either on a graceful restart (the scoreboard is
        sized once), so a trial that raised MaxRequestWorkers above the
        ServerLimit it started with would silently run the smaller pool.
        The recommendation itself uses the tight values (reload_safe=False).
        A point that keeps a clipped start's value gets the config's own
        value (start_written).
        """
        point = self.as_written(point)
        mpm = self.mpm_of(point)
        out: dict[str, Value] = {}
        bound = self.ram_workers.get(mpm)
        workers = int(point["MaxRequestWorkers"])
        if bound is not None:
            workers = min(workers, bound)
        if mpm == "prefork":
            out["ServerLimit"] = self._pinned_server_limit(mpm) if reload_safe else workers
            out["MaxRequestWorkers"] = workers
            start = min(int(point["StartServers"]), workers)
            low = min(int(point["MinSpareServers"]), workers)
            # httpd itself raises MaxSpareServers to MinSpareServers + 1.
            high = max(int(point["MaxSpareServers"]), low + 1)
            out.update(StartServers=start, MinSpareServers=low, MaxSpareServers=high)
        else:
            threads = min(int(point["ThreadsPerChild"]), workers)
            # httpd rounds MaxRequestWorkers down to whole children.
            workers = max(threads, workers - workers % threads)
            if reload_safe:
                out["ThreadLimit"] = self._pinned_thread_limit(mpm)
                out["ServerLimit"] = self._pinned_server_limit(mpm)
            else:
                out["ThreadLimit"] = threads
                out["ServerLimit"] = workers // threads
            out["ThreadsPerChild"] = threads
            out["MaxRequestWorkers"] = workers
            low = min(int(point["MinSpareThreads"]), workers)
            # worker and event need MaxSpareThreads >= MinSpareThreads +
            # ThreadsPerChild, and raise it themselves otherwise (lint C204).
            high = max(int(point["MaxSpareThreads"]), low + threads)
            out.update(MinSpareThreads=low, MaxSpareThreads=high)
        for d in self.dimensions:
            if d.name in out or d.name == "MPM" or mpm not in d.mpms:
                continue
            value = point[d.name]
            if d.unlimited_at_top and value == d.high:
                value = 0
            out[d.name] = value
        return out

    def directives(self, point: Mapping[str, Value], *, reload_safe: bool = False,
                   own_lines: bool = True) -> list[str]:
        """The point as httpd.conf lines, one directive each (none for a directive left out).

        `own_lines=False` leaves out the lines that only repeat the config's
        own value of a clipped start (what a drop-in would not write)."""
        skip = set(self.unwritten)
        if not own_lines:
            skip.update(name for name in self.start_written if self.keeps_written_start(point, name))
        return [f"{name} {format_value(name, value)}"
                for name, value in self.settings(point, reload_safe=reload_safe).items() if name not in skip]

    def _pinned_server_limit(self, mpm: str) -> int:
        top = self._top_workers(mpm)
        if mpm == "prefork":
            return top
        threads = self.dimension("ThreadsPerChild")
        fewest = threads.fixed if threads and threads.is_fixed else (threads.low if threads else 25)
        return math.ceil(top / max(1, int(fewest)))

    def _pinned_thread_limit(self, mpm: str) -> int:
        threads = self.dimension("ThreadsPerChild")
        if threads is None:
            return 25
        return int(threads.fixed) if threads.is_fixed else threads.high

    def _top_workers(self, mpm: str) -> int:
        d = self.dimension("MaxRequestWorkers")
        top = int(d.fixed) if d is not None and d.is_fixed else (d.high if d else 256)
        bound = self.ram_workers.get(mpm)
        return min(top, bound) if bound is not None else top

    # ---- for the plan and the journal ------------------------------------

    def describe(self) -> list[str]:
        lines = [d.describe() for d in self.dimensions]
        return lines + self.notes

    def signature(self) -> dict[str, Any]:
        """What the journal compares on resume: the same search, or not."""
        out = {"mpm": self.mpm, "dimensions": [d.signature() for d in self.dimensions],
               "ram_workers": dict(sorted(self.ram_workers.items()))}
        if self.unwritten:
            out["unwritten"] = list(self.unwritten)
        if self.start_written:  # the start was measured as written: another search than a clipped one
            out["start_written"] = dict(sorted(self.start_written.items()))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {**self.signature(), "why": {d.name: d.why for d in self.dimensions},
                "start": dict(self.start), "start_notes": list(self.start_notes),
                "notes": list(self.notes), "source": self.source}


def _spare_band_fix(base: Mapping[str, Value]) -> dict[str, Value]:
    """Lint P105's fix for an idle band too narrow to ride out a burst."""
    from advisor.rules.p105_static_pool import PREFORK_MIN_BAND, THREADED_MIN_BAND_CHILDREN

    if "MinSpareServers" in base and "MaxSpareServers" in base:
        low = int(base["MinSpareServers"])
        if int(base["MaxSpareServers"]) - low < PREFORK_MIN_BAND:
            return {"MaxSpareServers": low + PREFORK_MIN_BAND + 2}
    if {"MinSpareThreads", "MaxSpareThreads", "ThreadsPerChild"} <= set(base):
        low, threads = int(base["MinSpareThreads"]), int(base["ThreadsPerChild"])
        if int(base["MaxSpareThreads"]) - low < THREADED_MIN_BAND_CHILDREN * threads:
            return {"MaxSpareThreads": low + THREADED_MIN_BAND_CHILDREN * threads}
    return {}


def format_value(name: str, value: Value) -> str:
    """httpd's way of writing a value; KeepAliveTimeout is searched in ms."""
    if name == "KeepAliveTimeout":
        ms = int(value)
        return str(ms // 1000) if ms % 1000 == 0 else f"{ms}ms"
    return str(value)


# --------------------------------------------------------------------------
# Deriving the space from a config


def derive_space(cfg: "Config", ram_workers: int | Mapping[str, int], *, allow_mpm_switch: bool = False,
                 somaxconn: int = DEFAULT_SOMAXCONN, ram_why: str = "", over_tls: bool = False) -> Space:
    """The search space for the config in use.

    `ram_workers`: how many workers RAM holds, from capacity's sizing
    (`advisor.capacity.sizing.recommend(...).max_request_workers`), for the
    config's MPM, or per MPM when the MPM may switch (a threaded worker costs
    far less memory than a prefork child). `somaxconn`: the kernel's cap on
    any listen backlog (/proc/sys/net/core/somaxconn on the target).
    `over_tls`: every request of the trials is HTTPS, where EnableSendfile
    does nothing (TLS_LEAVES_OUT).
    """
    mpm = cfg.mpm
    if mpm not in MPMS:
        raise UsageError(
            f"the config loads {'no MPM' if mpm is None else 'the ' + str(mpm) + ' MPM'}; "
            "tune knows prefork, worker and event",
            file=cfg.main_file, hint="load one of them with LoadModule")
    kept = mpm_kept_by(cfg) if allow_mpm_switch else None
    if kept is not None:
        allow_mpm_switch = False
    bounds = _ram_bounds(ram_workers, mpm, allow_mpm_switch)
    mpms = MPMS if allow_mpm_switch else (mpm,)
    dims: list[Dimension] = []
    notes: list[str] = []
    if allow_mpm_switch:
        dims.append(Dimension("MPM", "choice", choices=MPMS, guard=MPMS,
                              why="--allow-mpm-switch: changing it needs a full restart, not a reload"))
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
    if kept is not None:
        notes.insert(0, kept)
    space = Space(mpm=mpm, dimensions=dims, start={}, notes=notes, ram_workers=dict(bounds),
                  source=cfg.main_file)
    space.start, space.start_notes, space.start_written = _start_point(cfg, space)
    for d in list(space.dimensions):
        if d.kind == "int" and d.low == d.high:
            _fix(space, d, d.low)
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


def _ram_bounds(ram_workers: int | Mapping[str, int], mpm: str, switch: bool) -> dict[str, int]:
    if isinstance(ram_workers, Mapping):
        bounds = {str(k): int(v) for k, v in ram_workers.items()}
        wanted = MPMS if switch else (mpm,)
        missing = [m for m in wanted if m not in bounds]
        if missing:
            raise UsageError(f"no RAM sizing for the {', '.join(missing)} MPM",
                             hint="size the pool with capacity for every MPM the search may use")
        bounds = {m: bounds[m] for m in wanted}
    else:
        bounds = {m: int(ram_workers) for m in (MPMS if switch else (mpm,))}
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


def _writes_access_log(cfg: "Config") -> bool:
    """An access log anywhere in what httpd applies (server or a virtual host)."""
    if "log_config_module" not in cfg.modules and "mod_log_config.c" not in cfg.modules:
        return False
    for node in cfg.effective.walk():
        if getattr(node, "name", "").lower() in ("customlog", "transferlog"):
            return True
    return False


# A directive the pool's dimensions derive: left out with the dimension that sets it.
DERIVED_FROM = {"serverlimit": "MaxRequestWorkers", "threadlimit": "ThreadsPerChild"}
_DERIVES = {"MaxRequestWorkers": ("ServerLimit",), "ThreadsPerChild": ("ThreadLimit",)}


def leave_out(space: Space, directive: str, reason: str) -> Dimension | None:
    """Take the dimension that writes `directive` out of the search: a line of
    the config overrides it, so no trial's value would apply. It stays at the
    start (the value the config gives httpd) and is never written; `reason`
    (the overriding file:line) goes to the plan's notes. None when no
    dimension writes it."""
    name = DERIVED_FROM.get(directive.lower(), directive)
    dim = space.dimension(name)
    if dim is None or dim.name == "MPM":
        return None
    if not dim.is_fixed:
        _fix(space, dim, space.start.get(dim.name, dim.low if dim.kind == "int" else dim.choices[0]))
    for written in (dim.name, *_DERIVES.get(dim.name, ())):
        if written not in space.unwritten:
            space.unwritten.append(written)
    head = f"{dim.name} left out: "
    for index, note in enumerate(space.notes):
        if note.startswith(head):  # one note per dimension, every line that overrides it
            space.notes[index] = f"{note}; {reason}"
            return dim
    space.notes.append(head + reason)
    return dim


def _fix(space: Space, dim: Dimension, value: Value) -> None:
    index = space.dimensions.index(dim)
    space.dimensions[index] = replace(dim, fixed=value)
    space.start[dim.name] = value
    if value != space.start_written.get(dim.name):
        space.start_written.pop(dim.name, None)  # fixed at a value of its own, which is then what runs


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
    return out


def _read_value(dim: Dimension, text: str) -> Value | None:
    if dim.name == "KeepAliveTimeout":
        return parse_timeout_ms(text)
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


# --------------------------------------------------------------------------
# --space FILE: narrow or fix dimensions


_TOML_POSITION = re.compile(r"\(at line (\d+), column \d+\)")


def narrow_from_file(space: Space, path: str) -> Space:
    """A copy of `space` narrowed by a TOML file:

        [MaxRequestWorkers]
        low = 50
        high = 200

        [KeepAlive]
        value = "On"

    Anything that would widen a guard, or that names no dimension of this
    space, is refused with one line naming the file (and line).
    """
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise UsageError("no such --space file", file=path, hint="give the path of a TOML file") from None
    except OSError as exc:
        raise UsageError(f"cannot read the --space file: {exc.strerror}", file=path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("the --space file is not UTF-8 text", file=path, hint="save it as UTF-8 TOML") from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = _TOML_POSITION.search(message)
        line = int(found.group(1)) if found else None
        message = _TOML_POSITION.sub("", message).strip()
        raise UsageError(f"not valid TOML: {message}", file=path, line=line,
                         hint="write one [Directive] table with low/high or value") from None
    return narrow(space, table, path=path, text=text)


def narrow(space: Space, table: Mapping[str, Any], *, path: str = "--space", text: str = "") -> Space:
    """Apply an already parsed --space table (see narrow_from_file)."""
    out = replace(space, dimensions=list(space.dimensions), start=dict(space.start),
                  start_notes=list(space.start_notes), start_written=dict(space.start_written))
    for key, spec in table.items():
        line = _line_of(text, key)

        def fail(message: str, hint: str | None = None) -> UsageError:
            return UsageError(message, file=path, line=line, hint=hint)

        dim = out.dimension(key)
        if dim is None:
            derived = next((k for k in DERIVED if k.lower() == key.lower()), None)
            if derived is not None:
                raise fail(f"{derived} cannot be set on its own: {DERIVED[derived]}")
            raise fail(f"{key} is not a dimension of this {space.mpm} search",
                       hint=f"use one of: {', '.join(d.name for d in space.dimensions)}")
        if not isinstance(spec, Mapping):
            raise fail(f"{dim.name} must be a table", hint=f"write [{dim.name}] with low/high or value")
        unknown = [k for k in spec if k not in ("low", "high", "value")]
        if unknown:
            raise fail(f"[{dim.name}] has no setting {unknown[0]!r}", hint="use low, high or value")
        if "value" in spec and ("low" in spec or "high" in spec):
            raise fail(f"[{dim.name}] gives both value and low/high", hint="fix it with value, or narrow it with low/high")
        if not spec:
            raise fail(f"[{dim.name}] is empty", hint="give low/high or value")
        if "value" in spec:
            value = _toml_value(dim, spec["value"], fail)
            _fix(out, dim, value)
            continue
        if dim.kind == "choice":
            raise fail(f"{dim.name} is one of {'/'.join(dim.choices)}: it has no low or high",
                       hint=f'fix it with value = "{dim.choices[0]}"')
        guard_low, guard_high = dim.guard  # type: ignore[misc]
        low = _toml_int(dim, spec.get("low", dim.low), "low", fail)
        high = _toml_int(dim, spec.get("high", dim.high), "high", fail)
        for label, number in (("low", low), ("high", high)):
            if not guard_low <= number <= guard_high:
                raise fail(f"{dim.name} {label} = {number} is outside its guard {guard_low:,}..{guard_high:,}",
                           hint=dim.why.split(";")[0] if dim.why else None)
        if low > high:
            raise fail(f"{dim.name} low = {low} is above high = {high}")
        index = out.dimensions.index(dim)
        narrowed = replace(dim, low=low, high=high, log=dim.log and high > low,
                           unlimited_at_top=dim.unlimited_at_top and high == guard_high)
        out.dimensions[index] = narrowed
        if low == high:
            _fix(out, narrowed, low)
            continue
        if not narrowed.contains(out.start[dim.name]):
            clipped = narrowed.clip(out.start[dim.name])
            out.start_notes.append(f"{path}: {dim.name} {out.start[dim.name]} is outside the narrowed range "
                                   f"{low:,}..{high:,}: the start is measured as written, and {clipped} stands "
                                   f"for it in the search")
            out.start_written.setdefault(dim.name, out.start[dim.name])
            out.start[dim.name] = clipped
    if not out.free:
        raise UsageError("every dimension is fixed: there is nothing to tune", file=path,
                         hint="leave at least one dimension free")
    return out


def _line_of(text: str, key: str) -> int | None:
    """The line of `[key]` (or a dotted `key.low = ...`) in the TOML text."""
    if not text:
        return None
    pattern = re.compile(r'^\s*(\[\s*["\']?' + re.escape(key) + r'["\']?\s*\]|["\']?' + re.escape(key)
                         + r'["\']?\s*[.=])')
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None


def _toml_int(dim: Dimension, value: Any, label: str, fail) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        unit = f" in {dim.unit}" if dim.unit else ""
        raise fail(f"{dim.name} {label} must be a whole number{unit}, got {value!r}")
    return value


def _toml_value(dim: Dimension, value: Any, fail) -> Value:
    if dim.kind == "choice":
        if isinstance(value, bool) and dim.choices == ON_OFF:
            value = "On" if value else "Off"
        if not isinstance(value, str):
            raise fail(f"{dim.name} value must be one of {'/'.join(dim.choices)}, got {value!r}")
        match = next((c for c in dim.choices if c.lower() == value.strip().lower()), None)
        if match is None:
            raise fail(f"{dim.name} value must be one of {'/'.join(dim.choices)}, got {value!r}")
        return match
    number = _toml_int(dim, value, "value", fail)
    if dim.unlimited_at_top and number == 0:
        number = dim.high
    guard_low, guard_high = dim.guard  # type: ignore[misc]
    if not guard_low <= number <= guard_high:
        raise fail(f"{dim.name} value = {number} is outside its guard {guard_low:,}..{guard_high:,}",
                   hint=dim.why.split(";")[0] if dim.why else None)
    return number

