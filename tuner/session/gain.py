"""The gain of the winner over the starting config, from interleaved replicates:
the ratio of their geometric means with a t interval on the log ratio, its
variance pooled and floored (tuner/stats/ratio.py), which holds with the two
to five runs a side a session can afford."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from advisor.tuner.search.optimizer import TrialOutcome
from advisor.tuner.stats import noise_floor
from advisor.tuner.stats.ratio import DEFAULT_TOLERANCE, MIN_RUNS, ratio_interval

CONFIDENCE = 0.95
# The issue asks for at least this many interleaved replicates of each side.
MIN_REPLICATES = 5
LEAST_REPLICATES = MIN_RUNS
"""Fewer runs a side leave the interval no degrees of freedom: the least a
session may ask for (0 asks for none)."""


# --------------------------------------------------------------------------
# The replicates


@dataclass
class Replicates:
    """The interleaved measurements of the starting point and the winner."""

    start: list[float]
    winner: list[float]
    order: list[str] = field(default_factory=list)
    """"start"/"winner" in the order they ran."""
    start_verdicts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    winner_verdicts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    source: str = ""
    """Where the runs came from when not the gain's own ABBA runs."""
    tolerance: float = DEFAULT_TOLERANCE
    """The knee search's bracket the runs were measured to: the interval's
    floor when the runs report no uncertainty of their own."""

    def floor_sd(self) -> float:
        """The least deviation of one run's log figure the interval allows."""
        details = [d for _, d in self.start_verdicts] + [d for _, d in self.winner_verdicts]
        return noise_floor.floor_sd(details, self.tolerance)

    @classmethod
    def from_outcomes(cls, runs: Sequence[tuple[str, TrialOutcome]], tolerance: float = DEFAULT_TOLERANCE
                      ) -> "Replicates":
        """From ("start" | "winner", outcome) pairs in the order they ran;
        invalid runs count in neither list. `tolerance`: the knee bracket
        the runs were measured to."""
        out = cls([], [], tolerance=tolerance)
        for role, outcome in runs:
            if role not in ("start", "winner"):
                raise ValueError(f"a replicate is of the start or the winner, not {role!r}")
            if not outcome.valid:
                continue
            out.order.append(role)
            getattr(out, role).append(float(outcome.objective))
            getattr(out, f"{role}_verdicts").append((outcome.verdict, dict(outcome.details)))
        return out


def replicate_order(each: int = MIN_REPLICATES) -> list[str]:
    """start, winner, winner, start, start, winner ...: each side sees the
    same drift of the host (page cache, thermal state, other tenants) in
    turn, a linear drift cancels out of each group of four, and every other
    run follows a run of its own point, whose warm pool it keeps (no reload
    in between: ManagedConfig.apply)."""
    if each < 1:
        raise ValueError("at least one replicate of each")
    pattern = ("start", "winner", "winner", "start")
    return [pattern[index % 4] for index in range(2 * each)]


# --------------------------------------------------------------------------
# The gain, with its confidence interval


@dataclass
class Gain:
    start: list[float]
    winner: list[float]
    order: list[str]
    start_mean: float
    """The geometric mean of the start's runs (the ratio is of these means)."""
    winner_mean: float
    ratio: float
    low: float | None
    """None only in a gain read from before the log interval: that one
    (Fieller's) could have no finite bound; this one always has."""
    high: float | None
    confidence: float
    df: float | None
    method: str
    notes: list[str] = field(default_factory=list)
    floor_sd: float | None = None
    """The least deviation of one run's log figure the interval allowed."""
    floored: bool = False
    """The runs spread less than the floor: the floor, not the runs, set the width."""

    @property
    def excludes_one(self) -> bool:
        return self.low is not None and self.high is not None and not self.low <= 1.0 <= self.high


def geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def measure_gain(replicates: Replicates, confidence: float = CONFIDENCE) -> Gain:
    """The gain from the replicates; ValueError when a side has fewer than
    two runs or a run that met the SLO at no rate (a zero has no log)."""
    floor = replicates.floor_sd()
    interval = ratio_interval(replicates.start, replicates.winner, confidence=confidence, floor_sd=floor)
    notes = []
    fewest = min(len(replicates.start), len(replicates.winner))
    if fewest < MIN_REPLICATES:
        notes.append(f"only {fewest} replicates of one side (at least {MIN_REPLICATES} each were asked for): "
                     "the interval is wide")
    if interval.floored:
        notes.append(f"the runs spread less than one run can measure (±{floor:.1%} on the log scale): "
                     "that floor, not their spread, sets the interval's width")
    planned = replicate_order(max(1, (len(replicates.order) + 1) // 2))[:len(replicates.order)]
    if replicates.order and replicates.order != planned:
        notes.append("the replicates did not follow the interleaved order (an invalid run was left out)")
    return Gain(list(replicates.start), list(replicates.winner), list(replicates.order),
                geometric_mean(replicates.start), geometric_mean(replicates.winner), interval.ratio,
                interval.low, interval.high, confidence, interval.df,
                f"ratio of geometric means, {interval.method}", notes, floor, interval.floored)
