"""How often the ratio's 95 % interval holds the truth, and how often it
tells a real difference from none, with the two to five runs a side a
session affords: a seeded simulation over known ratios and noise levels.

Each run's figure is log-normal: the log of a config's figure plus normal
noise whose deviation is `noise` (0.05: a run within about ±5 % of its
config's typical figure). Three shapes of the runs:
- `equal`: both sides with that noise;
- `unequal`: the other side twice as noisy as the base (a config near its
  knee reads less steadily than one far below it);
- `quantised`: the base side's figures fall on a grid of knee rates 10 %
  apart (a bisection that closes on the same rung every run), so most of
  its runs are identical; the grid's offset is random per comparison.

Two methods side by side: the session's (`ratio_interval`: a t interval on
the log ratio, pooled and floored) and the one it replaced, kept here as
`fieller_welch_interval` to compare. Each method is judged against its own
estimand: the log interval estimates the ratio of the sides' geometric
means (the true ratio), Fieller's the ratio of arithmetic means, which with
unequal noise is the true ratio times exp((sd_other² - sd_base²) / 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from advisor.tuner.stats.ratio import CONFIDENCE, DEFAULT_TOLERANCE, bracket_sd

RATIOS = (1.0, 1.1, 1.25, 1.5, 2.0)
NOISES = (0.03, 0.05, 0.10, 0.20)
RUNS = (2, 3, 4, 5)
SHAPES = ("equal", "unequal", "quantised")
GRID_STEP = math.log1p(DEFAULT_TOLERANCE)
"""The quantised shape's rung: the default knee bracket, 10 % wide."""


def fieller_welch_interval(base: Sequence[float], other: Sequence[float], confidence: float = CONFIDENCE
                           ) -> tuple[float, float | None, float | None]:
    """The gain's method before issue 56, kept to compare: mean(other) /
    mean(base) with Fieller's interval and Welch-Satterthwaite degrees of
    freedom; (ratio, low, high), the bounds None when the base's mean is
    within noise of zero (no finite interval)."""
    from scipy.stats import t as student_t

    n, m = len(base), len(other)
    b, a = sum(base) / n, sum(other) / m
    vb = sum((x - b) ** 2 for x in base) / (n - 1) / n
    va = sum((x - a) ** 2 for x in other) / (m - 1) / m
    ratio = a / b
    if va == 0 and vb == 0:
        return ratio, ratio, ratio
    df = (va + ratio ** 2 * vb) ** 2 / (va ** 2 / (m - 1) + ratio ** 4 * vb ** 2 / (n - 1))
    q = float(student_t.ppf(0.5 + confidence / 2.0, df))
    big_a, big_b, big_c = b * b - q * q * vb, a * b, a * a - q * q * va
    if big_a <= 0:
        return ratio, None, None
    root = math.sqrt(max(big_b * big_b - big_a * big_c, 0.0))
    return ratio, (big_b - root) / big_a, (big_b + root) / big_a


@dataclass(frozen=True)
class Cell:
    """One cell of the simulation: its settings and what each method did."""

    ratio: float
    noise: float
    runs: int
    shape: str
    comparisons: int
    coverage: float
    """Share of the log intervals that held the true ratio."""
    power: float
    """Share of the log intervals that excluded 1 (at ratio 1: false alarms)."""
    old_coverage: float
    old_power: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _draw(rng, shape: str, ratio: float, noise: float, runs: int, comparisons: int):
    """(base, other) figures, comparisons x runs each, around 1,000 and 1,000 x ratio."""
    import numpy as np

    base_log = math.log(1000.0) + rng.normal(0.0, noise, (comparisons, runs))
    other_noise = 2.0 * noise if shape == "unequal" else noise
    other_log = math.log(1000.0 * ratio) + rng.normal(0.0, other_noise, (comparisons, runs))
    if shape == "quantised":
        offset = rng.uniform(0.0, GRID_STEP, (comparisons, 1))
        base_log = np.round((base_log - offset) / GRID_STEP) * GRID_STEP + offset
    return np.exp(base_log), np.exp(other_log)


def log_t_bounds(base, other, floor_sd: float, confidence: float = CONFIDENCE):
    """ratio_interval's arithmetic over rows of runs at once: (low, high)
    arrays of the log ratio's bounds."""
    import numpy as np
    from scipy.stats import t as student_t

    log_base, log_other = np.log(base), np.log(other)
    n, m = log_base.shape[1], log_other.shape[1]
    df = n + m - 2
    squares = ((log_base - log_base.mean(axis=1, keepdims=True)) ** 2).sum(axis=1) \
        + ((log_other - log_other.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    sd = np.sqrt(np.maximum(squares / df, floor_sd * floor_sd))
    half = student_t.ppf(0.5 + confidence / 2.0, df) * sd * math.sqrt(1.0 / n + 1.0 / m)
    difference = log_other.mean(axis=1) - log_base.mean(axis=1)
    return difference - half, difference + half


def fieller_bounds(base, other, confidence: float = CONFIDENCE):
    """fieller_welch_interval over rows at once: (low, high) arrays of the
    ratio's bounds, NaN where it has no finite bound."""
    import numpy as np
    from scipy.stats import t as student_t

    n, m = base.shape[1], other.shape[1]
    b, a = base.mean(axis=1), other.mean(axis=1)
    vb, va = base.var(axis=1, ddof=1) / n, other.var(axis=1, ddof=1) / m
    ratio = a / b
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (va + ratio ** 2 * vb) ** 2 / (va ** 2 / (m - 1) + ratio ** 4 * vb ** 2 / (n - 1))
        q = student_t.ppf(0.5 + confidence / 2.0, np.where(np.isfinite(df), df, 1.0))
        big_a, big_b, big_c = b * b - q * q * vb, a * b, a * a - q * q * va
        root = np.sqrt(np.maximum(big_b * big_b - big_a * big_c, 0.0))
        low, high = (big_b - root) / big_a, (big_b + root) / big_a
    unbounded = big_a <= 0
    exact = (va == 0) & (vb == 0)
    low = np.where(exact, ratio, np.where(unbounded, np.nan, low))
    high = np.where(exact, ratio, np.where(unbounded, np.nan, high))
    return low, high


def simulate_cell(ratio: float, noise: float, runs: int, shape: str = "equal", comparisons: int = 4000,
                  seed: int = 0, floor_sd: float | None = None) -> Cell:
    """One cell: `comparisons` comparisons of `runs` runs a side. The log
    interval's floor is the session's default (a 10 % knee bracket's)."""
    import numpy as np

    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}: one of {', '.join(SHAPES)}")
    if runs < 2:
        raise ValueError("the intervals need at least two runs a side")
    rng = np.random.default_rng([seed, runs, round(ratio * 1000), round(noise * 1000), SHAPES.index(shape)])
    base, other = _draw(rng, shape, ratio, noise, runs, comparisons)
    low, high = log_t_bounds(base, other, bracket_sd() if floor_sd is None else floor_sd)
    truth = math.log(ratio)
    coverage = float(np.mean((low <= truth) & (truth <= high)))
    power = float(np.mean((low > 0.0) | (high < 0.0)))
    old_low, old_high = fieller_bounds(base, other)
    other_noise = 2.0 * noise if shape == "unequal" else noise
    # A quantised base keeps its arithmetic mean on average (the grid's offset is uniform on the log scale
    # only to first order); Fieller is judged, as it was built, on the ratio of the sides' means.
    old_truth = ratio * math.exp((other_noise ** 2 - noise ** 2) / 2.0)
    bounded = ~np.isnan(old_low)
    # No finite bound: the interval held everything, and excluded nothing.
    old_coverage = float(np.mean(~bounded | ((old_low <= old_truth) & (old_truth <= old_high))))
    old_power = float(np.mean(bounded & ((old_low > 1.0) | (old_high < 1.0))))
    return Cell(ratio, noise, runs, shape, comparisons, coverage, power, old_coverage, old_power)


def simulate(ratios: Sequence[float] = RATIOS, noises: Sequence[float] = NOISES, runs: Sequence[int] = RUNS,
             shapes: Sequence[str] = SHAPES, comparisons: int = 4000, seed: int = 0) -> list[Cell]:
    return [simulate_cell(r, s, n, shape, comparisons, seed)
            for shape in shapes for r in ratios for s in noises for n in runs]


def binomial_margin(comparisons: int, share: float = CONFIDENCE, z: float = 3.0) -> float:
    """How far a share found in `comparisons` tries may stray from `share`
    by chance alone (z standard errors)."""
    return z * math.sqrt(share * (1.0 - share) / comparisons)


def markdown_table(cells: Sequence[Cell]) -> list[str]:
    """The cells as a markdown table, one row each."""
    lines = ["| shape | true ratio | noise (sd of log) | runs a side | coverage | excludes 1 "
             "| old: coverage | old: excludes 1 |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for c in cells:
        lines.append(f"| {c.shape} | ×{c.ratio:g} | {c.noise:.2f} | {c.runs} | {c.coverage:.1%} | {c.power:.1%} "
                     f"| {c.old_coverage:.1%} | {c.old_power:.1%} |")
    return lines


def runs_needed(ratio: float, noise: float, power: float = 0.8, shape: str = "equal", most: int = 10,
                comparisons: int = 4000, seed: int = 0) -> int | None:
    """The fewest runs a side whose log interval excludes 1 in at least
    `power` of the comparisons (None: not within `most`)."""
    for runs in range(2, most + 1):
        if simulate_cell(ratio, noise, runs, shape, comparisons, seed).power >= power:
            return runs
    return None
