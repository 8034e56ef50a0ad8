"""The worker pool a configuration claims, as httpd will run it.

A trial that changes MaxRequestWorkers claims to measure a pool of that
size. Two things here keep the pool the load meets the one claimed:

* limits httpd reads only when it starts: a graceful restart keeps the old
  ServerLimit and ThreadLimit (it says so in its error log, AH00179), so a
  change to either needs a full restart (`RESTART_ONLY`, `restart_changes`);
* the metrics collector's own status connection: it stays open so that the
  scoreboard can be read when every worker is taken, and on prefork and
  worker a kept-alive connection holds a worker between requests. With
  MaxRequestWorkers 4 that is a quarter of the pool. `compensation` gives
  the sandbox the collector's worker back (prefork: one more worker than the
  config claims).

Whether a trial then measured that pool is the trial's question
(advisor.tuner.trial.poolcheck).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from advisor.capacity.sizing import effective_mpm_settings
from advisor.errors import AdvisorError

# Limits httpd reads at start-up only (a graceful restart keeps the old value).
RESTART_ONLY = ("ServerLimit", "ThreadLimit")


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
    min_spare: int | None = None
    """MinSpareServers (prefork) or MinSpareThreads (worker, event): while at
    least this many workers are idle the parent starts no more."""

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


def read_pool(config: Path | str, mpm: str | None = None, skip: Path | None = None,
              options=None) -> PoolConfig | None:
    """The pool `config` sets up, or None if it cannot be read.

    `skip` leaves out the directives of one file (the sandbox's own
    compensation include), to get what the configuration itself claims.
    `options`: the LoadOptions to read it with (a remote tree's root).
    """
    from advisor.config.load_options import LoadOptions
    from advisor.config.loader import load_config

    try:
        cfg = load_config(str(config), options or LoadOptions(apache_version="2.4"))
    except (AdvisorError, OSError):
        return None
    return pool_of(cfg, mpm, skip)


def pool_of(cfg, mpm: str | None = None, skip: Path | None = None) -> PoolConfig | None:
    """The pool a loaded config (advisor.config.model.Config) sets up; None for an MPM without one."""
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
    # httpd's defaults (5 servers, 75 threads), and its floor of one.
    min_spare = _int(_last(cfg, ("MinSpareServers",) if mpm == "prefork" else ("MinSpareThreads",), skip))
    min_spare = max(1, min_spare if min_spare is not None else 5 if mpm == "prefork" else 75)
    return PoolConfig(mpm, settings.max_request_workers, settings.server_limit, settings.thread_limit,
                      settings.threads_per_child, keepalive, _seconds(lines["KeepAliveTimeout"], 5.0), where,
                      min_spare)


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
