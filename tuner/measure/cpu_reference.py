"""A CPU-speed reference: a fixed piece of work timed on the server's cores.

This VM's CPU speed drifts from minute to minute (`apache2 -t` on one tree
took 1,091 to 1,335 ms within an hour), and a knee search on a drifting
server reads the drift as the config's. The same work timed before and
after a trial says how far the cores' speed moved while it ran: the drift
the trial saw, which its reported uncertainty carries (trial/precision.py).

The work is SHA-256 over a buffer that stays in the cache: C code that
releases nothing to Python's interpreter, so what is timed is the core, not
the allocator or the GIL. The calling thread is pinned to the server's
cores for the reading (Linux's sched_setaffinity(0) applies to the calling
thread only) and put back on its own cores after it. A reading is the
fastest of a few repetitions: other programs can only slow a repetition
down, never speed it up, so the minimum is the core's own speed.

Only for a server on this machine: a remote host's cores are not here.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from dataclasses import dataclass
from typing import Any, Sequence

BLOCK = bytes(range(256)) * 4096
"""1 MiB: small enough to stay in a core's cache between updates."""
BLOCKS = 2
"""Updates a repetition: about 1.5 ms on this VM (1.4 GB/s with SHA
extensions), shorter than a scheduler's slice, so that some repetitions run
whole between other programs' turns on a busy core. Repetitions of 6 ms
read up to twice as slow on a core shared with a load test (a spread of
0.25 on the log of twelve readings, against 0.011 with these)."""
REPEATS = 10
"""Repetitions a reading keeps the fastest of: 15 ms a reading on an idle core."""
MIN_REPEATS = 3
BUDGET_MS = 35.0
"""A reading stops repeating past this (after MIN_REPEATS): on a core other
programs keep busy a repetition waits for its turn, and ten of them took 50
to 80 ms with the load average at 7; the trial pays two readings."""


@dataclass(frozen=True)
class ReferenceReading:
    """One reading: the fastest repetition's milliseconds, and the cores it ran on."""

    ms: float
    cpus: tuple[int, ...] | None
    cost_ms: float
    """The wall time the reading took, all repetitions and the pinning."""


def _work() -> float:
    """Milliseconds of one repetition of the fixed work."""
    digest = hashlib.sha256()
    started = time.perf_counter()
    for _ in range(BLOCKS):
        digest.update(BLOCK)
    digest.digest()
    return (time.perf_counter() - started) * 1000.0


def read_reference(cpus: Sequence[int] | None, repeats: int = REPEATS) -> ReferenceReading:
    """Time the work on `cpus` (None: wherever the thread runs now), the fastest of `repeats`."""
    started = time.perf_counter()
    pinned = tuple(sorted(set(cpus))) if cpus else None
    own: set[int] | None = None
    if pinned is not None and hasattr(os, "sched_setaffinity"):
        own = os.sched_getaffinity(0)
        try:
            os.sched_setaffinity(0, pinned)
        except OSError:  # cores this process may not use (a cpuset): read where it runs
            own, pinned = None, None
    try:
        times = [_work()]
        while len(times) < repeats and (len(times) < MIN_REPEATS
                                        or (time.perf_counter() - started) * 1000.0 < BUDGET_MS):
            times.append(_work())
        best = min(times)
    finally:
        if own is not None:
            os.sched_setaffinity(0, own)
    return ReferenceReading(best, pinned, (time.perf_counter() - started) * 1000.0)


@dataclass(frozen=True)
class ReferenceDrift:
    """The reference read before and after a trial."""

    before: ReferenceReading
    after: ReferenceReading

    @property
    def log_change(self) -> float:
        """ln(after / before): positive when the cores got slower during the trial."""
        return math.log(self.after.ms / self.before.ms)

    def to_dict(self) -> dict[str, Any]:
        return {"before_ms": round(self.before.ms, 3), "after_ms": round(self.after.ms, 3),
                "cpus": list(self.before.cpus) if self.before.cpus else None,
                "cost_ms": round(self.before.cost_ms + self.after.cost_ms, 1)}


def reference_spread(cpus: Sequence[int] | None, readings: int = 5) -> tuple[float, float]:
    """(the deviation two readings in a row show, as trial/precision.py
    counts a before and after pair: the median of their log differences
    over sqrt(2); the readings' total cost in ms): how steady the reference
    is here over a fraction of a second, which any drift it reports in a
    trial must stand above. The median, because one reading that waited for
    a busy core should not speak for the others."""
    values: list[float] = []
    cost = 0.0
    for _ in range(max(2, readings)):
        reading = read_reference(cpus)
        values.append(math.log(reading.ms))
        cost += reading.cost_ms
    steps = sorted(abs(b - a) for a, b in zip(values, values[1:]))
    middle = len(steps) // 2
    median = steps[middle] if len(steps) % 2 else (steps[middle - 1] + steps[middle]) / 2.0
    return median / math.sqrt(2.0), cost
