"""Fit the model's mean service time and K from load-test measurements.

Cao, Andersson, Nyberg & Kihl (2003), whose parameters Andersson et al. (2003,
Table 2) reuse, maximised a likelihood of the observed mean response times.
We fit mean response time *and* throughput by least squares on their
logarithms. That is maximum likelihood when each measurement carries a
lognormal error of one common spread, which suits quantities that span
several orders of magnitude (milliseconds at light load, seconds in overload).

The model is M/G/1/K*PS with Poisson arrivals: by insensitivity its
predictions depend on the service law only through its mean, so the closed
form of M/M/1/K is exact for it, and a fit needs nothing but arrays.

Inputs: the JSON `apache-advisor bench` writes (one document per trial, a list
of them, a `{"trials": [...]}` document, or JSON Lines), or a CSV with columns
rate, response_time (seconds) and throughput.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from advisor.errors import AdvisorError


@dataclass
class Observation:
    rate: float
    """Offered mean arrival rate (requests/s)."""
    response_time: float
    """Mean response time of completed requests (s)."""
    throughput: float
    """Completed requests per second."""
    source: str = ""
    # What bench measures beside httperf's numbers (None from a CSV): the
    # pool model's fit uses them (advisor.capacity.poolfit).
    turned_away: float | None = None
    """Share of the requests asked for that got no reply."""
    workers: int | None = None
    """MaxRequestWorkers of the server the trial ran against."""
    cores: float | None = None
    """Cores the server could use (its pinned cores, or its CPU quota)."""
    busy_workers: float | None = None
    """Mean busy workers on the scoreboard, the status request not counted."""
    cpu_cores: float | None = None
    """Mean cores the httpd tree used (CPU seconds per second)."""
    duration: float | None = None
    """Seconds of offered load; with `timeout`, set only for trials of one
    request per connection at a paced rate, which the pool fit can replay."""
    timeout: float | None = None
    """httperf's timeout, seconds."""
    listen_backlog: int | None = None
    """ListenBacklog the trial ran with, when it set one."""
    burst_cores: float | None = None
    """Under a CPU quota: the cores the server may run on while the quota's
    budget lasts (its pinned cores); `cores` is then the quota."""
    quota_period: float | None = None
    """Under a CPU quota: the quota's period, seconds."""


@dataclass
class FitResult:
    service_time: float
    k: int
    k_continuous: float
    service_time_se: float
    """Standard error (Gauss-Newton approximation), seconds."""
    k_se: float
    rms_log_error: float
    """Root mean square of the log residuals: 0.05 is about 5 % typical error."""
    points: int
    k_identified: bool
    """False when no trial pushed the server into overload, so K only has a lower bound."""
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def capacity(self) -> float:
        return 1.0 / self.service_time

    def json_extra(self) -> dict:
        return {"capacity": self.capacity}


# --------------------------------------------------------------------------
# Reading measurements


def _number(value: Any, *keys: str) -> float | None:
    """A number, or a number inside a stats dict (httperf prints min/avg/max)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        for key in keys:
            if key in value:
                return _number(value[key], *keys)
    return None


def _find_fields(doc: dict) -> dict | None:
    """The dict that holds request_rate & co.: the trial itself or one level down
    (bench may nest httperf's fields under a key such as `httperf`)."""
    wanted = ("request_rate", "reply_rate", "reply_time_ms")
    if all(k in doc for k in wanted):
        return doc
    for value in doc.values():
        if isinstance(value, dict) and all(k in value for k in wanted):
            return value
    return None


def _trial_is_invalid(doc: dict) -> str | None:
    """bench marks runs where the load generator, not the server, was the
    limit; such a point says nothing about the server."""
    if doc.get("valid") is False:
        return str(doc.get("invalid_reason") or "marked invalid")
    verdict = doc.get("verdict")
    if isinstance(verdict, dict) and str(verdict.get("label", "")).replace("_", "-") == "client-bound":
        return "verdict client-bound"
    return None


def _reply_time_seconds(value: Any) -> float | None:
    # httperf's "Reply time [ms]: response R transfer T": the model's response
    # time runs until the reply is fully received, so it is R + T.
    if isinstance(value, dict):
        if "response" in value:
            total = _number(value["response"])
            transfer = _number(value.get("transfer", 0.0))
            if total is None or transfer is None:
                return None
            return (total + transfer) / 1000.0
        ms = _number(value, "total", "avg", "mean")
        return None if ms is None else ms / 1000.0
    ms = _number(value)
    return None if ms is None else ms / 1000.0


def _trials(data: Any) -> list[dict]:
    if isinstance(data, list):
        return [d for d in data if isinstance(d, dict)]
    if isinstance(data, dict):
        for key in ("trials", "results", "points", "steps"):
            if isinstance(data.get(key), list):
                return [d for d in data[key] if isinstance(d, dict)]
        return [data]
    return []


def read_bench_json(text: str, path: str) -> tuple[list[Observation], list[str]]:
    """Observations from bench output; returns (observations, skipped-trial notes)."""
    try:
        documents = [json.loads(text)]
    except json.JSONDecodeError as first_error:
        # JSON Lines: one trial document per line.
        documents = []
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                documents.append(json.loads(line))
            except json.JSONDecodeError:
                raise AdvisorError(
                    f"not valid JSON ({first_error.msg} at line {first_error.lineno})",
                    path, first_error.lineno,
                    "give the JSON `apache-advisor bench --format json` writes, or a CSV",
                ) from None
    observations: list[Observation] = []
    skipped: list[str] = []
    trials = [t for doc in documents for t in _trials(doc)]
    for index, trial in enumerate(trials, 1):
        where = f"{path} trial {index}"
        reason = _trial_is_invalid(trial)
        if reason:
            skipped.append(f"{where}: {reason}")
            continue
        fields = _find_fields(trial)
        if fields is None:
            raise AdvisorError(
                f"trial {index} lacks request_rate, reply_rate or reply_time_ms", path, None,
                "each trial needs the httperf fields bench writes",
            )
        rate = _number(fields["request_rate"], "avg", "mean")
        throughput = _number(fields["reply_rate"], "avg", "mean")
        response = _reply_time_seconds(fields["reply_time_ms"])
        if rate is None or throughput is None or response is None:
            raise AdvisorError(
                f"trial {index}: request_rate, reply_rate and reply_time_ms must be numbers",
                path, None, "check the file is bench output",
            )
        observation = Observation(rate, response, throughput, where)
        _bench_extras(trial, observation)
        observations.append(observation)
    return observations, skipped


def _middle(values: list[float]) -> float | None:
    """Mean of the per-second samples without the first and last (start-up, drain)."""
    inner = values[1:-1] if len(values) > 2 else values
    return sum(inner) / len(inner) if inner else None


def _bench_extras(trial: dict, obs: Observation) -> None:
    """Fill what bench measures beside httperf: offered rate, share unanswered,
    pool size, cores, busy workers and CPU (all optional)."""
    inputs = trial.get("inputs") if isinstance(trial.get("inputs"), dict) else {}
    httperf = trial.get("httperf") if isinstance(trial.get("httperf"), dict) else {}
    rate, duration = _number(inputs.get("rate")), _number(inputs.get("duration_s"))
    calls = _number(inputs.get("num_calls")) or 1.0
    if rate and duration and not inputs.get("wsess"):
        # The offered rate is what the trial asked for; httperf's request rate
        # counts only connections that got through to send a request.
        obs.rate = rate * calls
        replies = _number(httperf.get("replies"))
        if replies is not None:
            asked = max(1.0, round(rate * duration)) * calls
            obs.turned_away = min(max(1.0 - replies / asked, 0.0), 1.0)
        timeout = _number(inputs.get("timeout_s"))
        if calls == 1 and timeout and not inputs.get("session_log"):
            obs.duration, obs.timeout = duration, timeout
    pool = trial.get("pool") if isinstance(trial.get("pool"), dict) else {}
    configured = _number(pool.get("configured"))
    if configured is None:
        for directive in inputs.get("directives") or []:
            name, _, value = str(directive).partition(" ")
            if name.lower() in ("maxrequestworkers", "maxclients") and value.strip().isdigit():
                configured = float(value)
    obs.workers = int(configured) if configured else None
    for directive in inputs.get("directives") or []:
        name, _, value = str(directive).strip().partition(" ")
        if name.lower() == "listenbacklog" and value.strip().isdigit():
            obs.listen_backlog = int(value.strip())
    quota = _number(inputs.get("server_cpu_quota_pct"))
    cpus = inputs.get("server_cpus")
    if quota:
        obs.cores = quota / 100.0
        obs.burst_cores = float(len(cpus)) if isinstance(cpus, list) and cpus else None
        # bench before the period was recorded ran the sandbox's 10 ms one.
        obs.quota_period = (_number(inputs.get("server_cpu_period_ms")) or SANDBOX_QUOTA_PERIOD_MS) / 1000.0
    elif isinstance(cpus, list) and cpus:
        obs.cores = float(len(cpus))
    samples = [s for s in trial.get("metrics") or [] if isinstance(s, dict)]
    busy = [float(s["busy_workers"]) for s in samples if isinstance(s.get("busy_workers"), (int, float))]
    if busy:
        # The collector's own status request holds one worker while it is read.
        obs.busy_workers = max((_middle(busy) or 0.0) - 1.0, 0.0)
    cpu = [float(s["httpd_cpu_pct"]) for s in samples if isinstance(s.get("httpd_cpu_pct"), (int, float))]
    if cpu:
        obs.cpu_cores = (_middle(cpu) or 0.0) / 100.0


SANDBOX_QUOTA_PERIOD_MS = 10.0

CSV_COLUMNS = ("rate", "response_time", "throughput")


def read_csv(text: str, path: str) -> list[Observation]:
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip().lower() for h in (reader.fieldnames or [])]
    reader.fieldnames = header
    missing = [c for c in CSV_COLUMNS if c not in header]
    if missing:
        raise AdvisorError(
            f"CSV header lacks {', '.join(missing)}", path, 1,
            "the first line must name the columns rate,response_time,throughput",
        )
    observations = []
    for row in reader:
        line = reader.line_num
        if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
            continue
        try:
            values = [float((row[c] or "").strip()) for c in CSV_COLUMNS]
        except ValueError:
            raise AdvisorError(
                "rate, response_time and throughput must be numbers", path, line,
                "response_time in seconds, rate and throughput in requests/s",
            ) from None
        observations.append(Observation(values[0], values[1], values[2], f"{path}:{line}"))
    return observations


def read_measurements(paths: Iterable[str]) -> tuple[list[Observation], list[str]]:
    observations: list[Observation] = []
    skipped: list[str] = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as error:
            raise AdvisorError(f"cannot read the measurements: {error.strerror}", path, None,
                               "give bench JSON or a CSV file") from None
        except UnicodeDecodeError:
            raise AdvisorError("the measurements are not UTF-8 text", path, None,
                               "give bench JSON or a CSV file") from None
        stripped = text.lstrip()
        if stripped.startswith(("{", "[")):
            found, skip = read_bench_json(text, path)
            skipped.extend(skip)
        else:
            found = read_csv(text, path)
        for obs in found:
            if not (obs.rate > 0 and obs.response_time > 0 and obs.throughput > 0) or not all(
                math.isfinite(v) for v in (obs.rate, obs.response_time, obs.throughput)
            ):
                raise AdvisorError(
                    f"{obs.source}: rate, response time and throughput must be finite and > 0",
                    path, None, "drop trials where nothing was served",
                )
        observations.extend(found)
    return observations, skipped


# --------------------------------------------------------------------------
# Fitting


def _objective(data, log_x, log_k):
    """Sum of squared log residuals; log_x and log_k broadcast against each
    other, data columns are appended as the last axis."""
    import numpy as np

    from advisor.capacity.queueing import mm1k_arrays

    rates, t_obs, h_obs = data
    x = np.exp(log_x)[..., None]
    k = np.exp(log_k)[..., None]
    _, _, h, t = mm1k_arrays(rates, x, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        rt = np.log(t / t_obs)
        rh = np.log(h / h_obs)
    ssr = np.sum(rt * rt + rh * rh, axis=-1)
    return np.where(np.isfinite(ssr), ssr, np.inf)


def _residuals(data, log_x: float, log_k: float):
    import numpy as np

    from advisor.capacity.queueing import mm1k_arrays

    rates, t_obs, h_obs = data
    _, _, h, t = mm1k_arrays(rates, math.exp(log_x), math.exp(log_k))
    return np.concatenate([np.log(t / t_obs), np.log(h / h_obs)])


def fit_service_time_and_k(observations: list[Observation], k_max: int = 100_000) -> FitResult:
    """Least squares on log T and log H over (mean service time, K).

    A coarse grid over both parameters (log-spaced) finds the basin, then a
    few rounds of zooming grids refine it; K is finally rounded to the better
    neighbouring integer with the service time re-optimised. Vectorised: a
    fit of 20 trials takes a few tens of milliseconds.
    """
    import numpy as np

    if len(observations) < 3:
        raise ValueError("need at least three trials to fit two parameters")
    rates = np.array([o.rate for o in observations])
    t_obs = np.array([o.response_time for o in observations])
    h_obs = np.array([o.throughput for o in observations])
    data = (rates, t_obs, h_obs)

    # Bounds from the physics: H <= 1/x, T >= x, N = T H <= K (Little).
    x_hi = min(float(t_obs.min()), 1.0 / float(h_obs.max())) * 3.0
    x_lo = x_hi / 1e4
    n_max = float((t_obs * h_obs).max())
    k_lo = 1.0
    k_top = float(min(k_max, max(50.0, 50.0 * n_max)))

    lx = np.linspace(math.log(x_lo), math.log(x_hi), 121)
    lk = np.linspace(math.log(k_lo), math.log(k_top), 121)
    best = _grid_min(data, lx, lk)
    span_x = (lx[1] - lx[0]) * 4
    span_k = (lk[1] - lk[0]) * 4
    for _ in range(8):
        lx = np.linspace(best[0] - span_x, best[0] + span_x, 41)
        lk = np.linspace(max(best[1] - span_k, 0.0), best[1] + span_k, 41)
        best = _grid_min(data, lx, lk)
        span_x /= 4
        span_k /= 4
    log_x, log_k, _ = best
    k_cont = math.exp(log_k)

    # Integer K: try both neighbours, re-optimising the service time for each.
    candidates = []
    for k_int in {max(1, math.floor(k_cont)), max(1, math.ceil(k_cont))}:
        lx_best = _line_min(data, log_x, math.log(k_int))
        ssr = float(_objective(data, np.array(lx_best), np.array(math.log(k_int))))
        candidates.append((ssr, k_int, lx_best))
    ssr, k_int, log_x_int = min(candidates)

    # Gauss-Newton covariance at the continuous optimum.
    residuals = _residuals(data, log_x, log_k)
    m = residuals.size
    jac = np.empty((m, 2))
    for j, (dx, dk) in enumerate(((1e-5, 0.0), (0.0, 1e-5))):
        plus = _residuals(data, log_x + dx, log_k + dk)
        minus = _residuals(data, log_x - dx, log_k - dk)
        jac[:, j] = (plus - minus) / 2e-5
    dof = max(m - 2, 1)
    s2 = float(residuals @ residuals) / dof
    try:
        cov = np.linalg.inv(jac.T @ jac) * s2
        se_log_x = math.sqrt(max(cov[0, 0], 0.0))
        se_log_k = math.sqrt(max(cov[1, 1], 0.0))
    except np.linalg.LinAlgError:
        se_log_x = se_log_k = math.inf

    service_time = math.exp(log_x_int)
    warnings: list[str] = []
    max_load = float((rates * service_time).max())
    # In overload N approaches K; without it the data only bound K from below.
    k_identified = max_load >= 1.0 and math.isfinite(se_log_k) and se_log_k < 0.5
    if not k_identified:
        warnings.append(
            f"K is not determined by these trials: the highest offered load is "
            f"{max_load:.0%} of capacity; run trials past {1.0 / service_time:.0f} req/s "
            f"so the server saturates"
        )
    if k_cont >= 0.95 * k_top:
        warnings.append("K ran into the search bound; the data do not limit it from above")
        k_identified = False
    rms = math.sqrt(float(residuals @ residuals) / m)
    if rms > 0.25:
        warnings.append(
            f"the model fits poorly (typical error {rms:.0%}); the server may not behave "
            f"like one processor-sharing queue over this range"
        )
    return FitResult(
        service_time=service_time,
        k=int(k_int),
        k_continuous=k_cont,
        service_time_se=service_time * se_log_x,
        k_se=k_cont * se_log_k,
        rms_log_error=rms,
        points=len(observations),
        k_identified=k_identified,
        warnings=warnings,
    )


def _grid_min(data, lx, lk) -> tuple[float, float, float]:
    import numpy as np

    grid_x, grid_k = np.meshgrid(lx, lk, indexing="ij")
    ssr = _objective(data, grid_x, grid_k)
    i, j = np.unravel_index(int(np.argmin(ssr)), ssr.shape)
    return float(lx[i]), float(lk[j]), float(ssr[i, j])


def _line_min(data, log_x: float, log_k: float) -> float:
    """Best log service time for a fixed K (zooming 1-D grid)."""
    import numpy as np

    span = 0.5
    best = log_x
    for _ in range(10):
        lx = np.linspace(best - span, best + span, 41)
        ssr = _objective(data, lx, np.full_like(lx, log_k))
        best = float(lx[int(np.argmin(ssr))])
        span /= 8
    return best
