"""The search: scikit-optimize's Optimizer driven ask/tell, and a random baseline.

- Surrogate: a Gaussian process whose kernel includes a white-noise term
  (skopt's GP with noise="gaussian"), so it learns how much two trials of
  the same point disagree instead of believing every measurement exactly.
- First point: the starting config (told like any trial), then a
  space-filling design (Latin hypercube by default), then expected
  improvement.
- scikit-optimize minimises: every objective (higher is better: replies/s)
  is told negated.
- Noise: each trial's own variance, when the trial reports it
  (`details["uncertainty"]`, see trial_noise), is told to the GP row by row,
  the white-noise term keeping what the trials' own figures do not explain.
  A reading that would lead the search and stands far above what the model
  predicted for it, or a floor that would lead, is measured again at once;
  the incumbent and its near-ties are measured again in the last trials.
  Each replicate is told as its own observation.
- Stopping: the trial budget, a time budget, or an expected improvement
  below a threshold once a minimum number of trials has run.

skopt and numpy are imported inside the functions that need them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol

from advisor.tuner.search.space import Space, Value
from advisor.tuner.search.trial_noise import (SURPRISE_SDS, RowNoise, reject_variance, row_variance, surprise,
                                              uncertainty_of)

Point = dict[str, Value]
# Objectives are rates (replies/s): a trial that met no rate scores as this.
LOG_FLOOR = 1e-3


@dataclass
class TrialOutcome:
    """What one trial (real or simulated) says about one point."""

    objective: float
    """Higher is better (by default the peak sustainable reply rate, replies/s)."""
    valid: bool
    """False: the trial measured the load generator or a disturbance, not the server."""
    verdict: str
    """The bottleneck label (advisor.tuner.trial.verdict.LABELS)."""
    details: dict[str, Any] = field(default_factory=dict)
    """httperf fields, metrics, the verdict's evidence: plain JSON values."""


Objective = Callable[[Point], TrialOutcome]

ORIGINS = ("start", "evidence", "first", "mpm", "design", "model", "evidence repair", "replicate", "random")
"""Why a point was tried: the config in use, lint's fixes applied to it,
another given first point, the space-filling design, the GP's acquisition,
the incumbent with lint's fixes, a second look, or the random baseline."""


@dataclass
class SearchSettings:
    budget: int = 15
    """Trials, replicates included."""
    max_time_s: float | None = None
    seed: int = 0
    initial_points: int = 5
    """Size of the initial design: the starting config, the evidence point,
    then space-filling points."""
    initial_design: str = "lhs"
    """skopt's initial_point_generator: "lhs", "sobol", "halton", "random"..."""
    acq_func: str = "EI"
    xi: float = 0.01
    """EI's margin: with the log objective, 0.01 asks for 1 % better."""
    acq_optimizer: str = "sampling"
    """"sampling" scores `acq_points` random candidates; "lbfgs" polishes the
    best few with gradients (slower, and no better on these mixed spaces)."""
    acq_points: int = 2000
    """Random candidates skopt scores for the acquisition."""
    gp_restarts: int = 0
    """Extra starts of the GP's hyperparameter fit (skopt's default is 2;
    the extra starts changed no choice in the simulated benchmark)."""
    gp_fit_iterations: int | None = 60
    """L-BFGS iterations for the GP's hyperparameters at each tell (sklearn
    allows 15,000; the fit is most of the tuner's own time)."""
    min_trials: int = 8
    ei_stop: float = 0.002
    """Stop when the best expected improvement is below this share of the incumbent."""
    tie_margin: float = 0.04
    """A point within this share of the best mean is a near-tie worth measuring again."""
    max_observations: int = 3
    """Measurements of one point at most."""
    replicate_share: float = 0.2
    """The last trials, at most this share of the budget, re-measure the
    incumbent and its near-ties."""
    evidence_repairs: int = 2
    """How many incumbents are tried again with lint's fixes applied."""
    log_objective: bool = True
    """Model log(objective) (objectives must then be positive rates)."""
    max_rejections: int = 10
    """Points in a row lint may refuse before the search gives up."""
    observation_noise: bool = True
    """Tell the GP each trial's own variance (False: one learnt white-noise
    level for every trial, as before issue 56)."""
    early_remeasure: bool = True
    """Measure again at once a first reading that would lead and surprised the
    model (or was a floor)."""
    surprise_sds: float = SURPRISE_SDS

    def __post_init__(self) -> None:
        if self.budget < 1:
            raise ValueError("the trial budget must be at least 1")
        if self.initial_points < 1:
            raise ValueError("the initial design needs at least the starting point")


@dataclass
class Observation:
    """One completed trial, as the journal keeps it."""

    trial: int
    point: Point
    objective: float | None
    valid: bool
    verdict: str
    details: dict[str, Any] = field(default_factory=dict)
    origin: str = "model"
    """Why this point was tried (see ORIGINS)."""
    replicate: bool = False
    """A second look at a point already measured (origin "replicate")."""
    elapsed_s: float = 0.0

    def __post_init__(self) -> None:
        if self.replicate and self.origin == "model":
            self.origin = "replicate"
        self.replicate = self.origin == "replicate"

    def to_dict(self) -> dict[str, Any]:
        return {"trial": self.trial, "point": dict(self.point), "objective": self.objective,
                "valid": self.valid, "verdict": self.verdict, "details": self.details,
                "origin": self.origin, "replicate": self.replicate, "elapsed_s": round(self.elapsed_s, 3)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Observation":
        objective = data.get("objective")
        return cls(trial=int(data["trial"]), point=dict(data["point"]),
                   objective=None if objective is None else float(objective), valid=bool(data["valid"]),
                   verdict=str(data.get("verdict", "")), details=dict(data.get("details") or {}),
                   origin=str(data.get("origin", "model")), replicate=bool(data.get("replicate", False)),
                   elapsed_s=float(data.get("elapsed_s", 0.0)))


class Searcher(Protocol):
    space: Space
    settings: SearchSettings

    def ask(self) -> tuple[Point, str]: ...

    def tell(self, point: Point, objective: float, *, origin: str = "model",
             rel_sd: float | None = None, bound: str | None = None) -> None: ...

    def replay(self, observations: Iterable[Observation]) -> None: ...

    def reject(self, point: Point) -> None: ...

    def incumbent(self) -> tuple[Point, float, int] | None: ...

    def expected_improvement(self) -> float | None: ...


def _key(space: Space, point: Mapping[str, Value]) -> tuple:
    return tuple(point[name] for name in space.names)


class _History:
    """Observations per distinct point (both searchers keep one)."""

    def __init__(self, space: Space) -> None:
        self.space = space
        self.values: dict[tuple, list[float]] = {}
        self.points: dict[tuple, Point] = {}
        self.origins: list[str] = []

    def add(self, point: Point, objective: float, origin: str) -> tuple:
        key = _key(self.space, point)
        self.values.setdefault(key, []).append(float(objective))
        self.points.setdefault(key, dict(point))
        self.origins.append(origin)
        return key

    @property
    def distinct(self) -> int:
        return len(self.values)

    @property
    def replicates(self) -> int:
        return self.origins.count("replicate")

    def mean(self, key: tuple) -> float:
        values = self.values[key]
        return sum(values) / len(values)

    def best_by_mean(self) -> tuple[tuple, float] | None:
        if not self.values:
            return None
        key = max(self.values, key=self.mean)
        return key, self.mean(key)

    @property
    def worst(self) -> float | None:
        every = [v for values in self.values.values() for v in values]
        return min(every) if every else None


class BayesianSearch:
    """skopt's Optimizer with a noise-learning GP, started from the config in use."""

    kind = "bayesian"

    def __init__(self, space: Space, settings: SearchSettings,
                 first_points: list[Point] | None = None) -> None:
        from skopt import Optimizer
        from skopt.utils import cook_estimator

        self.space = space
        self.settings = settings
        dims = space.skopt_dimensions()
        # noise="gaussian" adds a WhiteKernel whose level the GP fits with its
        # other hyperparameters: the measured noise, learnt from the trials.
        surrogate = cook_estimator("GP", space=dims, random_state=settings.seed, noise="gaussian",
                                   n_restarts_optimizer=settings.gp_restarts)
        if settings.gp_fit_iterations is not None:
            surrogate.set_params(optimizer=_bounded_lbfgs(settings.gp_fit_iterations))
        self.opt = Optimizer(
            dims, base_estimator=surrogate, n_initial_points=settings.initial_points,
            initial_point_generator=settings.initial_design, acq_func=settings.acq_func,
            acq_optimizer=settings.acq_optimizer, acq_func_kwargs={"xi": settings.xi},
            acq_optimizer_kwargs={"n_points": settings.acq_points, "n_restarts_optimizer": 3},
            random_state=settings.seed,
        )
        self.history = _History(space)
        self.first = _first_points(space, first_points)
        self.noise = RowNoise()
        """One variance per row of self.opt.Xi."""
        self.remeasure: Point | None = None
        """A first reading to measure again before anything else."""

    # ---- ask / tell ----------------------------------------------------------

    def ask(self) -> tuple[Point, str]:
        """The next point and where it comes from (see ORIGINS)."""
        if self.remeasure is not None:
            point, self.remeasure = self.remeasure, None
            return point, "replicate"
        first = _next_first(self)
        if first is not None:
            return first
        again = self._replicate()
        if again is not None:
            return again, "replicate"
        repaired = self._evidence_repair()
        if repaired is not None:
            return repaired, "evidence repair"
        design = self.history.distinct < self.settings.initial_points
        with _one_blas_thread():
            return self.space.to_point(self.opt.ask()), "design" if design else "model"

    def _evidence_repair(self) -> Point | None:
        """The incumbent with lint's fixes applied, once the design is done.

        Fifteen trials cannot teach a GP the few-per-cent effects of a dozen
        settings through measurement noise; the evidence page already knows
        their direction (sendfile, buffered logs, no DNS lookups, no child
        recycling, a pool RAM can hold). So each new incumbent is also tried
        with those applied, told like any trial: when the evidence does not
        hold on this server, the measurement says so and the GP learns it.
        skopt has no way to take such prior knowledge as a prior.
        """
        s = self.settings
        if self.history.origins.count("evidence repair") >= s.evidence_repairs \
                or self.history.distinct < s.initial_points:
            return None
        best = self.incumbent()
        if best is None:
            return None
        candidate = self.space.evidence_point(best[0])
        if _key(self.space, candidate) in self.history.values:
            return None
        return candidate

    def tell(self, point: Point, objective: float, *, origin: str = "model", fit: bool = True,
             rel_sd: float | None = None, bound: str | None = None) -> None:
        """One trial's figure; `rel_sd` and `bound` are its own report of its
        precision (see trial_noise), None when it made none."""
        # A second look is owed by the trial just told, never by an older one
        # (a replay tells the second look right after the reading it checks).
        self.remeasure = None
        y = self._y(objective)
        uncertainty = uncertainty_of({"uncertainty": {"rel_sd": rel_sd, "bound": bound}})
        variance = row_variance(uncertainty, objective, log_objective=self.settings.log_objective)
        lead = self.history.best_by_mean()
        first_reading = _key(self.space, point) not in self.history.values
        leads = first_reading and (lead is None or float(objective) > lead[1])
        surprised = leads and fit and self._surprised(point, y, variance)
        self.history.add(point, objective, origin)
        self._tell_row(point, y, variance, fit)
        if self.settings.early_remeasure and leads and (surprised or uncertainty.bound == "lower"):
            self.remeasure = dict(point)

    def _surprised(self, point: Point, y: float, variance: float) -> bool:
        """Does the reading lie further above the model's prediction than its spread allows?

        Only a model fitted before this reading can say: during the initial
        design there is none, and the reading stands as it is."""
        if not self.opt.models:
            return False
        x_row = self.opt.space.transform([self.space.to_values(point)])[0]
        with _one_blas_thread():
            return surprise(self.opt.models[-1], x_row, y, variance) > self.settings.surprise_sds

    def _tell_row(self, point: Point, y: float, variance: float, fit: bool = True) -> None:
        """One row told to skopt, its variance kept beside it and handed to the
        GP that the tell fits (skopt clones its base estimator at each fit)."""
        self.noise.add(variance)
        if self.settings.observation_noise:
            alpha = self.noise.alpha([float(v) for v in self.opt.yi] + [y])
            self.opt.base_estimator_.set_params(alpha=alpha)
        with _one_blas_thread():
            self.opt.tell(self.space.to_values(point), y, fit=fit)

    def replay(self, observations: Iterable[Observation]) -> None:
        """Tell every completed trial of a journal, in order (for --resume).

        The model is fitted before the last trial and again with it: the last
        reading may be a surprise waiting to be measured again, and only the
        model that came before it can say so."""
        told = [o for o in observations if o.valid and o.objective is not None]
        for index, obs in enumerate(told):
            u = uncertainty_of(obs.details)
            self.tell(obs.point, obs.objective, origin=obs.origin, fit=index >= len(told) - 2,
                      rel_sd=u.rel_sd, bound=u.bound)

    def reject(self, point: Point) -> None:
        """A point lint refused: never run, told as bad as the worst trial so far.

        skopt has no constraints for its L-BFGS acquisition search (its
        `space_constraint` forces random sampling and calls the check for
        every one of thousands of candidates), so the refusal is expressed
        the one way a surrogate understands: a poor value at that point.
        """
        worst = self.history.worst
        # Before any measurement there is no worst trial: the floor stands in
        # (skopt would otherwise hand out the same point again).
        told = LOG_FLOOR if worst is None else worst
        self._tell_row(point, self._y(told), reject_variance(told, log_objective=self.settings.log_objective))

    def _y(self, objective: float) -> float:
        """What skopt minimises: the negated objective, on a log scale by default.

        Throughput effects multiply (Arlitt & Williamson give them in per
        cent: -10 % for the log, +28 % for mmap) and so does the noise of a
        knee search (a few per cent of the rate): on a log scale both are
        additive and the same size everywhere, which is what a GP with one
        white-noise level assumes.
        """
        value = float(objective)
        if self.settings.log_objective:
            return -math.log(max(value, LOG_FLOOR))
        return -value

    # ---- noise: replicate the incumbent and near-ties --------------------------

    def _replicate(self) -> Point | None:
        """In the last trials of the budget, measure again the incumbent and
        the points within a near-tie of it, fewest measurements first.

        Spent at the end rather than as soon as a point looks good: early on
        one measurement per point teaches the GP more (its noise term already
        discounts single values), while the choice of what to recommend is
        where a lucky measurement does harm. The exception, a first reading
        that would lead against the model's expectation, is measured again
        at once (tell) and takes one of these replicates.
        """
        s = self.settings
        history = self.history
        reserve = int(s.replicate_share * s.budget)
        done = sum(len(v) for v in history.values.values())
        # An early second look at a surprise is one of this reserve's replicates.
        if reserve <= 0 or done < s.budget - reserve or history.replicates >= reserve:
            return None
        best = self.incumbent()
        if best is None:
            return None
        best_key = _key(self.space, best[0])
        top = max(history.mean(k) for k in history.values)
        contenders = [k for k in history.values
                      if k == best_key or history.mean(k) >= top * (1.0 - s.tie_margin)]
        contenders = [k for k in contenders if len(history.values[k]) < s.max_observations]
        if not contenders:
            return None
        # Fewest measurements first; among equals, the better mean.
        key = min(contenders, key=lambda k: (len(history.values[k]), -history.mean(k)))
        return dict(history.points[key])

    # ---- what it knows -------------------------------------------------------

    def incumbent(self) -> tuple[Point, float, int] | None:
        """The best point measured, judged by the GP's mean where it has one
        (a single lucky measurement does not win on noise alone)."""
        if not self.history.values:
            return None
        keys = list(self.history.values)
        model = self.opt.models[-1] if self.opt.models else None
        if model is None or len(keys) < 2:
            key, mean = self.history.best_by_mean()  # type: ignore[misc]
            return dict(self.history.points[key]), mean, len(self.history.values[key])
        with _one_blas_thread():
            X = self.opt.space.transform([list(k) for k in keys])
            predicted = [-float(v) for v in model.predict(X)]
        index = max(range(len(keys)), key=lambda i: predicted[i])
        key = keys[index]
        return dict(self.history.points[key]), self.history.mean(key), len(self.history.values[key])

    def expected_improvement(self) -> float | None:
        """The largest expected improvement over random candidates, as a share
        of the incumbent's objective; None before the GP is fitted."""
        if not self.opt.models:
            return None
        from skopt.acquisition import gaussian_ei

        model = self.opt.models[-1]
        candidates = self.opt.space.rvs(n_samples=self.settings.acq_points, random_state=self.settings.seed)
        X = self.opt.space.transform(candidates)
        best = min(self.opt.yi)
        with _one_blas_thread():
            ei = float(max(gaussian_ei(X, model, y_opt=best, xi=0.0)))
        if self.settings.log_objective:
            return math.expm1(ei)  # an improvement of the log is a ratio
        return ei / (abs(best) or 1.0)


class RandomSearch:
    """The baseline: the same first points, then uniform points; best mean wins."""

    kind = "random"

    def __init__(self, space: Space, settings: SearchSettings,
                 first_points: list[Point] | None = None) -> None:
        self.space = space
        self.settings = settings
        self.history = _History(space)
        self.first = _first_points(space, first_points)
        self._points = space.random_points(max(settings.budget, 1) * 4, seed=settings.seed)

    def ask(self) -> tuple[Point, str]:
        first = _next_first(self)
        if first is not None:
            return first
        drawn = self.history.origins.count("random")
        return dict(self._points[drawn % len(self._points)]), "random"

    def tell(self, point: Point, objective: float, *, origin: str = "random", fit: bool = True,
             rel_sd: float | None = None, bound: str | None = None) -> None:
        self.history.add(point, objective, origin)

    def replay(self, observations: Iterable[Observation]) -> None:
        for obs in observations:
            if obs.valid and obs.objective is not None:
                self.tell(obs.point, obs.objective, origin=obs.origin)

    def reject(self, point: Point) -> None:
        pass

    def incumbent(self) -> tuple[Point, float, int] | None:
        best = self.history.best_by_mean()
        if best is None:
            return None
        key, mean = best
        return dict(self.history.points[key]), mean, len(self.history.values[key])

    def expected_improvement(self) -> float | None:
        return None


# --------------------------------------------------------------------------
# The loop


@dataclass
class SearchResult:
    observations: list[Observation]
    best: Point | None
    best_objective: float | None
    best_count: int
    stop_reason: str
    advice: str | None = None
    rejected: list[tuple[Point, list[str]]] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def trials(self) -> int:
        return len(self.observations)


ADVICE = {
    "client-bound": "the load generator, not the server, set the pace: give httperf more client cores, "
                    "lower the starting rate, or cap the server with --cpu-quota",
}
DEFAULT_ADVICE = ("the trial was disturbed twice: stop other programs on the server's and client's cores, "
                  "or cap the server with --cpu-quota so the client keeps up")
SHORT_POOL_ADVICE = ("the server ran fewer workers than the candidate claims: start the pool nearer its limit "
                     "(StartServers, MinSpareServers) or give each trial a longer warm-up (--warmup 10)")
# What an invalid trial's first reason names, and what to do about it.
REASON_ADVICE = (
    ("previous generation", "workers of the previous generation still held the pool's slots after the reload: "
                            "give slow requests less time on staging (Timeout, GracefulShutdownTimeout) "
                            "or run the session again"),
    ("the pool held", SHORT_POOL_ADVICE),
    ("pool was still growing", SHORT_POOL_ADVICE),
    ("start-up limits", "restart the staging server with the candidate in place, then run the session again"),
    ("closed connections", "the server closes connections before the workload's calls are done: "
                           "lower the calls per connection or raise MaxKeepAliveRequests in the space"),
)


def advice_for(reasons: list[str]) -> str:
    """The advice for an invalid trial, from the first of its reasons that names a cause."""
    for reason in reasons:
        for marker, advice in REASON_ADVICE:
            if marker in reason:
                return advice
    return DEFAULT_ADVICE


def run_search(searcher: Searcher, objective: Objective, *, check: Callable[[Point], list[str]] | None = None,
               on_trial: Callable[[Observation], None] | None = None,
               done: Iterable[Observation] = (), clock: Callable[[], float] = time.monotonic) -> SearchResult:
    """Ask, try, tell until a stopping rule fires.

    `check(point)` returns lint errors; a point with any is never tried.
    `on_trial` sees every completed trial as it completes (the journal).
    `done`: trials of an earlier run, already told (see `replay`), which count
    against the budget.
    """
    settings = searcher.settings
    observations = list(done)
    rejected: list[tuple[Point, list[str]]] = []
    start = clock()
    durations: list[float] = [o.elapsed_s for o in observations if o.elapsed_s > 0]
    stop_reason = "budget"
    advice = None
    consecutive_rejections = 0
    while len(observations) < settings.budget:
        if settings.max_time_s is not None:
            expected = sum(durations) / len(durations) if durations else 0.0
            if clock() - start + expected > settings.max_time_s:
                stop_reason = "time"
                break
        if len(observations) >= settings.min_trials:
            ei = searcher.expected_improvement()
            if ei is not None and ei < settings.ei_stop:
                stop_reason = f"expected improvement {ei:.2%} < {settings.ei_stop:.2%}"
                break
        point, origin = searcher.ask()
        errors = check(point) if check is not None else []
        if errors:
            rejected.append((point, errors))
            searcher.reject(point)
            consecutive_rejections += 1
            if consecutive_rejections >= settings.max_rejections:
                stop_reason = "lint refused every point proposed"
                advice = errors[0]
                break
            continue
        consecutive_rejections = 0
        outcome, seconds = _try(objective, point, clock)
        if not outcome.valid:
            # Retried once: a second invalid trial stops the session with advice.
            outcome, more = _try(objective, point, clock)
            seconds += more
        obs = Observation(trial=len(observations) + 1, point=point,
                          objective=outcome.objective if outcome.valid else None, valid=outcome.valid,
                          verdict=outcome.verdict, details=outcome.details, origin=origin,
                          elapsed_s=seconds)
        observations.append(obs)
        durations.append(seconds)
        if on_trial is not None:
            on_trial(obs)
        if not outcome.valid:
            reasons = [str(r) for r in (outcome.details or {}).get("invalid_reasons") or []]
            stop_reason = f"trial {obs.trial} was invalid twice ({outcome.verdict}" + (
                f": {reasons[0]})" if reasons else ")")
            advice = ADVICE.get(outcome.verdict) or advice_for(reasons)
            break
        uncertainty = uncertainty_of(outcome.details)
        searcher.tell(point, outcome.objective, origin=origin, rel_sd=uncertainty.rel_sd, bound=uncertainty.bound)
    best = searcher.incumbent()
    return SearchResult(observations, best[0] if best else None, best[1] if best else None,
                        best[2] if best else 0, stop_reason, advice, rejected, clock() - start)


def _try(objective: Objective, point: Point, clock: Callable[[], float]) -> tuple[TrialOutcome, float]:
    began = clock()
    outcome = objective(dict(point))
    value = float(outcome.objective)
    if math.isnan(value) or math.isinf(value):
        outcome = TrialOutcome(0.0, False, outcome.verdict or "none", outcome.details)
    return outcome, clock() - began


def _one_blas_thread():
    """The GP's matrices are tens of rows: BLAS threads only add hand-offs,
    and on a machine shared with load tests they wait for a core (measured:
    2.5x slower with OpenBLAS's two threads under load)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


@dataclass(frozen=True)
class _bounded_lbfgs:
    """sklearn's GP hyperparameter optimizer with an iteration cap (a frozen
    dataclass so that sklearn's clone, which skopt calls per tell, copies it)."""

    iterations: int

    def __call__(self, obj_func, initial_theta, bounds):
        from scipy.optimize import minimize

        result = minimize(obj_func, initial_theta, method="L-BFGS-B", jac=True, bounds=bounds,
                          options={"maxiter": self.iterations})
        return result.x, result.fun


def _first_points(space: Space, given: list[Point] | None) -> list[tuple[Point, str]]:
    """The starting config first, then (by default) the evidence point, then
    the evidence point under each other MPM when the MPM is searched.

    The MPM changes what every other dimension means, and skopt's Latin
    hypercube does not stratify a categorical dimension (five design points
    from a worker start tried worker three times and never prefork): each
    MPM gets one trial before the design, so the model sees all three."""
    if given is not None:
        points = [(dict(p), "start" if i == 0 else "first") for i, p in enumerate(given)]
    else:
        evidence = space.evidence_point()
        points = [(dict(space.start), "start"), (evidence, "evidence")]
        mpm = space.dimension("MPM")
        if mpm is not None and not mpm.is_fixed:
            points += [(dict(evidence, MPM=other), "mpm") for other in mpm.choices
                       if other != space.mpm_of(evidence)]
    unique: dict[tuple, tuple[Point, str]] = {}
    for point, origin in points:
        unique.setdefault(_key(space, point), (point, origin))
    return list(unique.values())


def _next_first(searcher) -> tuple[Point, str] | None:
    """The next given first point not measured yet (resume skips the rest)."""
    while searcher.first:
        point, origin = searcher.first.pop(0)
        if _key(searcher.space, point) not in searcher.history.values:
            return point, origin
    return None


def make_searcher(kind: str, space: Space, settings: SearchSettings, first_points: list[Point] | None = None):
    if kind == "bayesian":
        return BayesianSearch(space, settings, first_points)
    if kind == "random":
        return RandomSearch(space, settings, first_points)
    raise ValueError(f"unknown search {kind!r}")
