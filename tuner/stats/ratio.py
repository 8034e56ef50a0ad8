"""How much faster one config is than another, and how sure that is, from
the two to five runs a side that a tuning session can afford.

The method: Student's t on the logarithm of the runs' figures.
- Rates are positive and their effects and noise multiply (a run on a
  slower minute of the host is a few per cent slower at any rate), so on a
  log scale the noise is additive and the same size for a config that
  serves 250 replies/s and one that serves 4,700; a ratio's interval made
  there cannot reach below zero, which Fieller's interval on the ratio of
  means did with two runs a side (x17.1 read as "-1.48 to 35.75").
- The two sides' variances are pooled (the same host, the same probe
  design), so two runs a side give two degrees of freedom, not Welch's one.
- The pooled variance has a floor: a run's own figure is never more
  precise than the run can measure (a knee search's bracket, a reported
  uncertainty). Without it two identical runs (251.3 and 251.3: two knee
  searches that closed on the same rate) claim no noise at all.
- Rounds that ran the two sides back to back (`paired_interval`) take the
  ratio within each round first, so a drift of the host between rounds
  falls out of the comparison (Abedi & Brecht's randomized multiple
  interleaved trials, ICPE 2017).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

CONFIDENCE = 0.95
MIN_RUNS = 2
"""Runs a side the unpaired interval needs (two a side: two degrees of freedom)."""
MIN_ROUNDS = 2
"""Rounds the paired interval needs."""
DEFAULT_TOLERANCE = 0.1
"""The knee search's default bracket: a peak found to within 10 %."""


def bracket_sd(tolerance: float = DEFAULT_TOLERANCE) -> float:
    """The standard deviation, on the log scale, of a figure known only to
    lie somewhere in a bracket `tolerance` wide: a uniform error over
    log(1 + tolerance) has this deviation (0.0275 for 10 %)."""
    if tolerance < 0:
        raise ValueError("a bracket's width cannot be negative")
    return math.log1p(tolerance) / math.sqrt(12.0)


@dataclass(frozen=True)
class RatioInterval:
    """other / base, as the ratio of geometric means, with its interval."""

    ratio: float
    low: float
    high: float
    confidence: float
    df: float
    sd_log: float
    """The standard deviation of one run's log figure the interval used."""
    floored: bool
    """The runs spread less than the floor: the floor set the width."""
    method: str
    runs: tuple[int, int]
    """Runs of the base and the other side (paired: rounds, rounds)."""

    @property
    def excludes_one(self) -> bool:
        return not self.low <= 1.0 <= self.high

    @property
    def half_width(self) -> float:
        """The interval's larger relative distance from the ratio (0.05: ±5 %)."""
        return max(self.high / self.ratio - 1.0, 1.0 - self.low / self.ratio)

    def to_dict(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "low": self.low, "high": self.high, "confidence": self.confidence,
                "df": self.df, "sd_log": self.sd_log, "floored": self.floored, "method": self.method,
                "runs": list(self.runs), "excludes_one": self.excludes_one, "half_width": self.half_width}


def _logs(values: Sequence[float], side: str) -> list[float]:
    if any(not (v > 0 and math.isfinite(v)) for v in values):
        raise ValueError(f"the {side} side's figures must be positive rates, got {list(values)}")
    return [math.log(v) for v in values]


def _sum_squares(logs: Sequence[float]) -> float:
    mean = sum(logs) / len(logs)
    return sum((v - mean) ** 2 for v in logs)


def _t_quantile(confidence: float, df: float) -> float:
    from scipy.stats import t as student_t  # scipy comes with scikit-learn (skopt's own dependency)

    return float(student_t.ppf(0.5 + confidence / 2.0, df))


def ratio_interval(base: Sequence[float], other: Sequence[float], *, confidence: float = CONFIDENCE,
                   floor_sd: float | None = None) -> RatioInterval:
    """mean-of-logs ratio other/base from independent runs, with a t interval
    on the pooled, floored variance of the logs. `floor_sd`: the least
    deviation of one run's log figure (default: a 10 % knee bracket's)."""
    if len(base) < MIN_RUNS or len(other) < MIN_RUNS:
        raise ValueError(f"the interval needs at least {MIN_RUNS} runs of each side "
                         f"(got {len(base)} and {len(other)})")
    floor = bracket_sd() if floor_sd is None else floor_sd
    log_base, log_other = _logs(base, "base"), _logs(other, "other")
    df = len(base) + len(other) - 2
    pooled = (_sum_squares(log_base) + _sum_squares(log_other)) / df
    floored = pooled < floor * floor
    sd = math.sqrt(max(pooled, floor * floor))
    difference = sum(log_other) / len(log_other) - sum(log_base) / len(log_base)
    half = _t_quantile(confidence, df) * sd * math.sqrt(1.0 / len(base) + 1.0 / len(other))
    return RatioInterval(math.exp(difference), math.exp(difference - half), math.exp(difference + half),
                         confidence, float(df), sd, floored,
                         "t interval on the log ratio, pooled variance with a floor", (len(base), len(other)))


def paired_interval(pairs: Sequence[tuple[float, float]], *, confidence: float = CONFIDENCE,
                    floor_sd: float | None = None) -> RatioInterval:
    """The same ratio from rounds that each ran the base and the other side
    back to back: (base, other) per round. Each round's log ratio carries
    both runs' noise, so its floor is sqrt(2) x the one run's."""
    if len(pairs) < MIN_ROUNDS:
        raise ValueError(f"the interval needs at least {MIN_ROUNDS} rounds (got {len(pairs)})")
    floor = math.sqrt(2.0) * (bracket_sd() if floor_sd is None else floor_sd)
    differences = [b - a for a, b in zip(_logs([p[0] for p in pairs], "base"), _logs([p[1] for p in pairs], "other"))]
    n = len(differences)
    variance = _sum_squares(differences) / (n - 1)
    floored = variance < floor * floor
    sd = math.sqrt(max(variance, floor * floor))
    mean = sum(differences) / n
    half = _t_quantile(confidence, n - 1) * sd / math.sqrt(n)
    return RatioInterval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), confidence, float(n - 1),
                         sd / math.sqrt(2.0), floored,
                         "paired t interval on the rounds' log ratios, with a floor", (n, n))
