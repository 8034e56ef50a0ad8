"""The Apache queueing model of Andersson, Cao, Kihl & Nyberg (2003).

httpd is one processor-sharing (PS) server that holds at most K requests; a
request that finds K already inside is turned away. Requests arrive as a
two-state Markov-modulated Poisson process (MMPP-2) or plain Poisson. The
queue is written MMPP/G/1/K*PS.

Three ways to get its throughput H, mean response time T and blocking
probability Pb, from cheapest to most general:

* Poisson arrivals: closed forms. PS is insensitive, so M/G/1/K*PS has the
  stationary queue-length law of M/M/1/K whatever the service distribution
  beyond its mean (`mm1k`).
* MMPP arrivals, exponential service: the queue is a finite Markov chain on
  (phase, number in system); `mmpp_m1k` solves it exactly, level by level.
* Anything else (MMPP with deterministic or heavy-tailed service):
  discrete-event simulation with confidence intervals (`simulate`).

`predict` picks the cheapest exact method and falls back to simulation.
numpy is imported inside functions: `advisor.cli` imports this package lazily,
but keeping module import cheap costs nothing.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Sequence

# Andersson et al. 2003, section III.A: the chain leaves the normal state at
# r1 = 0.05/s and the burst state at r2 = 0.95/s; the normal-state rate is
# 0.75 of the mean. The burst state then lasts 5 % of the time at 5.75x.
PAPER_R1 = 0.05
PAPER_R2 = 0.95
PAPER_L1_FACTOR = 0.75

# Two-sided 97.5 % quantiles of Student's t for small degrees of freedom;
# beyond the table the normal quantile is close enough for a CI.
_T975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365,
    8: 2.306, 9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145,
    15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
    25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980,
}


def t_quantile_975(df: int) -> float:
    """Student t 97.5 % point (for a 95 % two-sided interval)."""
    if df < 1:
        raise ValueError("need at least one degree of freedom")
    if df in _T975:
        return _T975[df]
    if df > max(_T975):
        return 1.960
    # Between tabulated points take the smaller df: a slightly wider interval.
    return _T975[max(d for d in _T975 if d < df)]


# --------------------------------------------------------------------------
# Arrival processes


@dataclass(frozen=True)
class MMPP2:
    """Two-state MMPP in the paper's notation.

    State 1 emits at `lam1` and is left at rate `r1`; state 2 emits at `lam2`
    and is left at rate `r2`. State 1 is occupied r2/(r1+r2) of the time.
    """

    lam1: float
    lam2: float
    r1: float
    r2: float

    @classmethod
    def from_mean(
        cls,
        mean_rate: float,
        r1: float = PAPER_R1,
        r2: float = PAPER_R2,
        l1_factor: float = PAPER_L1_FACTOR,
    ) -> "MMPP2":
        """The paper's parametrisation: fix the mean, set lam1 = l1_factor x mean,
        and solve equation (1) for lam2 (their equation (2))."""
        if mean_rate < 0 or r1 <= 0 or r2 <= 0 or l1_factor < 0:
            raise ValueError("MMPP needs mean >= 0, r1 > 0, r2 > 0, l1 factor >= 0")
        lam1 = l1_factor * mean_rate
        lam2 = ((r1 + r2) * mean_rate - lam1 * r2) / r1
        if lam2 < 0:
            raise ValueError(
                f"l1 factor {l1_factor} is too high for r1={r1}, r2={r2}: "
                f"the burst rate would be negative (keep it <= {(r1 + r2) / r2:.3g})"
            )
        return cls(lam1, lam2, r1, r2)

    @property
    def mean_rate(self) -> float:
        # Andersson et al. 2003, equation (1) (after Heffes 1980).
        return (self.lam1 * self.r2 + self.lam2 * self.r1) / (self.r1 + self.r2)

    @property
    def rate_variance(self) -> float:
        return self.r1 * self.r2 * (self.lam1 - self.lam2) ** 2 / (self.r1 + self.r2) ** 2

    @property
    def burst_fraction(self) -> float:
        """Share of time spent in state 2."""
        return self.r1 / (self.r1 + self.r2)


@dataclass(frozen=True)
class Arrivals:
    """`kind` is 'poisson' or 'mmpp'; the burst parameters matter for mmpp only."""

    kind: str = "mmpp"
    r1: float = PAPER_R1
    r2: float = PAPER_R2
    l1_factor: float = PAPER_L1_FACTOR

    def __post_init__(self) -> None:
        if self.kind not in ("poisson", "mmpp"):
            raise ValueError(f"unknown arrival process {self.kind!r}")
        if self.kind == "mmpp":
            MMPP2.from_mean(1.0, self.r1, self.r2, self.l1_factor)  # validates

    def mmpp(self, mean_rate: float) -> MMPP2:
        return MMPP2.from_mean(mean_rate, self.r1, self.r2, self.l1_factor)

    def describe(self) -> str:
        if self.kind == "poisson":
            return "Poisson"
        return f"MMPP-2 (r1={self.r1:g}, r2={self.r2:g}, l1={self.l1_factor:g} x mean)"


# --------------------------------------------------------------------------
# Service time distributions (all parametrised by their mean)


@dataclass(frozen=True)
class Service:
    """Service requirement distribution.

    kind: 'exponential', 'deterministic', 'lognormal' (shape = coefficient of
    variation) or 'pareto' (bounded Pareto, shape = tail index alpha, upper
    bound 1e4 x lower bound).
    """

    kind: str = "exponential"
    shape: float | None = None

    KINDS = ("exponential", "deterministic", "lognormal", "pareto")
    DEFAULT_SHAPE = {"lognormal": 2.0, "pareto": 1.5}
    PARETO_SPAN = 1e4

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise ValueError(
                f"unknown service distribution {self.kind!r} (use one of {', '.join(self.KINDS)})"
            )
        if self.shape is not None and not self.shape > 0:
            raise ValueError("the service distribution's shape must be > 0")

    @property
    def resolved_shape(self) -> float | None:
        if self.kind in self.DEFAULT_SHAPE:
            return self.shape if self.shape is not None else self.DEFAULT_SHAPE[self.kind]
        return None

    def describe(self) -> str:
        if self.kind == "lognormal":
            return f"lognormal (CV {self.resolved_shape:g})"
        if self.kind == "pareto":
            return f"bounded Pareto (alpha {self.resolved_shape:g})"
        return self.kind

    def sample(self, rng, mean: float, size: int):
        """`size` draws with the given mean (numpy array)."""
        import numpy as np

        if self.kind == "exponential":
            return rng.exponential(mean, size)
        if self.kind == "deterministic":
            return np.full(size, float(mean))
        if self.kind == "lognormal":
            cv = self.resolved_shape
            sigma2 = math.log1p(cv * cv)
            mu = math.log(mean) - sigma2 / 2
            return rng.lognormal(mu, math.sqrt(sigma2), size)
        # Bounded Pareto on [L, H] with H = span * L, by inverse transform;
        # L is chosen so the mean is the requested one.
        alpha = self.resolved_shape
        span = self.PARETO_SPAN
        unit_mean = _bounded_pareto_mean(alpha, 1.0, span)
        low = mean / unit_mean
        high = low * span
        u = rng.random(size)
        ratio = (low / high) ** alpha
        return low / (1.0 - u * (1.0 - ratio)) ** (1.0 / alpha)


def _bounded_pareto_mean(alpha: float, low: float, high: float) -> float:
    if abs(alpha - 1.0) < 1e-12:
        return math.log(high / low) * low * high / (high - low)
    num = low**alpha * (high ** (1 - alpha) - low ** (1 - alpha)) * alpha
    den = (1 - alpha) * (1 - (low / high) ** alpha)
    return num / den


def fit_lognormal_cv(samples: Sequence[float]) -> float:
    """Maximum-likelihood lognormal fit of observed service times; returns the
    coefficient of variation that `Service('lognormal', cv)` takes."""
    logs = [math.log(x) for x in samples if x > 0]
    if len(logs) < 2:
        raise ValueError("need at least two positive service-time samples")
    mean = sum(logs) / len(logs)
    var = sum((v - mean) ** 2 for v in logs) / len(logs)  # ML, not unbiased
    return math.sqrt(math.expm1(var))


# --------------------------------------------------------------------------
# Results


@dataclass
class Estimate:
    value: float
    half_width: float = 0.0
    """Half-width of the 95 % confidence interval; 0 for an exact result."""


@dataclass
class Prediction:
    rate: float
    k: int
    service_time: float
    throughput: Estimate
    response_time: Estimate
    blocking: Estimate
    mean_in_system: Estimate
    method: str
    """'closed form', 'Markov chain' or 'simulation (n replications)'."""

    @property
    def blocked_rate(self) -> float:
        # Andersson et al. 2003, section II: blocked rate = mean rate x Pb.
        return self.rate * self.blocking.value

    def json_extra(self) -> dict:
        return {"blocked_rate": self.blocked_rate}


# --------------------------------------------------------------------------
# Closed forms: M/M/1/K (and, by insensitivity, M/G/1/K*PS)


@dataclass
class MM1KResult:
    blocking: float
    mean_in_system: float
    throughput: float
    response_time: float


def mm1k(rate: float, service_time: float, k: float) -> MM1KResult:
    """M/M/1/K: P(n) proportional to rho^n for n = 0..K.

    Written with exp/expm1 so that it stays finite for K in the tens of
    thousands and rho far above 1; `k` may be fractional (the fit treats K
    as continuous before rounding).
    """
    if rate <= 0:
        return MM1KResult(0.0, 0.0, 0.0, service_time)
    if k < 1:
        raise ValueError("K must be at least 1")
    rho = rate * service_time
    log_rho = math.log(rho)
    if abs(log_rho) < 1e-7:
        # Uniform over 0..K in the limit rho -> 1.
        pb = 1.0 / (k + 1.0)
        mean_n = k / 2.0
    elif rho < 1:
        pb, mean_n = _truncated_geometric(log_rho, k)
    else:
        # Mirror: K - N is truncated geometric in 1/rho, which avoids
        # overflowing rho^K; P(N = K) is P(K - N = 0).
        _, mean_mirror = _truncated_geometric(-log_rho, k)
        pb = _p0(-log_rho, k)
        mean_n = k - mean_mirror
    throughput = rate * (1.0 - pb)
    response = mean_n / throughput if throughput > 0 else math.inf
    return MM1KResult(pb, mean_n, throughput, response)


def _p0(log_r: float, k: float) -> float:
    """P(N=0) for P(n) ~ r^n, n = 0..K, r < 1: (1 - r) / (1 - r^(K+1))."""
    return math.expm1(log_r) / math.expm1((k + 1) * log_r)


def _truncated_geometric(log_r: float, k: float) -> tuple[float, float]:
    """For P(n) ~ r^n on 0..K with r < 1: (P(N=K), E[N])."""
    r = math.exp(log_r)
    p0 = _p0(log_r, k)
    p_k = p0 * math.exp(k * log_r)
    r_k1 = math.exp((k + 1) * log_r)
    mean_n = r / (1 - r) - (k + 1) * r_k1 / (1 - r_k1)
    return p_k, mean_n


def mm1k_arrays(rates, service_time, k):
    """Vectorised `mm1k` for the fit: arrays broadcast together.

    Returns (blocking, mean_in_system, throughput, response_time).
    """
    import numpy as np

    rates = np.asarray(rates, dtype=float)
    x = np.asarray(service_time, dtype=float)
    kk = np.asarray(k, dtype=float)
    rates, x, kk = np.broadcast_arrays(rates, x, kk)
    log_rho = np.log(rates * x)
    # Work with s = -|log rho| <= 0 so every exponential is <= 1.
    s = -np.abs(log_rho)
    near_one = s > -1e-7
    s_safe = np.where(near_one, -1e-7, s)
    r = np.exp(s_safe)
    p0 = np.expm1(s_safe) / np.expm1((kk + 1) * s_safe)
    r_k1 = np.exp((kk + 1) * s_safe)
    mean_low = r / (1 - r) - (kk + 1) * r_k1 / (1 - r_k1)  # E[N] when rho < 1
    p_top = p0 * np.exp(kk * s_safe)  # P(N=K) when rho < 1
    below = log_rho < 0
    pb = np.where(below, p_top, p0)
    mean_n = np.where(below, mean_low, kk - mean_low)
    pb = np.where(near_one, 1.0 / (kk + 1), pb)
    mean_n = np.where(near_one, kk / 2.0, mean_n)
    throughput = rates * (1 - pb)
    response = mean_n / throughput
    return pb, mean_n, throughput, response


# --------------------------------------------------------------------------
# MMPP/M/1/K*PS as a Markov chain


def mmpp_m1k(mmpp: MMPP2, service_time: float, k: int) -> MM1KResult:
    """Exact MMPP/M/1/K*PS (the queue length law equals MMPP/M/1/K FCFS)."""
    return _mmpp_chain([mmpp.lam1], [mmpp.lam2], mmpp.r1, mmpp.r2, service_time, k)[0]


def mmpp_m1k_many(rates, service_time: float, k: int, arrivals: Arrivals) -> list[MM1KResult]:
    """`mmpp_m1k` for many mean rates at once (for curves and tables)."""
    models = [arrivals.mmpp(float(r)) for r in rates]
    return _mmpp_chain([m.lam1 for m in models], [m.lam2 for m in models],
                       arrivals.r1, arrivals.r2, service_time, k)


def _mmpp_chain(lam1, lam2, r1: float, r2: float, service_time: float, k: int) -> list[MM1KResult]:
    """Solve the chain on (phase, n) for several rate pairs at once.

    Linear level reduction: pi_n = pi_{n-1} R_n, with the 2x2 matrices R_n
    computed from n = K down to 1, then pi_0 from the boundary and a walk up.
    Balance at level n: pi_{n-1} A0 + pi_n A1(n) + pi_{n+1} A2 = 0, with
    A0 = diag(l1, l2) and A2 = mu I, gives R_n = A0 U_n^-1 where
    U_n = -(A1(n) + mu R_{n+1}) and R_{K+1} = 0.

    U_n is minus the generator of the chain censored on levels <= n, seen
    from level n, so its rows sum to mu (the only way out is down). Taking the
    diagonal from that identity instead of subtracting (the trick of
    Grassmann, Taksar & Heyman) keeps every quantity positive; the plain
    subtraction loses all precision once rho > 1. The walk up normalises each
    level and carries a log scale, so rho >> 1 with K in the tens of
    thousands neither overflows nor underflows. Vectorised across the rate
    pairs: a 40-point curve costs about what one point does.
    """
    import numpy as np

    if k < 1:
        raise ValueError("K must be at least 1")
    l1 = np.asarray(lam1, dtype=float)
    l2 = np.asarray(lam2, dtype=float)
    probs, blocking = mmpp_level_chain(l1, l2, r1, r2, np.full(k, 1.0 / service_time))
    mean_n = (probs * np.arange(k + 1)[:, None]).sum(axis=0)
    lam = (l1 * r2 + l2 * r1) / (r1 + r2)
    with np.errstate(divide="ignore", invalid="ignore"):
        throughput = lam * (1 - blocking)
        response = np.where(throughput > 0, mean_n / throughput, np.inf)
    return [MM1KResult(float(b_), float(n_), float(h_), float(t_))
            for b_, n_, h_, t_ in zip(blocking, mean_n, throughput, response)]


def mmpp_level_chain(lam1, lam2, r1: float, r2: float, service_rates):
    """A finite queue under MMPP-2 arrivals whose completion rate depends on
    how many requests are inside: its level probabilities and blocking.

    The arrivals switch between rate lam1[i] and lam2[i] (one pair per rate
    to solve for, as arrays), leaving phase 1 at rate r1 and phase 2 at rate
    r2 (`MMPP2`). service_rates[n-1] is the completion rate with n requests
    inside, for n = 1..L; L is the capacity, and a request that finds L
    inside is turned away. This queueing model's M/M/1/K chain is the case of
    L = K equal rates (`_mmpp_chain`); the worker-pool model
    (advisor.capacity.workerpool_model) gives each level its pool's
    throughput.

    The method is `_mmpp_chain`'s level reduction: U_n = -(A1(n) + mu_{n+1}
    R_{n+1}) still has rows summing to mu_n, the only way down from level n.
    Returns (P(level) as an array [L+1, rates], blocking as arrivals see it,
    one per rate).
    """
    import numpy as np

    mu = np.asarray(service_rates, dtype=float)
    k = mu.size
    if k < 1:
        raise ValueError("K must be at least 1")
    l1 = np.asarray(lam1, dtype=float)
    l2 = np.asarray(lam2, dtype=float)
    ra = np.empty((k + 1, l1.size))
    rb = np.empty_like(ra)
    rc = np.empty_like(ra)
    rd = np.empty_like(ra)
    b = np.zeros(l1.size)
    c = np.zeros(l1.size)
    for n in range(k, 0, -1):
        up = mu[n] if n < k else 0.0  # mu_{n+1}: the way back down from level n+1
        here = mu[n - 1]
        p = r1 + up * b
        q = r2 + up * c
        det = here * (p + q + here)
        ra[n], b, c, rd[n] = l1 * (q + here) / det, l1 * p / det, l2 * q / det, l2 * (p + here) / det
        rb[n], rc[n] = b, c
    x = r2 + mu[0] * rc[1]
    y = r1 + mu[0] * rb[1]
    px = np.empty_like(ra)
    py = np.empty_like(ra)
    log_scale = np.empty_like(ra)
    s0 = x + y
    px[0], py[0], log_scale[0] = x / s0, y / s0, np.log(s0)
    for n in range(1, k + 1):
        x = px[n - 1] * ra[n] + py[n - 1] * rc[n]
        y = px[n - 1] * rb[n] + py[n - 1] * rd[n]
        s = x + y
        px[n], py[n] = x / s, y / s
        log_scale[n] = log_scale[n - 1] + np.log(s)
    weights = np.exp(log_scale - log_scale.max(axis=0))
    probs = weights / weights.sum(axis=0)
    lam = (l1 * r2 + l2 * r1) / (r1 + r2)
    with np.errstate(divide="ignore", invalid="ignore"):
        blocking = np.where(lam > 0, probs[k] * (l1 * px[k] + l2 * py[k]) / lam, 0.0)
    return probs, blocking


# --------------------------------------------------------------------------
# Discrete-event simulation


@dataclass
class SimulationOptions:
    replications: int = 8
    arrivals_per_replication: int = 40_000
    warmup_fraction: float = 0.1
    """Share of each replication's arrivals discarded before measuring."""
    min_horizon_cycles: float = 0.0
    """For MMPP: make each replication last at least this many phase cycles
    (1/r1 + 1/r2), so that bursts are sampled, not just the calm state."""
    max_arrivals_per_replication: int = 400_000
    seed: int | None = 12345
    control_variate: bool = True
    """MMPP with non-exponential service: also run exponential service on the
    same arrivals and correct by the exact MMPP/M/1/K result (see simulate)."""


@dataclass
class _RunStats:
    arrivals: int = 0
    blocked: int = 0
    departures: int = 0
    sojourn_sum: float = 0.0
    area: float = 0.0
    duration: float = 0.0


def _arrival_times(rng, arrivals: Arrivals, mean_rate: float, horizon: float):
    """Arrival epochs in [0, horizon), vectorised."""
    import numpy as np

    if arrivals.kind == "poisson":
        n = rng.poisson(mean_rate * horizon)
        return np.sort(rng.random(n) * horizon)
    m = arrivals.mmpp(mean_rate)
    # Alternate phase sojourns, starting in the stationary phase.
    cycle = 1.0 / m.r1 + 1.0 / m.r2
    n_cycles = int(horizon / cycle * 1.5) + 10
    start_in_2 = rng.random() < m.burst_fraction
    while True:
        d1 = rng.exponential(1.0 / m.r1, n_cycles)
        d2 = rng.exponential(1.0 / m.r2, n_cycles)
        if start_in_2:
            durations = np.column_stack([d2, d1]).ravel()
            rates = np.tile([m.lam2, m.lam1], n_cycles)
        else:
            durations = np.column_stack([d1, d2]).ravel()
            rates = np.tile([m.lam1, m.lam2], n_cycles)
        ends = np.cumsum(durations)
        if ends[-1] >= horizon:
            break
        n_cycles *= 2
    starts = ends - durations
    keep = starts < horizon
    starts, durations, rates = starts[keep], np.minimum(durations[keep], horizon - starts[keep]), rates[keep]
    counts = rng.poisson(rates * durations)
    times = np.repeat(starts, counts) + rng.random(int(counts.sum())) * np.repeat(durations, counts)
    return np.sort(times)


def _run_ps(arrival_times: list[float], services: list[float], k: int, warmup_time: float) -> _RunStats:
    """One replication of a K-limited processor-sharing queue.

    PS in virtual time: every job in the system receives service at 1/n per
    second, so the attained service V(t) of any job present grows at 1/n. A job
    arriving at V_a with requirement s leaves when V reaches V_a + s, so a
    min-heap of those finishing levels gives the next departure in O(log n).
    """
    heap: list[tuple[float, float]] = []
    push, pop = heapq.heappush, heapq.heappop
    t = 0.0
    v = 0.0
    n = 0
    measuring = False
    area = 0.0
    t_start = warmup_time
    arrivals = blocked = departures = 0
    sojourn_sum = 0.0
    for t_a, s in zip(arrival_times, services):
        # Departures before this arrival.
        while n:
            finish, born = heap[0]
            dt = (finish - v) * n
            if t + dt > t_a:
                break
            pop(heap)
            t += dt
            if measuring:
                # Jobs born in the warm-up count too: by then the queue
                # they saw was already warm enough for their sojourn.
                area += n * dt
                departures += 1
                sojourn_sum += t - born
            v = finish
            n -= 1
        if n:
            dt = t_a - t
            v += dt / n
            if measuring:
                area += n * dt
        t = t_a
        if not measuring and t_a >= t_start:
            measuring = True
        if measuring:
            arrivals += 1
        if n >= k:
            if measuring:
                blocked += 1
            continue
        push(heap, (v + s, t_a))
        n += 1
    return _RunStats(arrivals, blocked, departures, sojourn_sum, area, max(t - t_start, 0.0))


def _metrics(st: _RunStats) -> tuple[float, float, float, float] | None:
    """(throughput, mean response time, blocking, mean number) of one run."""
    if st.duration <= 0 or st.arrivals == 0 or st.departures == 0:
        return None
    return (st.departures / st.duration, st.sojourn_sum / st.departures,
            st.blocked / st.arrivals, st.area / st.duration)


def simulate(
    rate: float,
    service_time: float,
    k: int,
    arrivals: Arrivals = Arrivals("poisson"),
    service: Service = Service(),
    options: SimulationOptions | None = None,
) -> Prediction:
    """Simulate the MMPP/G/1/K*PS (or M/G/1/K*PS) queue.

    Independent replications, each started empty with a warm-up discarded;
    95 % confidence intervals from the spread of the replication means.
    """
    import numpy as np

    opts = options or SimulationOptions()
    if k < 1:
        raise ValueError("K must be at least 1")
    if rate <= 0 or service_time <= 0:
        raise ValueError("rate and service time must be > 0")
    rng = np.random.default_rng(opts.seed)
    n_target = opts.arrivals_per_replication
    horizon = n_target / rate
    if arrivals.kind == "mmpp" and opts.min_horizon_cycles > 0:
        cycle = 1.0 / arrivals.r1 + 1.0 / arrivals.r2
        horizon = max(horizon, opts.min_horizon_cycles * cycle)
        horizon = min(horizon, opts.max_arrivals_per_replication / rate)
    # Control variate: most of the noise under MMPP comes from how many bursts
    # a run happens to see, and a run with exponential service on the same
    # arrivals sees the same bursts. Its exact mean is known (the Markov
    # chain), so the estimate exact_M + mean(G - M) keeps the burst noise out.
    control = opts.control_variate and arrivals.kind == "mmpp" and service.kind != "exponential"
    warmup = horizon * opts.warmup_fraction
    per_rep: list[tuple[float, ...]] = []
    for _ in range(opts.replications):
        times = _arrival_times(rng, arrivals, rate, horizon)
        services = service.sample(rng, service_time, len(times))
        metrics = _metrics(_run_ps(times.tolist(), services.tolist(), k, warmup))
        if metrics is None:
            continue
        if control:
            exp_services = rng.exponential(service_time, len(times))
            reference = _metrics(_run_ps(times.tolist(), exp_services.tolist(), k, warmup))
            if reference is None:
                continue
            metrics = tuple(g - m for g, m in zip(metrics, reference))
        per_rep.append(metrics)
    if len(per_rep) < 2:
        raise ValueError("the simulation produced too few replications; raise the arrival count")
    cols = list(zip(*per_rep))
    tq = t_quantile_975(len(per_rep) - 1)
    offsets = (0.0, 0.0, 0.0, 0.0)
    if control:
        exact = mmpp_m1k(arrivals.mmpp(rate), service_time, k)
        offsets = (exact.throughput, exact.response_time, exact.blocking, exact.mean_in_system)

    def est(index: int) -> Estimate:
        arr = np.asarray(cols[index], dtype=float)
        value = float(offsets[index] + arr.mean())
        # A corrected estimate can stray past a physical bound by noise.
        value = min(max(value, 0.0), 1.0) if index == 2 else max(value, 0.0)
        return Estimate(value, float(tq * arr.std(ddof=1) / math.sqrt(len(arr))))

    method = f"simulation ({len(per_rep)} replications{', control variate' if control else ''})"
    return Prediction(
        rate=float(rate),
        k=int(k),
        service_time=float(service_time),
        throughput=est(0),
        response_time=est(1),
        blocking=est(2),
        mean_in_system=est(3),
        method=method,
    )


# --------------------------------------------------------------------------
# The one entry point the command uses


def predict(
    rate: float,
    service_time: float,
    k: int,
    arrivals: Arrivals = Arrivals(),
    service: Service = Service(),
    options: SimulationOptions | None = None,
) -> Prediction:
    """H, T and Pb at one mean arrival rate, by the cheapest exact method.

    Poisson arrivals: closed form for any service law (PS insensitivity).
    MMPP with exponential service: the Markov chain. Otherwise: simulation.
    """
    if k < 1:
        raise ValueError("K must be at least 1")
    if service_time <= 0:
        raise ValueError("the mean service time must be > 0")
    if rate <= 0:
        zero = Estimate(0.0)
        return Prediction(float(rate), int(k), float(service_time), zero,
                          Estimate(float(service_time)), zero, zero, "closed form")
    if arrivals.kind == "poisson":
        r = mm1k(rate, service_time, k)
        method = "closed form"
    elif service.kind == "exponential":
        r = mmpp_m1k(arrivals.mmpp(rate), service_time, k)
        method = "Markov chain"
    else:
        opts = options or SimulationOptions(min_horizon_cycles=40.0)
        return simulate(rate, service_time, k, arrivals, service, opts)
    return Prediction(
        rate=float(rate),
        k=int(k),
        service_time=float(service_time),
        throughput=Estimate(float(r.throughput)),
        response_time=Estimate(float(r.response_time)),
        blocking=Estimate(float(r.blocking)),
        mean_in_system=Estimate(float(r.mean_in_system)),
        method=method,
    )


def predict_many(
    rates: Sequence[float],
    service_time: float,
    k: int,
    arrivals: Arrivals = Arrivals(),
    service: Service = Service(),
    options: SimulationOptions | None = None,
) -> list[Prediction]:
    """`predict` at several rates; the Markov chain solves them in one pass."""
    if arrivals.kind == "mmpp" and service.kind == "exponential":
        if k < 1:
            raise ValueError("K must be at least 1")
        positive = [r for r in rates if r > 0]
        solved = dict(zip(positive, mmpp_m1k_many(positive, service_time, k, arrivals))) if positive else {}
        out = []
        for rate in rates:
            if rate not in solved:
                out.append(predict(rate, service_time, k, arrivals, service, options))
                continue
            r = solved[rate]
            out.append(Prediction(float(rate), int(k), float(service_time), Estimate(r.throughput),
                                  Estimate(r.response_time), Estimate(r.blocking),
                                  Estimate(r.mean_in_system), "Markov chain"))
        return out
    return [predict(rate, service_time, k, arrivals, service, options) for rate in rates]


def curve_rates(service_time: float, requested: Sequence[float] = (), points: int = 40) -> list[float]:
    """Rates for a curve: from light load to well past capacity, including
    the requested rates so the plot's dots sit on the lines."""
    capacity = 1.0 / service_time
    top = max([2.5 * capacity] + [1.15 * r for r in requested])
    step = top / points
    grid = [step * (i + 1) for i in range(points)]
    return sorted(set(grid) | {float(r) for r in requested if r > 0})


@dataclass
class Curve:
    """Predictions over a range of rates for one K (for tables and plots)."""

    k: int
    label: str
    points: list[Prediction] = field(default_factory=list)
