"""A knee search's figure read inside its bracket, not at its lower end.

A knee search ends with a bracket: the highest rate that met the SLO and
the lowest that did not, 10 % apart by default. Reporting the lower end
makes every figure a step of a grid whose rungs lie where the search
happened to start: two runs of one config on one server read 962 and
1,032 replies/s because one passed the rung at 213 sessions/s and the
other did not (an A/A comparison of 2026-12-07 on the sandbox: the
rounds' ratios moved by whole rungs). Two readings inside the bracket are
finer than the grid:

- a probe that failed because the server could not keep pace (it served
  clearly less than it was offered) served what the server could serve at
  that moment, a capacity reading with no grid at all; the peak that meets
  the SLO's pace lies at that capacity, so their median, held inside the
  bracket, is the figure;
- with no such reading the knee is equally likely anywhere in the bracket
  on the log scale, and its expected place is the bracket's geometric
  middle.

A figure with no failing probe above its peak (a floor) keeps the passing
probe's served rate: there is no bracket to read inside.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from advisor.tuner.trial.precision import ProbeReading

CAPACITY = "capacity readings"
MIDDLE = "bracket middle"
PASSING = "passing probe"


@dataclass(frozen=True)
class KneeFigure:
    value: float
    """In the served rate's unit (replies/s)."""
    how: str
    """CAPACITY, MIDDLE or PASSING."""
    passing: float
    """The passing probe's served rate (the figure before issue 56)."""
    readings: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "how": self.how, "passing": self.passing, "readings": self.readings}


def knee_figure(readings: Sequence[ProbeReading], peak_rate: float | None, passing_served: float | None
                ) -> KneeFigure | None:
    """The figure of a knee search whose highest passing probe ran at
    `peak_rate` and served `passing_served` (None: nothing passed)."""
    if peak_rate is None or peak_rate <= 0 or not passing_served or passing_served <= 0:
        return None
    above = [r.rate for r in readings if not r.passed and r.counts and r.rate > peak_rate]
    if not above:
        return KneeFigure(passing_served, PASSING, passing_served)
    ceiling = passing_served * min(above) / peak_rate
    capacity = sorted(r.served for r in readings if r.saturated)
    if capacity:
        middle = len(capacity) // 2
        median = capacity[middle] if len(capacity) % 2 else math.sqrt(capacity[middle - 1] * capacity[middle])
        return KneeFigure(min(max(median, passing_served), ceiling), CAPACITY, passing_served, len(capacity))
    return KneeFigure(math.sqrt(passing_served * ceiling), MIDDLE, passing_served)
