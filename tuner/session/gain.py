"""The gain of the winner over the starting config, from interleaved replicates:
the ratio of their means with Fieller's confidence interval."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from advisor.tuner.search.optimizer import TrialOutcome

CONFIDENCE = 0.95
# The issue asks for at least this many interleaved replicates of each side.
MIN_REPLICATES = 5


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

    @classmethod
    def from_outcomes(cls, runs: Sequence[tuple[str, TrialOutcome]]) -> "Replicates":
        """From ("start" | "winner", outcome) pairs in the order they ran;
        invalid runs count in neither list."""
        out = cls([], [])
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
    winner_mean: float
    ratio: float
    low: float | None
    """None: the interval has no finite bound (the start's mean is not
    distinguishable from zero)."""
    high: float | None
    confidence: float
    df: float | None
    method: str
    notes: list[str] = field(default_factory=list)

    @property
    def excludes_one(self) -> bool:
        return self.low is not None and self.high is not None and not self.low <= 1.0 <= self.high


def _mean_var(values: Sequence[float]) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return mean, var


def ratio_interval(start: Sequence[float], winner: Sequence[float], confidence: float = CONFIDENCE
                   ) -> tuple[float, float | None, float | None, float | None]:
    """mean(winner) / mean(start) and its Fieller interval: (ratio, low, high, df).

    Why Fieller: it is the interval for a ratio of two means that holds
    exactly when each mean is normal, without assuming the noise is
    multiplicative (a t interval on the log ratio estimates the ratio of
    geometric means instead), and with five replicates a side a bootstrap
    resamples too few values to reach its nominal coverage. The two sides are
    independent runs; their variances may differ, so the t quantile takes
    Welch-Satterthwaite degrees of freedom, evaluated at the estimated ratio.

    The interval is the set of ratios r for which the Welch t statistic of
    mean(winner) - r * mean(start) stays within the quantile; its ends are
    the roots of a quadratic in r.
    """
    from scipy.stats import t as student_t  # scipy comes with scikit-learn (skopt's own dependency)

    if len(start) < 2 or len(winner) < 2:
        raise ValueError("the interval needs at least two measurements of each side")
    b, vb_raw = _mean_var(start)
    a, va_raw = _mean_var(winner)
    if b <= 0:
        raise ValueError("the start's mean must be positive")
    ratio = a / b
    va, vb = va_raw / len(winner), vb_raw / len(start)  # variances of the two means
    if va == 0 and vb == 0:
        return ratio, ratio, ratio, None
    denominator = va ** 2 / (len(winner) - 1) + ratio ** 4 * vb ** 2 / (len(start) - 1)
    df = (va + ratio ** 2 * vb) ** 2 / denominator
    q = float(student_t.ppf(0.5 + confidence / 2.0, df))
    # (a - r b)^2 = q^2 (va + r^2 vb)  <=>  A r^2 - 2 B r + C = 0
    big_a = b * b - q * q * vb
    big_b = a * b
    big_c = a * a - q * q * va
    if big_a <= 0:
        return ratio, None, None, df  # the start's mean is within noise of zero: no finite bound
    root = math.sqrt(max(big_b * big_b - big_a * big_c, 0.0))
    return ratio, (big_b - root) / big_a, (big_b + root) / big_a, df


def measure_gain(replicates: Replicates, confidence: float = CONFIDENCE) -> Gain:
    ratio, low, high, df = ratio_interval(replicates.start, replicates.winner, confidence)
    notes = []
    fewest = min(len(replicates.start), len(replicates.winner))
    if fewest < MIN_REPLICATES:
        notes.append(f"only {fewest} replicates of one side (at least {MIN_REPLICATES} each were asked for): "
                     "the interval is wide")
    planned = replicate_order(max(1, (len(replicates.order) + 1) // 2))[:len(replicates.order)]
    if replicates.order and replicates.order != planned:
        notes.append("the replicates did not follow the interleaved order (an invalid run was left out)")
    return Gain(list(replicates.start), list(replicates.winner), list(replicates.order),
                _mean_var(replicates.start)[0], _mean_var(replicates.winner)[0], ratio, low, high, confidence, df,
                "ratio of means, Fieller's interval with Welch-Satterthwaite degrees of freedom", notes)
