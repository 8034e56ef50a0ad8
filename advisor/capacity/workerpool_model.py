"""A worker pool in front of a shared CPU: the model `capacity` predicts with.

Andersson et al. (2003, section II) model httpd as one processor-sharing (PS)
server holding at most K requests. That describes a server whose requests
compete for the CPU. Many servers are not like that: a PHP or proxy worker
spends most of a request waiting (on a backend, a database, a disk), and then
the pool of MaxRequestWorkers workers is the limit, not the CPU. This module
joins the two.

The server holds at most c + b requests: c = MaxRequestWorkers workers, and a
listen queue of b connections the kernel has accepted but no worker has taken
(ListenBacklog; Linux admits backlog + 1). A request beyond that is turned
away. A request in a worker alternates between the CPU (demand `cpu_demand`
seconds of one core) and waiting (`wait` seconds, using no CPU); the CPU is
shared processor-sharing among the workers that want it, at most `cores`
cores in all (the host's cores pinned to httpd, or its cgroup quota) and at
most one core each.

With n requests in the workers, the workers form a closed network of two
stations, the CPU (a PS station of rate min(k, cores) / cpu_demand with k
requests at it) and the wait (an infinite-server delay). It has product form
whatever the service laws (BCMP), so its throughput X(n) is exact:

    P(k at the CPU) ~ d^k / prod_{i<=k} min(i, cores) * w^(n-k) / (n-k)!
    X(n) = sum_k P(k) min(k, cores) / d

The whole server is then the birth-death chain on N = 0..c+b that serves at
X(min(N, c)): the flow-equivalent server of Chandy, Herzog & Woo (1975),
exact at both ends:

* wait = 0, cores = 1: X(n) = 1/d for n >= 1, the M/M/1/K (M/G/1/K*PS) of
  Andersson et al. with K = c + b;
* cpu_demand -> 0: X(n) = n / w, the M/M/c/K queue; with b = 0 that is
  Erlang's loss system (Erlang-B, insensitive to the law of w) and with
  b -> infinity Erlang's delay system (Erlang-C).

Arrivals are Poisson (closed form, vectorised over rates) or the paper's
MMPP-2 (the Markov chain of queueing_model.py with level-dependent service).
numpy is imported inside functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from advisor.capacity.queueing_model import Arrivals, Estimate, Prediction

# Linux's accept queue is full when it holds more than the backlog: one more
# than ListenBacklog fits (sk_acceptq_is_full compares with >).
LINUX_EXTRA_SLOT = 1
DEFAULT_LISTEN_BACKLOG = 511  # httpd's DEFAULT_LISTENBACKLOG
# A regime is named after the limit that is clearly the tighter one.
REGIME_MARGIN = 0.7


@dataclass(frozen=True)
class ServerModel:
    """What a request costs and what the server offers, apart from the pool size."""

    cpu_demand: float
    """CPU seconds (of one core) a request uses."""
    wait: float
    """Seconds a request holds its worker without using CPU (backend, sleep,
    lingering close, logging)."""
    cores: float = 1.0
    """Cores the server's requests share (a quota of 50 % is 0.5)."""
    backlog: int = DEFAULT_LISTEN_BACKLOG + LINUX_EXTRA_SLOT
    """Connections the listen queue holds beyond the workers."""
    reply_tail: float = 0.0
    """Part of `wait` after the client has its reply (lingering close, logging):
    the worker is held, the client no longer waits."""

    def __post_init__(self) -> None:
        if not (self.cpu_demand >= 0 and self.wait >= 0 and self.cpu_demand + self.wait > 0):
            raise ValueError("a request must cost some time: CPU demand and wait >= 0, not both 0")
        if not self.cores > 0:
            raise ValueError("the server needs some CPU: cores > 0")
        if self.backlog < 0:
            raise ValueError("the listen queue cannot be negative")
        if not 0 <= self.reply_tail <= self.wait + 1e-12:
            raise ValueError("the reply tail is part of the wait")

    @property
    def hold_time(self) -> float:
        """Time a worker is held per request with no CPU contention."""
        return self.cpu_demand + self.wait

    def pool_throughput(self, workers: int):
        """X(1..workers) as a numpy array (index n-1): completions/s with n busy."""
        return pool_throughputs(self.cpu_demand, self.wait, self.cores, workers)

    def capacity(self, workers: int) -> float:
        return float(self.pool_throughput(workers)[-1])

    def in_step_capacity(self, workers: int) -> float:
        """Replies/s if every worker's CPU phase starts together with all the
        others' (the workers "in step"): each request shares the CPU with all
        of them for its whole CPU phase, then they all wait while the CPU
        idles. With equal demands and a wait longer than that phase no
        arrangement of a full pool holds a request at the CPU longer, so this
        is the pool's floor where `capacity` (phases spread out as chance
        has them) is the model's figure; the sandbox's CGI that computes and
        then waits (mod_cgi's reaping sleep bunches its phases) has been
        measured between the two (docs/capacity.md, section 3b)."""
        cpu_phase = self.cpu_demand * workers / min(workers, self.cores)
        return workers / (cpu_phase + self.wait)

    def cpu_limit(self) -> float:
        return math.inf if self.cpu_demand == 0 else self.cores / self.cpu_demand

    def pool_limit(self, workers: int) -> float:
        return workers / self.hold_time

    def regime(self, workers: int) -> str:
        """'CPU-bound', 'wait-bound' or 'mixed': which limit sets capacity."""
        cpu, pool = self.cpu_limit(), self.pool_limit(workers)
        if cpu <= REGIME_MARGIN * pool:
            return "CPU-bound"
        if pool <= REGIME_MARGIN * cpu:
            return "wait-bound"
        return "mixed"

    def describe(self, workers: int) -> str:
        return (f"{self.regime(workers)}: CPU {self.cpu_demand * 1000:.3g} ms of {self.cores:g} core(s) "
                f"per request, {self.wait * 1000:.3g} ms waiting, {workers} workers, "
                f"listen queue {self.backlog}")


def pool_throughputs(cpu_demand: float, wait: float, cores: float, workers: int):
    """X(n), n = 1..workers, of the closed CPU + delay network (product form)."""
    import numpy as np

    if workers < 1:
        raise ValueError("need at least one worker")
    n_max = workers
    if cpu_demand <= 0:
        return np.arange(1, n_max + 1) / wait
    if wait <= 0:
        return np.minimum(np.arange(1, n_max + 1), cores) / cpu_demand
    k = np.arange(n_max + 1)
    # log of d^k / prod min(i, cores): the CPU station's unnormalised weights.
    rates = np.minimum(np.maximum(k, 1), cores)
    log_cpu = k * math.log(cpu_demand) - np.concatenate([[0.0], np.cumsum(np.log(rates[1:]))])
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n_max + 1)))])
    served = np.minimum(k, cores) / cpu_demand
    # One row per population n, one column per k at the CPU (k <= n).
    n = k[1:, None]
    delay = np.clip(n - k[None, :], 0, None)
    log_p = log_cpu[None, :] + delay * math.log(wait) - log_fact[delay]
    log_p = np.where(k[None, :] <= n, log_p, -np.inf)
    p = np.exp(log_p - log_p.max(axis=1, keepdims=True))
    return (p * served[None, :]).sum(axis=1) / p.sum(axis=1)


@dataclass
class PoolResult:
    rate: float
    throughput: float
    response_time: float
    """Mean time from connection to reply (listen queue + worker, minus the reply tail)."""
    blocking: float
    mean_in_system: float
    busy_workers: float
    cpu_cores_used: float


def _birth_death(lams, service_rates):
    """Poisson arrivals at each of `lams` into levels 0..L with death rates
    service_rates[n-1] at level n: (probabilities [L+1, rates])."""
    import numpy as np

    lam = np.asarray(lams, dtype=float)[None, :]
    mu = np.asarray(service_rates, dtype=float)[:, None]
    with np.errstate(divide="ignore"):
        steps = np.log(lam) - np.log(mu)
    log_p = np.vstack([np.zeros((1, lam.shape[1])), np.cumsum(steps, axis=0)])
    log_p -= log_p.max(axis=0)
    p = np.exp(log_p)
    return p / p.sum(axis=0)


def level_rates(model: ServerModel, workers: int):
    """Death rate at each level 1..c+b: X(min(n, c))."""
    import numpy as np

    x = model.pool_throughput(workers)
    return np.concatenate([x, np.full(model.backlog, x[-1])])


def solve(rates: Sequence[float], model: ServerModel, workers: int,
          arrivals: Arrivals = Arrivals("poisson")) -> list[PoolResult]:
    """Throughput, response time, blocking and busy workers at each mean rate."""
    import numpy as np

    from advisor.capacity.queueing_model import mmpp_level_chain

    if workers < 1:
        raise ValueError("need at least one worker")
    rates_arr = np.asarray([float(r) for r in rates], dtype=float)
    positive = rates_arr > 0
    mu = level_rates(model, workers)
    levels = np.arange(mu.size + 1)
    out: list[PoolResult] = []
    if positive.any():
        lam = rates_arr[positive]
        if arrivals.kind == "poisson":
            p = _birth_death(lam, mu)
            blocking = p[-1]
        else:
            models = [arrivals.mmpp(float(r)) for r in lam]
            p, blocking = mmpp_level_chain([m.lam1 for m in models], [m.lam2 for m in models],
                                           arrivals.r1, arrivals.r2, mu)
        mean_n = (levels[:, None] * p).sum(axis=0)
        busy = (np.minimum(levels, workers)[:, None] * p).sum(axis=0)
        throughput = lam * (1 - blocking)
        with np.errstate(divide="ignore", invalid="ignore"):
            response = np.where(throughput > 0, mean_n / throughput, np.inf) - model.reply_tail
        solved = iter(zip(lam, throughput, response, blocking, mean_n, busy))
    for rate, ok in zip(rates_arr, positive):
        if not ok:
            out.append(PoolResult(float(rate), 0.0, model.hold_time - model.reply_tail, 0.0, 0.0, 0.0, 0.0))
            continue
        r, h, t, b, n, w = next(solved)
        out.append(PoolResult(float(r), float(h), float(max(t, 0.0)), float(b), float(n), float(w),
                              float(h * model.cpu_demand)))
    return out


def predict_pool(rates: Sequence[float], model: ServerModel, workers: int,
                 arrivals: Arrivals = Arrivals("poisson")) -> list[Prediction]:
    """`solve` as the Predictions the report and plot take (exact: no interval)."""
    method = "closed form" if arrivals.kind == "poisson" else "Markov chain"
    method += f" (c = {workers} workers + listen queue {model.backlog})"
    preds = []
    for r in solve(rates, model, workers, arrivals):
        preds.append(Prediction(r.rate, workers + model.backlog, model.hold_time, Estimate(r.throughput),
                                Estimate(r.response_time), Estimate(r.blocking), Estimate(r.mean_in_system),
                                method))
    return preds


def cpu_end_arrays(rates, cpu_demand, cores, capacity):
    """The model's CPU-bound end (no wait) for arrays that broadcast together:
    Poisson arrivals, `capacity` = workers + listen queue places, a request
    served at min(1, cores / n) of a core with n inside.

    For the tuner's simulated objective, which asks it of 10^5 points at
    once. Levels below `cores` complete at n / d, the rest at cores / d, so
    the chain is a short head (cores is a few at most) and a geometric tail,
    summed in logs so that thousands of places and loads far past capacity
    neither overflow nor lose precision. Returns (blocking, mean_in_system,
    throughput, response_time), as `queueing.mm1k_arrays`.
    """
    import numpy as np

    lam, d, m, k = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (rates, cpu_demand, cores, capacity)))
    # Levels 1..head-1 run below the cores' speed (head = ceil(cores) >= 1).
    head = np.maximum(np.ceil(m - 1e-12), 1.0)
    head = np.minimum(head, k)
    top_head = int(head.max()) if head.size else 1
    log_a = np.log(lam * d)
    log_p = np.zeros_like(lam)  # log p(n) / p(0), walked up the head
    log_terms = [np.zeros_like(lam)]
    weighted = [np.zeros_like(lam)]
    for n in range(1, top_head):
        inside = n < head
        log_p = np.where(inside, log_p + log_a - np.log(np.minimum(n, m)), log_p)
        log_terms.append(np.where(inside, log_p, -np.inf))
        weighted.append(np.where(inside, n, 0.0))
    # The tail: levels head..k, each ratio rho = lam d / cores.
    log_head = np.where(head > 1, log_p, 0.0) + log_a - np.log(np.minimum(head, m))
    log_rho = log_a - np.log(m)
    span = k - head  # levels above the tail's first
    s = np.minimum(-np.abs(log_rho), -1e-6)
    # sum_{j=0..span} rho^j and sum j rho^j, in logs, mirrored when rho > 1.
    log_geo = np.log(-np.expm1((span + 1) * s)) - np.log(-np.expm1(s))
    r = np.exp(s)
    r_top = np.exp((span + 1) * s)
    mean_low = r / (1 - r) - (span + 1) * r_top / (1 - r_top)
    above = log_rho > 0
    log_tail_sum = np.where(above, log_geo + span * log_rho, log_geo)
    tail_mean = np.where(above, span - mean_low, mean_low)  # mean excess over head, within the tail
    log_tail_top = np.where(above, -log_geo, span * s - log_geo)  # P(top | tail)
    # At rho = 1 the sums are span + 1 equal terms (the formulas above cancel).
    flat = np.abs(log_rho) < 1e-6
    log_tail_sum = np.where(flat, np.log(span + 1), log_tail_sum)
    tail_mean = np.where(flat, span / 2.0, tail_mean)
    log_tail_top = np.where(flat, -np.log(span + 1), log_tail_top)
    log_total_tail = log_head + log_tail_sum
    stack = np.stack(log_terms + [log_total_tail])
    peak = stack.max(axis=0)
    weights = np.exp(stack - peak)
    norm = weights.sum(axis=0)
    share_tail = weights[-1] / norm
    mean_n = sum(w * n for w, n in zip(weights[:-1], weighted)) / norm + share_tail * (head + tail_mean)
    blocking = share_tail * np.exp(log_tail_top)
    throughput = lam * (1 - blocking)
    with np.errstate(divide="ignore", invalid="ignore"):
        response = mean_n / throughput
    return blocking, mean_n, throughput, response


# --------------------------------------------------------------------------
# Closed forms for the wait-bound end (tests hold the model to them)


def erlang_b(servers: int, offered: float) -> float:
    """Erlang's loss formula B(c, a), by the stable recursion B(k) = aB/(k + aB)."""
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    return b


def erlang_c(servers: int, offered: float) -> float:
    """Probability of waiting in M/M/c (infinite queue), a < c."""
    if offered >= servers:
        return 1.0
    b = erlang_b(servers, offered)
    return servers * b / (servers - offered * (1 - b))


def mmck(rate: float, hold: float, servers: int, capacity: int) -> tuple[float, float]:
    """M/M/c/K by its textbook product: (blocking, mean number in system)."""
    a = rate * hold
    weights = []
    for n in range(capacity + 1):
        if n <= servers:
            weights.append(a**n / math.factorial(n))
        else:
            weights.append(a**servers / math.factorial(servers) * (a / servers) ** (n - servers))
    total = sum(weights)
    probs = [w / total for w in weights]
    return probs[-1], sum(n * p for n, p in enumerate(probs))
