"""What a bench trial would measure on the worker-pool model: a simulation.

The closed forms in `workerpool_model.py` give the steady state under Poisson arrivals.
A bench trial is neither: httperf paces its connections (`--rate` opens one
every 1/rate seconds), the trial lasts a few seconds from an empty server,
and httperf gives up on a connection after `--timeout` seconds. Past the
knee those details decide what is measured:

* paced arrivals do not queue below capacity, where Poisson arrivals do;
* a connection refused by a full listen queue is not lost at once: Linux
  drops the SYN and the client's kernel sends it again 1, 3, 7 ... seconds
  later (initial RTO 1 s, doubled, `tcp_syn_retries`), so a trial whose
  timeout is longer than a second sees refused connections come back;
* a request that waited longer than the timeout counts as an error even if
  the server serves it later, and it still holds a worker while served;
* httperf's reply rate divides the replies by the whole test, drain included.

This module replays one trial of the model event by event and reports what
httperf and bench would: replies per second of test, mean reply time of the
replies, the share of connections that got none, and the mean number of busy
workers while the load lasted. With paced arrivals and fixed service parts
the replay is deterministic, which the fit relies on (a smooth cost).

Each request takes a worker, runs its CPU demand on a processor-sharing CPU
of `cores` (each request at most one core), then waits without CPU, then
holds the worker for the reply tail (lingering close, logging) after the
client has its reply.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from dataclasses import dataclass

from advisor.capacity.workerpool_model import ServerModel

# Linux retransmits an unanswered SYN after 1 s, then doubles the wait
# (TCP_TIMEOUT_INIT, tcp_syn_retries = 6).
SYN_RETRY_DELAYS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
# Spread of one request's CPU demand about its mean (coefficient of
# variation, gamma law). Calibrated, not measured per request: 0 lets the
# workers of a pool that computes and waits fall into step and never meet at
# the CPU (the replay then reached the CPU's limit where the sandbox stayed
# 15 % below it); 1 (exponential) queued the CPU-bound CGI at 90 % load for
# 145 ms where bench measured 31 ms. A quarter of the mean fits the four
# sandbox servers of docs/capacity.md.
CPU_DEMAND_CV = 0.25


@dataclass(frozen=True)
class TrialSpec:
    """One bench trial as it was run: what the replay needs to know."""

    rate: float
    """Connections opened per second (one request each)."""
    duration: float
    timeout: float
    workers: int
    backlog: int
    """Connections the listen queue holds (ListenBacklog + 1 on Linux)."""
    arrivals: str = "paced"
    """'paced' (httperf --rate) or 'poisson'."""
    burst_cores: float | None = None
    """Under a CPU quota (the model's `cores`): the cores the requests may
    run on while the period's budget lasts; None: no quota."""
    quota_period: float | None = None
    """Under a CPU quota: its period, seconds (CFS bandwidth control)."""

    @property
    def connections(self) -> int:
        # bench asks httperf for round(rate x duration) connections.
        return max(1, round(self.rate * self.duration))


@dataclass
class TrialReplay:
    """What bench would report for the trial."""

    rate: float
    replies: int
    connections: int
    test_duration: float
    reply_rate: float
    """Replies per second of the whole test, as httperf counts them."""
    reply_time: float
    """Mean seconds from the request sent to its reply, over the replies."""
    turned_away: float
    """Share of connections that got no reply within the timeout."""
    busy_workers: float
    """Mean busy workers while the load lasted."""
    refused_attempts: int


def replay_trial(model: ServerModel, spec: TrialSpec, seed: int = 0,
                 cpu_demand_cv: float = CPU_DEMAND_CV) -> TrialReplay:
    """Replay one trial of `spec` on `model`, event by event."""
    if spec.workers < 1:
        raise ValueError("need at least one worker")
    rng = random.Random(seed)
    n = spec.connections
    if spec.arrivals == "paced":
        starts = [i / spec.rate for i in range(n)]
    else:
        starts, t = [], 0.0
        for _ in range(n):
            starts.append(t)
            t += rng.expovariate(spec.rate)

    cores = max(model.cores, 1e-9)
    # CPU demands are drawn per connection up front, so that two replays
    # with nearby parameters see the same draws (a smooth cost for the fit).
    if cpu_demand_cv > 0:
        shape = 1.0 / (cpu_demand_cv * cpu_demand_cv)
        demands = [rng.gammavariate(shape, 1.0 / shape) * model.cpu_demand for _ in range(n)]
    else:
        demands = [model.cpu_demand] * n
    # CFS bandwidth control: within each period the requests run on up to
    # `burst_cores` until the period's budget (quota x period) is spent, then
    # stop until the next period. A fluid "half a core" would let a lone
    # request run at half speed, which no request does.
    throttled_quota = spec.burst_cores is not None and spec.quota_period is not None
    period = spec.quota_period if throttled_quota else math.inf
    parallel = spec.burst_cores if throttled_quota else cores
    full_budget = cores * period if throttled_quota else math.inf
    budget = full_budget
    next_period = period
    wait, tail = model.wait, min(model.reply_tail, model.wait)
    wait_before_reply = wait - tail

    # Connection attempts: (time, connection). Retries come back here.
    attempts: list[tuple[float, int]] = [(s, i) for i, s in enumerate(starts)]
    heapq.heapify(attempts)
    retry_count = [0] * n
    queue: deque[tuple[int, float]] = deque()  # (connection, time established)
    idle_workers = spec.workers
    # Processor sharing in virtual time: every job present is served at the
    # same rate, so a job needing d leaves when the virtual clock has moved d.
    cpu_jobs: list[tuple[float, int, float]] = []  # (virtual finish, connection, established)
    virtual = 0.0
    timers: list[tuple[float, int, int, float]] = []  # (time, kind, connection, established)
    REPLY, FREE = 0, 1

    now = 0.0
    busy_area = 0.0
    load_end = max(starts[-1], spec.duration)
    replies = 0
    reply_time_sum = 0.0
    refused = 0
    last_event = 0.0

    def cpu_rate() -> float:
        """Each CPU job's speed now (cores of CPU per second)."""
        k = len(cpu_jobs)
        if not k or budget <= 0:
            return 0.0
        return min(1.0, parallel / k)

    def start_request(conn: int, established: float) -> None:
        nonlocal idle_workers
        idle_workers -= 1
        if demands[conn] > 0:
            heapq.heappush(cpu_jobs, (virtual + demands[conn], conn, established))
        else:
            heapq.heappush(timers, (now + wait_before_reply, REPLY, conn, established))

    while attempts or cpu_jobs or timers or queue:
        rate_now = cpu_rate()
        t_cpu = now + (cpu_jobs[0][0] - virtual) / rate_now if rate_now > 0 else math.inf
        t_timer = timers[0][0] if timers else math.inf
        t_attempt = attempts[0][0] if attempts else math.inf
        t_spent = now + budget / (rate_now * len(cpu_jobs)) if throttled_quota and rate_now > 0 else math.inf
        t_period = next_period if throttled_quota and cpu_jobs else math.inf
        t_next = min(t_cpu, t_timer, t_attempt, t_spent, t_period)
        if t_next == math.inf:
            break
        if t_cpu - t_next <= 1e-12:
            t_next = t_cpu  # a job that ends as the budget does ends, not waits a period
        busy = spec.workers - idle_workers
        if now < load_end:
            busy_area += busy * (min(t_next, load_end) - now)
        virtual += (t_next - now) * rate_now
        crossed = throttled_quota and t_next >= next_period
        if throttled_quota:
            budget = max(budget - (t_next - now) * rate_now * len(cpu_jobs), 0.0)
            if t_next >= t_spent - 1e-12:
                budget = 0.0  # not a rounding error's worth of CPU left over
            if crossed:
                budget = full_budget
                next_period = (math.floor(t_next / period + 1e-9) + 1) * period
        now = t_next
        if t_next not in (t_cpu, t_timer, t_attempt):
            continue  # the budget ran out or a period began
        if t_next == t_cpu:
            _, conn, established = heapq.heappop(cpu_jobs)
            heapq.heappush(timers, (now + wait_before_reply, REPLY, conn, established))
        elif t_next == t_timer:
            _, kind, conn, established = heapq.heappop(timers)
            if kind == REPLY:
                elapsed = now - established
                if elapsed <= spec.timeout:
                    replies += 1
                    reply_time_sum += elapsed
                    last_event = max(last_event, now)
                else:
                    # The client gave up at its timeout; the worker serves on.
                    last_event = max(last_event, established + spec.timeout)
                heapq.heappush(timers, (now + tail, FREE, conn, established))
            else:
                idle_workers += 1
                if queue:
                    conn, established = queue.popleft()
                    start_request(conn, established)
        else:
            _, conn = heapq.heappop(attempts)
            if idle_workers > 0 and not queue:
                start_request(conn, now)
            elif len(queue) < spec.backlog:
                queue.append((conn, now))
            else:
                refused += 1
                tries = retry_count[conn]
                if tries < len(SYN_RETRY_DELAYS):
                    again = now + SYN_RETRY_DELAYS[tries]
                    retry_count[conn] = tries + 1
                    if again - starts[conn] < spec.timeout:
                        heapq.heappush(attempts, (again, conn))
                        continue
                # httperf gives up at its timeout, counted from the connect.
                last_event = max(last_event, starts[conn] + spec.timeout)
                continue
    test_duration = max(last_event, starts[-1], 1e-9)
    return TrialReplay(
        rate=spec.rate,
        replies=replies,
        connections=n,
        test_duration=test_duration,
        reply_rate=replies / test_duration,
        reply_time=reply_time_sum / replies if replies else math.inf,
        turned_away=1.0 - replies / n,
        busy_workers=busy_area / load_end,
        refused_attempts=refused,
    )

