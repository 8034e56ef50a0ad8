"""Whether a trial measured the worker pool its configuration claims.

The pool the load meets can differ from the one the configuration claims
(advisor.tuner.staging.poolconfig, which also gives the collector's worker
back on prefork):

* slots of the previous generation that are still finishing (`G` on the
  scoreboard) hold places of the pool;
* the metrics collector's own status connection holds a worker on prefork
  and worker when nothing gave it back;
* the pool may not have grown to its limit.

`check_pool` compares, in the seconds the pool was full, the workers the
scoreboard showed with the ones the server should have had.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field

from advisor.tuner.measure.metrics import Sample
from advisor.tuner.staging.poolconfig import PoolConfig

# A verdict that says the pool ran out: only then does its size decide the result.
POOL_LABELS = ("worker pool exhausted", "keep-alive holding workers", "logging")
# The pool was short when it was in this share of the seconds it was full.
SHORT_SHARE = 0.3
# A full pool within this share of its limit counts as at its limit. A
# prefork pool at its knee keeps losing a child or two to MaxSpareServers
# between bursts and forks them again; 3 % fewer workers can lower a
# pool-bound rate by at most 3 %, under the spread of this host's repeated
# runs (5-10 %), where refusing the probe cost a repeat of it (54 of 201
# probes of the README's session were refused with 241-257 of 257 workers).
SHORT_TOLERANCE = 0.03


@dataclass
class PoolCheck:
    """What the pool was in the seconds it was full, against what the server should have had."""

    configured: int  # MaxRequestWorkers the trial claims
    server_workers: int  # what the server should run (configured + compensation)
    collector_held: int  # workers the collector's connection held and nobody gave back
    full_samples: int  # samples with no idle worker
    short_samples: int  # ... in which fewer workers were there than server_workers
    workers_seen_min: int | None  # fewest workers there in a full sample
    graceful_slots_max: int  # old-generation slots (G) inside the pool
    reasons: list[str] = field(default_factory=list)
    not_grown: bool = False  # short because the pool had not grown to its limit (no old generation in it)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _graceful_in_pool(sample: Sample, pool: PoolConfig, server_workers: int) -> int:
    """G slots that hold a place of the pool: on prefork the first server_workers
    slots (beyond them a lowered limit leaves G marks with no process behind)."""
    board = sample.scoreboard_raw or ""
    if pool.mpm == "prefork":
        return board[:server_workers].count("G")
    return 0  # threaded: an old process that finishes is not counted busy or idle


def check_pool(samples: list[Sample], pool: PoolConfig | None, compensated: bool, label: str) -> PoolCheck | None:
    """Did the trial's full pool hold as many workers as the configuration claims?

    Judged only when the verdict says the pool ran out: when CPU or the
    network limited the run, a prefork pool below its maximum is demand, not
    a shortage. A full sample is one with no idle worker; the workers there
    are busy + idle less the G slots of a previous generation.
    """
    if pool is None:
        return None
    extra = 1 if compensated else 0
    server_workers = pool.workers + extra
    held = 1 if pool.collector_holds_worker and not compensated else 0
    read = [s for s in samples if s.status_ok and s.busy_workers is not None]
    full = [s for s in read if (s.idle_workers or 0) == 0]
    seen = [(s.busy_workers or 0) + (s.idle_workers or 0) - _graceful_in_pool(s, pool, server_workers) for s in full]
    graceful = max((_graceful_in_pool(s, pool, server_workers) for s in read), default=0)
    floor = server_workers - math.floor(SHORT_TOLERANCE * server_workers)
    short = sum(1 for n in seen if n < floor)
    check = PoolCheck(pool.workers, server_workers, held, len(full), short, min(seen) if seen else None, graceful)
    if label not in POOL_LABELS:
        return check
    if full and short >= max(1, math.ceil(SHORT_SHARE * len(full))):
        typical = statistics.median_low(seen)
        why = []
        if graceful:
            why.append(f"up to {graceful} slot(s) still held by the previous generation (G)")
        if typical < server_workers and not graceful:
            why.append("the pool had not grown to its limit")
            check.not_grown = True
        check.reasons.append(f"the pool held {typical} workers in {short} of {len(full)} seconds it was full, "
                             f"not the {server_workers} the server should run" + (f": {'; '.join(why)}" if why else ""))
    if held and pool.workers <= 20:
        check.reasons.append(f"the collector's status connection held 1 of the {pool.workers} workers "
                             f"({100.0 / pool.workers:.0f} %): on {pool.mpm} a kept-alive connection holds a worker")
    return check
