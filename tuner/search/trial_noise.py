"""Each trial's own noise, as the optimizer's Gaussian process is told it.

A trial reports how precise its figure is in `details["uncertainty"]`:
`rel_sd`, the standard deviation of the log of its figure, and `bound`,
None for a measure, "lower" when the figure is a floor (a climb stopped at
its cap) and "upper" when it is a ceiling (a trial stopped early below the
incumbent). Older journals and hosts without the report carry neither; their
rows add nothing to the white-noise level the GP learns, as before.

sklearn's GaussianProcessRegressor adds `alpha[i]` to the i-th diagonal
entry of the training covariance. skopt cooks its GP with normalize_y, so
that diagonal is on the scale of y divided by its standard deviation: the
variances kept here are on the objective's own scale (log by default) and
divided by var(y) when the rows are handed over, each time, since each tell
changes var(y). numpy is imported inside the functions that use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

BOUNDS = (None, "lower", "upper")
REJECT_SD = 0.5
"""A point lint refused is told at the worst figure so far, as a deterrent,
not a measurement: held this loosely (a factor of 1.65 either way on the log
scale) it pulls the model down around the point without pinning it there."""
UPPER_BOUND_SD = 0.15
"""Added to an upper bound's own spread. The trial stopped because the point
was already below the incumbent, so its true figure is lower still: told as
is, the figure cannot make the point lead, and the extra spread lets the
neighbours' trials pull it down instead of the model bending to fit it."""
SURPRISE_SDS = 2.0
"""A reading this many predicted standard deviations above the model's
prediction for it, that would lead the search, is measured again at once."""
JITTER = 1e-10
"""sklearn's default alpha: keeps the covariance's Cholesky factor defined."""


@dataclass(frozen=True)
class Uncertainty:
    """What a trial says of its own precision; both None when it says nothing."""

    rel_sd: float | None = None
    bound: str | None = None


def uncertainty_of(details: Mapping[str, Any] | None) -> Uncertainty:
    """The trial's report read from its details; anything malformed reads as absent
    (a journal written by another version must still resume)."""
    report = (details or {}).get("uncertainty")
    if not isinstance(report, Mapping):
        return Uncertainty()
    rel_sd = report.get("rel_sd")
    try:
        value = float(rel_sd) if rel_sd is not None and not isinstance(rel_sd, bool) else None
    except (TypeError, ValueError):
        value = None
    if value is not None and (math.isnan(value) or math.isinf(value) or value < 0):
        value = None
    bound = report.get("bound")
    return Uncertainty(value, bound if bound in BOUNDS else None)


def row_variance(uncertainty: Uncertainty, objective: float, *, log_objective: bool) -> float:
    """The variance one told row adds beyond the GP's white noise, on the told scale.

    On the log scale a trial's variance is rel_sd squared; on the raw scale
    rel_sd is a share of the figure."""
    sd = uncertainty.rel_sd or 0.0
    if uncertainty.bound == "upper":
        sd = math.hypot(sd, UPPER_BOUND_SD)
    if not log_objective:
        sd *= abs(objective)
    return sd * sd


def reject_variance(told: float, *, log_objective: bool) -> float:
    sd = REJECT_SD if log_objective else REJECT_SD * abs(told)
    return sd * sd


@dataclass
class RowNoise:
    """One variance per row skopt's optimizer holds (trials, replicates and
    refused points alike), in the order it was told them."""

    variances: list[float] = field(default_factory=list)

    def add(self, variance: float) -> None:
        self.variances.append(float(variance))

    def __len__(self) -> int:
        return len(self.variances)

    def alpha(self, ys: Sequence[float]):
        """The rows' variances as sklearn's alpha under normalize_y (plain floats
        in a float array: skopt's clone copies it and sklearn checks its length)."""
        import numpy as np

        if len(ys) != len(self.variances):
            raise ValueError(f"{len(self.variances)} variances for {len(ys)} rows")
        scale = float(np.std(np.asarray(ys, dtype=float)))
        scale = scale * scale if scale > 0.0 else 1.0
        return np.asarray(self.variances, dtype=float) / scale + JITTER


def surprise(model: Any, x_row: Any, y: float, variance: float) -> float:
    """How many standard deviations the told y (minimised: lower is better) lies
    below what `model` predicted for its point before it was told.

    The spread combines the model's own uncertainty at the point, the white
    noise it learnt (what trials do not explain of each other, drift among it)
    and the trial's own variance: a reading is a surprise only when none of
    the three accounts for it."""
    import numpy as np

    mean, sd = model.predict(np.asarray([x_row], dtype=float), return_std=True)
    scale = float(np.ravel(getattr(model, "y_train_std_", 1.0))[0])
    white = float(getattr(model, "noise_", None) or 0.0) * scale * scale
    spread = math.sqrt(float(sd[0]) ** 2 + white + variance)
    return (float(mean[0]) - y) / spread if spread > 0.0 else math.inf
