"""`capacity --log`: the log's demand against the pool, RAM and the model.

Pure: takes the demand summed up by logdemand.py, the pool the config runs,
the recommendation RAM allows, and puts the answer together: where the
busiest second stands, the headroom (loggrowth.py), the seconds the pool
was already full. Nothing here reads files or prints.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from advisor.capacity.logdemand import FULL_SHARE, LogDemand, SecondSeries, full_seconds
from advisor.capacity.loggrowth import Headroom, growth_factor
from advisor.capacity.protocol_mix import holder
from advisor.capacity.queueing_model import Arrivals
from advisor.capacity.sizing import MpmSettings, Recommendation
from advisor.capacity.workerpool_model import ServerModel

FULL_SPELLS_LISTED = 20


@dataclass
class PoolStand:
    """The busiest second against the pool and against RAM."""

    max_request_workers: int
    process_slots: int
    """ServerLimit x ThreadsPerChild (threaded MPMs), ServerLimit (prefork)."""
    ram_workers: int
    """MaxRequestWorkers the recommendation sets (what RAM holds, or a lower cap)."""
    ram_limited_by: str
    peak_busy: float
    peak_share_of_pool: float
    peak_share_of_ram: float
    over_pool: bool
    over_ram: bool


@dataclass
class LogCapacity:
    log_format: str
    format_source: str
    mpm: str
    demand: LogDemand
    base: str
    base_rate: float
    model: str
    arrivals: str
    target_response: float | None
    pool: PoolStand
    headroom: list[Headroom]
    full_threshold: float
    full_count: int
    full_spells: list[str]
    """The first FULL_SPELLS_LISTED spells of full seconds: 'start UTC (n s)'."""
    full_spell_count: int
    notes: list[str] = field(default_factory=list)


def utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch)) + " UTC"


def hold_model(demand: LogDemand, listen_queue: int, fixed_hold: float | None = None) -> ServerModel:
    """The worker-pool model with the log's mean hold time (or --service-time)
    as each request's wait; idle keep-alive holds (when counted) keep the
    worker after the reply."""
    idle_per_request = 0.0
    keep = demand.keepalive
    if demand.requests:
        idle = keep.h2_connections * keep.h2_timeout
        if keep.counted:
            idle += keep.connections * keep.timeout
        idle_per_request = idle / demand.requests
    hold = demand.hold.mean if demand.hold is not None else (fixed_hold or 0.0)
    hold = max(hold, 1e-9)
    return ServerModel(cpu_demand=0.0, wait=hold + idle_per_request, cores=1.0, backlog=listen_queue,
                       reply_tail=idle_per_request)


def build_log_capacity(demand: LogDemand, series: SecondSeries, settings: MpmSettings, recommended: Recommendation,
                       listen_queue: int, *, log_format: str, format_source: str, fixed_hold: float | None = None,
                       arrivals: Arrivals = Arrivals("poisson"), target_response: float | None = None) -> LogCapacity:
    notes = list(demand.notes)
    c = settings.max_request_workers
    slots = settings.server_limit * (settings.threads_per_child if settings.mpm != "prefork" else 1)
    ram = recommended.max_request_workers
    peak = demand.peak_busy
    pool = PoolStand(c, slots, ram, recommended.limited_by, peak, peak / c, peak / ram if ram else float("inf"),
                     peak >= FULL_SHARE * c, peak > ram)
    if slots < c:
        notes.append(f"ServerLimit x ThreadsPerChild = {slots} is below MaxRequestWorkers {c}: httpd runs {slots}")
    model = hold_model(demand, listen_queue, fixed_hold)
    base_rate = demand.busiest_minute_rate
    rows = [growth_factor(base_rate, model, c, "as configured", arrivals=arrivals, target_response=target_response)]
    if ram != c:
        rows.append(growth_factor(base_rate, model, ram, "as recommended", arrivals=arrivals,
                                  target_response=target_response))
    else:
        rows.append(Headroom("as recommended (= configured)", ram, rows[0].factor, rows[0].rate, rows[0].limited_by,
                             rows[0].blocking_now, rows[0].response_now, rows[0].busy_now))
    spells, count = full_seconds(series, c, 10**9)
    if count:
        notes.append(f"the pool was full in {count} of the log's {demand.seconds} seconds: "
                     f"there the listen queue held what the workers could not take, and %D does not count that wait")
    if rows[0].factor < 1:
        notes.append(f"with MaxRequestWorkers {c} the model passes its limit below the busiest minute's own rate "
                     f"(x {rows[0].factor:.2f}): the pool is already short at the site's peak")
    counted = demand.protocols
    if counted is not None and counted.h2_requests and settings.mpm != "prefork":
        notes.append(f"{counted.h2_share * 100:.1f} % of the requests came over HTTP/2: mod_http2 ran them on its "
                     f"own h2 workers, and their connection held one {holder(settings.mpm, plural=False)} while its "
                     f"streams ran; the busy workers count each stream as one, an upper bound for the MPM's pool")
    notes.append("the headroom keeps each request's hold time as logged: where requests share a CPU, more load "
                 "stretches them and the headroom is smaller (`bench` the server, then `capacity --fit`)")
    return LogCapacity(
        log_format=log_format, format_source=format_source, mpm=settings.mpm, demand=demand,
        base="the busiest minute", base_rate=base_rate, model=model.describe(c), arrivals=arrivals.describe(),
        target_response=target_response, pool=pool, headroom=rows, full_threshold=FULL_SHARE * c,
        full_count=count, full_spells=[f"{utc(t)} ({n} s)" for t, n in spells[:FULL_SPELLS_LISTED]],
        full_spell_count=len(spells), notes=notes,
    )
