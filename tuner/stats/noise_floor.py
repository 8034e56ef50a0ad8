"""The floor under a comparison's variance: how precisely one run can
measure its figure at all, whatever the runs' spread says.

Two runs that read the same (two knee searches that closed on one rate)
show no spread, yet neither was known better than its own measurement
allowed. A run that reports its own uncertainty (`details["uncertainty"]
["rel_sd"]`: the deviation of the log of its figure) says how well; else
the knee search's bracket bounds it (`bracket_sd` of the probe tolerance).
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Iterable, Mapping

from advisor.tuner.stats.ratio import DEFAULT_TOLERANCE, bracket_sd


def reported_sd(details: Mapping[str, Any] | None) -> float | None:
    """A run's own reported deviation of its log figure, when it has a usable one."""
    if not isinstance(details, Mapping):
        return None
    uncertainty = details.get("uncertainty")
    if not isinstance(uncertainty, Mapping):
        return None
    value = uncertainty.get("rel_sd")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if value > 0 and math.isfinite(value) else None


def floor_sd(details: Iterable[Mapping[str, Any] | None], tolerance: float = DEFAULT_TOLERANCE) -> float:
    """The median of the runs' reported deviations (the typical run, not the
    luckiest or the worst); with none reported, the deviation of a knee
    bracket `tolerance` wide."""
    reported = [sd for sd in (reported_sd(d) for d in details) if sd is not None]
    if reported:
        return float(statistics.median(reported))
    return bracket_sd(tolerance)
