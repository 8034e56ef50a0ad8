"""Fit the queueing model's (queueing_model) mean service time and K to load tests.

Cao, Andersson, Nyberg & Kihl (2003), whose parameters Andersson et al. (2003,
Table 2) reuse, maximised a likelihood of the observed mean response times.
We fit mean response time *and* throughput by least squares on their
logarithms. That is maximum likelihood when each measurement carries a
lognormal error of one common spread, which suits quantities that span
several orders of magnitude (milliseconds at light load, seconds in overload).

The model is M/G/1/K*PS with Poisson arrivals: by insensitivity its
predictions depend on the service law only through its mean, so the closed
form of M/M/1/K is exact for it, and a fit needs nothing but arrays.

The measurements come from fit_inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from advisor.capacity.fit_inputs import Observation


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


def _objective(data, log_x, log_k):
    """Sum of squared log residuals; log_x and log_k broadcast against each
    other, data columns are appended as the last axis."""
    import numpy as np

    from advisor.capacity.queueing_model import mm1k_arrays

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

    from advisor.capacity.queueing_model import mm1k_arrays

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
