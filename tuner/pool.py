"""The worker pool a configuration claims, and whether a trial measured it.

A trial that changes MaxRequestWorkers claims to measure a pool of that
size. Three things can make the pool the load meets a different one:

* limits httpd reads only when it starts: a graceful restart keeps the old
  ServerLimit and ThreadLimit (it says so in its error log, AH00179), so a
  change to either needs a full restart (see `restart_changes`);
* slots of the previous generation that are still finishing (`G` on the
  scoreboard) hold places of the pool;
* the metrics collector's own status connection: it stays open so that the
  scoreboard can be read when every worker is taken, and on prefork and
  worker a kept-alive connection holds a worker between requests. With
  MaxRequestWorkers 4 that is a quarter of the pool.

`compensation` gives the sandbox the collector's worker back (prefork: one
more worker than the config claims); `check_pool` compares, in the seconds
the pool was full, the workers the scoreboard showed with the ones the
server should have had.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

from advisor.capacity.sizing import effective_mpm_settings
from advisor.errors import AdvisorError
from advisor.tuner.metrics import Sample

# Limits httpd reads at start-up only (a graceful restart keeps the old value).
RESTART_ONLY = ("ServerLimit", "ThreadLimit")
# A verdict that says the pool ran out: only then does its size decide the result.
POOL_LABELS = ("worker pool exhausted", "keep-alive holding workers", "logging")
# The pool was short when it was in this share of the seconds it was full.
SHORT_SHARE = 0.3


@dataclass
class PoolConfig:
    """The pool as httpd will run it (after its own corrections), and the lines that set it."""

    mpm: str
    workers: int  # MaxRequestWorkers as applied
    server_limit: int
    thread_limit: int
    threads_per_child: int
    keepalive: bool
    keepalive_timeout_s: float
    where: dict[str, str] = field(default_factory=dict)  # directive -> "file:line" where written

    @property
    def restart_limits(self) -> dict[str, int]:
        limits = {"ServerLimit": self.server_limit}
        if self.mpm != "prefork":
            limits["ThreadLimit"] = self.thread_limit
        return limits

    @property
    def collector_holds_worker(self) -> bool:
        """A kept-alive connection holds a worker on prefork and worker (not on event)."""
        return self.mpm in ("prefork", "worker") and self.keepalive and self.keepalive_timeout_s >= 1.0


def _last(cfg, names: tuple[str, ...], skip: Path | None):
    found = [d for d in cfg.server_directives(*names) if skip is None or Path(d.file or "") != skip]
    return found[-1] if found else None


def _int(directive) -> int | None:
    if directive is None:
        return None
    try:
        return int(directive.raw_args.strip().split()[0])
    except (ValueError, IndexError):
        return None


def _seconds(directive, default: float) -> float:
    if directive is None:
        return default
    text = directive.raw_args.strip().lower()
    try:
        return float(text[:-2]) / 1000.0 if text.endswith("ms") else float(text)
    except ValueError:
        return default


def read_pool(config: Path | str, mpm: str | None = None, skip: Path | None = None) -> PoolConfig | None:
    """The pool `config` sets up, or None if it cannot be read.

    `skip` leaves out the directives of one file (the sandbox's own
    compensation include), to get what the configuration itself claims.
    """
    from advisor.config.loader import load_config
    from advisor.config.options import LoadOptions

    try:
        cfg = load_config(str(config), LoadOptions(apache_version="2.4"))
    except (AdvisorError, OSError):
        return None
    mpm = mpm or cfg.mpm
    if mpm not in ("prefork", "worker", "event"):
        return None
    lines = {name: _last(cfg, names, skip) for name, names in (
        ("MaxRequestWorkers", ("MaxRequestWorkers", "MaxClients")), ("ServerLimit", ("ServerLimit",)),
        ("ThreadsPerChild", ("ThreadsPerChild",)), ("ThreadLimit", ("ThreadLimit",)),
        ("KeepAlive", ("KeepAlive",)), ("KeepAliveTimeout", ("KeepAliveTimeout",)))}
    settings = effective_mpm_settings(mpm, _int(lines["MaxRequestWorkers"]), _int(lines["ServerLimit"]),
                                      _int(lines["ThreadsPerChild"]), _int(lines["ThreadLimit"]))
    keepalive = lines["KeepAlive"] is None or lines["KeepAlive"].raw_args.strip().lower() != "off"
    where = {name: f"{d.file}:{d.line}" for name, d in lines.items() if d is not None}
    return PoolConfig(mpm, settings.max_request_workers, settings.server_limit, settings.thread_limit,
                      settings.threads_per_child, keepalive, _seconds(lines["KeepAliveTimeout"], 5.0), where)


def restart_changes(before: PoolConfig | None, after: PoolConfig | None) -> list[str]:
    """Start-up-only limits that differ: `ServerLimit 256 -> 4`. A graceful restart would keep the old value."""
    if before is None or after is None:
        return []
    old, new = before.restart_limits, after.restart_limits
    return [f"{name} {old[name]} -> {new[name]}" for name in new if name in old and old[name] != new[name]]


def compensation(pool: PoolConfig | None) -> list[str]:
    """Directives that give back the worker the collector's status connection holds.

    Prefork only: one more process than the config claims (and room for it
    under ServerLimit). Worker rounds MaxRequestWorkers to whole processes of
    ThreadsPerChild threads, so one thread cannot be added there; the check
    reports the collector's share instead.
    """
    if pool is None or pool.mpm != "prefork" or not pool.collector_holds_worker:
        return []
    lines = [f"MaxRequestWorkers {pool.workers + 1}"]
    if pool.server_limit < pool.workers + 1:
        lines.append(f"ServerLimit {pool.workers + 1}")
    return lines


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
    short = sum(1 for n in seen if n < server_workers)
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
        check.reasons.append(f"the pool held {typical} workers in {short} of {len(full)} seconds it was full, "
                             f"not the {server_workers} the server should run" + (f": {'; '.join(why)}" if why else ""))
    if held and pool.workers <= 20:
        check.reasons.append(f"the collector's status connection held 1 of the {pool.workers} workers "
                             f"({100.0 / pool.workers:.0f} %): on {pool.mpm} a kept-alive connection holds a worker")
    return check
