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

The space is derived from a config in `space_derive`; `space_narrow` narrows
it by a --space file, or leaves a dimension out.

Pure Python: skopt is imported only by `skopt_dimensions`, and the config
model only through the `Config` object the caller passes in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

MPMS = ("prefork", "worker", "event")
THREADED = ("worker", "event")
ON_OFF = ("On", "Off")
# `Protocols` as a mix's tune space searches it: h2 offered, or HTTP/1.1 alone.
H2_PROTOCOL_CHOICES = ("h2 http/1.1", "http/1.1")

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
        if "H2MaxWorkers" in out and "ThreadsPerChild" in out:
            out["H2MaxWorkers"] = max(int(out["H2MaxWorkers"]), int(out["ThreadsPerChild"]))
        if mpm == "prefork" and "Protocols" in out:
            # mod_http2 does not run under prefork (AH10034): the point says what its visitors get.
            out["Protocols"] = H2_PROTOCOL_CHOICES[-1]
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


def fix_dimension(space: Space, dim: Dimension, value: Value) -> None:
    """Fix `dim` at `value`: it leaves the search, and the start takes that value."""
    index = space.dimensions.index(dim)
    space.dimensions[index] = replace(dim, fixed=value)
    space.start[dim.name] = value
    if value != space.start_written.get(dim.name):
        space.start_written.pop(dim.name, None)  # fixed at a value of its own, which is then what runs
