"""Fit the worker-pool model (advisor.capacity.workerpool_model) to what bench measured.

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
from dataclasses import dataclass, field, replace

from advisor.capacity.fit_inputs import Observation
from advisor.capacity.workerpool_model import ServerModel, solve
from advisor.capacity.workerpool_trialsim import TrialSpec, replay_trial

# Weight of a turned-away share residual against a log residual: a 5-point
# miss weighs like a 10 % miss of throughput or reply time.
SHARE_WEIGHT = 2.0
# Residuals beyond about this size (30 % in log terms) count less than squares.
ROBUST_SCALE = 0.3
# The search replays a trial of at most this many connections (a fraction
# of a second at thousands per second); the final comparison replays all.
SEARCH_CONNECTIONS = 1500
# Mean busy workers below this are mostly the scoreboard's rounding.
RESOLVED_BUSY = 2.0
# How far one trial's busy count can sit from its mean, in workers: its
# samples are taken in step with paced arrivals (see fit_pool).
PHASE_LOCKED_ERROR_WORKERS = 1.0
# A trial tells the hold (Little's law on the pool) while the pool is not
# full: a full pool's busy count stands at its size whatever the hold.
LIGHT_SHARE = 0.95


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
    held_out: list[TrialComparison] = field(default_factory=list)
    """Trials predicted with the fitted model but not fitted on (--check)."""
    method: str = ""
    """How the model was compared with the trials."""
    replay_spec: TrialSpec | None = None
    """The trials' common settings, when they were replayed: curves are
    replays of such a trial at other rates."""
    capacity_in_step: float = 0.0
    """Replies/s at `workers` if the workers' CPU phases fall into step
    (ServerModel.in_step_capacity): the floor below `capacity`."""

    @property
    def service_time(self) -> float:
        """Time a worker is held per request (the model's mean service time)."""
        return self.model.hold_time


def _most_common(values: list) -> object:
    return max(set(values), key=values.count)


@dataclass(frozen=True)
class _Predicted:
    throughput: float
    response_time: float
    blocking: float
    busy_workers: float


class _Trials:
    """The trials as the model sees them: each with its pool, listen queue and,
    when bench ran it as paced single requests, what the replay needs."""

    def __init__(self, obs: list[Observation], workers: int, backlog: int, somaxconn: int | None) -> None:
        self.obs = obs
        self.sizes = [o.workers or workers for o in obs]
        self.backlogs = [_queue_length(o.listen_backlog, somaxconn) if o.listen_backlog is not None else backlog
                         for o in obs]
        self.replayable = bool(obs) and all(o.duration and o.timeout for o in obs)

    def predict(self, model: ServerModel, replay: bool, max_connections: int | None = None) -> list[_Predicted]:
        if replay:
            return [_replayed(model, TrialSpec(o.rate, o.duration, o.timeout, c, b, burst_cores=o.burst_cores,
                                               quota_period=o.quota_period), max_connections)
                    for o, c, b in zip(self.obs, self.sizes, self.backlogs)]
        out: list[_Predicted | None] = [None] * len(self.obs)
        groups: dict[tuple[int, int], list[int]] = {}
        for i, key in enumerate(zip(self.sizes, self.backlogs)):
            groups.setdefault(key, []).append(i)
        for (c, b), indices in groups.items():
            queued = ServerModel(model.cpu_demand, model.wait, model.cores, b, model.reply_tail)
            for i, r in zip(indices, solve([self.obs[i].rate for i in indices], queued, c)):
                out[i] = _Predicted(r.throughput, r.response_time, r.blocking, r.busy_workers)
        return out  # type: ignore[return-value]

    def compare(self, model: ServerModel, replay: bool) -> list[TrialComparison]:
        return [
            TrialComparison(o.source, o.rate, c, o.throughput, p.throughput, o.response_time, p.response_time,
                            o.turned_away, p.blocking, o.busy_workers, p.busy_workers)
            for o, c, p in zip(self.obs, self.sizes, self.predict(model, replay))
        ]


def _replayed(model: ServerModel, spec: TrialSpec, max_connections: int | None) -> _Predicted:
    """The replay of `spec`; beyond `max_connections` a shorter trial stands
    for it (the search replays every trial dozens of times), its replies
    scaled to the whole offered time and its drain kept."""
    if max_connections is None or spec.connections <= max_connections:
        r = replay_trial(model, spec)
        return _Predicted(r.reply_rate, r.reply_time, r.turned_away, r.busy_workers)
    short = replace(spec, duration=max_connections / spec.rate)
    r = replay_trial(model, short)
    drain = max(r.test_duration - short.duration, 0.0)
    replies = r.replies * spec.duration / short.duration
    return _Predicted(replies / (spec.duration + drain), r.reply_time, r.turned_away, r.busy_workers)


def _cpu_per_reply(obs: list[Observation]) -> float | None:
    """CPU seconds per reply, from the busier half of the trials that measured
    CPU: at light load the server's own upkeep (its parent, the status
    requests) weighs on each reply (the 1 KB sandbox: 0.26 ms a reply at
    250/s, 0.15 ms from 2,000/s on)."""
    cpu_obs = [o for o in obs if o.cpu_cores is not None and o.throughput > 0]
    if not cpu_obs:
        return None
    top = max(o.rate for o in cpu_obs)
    busy = [o for o in cpu_obs if o.rate >= top / 2]
    return sum(o.cpu_cores for o in busy) / sum(o.throughput for o in busy)


def _queue_length(listen_backlog: int, somaxconn: int | None) -> int:
    from advisor.capacity.workerpool_model import LINUX_EXTRA_SLOT

    capped = listen_backlog if somaxconn is None else min(listen_backlog, somaxconn)
    return max(capped, 0) + LINUX_EXTRA_SLOT


def _residuals(predicted: list[_Predicted], obs: list[Observation]) -> list[float]:
    res: list[float] = []
    for o, p in zip(obs, predicted):
        if not (0 < p.throughput < math.inf and 0 < p.response_time < math.inf):
            res += [10.0, 10.0]
            continue
        res.append(math.log(p.throughput / o.throughput))
        res.append(math.log(p.response_time / o.response_time))
        if o.busy_workers is not None and o.busy_workers >= RESOLVED_BUSY and p.busy_workers > 0:
            res.append(math.log(p.busy_workers / o.busy_workers))
        if o.turned_away is not None:
            res.append(SHARE_WEIGHT * (p.blocking - o.turned_away))
    return res


def _cost(predicted: list[_Predicted], obs: list[Observation]) -> float:
    # A robust (Cauchy) loss: a trial bench measured in a transient (a long
    # listen queue still filling) misses by an order of magnitude in reply
    # time, and squares would let that one residual pull every parameter.
    scale = ROBUST_SCALE * ROBUST_SCALE
    return sum(math.log1p(r * r / scale) for r in _residuals(predicted, obs))


def fit_pool(observations: list[Observation], workers: int, cores: float, backlog: int,
             somaxconn: int | None = None, held_out: list[Observation] | None = None) -> PoolFit:
    """Fit the CPU demand, wait and reply tail.

    `workers` and `cores` stand in for trials that do not say theirs;
    `backlog` is the listen queue (ListenBacklog + 1) of trials that did not
    set ListenBacklog, `somaxconn` caps the ones that did. `held_out` trials
    are predicted with the fitted model but not fitted on.
    """
    if len(observations) < 3:
        raise ValueError("need at least three trials to fit the model")
    obs = list(observations)
    trials = _Trials(obs, workers, backlog, somaxconn)
    checks = _Trials(list(held_out or []), workers, backlog, somaxconn)
    # Bench's paced single-request trials are replayed as run (paced
    # arrivals, their length and timeout, SYN retries); other trials are
    # compared with the Poisson steady state.
    replay = trials.replayable and (not checks.obs or checks.replayable)
    sizes = trials.sizes
    core_list = [o.cores for o in obs if o.cores]
    m = float(_most_common(core_list)) if core_list else float(cores)

    d_measured = _cpu_per_reply(obs)
    # Light trials: nothing queues, so N = busy workers and Little's law gives the hold.
    light = [(o, c) for o, c in zip(obs, sizes)
             if o.busy_workers is not None and o.busy_workers <= LIGHT_SHARE * c and not o.turned_away]
    if light:
        hold = sum(o.busy_workers for o, _ in light) / sum(o.throughput for o, _ in light)
        # The scoreboard is read once a second and counts whole workers. A
        # paced trial at a whole rate repeats every second, in step with the
        # reader, so all of a trial's samples catch the same point of the
        # cycle: the count sits at the floor or the ceiling of the true mean
        # and can be off by up to one worker, an error its samples do not
        # average away (at 32/s, 6.3 busy read as 6 in one ramp; in a CI
        # ramp three trials read 1.66 workers over, a 24 ms "tail" that put
        # the held-out replies/s 11 % low). So the pooled hold is good to one
        # worker per trial over their summed throughput, and a smaller tail
        # is not resolved (at 4 req/s, paced, every sample caught the one
        # request in service: a 250 ms hold for a 208 ms reply).
        resolved = [o for o, _ in light if o.busy_workers >= RESOLVED_BUSY]
        tail = 0.0
        if resolved:
            served = sum(o.throughput for o in resolved)
            tail = (sum(o.busy_workers for o in resolved) - sum(o.throughput * o.response_time for o in resolved)) / served
            resolution = PHASE_LOCKED_ERROR_WORKERS * len(resolved) / served
            tail = tail if tail > resolution else 0.0
    else:
        lightest = min(obs, key=lambda o: o.rate)
        hold, tail = lightest.response_time, 0.0
    if replay:
        # The replay's reply time is read from the light trials directly.
        lightest = min(obs, key=lambda o: o.rate)
        hold = max(hold, lightest.response_time)

    def model_of(d: float, w: float) -> ServerModel:
        return ServerModel(d, w, m, backlog, min(tail, w))

    def cost_of(d: float, log_w: float) -> float:
        return _cost(trials.predict(model_of(d, math.exp(log_w)), replay, SEARCH_CONNECTIONS), obs)

    # Each replay costs a simulation of the trial: a coarser search.
    search = {"span": 1.0, "rounds": 5, "points": 7} if replay else {}
    if d_measured is not None:
        d = max(d_measured, 0.0)
        w0 = max(hold - d / min(1.0, m), hold * 0.02, 1e-5)
        w = math.exp(_zoom_1d(lambda lw: cost_of(d, lw), math.log(w0), **search))
    else:
        best = None
        for share in (0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98):
            d0 = hold * share
            lw = _zoom_1d(lambda lw: cost_of(d0, lw), math.log(max(hold - d0, 1e-5)), **search)
            cost = cost_of(d0, lw)
            if best is None or cost < best[0]:
                best = (cost, d0, math.exp(lw))
        _, d, w = best
    model = model_of(d, w)
    c_main = int(_most_common(sizes))
    comparisons = trials.compare(model, replay)
    logs = [math.log(r.throughput_predicted / r.throughput) for r in comparisons if r.throughput_predicted > 0]
    logs += [math.log(r.response_time_predicted / r.response_time) for r in comparisons
             if 0 < r.response_time_predicted < math.inf]
    rms = math.sqrt(sum(v * v for v in logs) / len(logs)) if logs else math.inf
    warnings: list[str] = []
    if rms > 0.25:
        warnings.append(f"the model fits poorly (typical error {rms:.0%}): check that each trial reached "
                        f"a steady state (a long listen queue fills slowly) and that nothing else ran")
    capacity = model.capacity(c_main)
    if max(o.rate for o in obs) < capacity:
        warnings.append(f"no trial reached the capacity of about {capacity:.3g} req/s: predictions past "
                        f"it rest on the model alone")
    if d_measured is None:
        warnings.append("bench's CPU figures are missing: the CPU demand was fitted, not measured")
    in_step = model.in_step_capacity(c_main)
    method = ("each trial replayed as bench ran it (paced arrivals, its length and timeout, SYN retries)"
              if replay else "steady state, Poisson arrivals")
    spec = None
    if replay:
        # The most common settings among the trials fitted on.
        settings = [(o.duration, o.timeout, b, o.burst_cores, o.quota_period)
                    for o, b in zip(obs, trials.backlogs)]
        duration, timeout, queue, burst, period = _most_common(settings)
        spec = TrialSpec(1.0, duration, timeout, c_main, queue, burst_cores=burst, quota_period=period)
    return PoolFit(model, c_main, model.regime(c_main), capacity, d_measured is not None, rms, len(obs),
                   comparisons, warnings, held_out=checks.compare(model, replay) if checks.obs else [],
                   method=method, replay_spec=spec, capacity_in_step=in_step)


def fit_curve(fit: PoolFit, rates: list[float], workers: int):
    """The fitted model along `rates` at `workers`, as the trials saw it:
    replays of a trial like theirs, else the Poisson steady state."""
    from advisor.capacity.queueing_model import Arrivals, Estimate, Prediction
    from advisor.capacity.workerpool_model import predict_pool

    if fit.replay_spec is None:
        return predict_pool(rates, fit.model, workers, Arrivals("poisson"))
    out = []
    for rate in rates:
        spec = replace(fit.replay_spec, rate=rate, workers=workers)
        p = _replayed(fit.model, spec, SEARCH_CONNECTIONS)
        out.append(Prediction(rate, workers + spec.backlog, fit.model.hold_time, Estimate(p.throughput),
                              Estimate(p.response_time), Estimate(p.blocking), Estimate(p.busy_workers),
                              "replay of a bench trial"))
    return out


def _zoom_1d(cost, start: float, span: float = 3.0, rounds: int = 8, points: int = 13) -> float:
    """Minimise cost(x) near `start` by zooming grids (x on a log scale)."""
    best = start
    for _ in range(rounds):
        grid = [best - span + 2 * span * i / (points - 1) for i in range(points)]
        values = [cost(x) for x in grid]
        best = grid[values.index(min(values))]
        span /= 3.0
    return best
