"""What-if questions to a Gaussian process over the trials: the effect of each
recommended change (the winner against the winner with that one dimension
back at its start value) and the partial dependence curves the plots draw.

The model is skopt's own GP (Matern 5/2 with a learnt white-noise term), on
the scale the optimizer tells it: the negated log of the objective by
default. numpy and skopt are imported inside the functions that use them.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from advisor.tuner.search.optimizer import LOG_FLOOR, Observation
from advisor.tuner.search.space import Space, Value
from advisor.tuner.search.trial_noise import RowNoise, row_variance, uncertainty_of

if TYPE_CHECKING:
    from advisor.tuner.search.recommend import Recommendation

# Fewer valid trials than this and a Gaussian process says nothing useful.
MIN_TRIALS_FOR_SURROGATE = 4
PD_POINTS = 24
PD_SAMPLES = 200
# What the numbers count, for tables and axis labels.
UNITS = {
    "MaxRequestWorkers": "workers", "ServerLimit": "children", "ThreadLimit": "threads",
    "StartServers": "children", "MinSpareServers": "idle children", "MaxSpareServers": "idle children",
    "ThreadsPerChild": "threads", "MinSpareThreads": "idle threads", "MaxSpareThreads": "idle threads",
    "MaxConnectionsPerChild": "connections per child", "KeepAliveTimeout": "ms",
    "MaxKeepAliveRequests": "requests per connection", "ListenBacklog": "connections",
}


# --------------------------------------------------------------------------
# The surrogate: sensitivity and partial dependence


class Surrogate:
    """A Gaussian process over the trials, on the scale skopt's optimizer uses
    (the negated log of the objective by default), for what-if questions."""

    def __init__(self, space: Space, skspace: Any, model: Any, *, log_objective: bool = True,
                 trials: int = 0, source: str = "") -> None:
        self.space = space
        self.skspace = skspace
        self.model = model
        self.log_objective = log_objective
        self.trials = trials
        self.source = source

    @classmethod
    def fit(cls, space: Space, observations: Sequence[Observation], *,
            extra: Sequence[tuple[Mapping[str, Value], float]] = (), seed: int = 0,
            log_objective: bool = True) -> "Surrogate | None":
        """skopt's GP (Matern 5/2 with a learnt white-noise term, as the
        optimizer cooks it) fitted to every valid trial, replicates included,
        and to `extra` (point, objective) measurements: the interleaved gain
        runs, ten measurements of two points, from which the GP learns how
        noisy a trial is instead of reading every difference as signal.
        A trial that reported its own spread is held to it, as the optimizer
        holds it (trial_noise). None with fewer than MIN_TRIALS_FOR_SURROGATE trials."""
        valid = [o for o in observations if o.valid and o.objective is not None]
        told = [(o.point, float(o.objective)) for o in valid]
        if len(told) < MIN_TRIALS_FOR_SURROGATE or not space.free:
            return None
        data = told + [(point, float(value)) for point, value in extra]
        noise = RowNoise([row_variance(uncertainty_of(o.details), float(o.objective), log_objective=log_objective)
                          for o in valid] + [0.0] * len(extra))
        from skopt.space import Space as SkSpace
        from skopt.utils import cook_estimator, normalize_dimensions

        skspace = SkSpace(normalize_dimensions(space.skopt_dimensions()))
        model = cook_estimator("GP", space=skspace, random_state=seed, noise="gaussian", n_restarts_optimizer=2)
        X = skspace.transform([space.to_values(point) for point, _ in data])
        y = [_to_y(value, log_objective) for _, value in data]
        model.set_params(alpha=noise.alpha(y))
        with warnings.catch_warnings():
            # A length scale at its bound says a dimension did not matter in
            # these trials: an answer, not a fault worth a warning per dimension.
            warnings.simplefilter("ignore", category=UserWarning)
            warnings.simplefilter("ignore", category=_convergence_warning())
            model.fit(X, y)
        source = f"a Gaussian process fitted to {len(told)} trials"
        if extra:
            source += f" and {len(extra)} gain runs"
        return cls(space, skspace, model, log_objective=log_objective, trials=len(data), source=source)

    @classmethod
    def from_optimizer(cls, space: Space, opt: Any, *, log_objective: bool = True) -> "Surrogate | None":
        """The optimizer's own last model (BayesianSearch.opt)."""
        if not getattr(opt, "models", None):
            return None
        return cls(space, opt.space, opt.models[-1], log_objective=log_objective, trials=len(opt.yi),
                   source=f"the optimizer's Gaussian process ({len(opt.yi)} trials)")

    def _rows(self, points: Sequence[Mapping[str, Value]]):
        return self.skspace.transform([self.space.to_values(p) for p in points])

    def predict(self, points: Sequence[Mapping[str, Value]]) -> list[float]:
        """The modelled objective at each point."""
        return [_from_y(float(y), self.log_objective) for y in self.model.predict(self._rows(points))]

    def ratio(self, point: Mapping[str, Value], other: Mapping[str, Value], z: float = 1.959964
              ) -> tuple[float, float | None, float | None]:
        """Modelled objective(point) / objective(other), with an interval from the
        GP's joint posterior of the two (None without the log scale)."""
        mean, cov = self.model.predict(self._rows([point, other]), return_cov=True)
        if not self.log_objective:
            first, second = _from_y(float(mean[0]), False), _from_y(float(mean[1]), False)
            return (first / second if second else math.inf), None, None
        # y = -log(objective): log(obj_p / obj_o) = y_o - y_p
        difference = float(mean[1] - mean[0])
        spread = math.sqrt(max(float(cov[0, 0] + cov[1, 1] - 2 * cov[0, 1]), 0.0))
        return math.exp(difference), math.exp(difference - z * spread), math.exp(difference + z * spread)

    def curve(self, index: int, grid: Sequence[Value], through: Mapping[str, Value], *, samples: int = PD_SAMPLES,
              seed: int = 0) -> tuple[list[float], list[float], list[float], list[float]]:
        """For dimension `index` at each grid value: the partial dependence (the
        model averaged over random settings of the other dimensions) and the
        slice through `through` (the other dimensions at its values) with its
        95 % band. All in the objective's units.

        Not skopt.plots.partial_dependence_1D: it lays integer dimensions on a
        linear grid, which on a log-uniform one (MaxConnectionsPerChild from
        1,001 to 1,000,000) puts nearly every point above 25,000; the average
        computed here is the same one, on the grid the caller chooses.
        """
        import numpy as np

        dims = self.skspace.dimensions
        starts = np.cumsum([0] + [d.transformed_size for d in dims])
        lo, hi = int(starts[index]), int(starts[index + 1])
        base = np.asarray(self.skspace.transform(self.skspace.rvs(n_samples=samples, random_state=seed)), float)
        slice_rows = np.repeat(np.asarray(self._rows([through]), float), len(grid), axis=0)
        average = []
        for row, value in enumerate(grid):
            encoded = np.asarray(dims[index].transform([value]), float).reshape(-1)
            pinned = base.copy()
            pinned[:, lo:hi] = encoded
            average.append(_from_y(float(np.mean(self.model.predict(pinned))), self.log_objective))
            slice_rows[row, lo:hi] = encoded
        mean, std = self.model.predict(slice_rows, return_std=True)
        through_mean = [_from_y(float(m), self.log_objective) for m in mean]
        # y is the negated objective (or its log): the band's ends swap.
        low = [_from_y(float(m + 1.959964 * s), self.log_objective) for m, s in zip(mean, std)]
        high = [_from_y(float(m - 1.959964 * s), self.log_objective) for m, s in zip(mean, std)]
        return average, through_mean, low, high


def _convergence_warning() -> type[Warning]:
    from sklearn.exceptions import ConvergenceWarning

    return ConvergenceWarning


def _to_y(objective: float, log_objective: bool) -> float:
    """What skopt minimises (as advisor.tuner.search.optimizer tells it)."""
    return -math.log(max(objective, LOG_FLOOR)) if log_objective else -objective


def _from_y(y: float, log_objective: bool) -> float:
    return math.exp(-y) if log_objective else -y


@dataclass
class Sensitivity:
    dimension: str
    start: str
    winner: str
    ratio: float
    """Modelled objective at the winner / at the winner with this dimension at its start value."""
    low: float | None
    high: float | None
    method: str


def sensitivities(surrogate: Surrogate | None, recommendation: Recommendation) -> list[Sensitivity]:
    """One per searched dimension the recommendation changes."""
    if surrogate is None:
        return []
    space = surrogate.space
    winner, start = recommendation.winner, recommendation.start
    out = []
    for name in dict.fromkeys(c.dimension for c in recommendation.changes):
        dim = space.dimension(name)
        if dim is None or dim.is_fixed or winner.get(dim.name) == start.get(dim.name):
            continue
        reverted = dict(winner)
        reverted[dim.name] = start[dim.name]
        ratio, low, high = surrogate.ratio(winner, reverted)
        out.append(Sensitivity(dim.name, space.value_text(dim.name, start[dim.name]),
                               space.value_text(dim.name, winner[dim.name]), ratio, low, high,
                               f"{surrogate.source}: the winner against the winner with this one "
                               "dimension at its start value"))
    return out


@dataclass
class Curve:
    dimension: str
    kind: str
    """"int" or "choice"."""
    log: bool
    values: list[Value]
    average: list[float]
    """Partial dependence: averaged over random settings of the other dimensions."""
    through_winner: list[float]
    band_low: list[float]
    band_high: list[float]
    observed: list[tuple[Value, float]]
    start: Value
    winner: Value
    unit: str
    note: str = ""


def _grid(dim, points: int) -> list[Value]:
    if dim.kind == "choice":
        return list(dim.choices)
    if dim.high - dim.low + 1 <= points:
        return list(range(dim.low, dim.high + 1))
    if dim.log:
        ratio = dim.high / dim.low
        values = [dim.low * ratio ** (i / (points - 1)) for i in range(points)]
    else:
        values = [dim.low + (dim.high - dim.low) * i / (points - 1) for i in range(points)]
    return sorted({dim.clip(int(round(v))) for v in values})


def curves(surrogate: Surrogate | None, observations: Sequence[Observation], winner: Mapping[str, Value],
           start: Mapping[str, Value], *, points: int = PD_POINTS, seed: int = 0) -> list[Curve]:
    if surrogate is None:
        return []
    space = surrogate.space
    told = [o for o in observations if o.valid and o.objective is not None]
    out = []
    for index, dim in enumerate(space.free):
        grid = _grid(dim, points)
        average, through, low, high = surrogate.curve(index, grid, winner, seed=seed)
        note = ""
        if dim.unlimited_at_top:
            note = f"{dim.high:,} stands for 0 (unlimited)"
        out.append(Curve(dim.name, dim.kind, dim.log, grid, average, through, low, high,
                         [(o.point[dim.name], float(o.objective)) for o in told],  # type: ignore[arg-type]
                         start[dim.name], winner[dim.name], dim.unit or UNITS.get(dim.name, ""), note))
    return out
