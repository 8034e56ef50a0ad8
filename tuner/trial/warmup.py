"""The warm-up: unmeasured load at a trial's rate until the pool is what the load makes it.

Then the work the warm-up left queued is drained (`_drain`) before the
measured window starts.
"""

from __future__ import annotations

import math
import signal
import time
from dataclasses import asdict, dataclass, replace

from advisor.tuner.load import httperf
from advisor.tuner.load.remote_clients import GroupRun
from advisor.tuner.measure.metrics import MetricsCollector
from advisor.tuner.staging.target import StagingTarget
from advisor.tuner.trial.load_process import LoadSpec, start_load
from advisor.tuner.trial.mixed_load import MixSpec
from advisor.tuner.trial.quiet_wait import POOL_STEADY_S, busy_workers
from advisor.tuner.trial.result import TrialInputs, WarmUp

# Warm-up: the pool is steady when its size has not moved for WARMUP_STEADY_S
# (over two of the parent's one-second maintenance cycles), after at least
# WARMUP_MIN_S of load (and one session's length), WARMUP_MAX_S at most.
WARMUP_MIN_S = POOL_STEADY_S
# Two of the parent's cycles, not one: under load that rises at once (each
# probe of a knee search) prefork's spawn rate falls back to one child a
# cycle whenever a cycle sees a few idle workers, and it can skip a cycle
# while the pool still has to grow. With 1.2 s the warm-up of the README's
# no-switch session of 2026-11-27 ended as "steady" after 2.1 s, and 7 of
# the start's 10 probes then measured a pool still growing (30 of 257 workers
# at 40 sessions/s, 166-205 at 220-320/s).
WARMUP_STEADY_S = 2.2
# ...unless mod_status shows at least MinSpareServers (MinSpareThreads) idle
# in two readings this far apart, while the count has not moved for
# POOL_STEADY_S: with that many idle the parent starts nobody, at any spawn
# rate, so the pool is what this load makes it. The README session's
# growing pools above had fewer idle than that (the parent was still adding).
WARMUP_SPARES_READS_S = 0.5
WARMUP_DRAIN_MAX_S = 10.0
WARMUP_MAX_S = 20.0
# A pool whose children keep retiring (MaxConnectionsPerChild far below the
# load) never stops changing: that churn is its steady state once the
# parent may spawn at full speed again (prefork holds back to one child a
# second for ten maintenance cycles after a graceful restart).
WARMUP_CHURN_EXITS = 10
WARMUP_CHURN_S = 11.0
# httpd at this share of its cores (or quota) for a second: CPU-bound, the pool is not what limits.
WARMUP_CPU_SHARE = 0.85


def warm_up(target: StagingTarget, inputs: TrialInputs, spec: LoadSpec, pid: int | None,
            collector: MetricsCollector, registry: list | None = None,
            server_cpus: list[int] | None = None, port: int | None = None, clients=None) -> WarmUp | None:
    """Load the server at the trial's rate, unmeasured, until its pool is what the load makes it.

    Right after a reload (or a quiet spell) prefork runs StartServers
    children and adds more once a second while work waits (after a graceful
    restart one a second for ten cycles); kept-alive sessions pile up
    meanwhile. A window that starts then measures the growth, not the
    configuration. After WARMUP_MIN_S and one session's length the warm-up
    ends at the first of: the number of children unchanged for WARMUP_STEADY_S
    (births and exits both: a pool whose children retire faster than the
    parent replaces them, MaxConnectionsPerChild 10 say, is not steady while
    it shrinks, and right after a reload the parent replaces only one a
    second for ten cycles); the count unchanged for POOL_STEADY_S while two
    status readings in a row showed MinSpareServers (MinSpareThreads) idle
    or more, when the parent starts nobody; the pool at its
    configured limit; httpd using its whole CPU (cores or quota) for a
    second, where more workers cannot serve more and a longer warm-up only
    piles up work. WARMUP_MAX_S bounds it (then `steady` is False); a fixed
    `warmup_s` runs that long. httperf is stopped with SIGINT, the work it
    left queued is served (`_drain`), and the measured run starts. The
    collector's status connection is used twice a second meanwhile (it stays
    open for the window, and its idle count shows the spares).
    """
    if inputs.warmup_s == 0:
        return None
    plan = _plan(target, inputs, spec, server_cpus)
    before = target.child_count(pid)
    seen, last_change = before or 0, time.monotonic()
    t0 = time.monotonic()
    cpu_mark = (t0, collector.httpd_cpu_seconds())
    process = start_load(target, plan.spec, clients)
    if registry is not None:
        registry.append(process)
    try:
        stopped = _load_until_steady(target, pid, collector, process, plan, seen, last_change, t0, cpu_mark)
    finally:
        _stop_load(target, process, registry)
    seconds = time.monotonic() - t0
    drained = _drain(target, collector, port)
    return WarmUp(seconds=round(seconds, 2), children_before=before, children_after=target.child_count(pid),
                  steady=stopped != "time bound", stopped_by=stopped, drain_s=round(drained, 2))


@dataclass
class WarmUpPlan:
    """What a warm-up sends, and the bounds and marks that end it."""

    fixed: float | None  # a fixed length (`warmup_s`), or None: until the pool is what the load makes it
    bound: float  # seconds at most
    least: float  # seconds at least before the pool can count as steady
    spec: LoadSpec  # the trial's load, sized to last the bound
    limit: int | None  # the pool's configured limit, in children
    min_spare: int | None  # MinSpareServers (MinSpareThreads)
    cpu_full: float  # httpd's CPU use (% of one core) that counts as its whole CPU


def _plan(target: StagingTarget, inputs: TrialInputs, spec: LoadSpec,
          server_cpus: list[int] | None) -> WarmUpPlan:
    """The warm-up's bounds, its load sized to them, and the pool's limit and spares, read before it starts."""
    fixed = inputs.warmup_s
    bound = fixed if fixed is not None else WARMUP_MAX_S
    session_s = (inputs.wsess[1] - 1) * inputs.wsess[2] if inputs.wsess else 0.0
    if inputs.replayed() is not None:
        session_s = inputs.replayed().mean_s
    least = max(WARMUP_MIN_S, session_s + 1.0)
    count = max(1, int(math.ceil(inputs.rate * (bound + 1.0))))
    if isinstance(spec, httperf.HttperfSpec):
        sized = httperf.HttperfSpec(**{**asdict(spec), "num_conns": count,
                                       "wsess": (count, spec.wsess[1], spec.wsess[2]) if spec.wsess else None})
    elif isinstance(spec, MixSpec):
        sized = spec.sized(count)
    else:  # h2load: as many visitors
        sized = replace(spec, visitors=count)
    pool = target.pool_config(claimed=False)
    limit = None
    min_spare = pool.min_spare if pool is not None else None
    if pool is not None:
        limit = pool.workers if pool.mpm == "prefork" else math.ceil(pool.workers / max(1, pool.threads_per_child))
    cpu_full = WARMUP_CPU_SHARE * (inputs.server_cpu_quota_pct or 100.0 * max(1, len(server_cpus or [0])))
    return WarmUpPlan(fixed=fixed, bound=bound, least=least, spec=sized, limit=limit, min_spare=min_spare,
                      cpu_full=cpu_full)


def _load_until_steady(target: StagingTarget, pid: int | None, collector: MetricsCollector, process,
                       plan: WarmUpPlan, seen: int, last_change: float, t0: float,
                       cpu_mark: tuple[float, float | None]) -> str:
    """Watch the pool under the warm-up's load until one of warm_up's ends
    is reached; what ended it ("time bound": none did in time)."""
    retired = 0  # drops in the child count seen while loading: children that exited
    next_status = t0 + WARMUP_SPARES_READS_S
    spares_reads = 0  # status readings in a row, since the pool last grew, with the spares idle
    full_since: float | None = None
    stopped = "time bound"
    while process.poll() is None:
        now = time.monotonic()
        children = target.child_count(pid) or 0
        if children > seen:
            last_change = now
            spares_reads = 0
        retired += max(0, seen - children)
        seen = children
        if now - cpu_mark[0] >= 0.5:
            used = collector.httpd_cpu_seconds()
            pct = (100.0 * (used - cpu_mark[1]) / (now - cpu_mark[0])
                   if used is not None and cpu_mark[1] is not None else 0.0)
            full_since = (full_since or now) if pct >= plan.cpu_full else None
            cpu_mark = (now, used)
        if plan.fixed is not None:
            if now - t0 >= plan.fixed:
                stopped = "fixed length"
                break
        elif now - t0 >= plan.least:
            if now - last_change >= WARMUP_STEADY_S:
                stopped = "pool steady"
            elif spares_reads >= 2 and now - last_change >= POOL_STEADY_S:
                stopped = "spares idle"
            elif retired >= WARMUP_CHURN_EXITS and now - t0 >= WARMUP_CHURN_S:
                stopped = "children retired throughout"
            elif plan.limit is not None and children >= plan.limit:
                stopped = "pool at its limit"
            elif full_since is not None and now - full_since >= 1.0:
                stopped = "server CPU full"
            if stopped != "time bound":
                break
        if now - t0 >= plan.bound:
            break
        if now >= next_status:
            snapshot = collector.status_now(timeout=0.5)
            spares_reads = spares_reads + 1 if (snapshot is not None and plan.min_spare is not None
                                                and snapshot.idle >= plan.min_spare) else 0
            next_status = now + WARMUP_SPARES_READS_S
        time.sleep(0.1)
    return stopped


def _stop_load(target: StagingTarget, process, registry: list | None) -> None:
    """End the warm-up's load (httperf's report is not read) and forget the process."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)  # stop opening connections; drop the ones in flight
        try:
            process.communicate(timeout=5.0)
        except Exception:
            process.kill()
            process.wait()
    else:
        process.communicate()
    if not isinstance(process, GroupRun):
        httperf.forget(target.load_record, process.pid)
    if registry is not None and process in registry:
        registry.remove(process)


def _drain(target: StagingTarget, collector: MetricsCollector, port: int | None,
           timeout: float = WARMUP_DRAIN_MAX_S) -> float:
    """Wait for the work the warm-up left queued to be served; the pool it grew stays.

    A warm-up above the server's capacity leaves its accept queue full of
    connections httperf has dropped: a window started at once would spend
    its first seconds on them (and httperf, unable to connect, would look
    client-bound). Nothing waiting for accept() and no worker busy but the
    collector's own request is drained; prefork retires at most one spare
    child a second meanwhile.
    """
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        working = busy_workers(collector.status_now(timeout=0.5))
        if not target.accept_queue(collector.server_pid, port) and not working:
            break
        time.sleep(0.1)
    return time.monotonic() - t0
