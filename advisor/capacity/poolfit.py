"""Fit the worker-pool model (advisor.capacity.pool) to what bench measured.

bench measures more than httperf's reply rate and reply time, and the model
has a place for each of them:

* CPU seconds per reply (the httpd tree's CPU over its replies) is the CPU
  demand d directly;
* busy workers over throughput is, by Little's law, the time a worker is held
  per request. At light load nothing queues, so that time less the reply
  time is the part of the hold the client does not see (lingering close,
  logging, reaping a CGI);
* the wait w (the hold that uses no CPU) is then fitted by least squares on
  the log reply rates, log reply times and log busy workers of all trials,
  plus the share of requests turned away (an absolute share: it is often 0).

Without CPU figures (a CSV, or bench output without metrics) d is fitted as
well. Each trial keeps its own MaxRequestWorkers, so ramps run at several pool
sizes fit one model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from advisor.capacity.fit import Observation
from advisor.capacity.pool import ServerModel, solve

# Weight of a turned-away share residual against a log residual: a 5-point
# miss weighs like a 10 % miss of throughput or reply time.
SHARE_WEIGHT = 2.0
# Residuals beyond about this size (30 % in log terms) count less than squares.
ROBUST_SCALE = 0.3
# A trial is light when fewer than this share of its workers were busy.
LIGHT_SHARE = 0.6


@dataclass
class TrialComparison:
    """One fitted-on trial, measured beside predicted."""

    source: str
    rate: float
    workers: int
    throughput: float
    throughput_predicted: float
    response_time: float
    response_time_predicted: float
    turned_away: float | None
    turned_away_predicted: float
    busy_workers: float | None
    busy_workers_predicted: float


@dataclass
class PoolFit:
    model: ServerModel
    workers: int
    """MaxRequestWorkers of the trials (the most common, when they differ)."""
    regime: str
    capacity: float
    """Replies/s the fitted server sustains at `workers`."""
    cpu_measured: bool
    rms_log_error: float
    points: int
    comparisons: list[TrialComparison] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def service_time(self) -> float:
        """Time a worker is held per request (the model's mean service time)."""
        return self.model.hold_time


def _most_common(values: list) -> object:
    return max(set(values), key=values.count)


def _predict_all(model: ServerModel, groups: dict[int, list[int]], rates: list[float]):
    out = [None] * len(rates)
    for workers, indices in groups.items():
        for i, result in zip(indices, solve([rates[i] for i in indices], model, workers)):
            out[i] = result
    return out


def _residuals(model: ServerModel, obs: list[Observation], groups, rates) -> list[float]:
    res: list[float] = []
    for o, p in zip(obs, _predict_all(model, groups, rates)):
        if p.throughput <= 0 or p.response_time <= 0:
            res += [10.0, 10.0]
            continue
        res.append(math.log(p.throughput / o.throughput))
        res.append(math.log(p.response_time / o.response_time))
        if o.busy_workers is not None and o.busy_workers > 0 and p.busy_workers > 0:
            res.append(math.log(p.busy_workers / o.busy_workers))
        if o.turned_away is not None:
            res.append(SHARE_WEIGHT * (p.blocking - o.turned_away))
    return res


def _ssr(model, obs, groups, rates) -> float:
    # A robust (Cauchy) loss: a trial bench measured in a transient (a long
    # listen queue still filling) misses by an order of magnitude in reply
    # time, and squares would let that one residual pull every parameter.
    scale = ROBUST_SCALE * ROBUST_SCALE
    return sum(math.log1p(r * r / scale) for r in _residuals(model, obs, groups, rates))


def fit_pool(observations: list[Observation], workers: int, cores: float, backlog: int) -> PoolFit:
    """Fit the CPU demand, wait and reply tail; `workers` and `cores` are used
    for trials that do not say theirs, `backlog` is the listen queue."""
    if len(observations) < 3:
        raise ValueError("need at least three trials to fit the model")
    obs = list(observations)
    sizes = [o.workers or workers for o in obs]
    core_list = [o.cores for o in obs if o.cores]
    m = float(_most_common(core_list)) if core_list else float(cores)
    rates = [o.rate for o in obs]
    groups: dict[int, list[int]] = {}
    for i, c in enumerate(sizes):
        groups.setdefault(c, []).append(i)

    cpu_obs = [o for o in obs if o.cpu_cores is not None]
    d_measured = (sum(o.cpu_cores for o in cpu_obs) / sum(o.throughput for o in cpu_obs)) if cpu_obs else None
    # Light trials: nothing queues, so N = busy workers and Little's law gives the hold.
    light = [(o, c) for o, c in zip(obs, sizes)
             if o.busy_workers is not None and o.busy_workers <= LIGHT_SHARE * c and not o.turned_away]
    if light:
        hold = sum(o.busy_workers for o, _ in light) / sum(o.throughput for o, _ in light)
        tails = sorted(o.busy_workers / o.throughput - o.response_time for o, _ in light)
        tail = max(tails[len(tails) // 2], 0.0)
    else:
        lightest = min(obs, key=lambda o: o.rate)
        hold, tail = lightest.response_time, 0.0

    def model_of(d: float, w: float) -> ServerModel:
        return ServerModel(d, w, m, backlog, min(tail, w))

    if d_measured is not None:
        d = max(d_measured, 0.0)
        w0 = max(hold - d, hold * 0.02, 1e-5)
        w = _zoom_1d(lambda lw: _ssr(model_of(d, math.exp(lw)), obs, groups, rates), math.log(w0))
        w = math.exp(w)
    else:
        best = None
        for share in (0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98):
            d0 = hold * share
            lw = _zoom_1d(lambda lw: _ssr(model_of(d0, math.exp(lw)), obs, groups, rates),
                          math.log(max(hold - d0, 1e-5)))
            cost = _ssr(model_of(d0, math.exp(lw)), obs, groups, rates)
            if best is None or cost < best[0]:
                best = (cost, d0, math.exp(lw))
        _, d, w = best
    model = model_of(d, w)
    c_main = int(_most_common(sizes))
    predicted = _predict_all(model, groups, rates)
    comparisons = [
        TrialComparison(o.source, o.rate, c, o.throughput, p.throughput, o.response_time, p.response_time,
                        o.turned_away, p.blocking, o.busy_workers, p.busy_workers)
        for o, c, p in zip(obs, sizes, predicted)
    ]
    logs = [math.log(p.throughput / o.throughput) for o, p in zip(obs, predicted)]
    logs += [math.log(p.response_time / o.response_time) for o, p in zip(obs, predicted)]
    rms = math.sqrt(sum(v * v for v in logs) / len(logs))
    warnings: list[str] = []
    if rms > 0.25:
        warnings.append(f"the model fits poorly (typical error {rms:.0%}): check that each trial reached "
                        f"a steady state (a long listen queue fills slowly) and that nothing else ran")
    capacity = model.capacity(c_main)
    if max(rates) < capacity:
        warnings.append(f"no trial reached the capacity of about {capacity:.3g} req/s: predictions past "
                        f"it rest on the model alone")
    if d_measured is None:
        warnings.append("bench's CPU figures are missing: the CPU demand was fitted, not measured")
    return PoolFit(model, c_main, model.regime(c_main), capacity, d_measured is not None, rms, len(obs),
                   comparisons, warnings)


def _zoom_1d(cost, start: float, span: float = 3.0, rounds: int = 8, points: int = 13) -> float:
    """Minimise cost(x) near `start` by zooming grids (x on a log scale)."""
    best = start
    for _ in range(rounds):
        grid = [best - span + 2 * span * i / (points - 1) for i in range(points)]
        values = [cost(x) for x in grid]
        best = grid[values.index(min(values))]
        span /= 3.0
    return best
