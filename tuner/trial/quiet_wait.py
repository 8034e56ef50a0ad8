"""The quiet wait before a probe: the server done with the previous trial's work.

Also the pool each trial's child watcher saw last, so that a pool already at
rest is not watched for another maintenance cycle, and the count of workers
busy with a request (`busy_workers`), which the warm-up's drain reads too.
"""

from __future__ import annotations

import time

from advisor.tuner.measure.status import fetch_status
from advisor.tuner.staging.target import StagingTarget

# Longest wait for the server to finish the previous trial's work.
QUIET_TIMEOUT_S = 20.0
# httpd's parent adjusts its pool once a second: a process count unchanged
# for longer than that is the pool at rest.
POOL_STEADY_S = 1.2

# Per server pid: (children, when a child was last born, when this was
# seen), left by the previous trial's child watcher, so a pool already at
# rest is not watched for another maintenance cycle.
_POOL_SEEN: dict[int, tuple[int, float, float]] = {}


def _last_seen_pool(target: StagingTarget, pid: int | None) -> tuple[int, float] | None:
    """(children, when the count last grew) from whichever saw the pool
    last: the previous trial's watcher or the settling of the reload that
    applied this trial's config."""
    if not pid:
        return None
    watched = _POOL_SEEN.get(pid)
    settled = target.pool_settled[1:] if target.pool_settled and target.pool_settled[0] == pid else None
    if watched is None or (settled is not None and settled[2] > watched[2]):
        watched = settled
    return watched[:2] if watched is not None else None


def wait_quiet(target: StagingTarget, pid: int | None, port: int, timeout: float = QUIET_TIMEOUT_S,
               steady_s: float = POOL_STEADY_S) -> tuple[float, bool]:
    """Wait until the server has finished the previous trial's work.

    An overloaded trial leaves connections in the accept queue that httperf
    already gave up on; the server still accepts and answers each one, so a
    trial started at once would queue behind them and measure its
    predecessor. It can also leave the worker pool short (prefork with
    MaxConnectionsPerChild retires children faster than the parent, which
    spawns once a second, replaces them). Quiet means: nothing waiting for
    accept(), no worker busy but the one serving the status request, and the
    number of server processes not grown for one maintenance cycle.

    A pool that shrinks is at rest for this purpose: with no load, children
    only exit because the parent stops idle ones above MaxSpareServers (or
    MaxSpareThreads), one a second, and the next warm-up grows the pool to
    what its load needs. Waiting for that to end cost up to QUIET_TIMEOUT_S a
    probe after a large pool (81 prefork children took 25 s to shrink).
    """
    t0 = time.monotonic()
    children, since = target.child_count(pid), t0
    known = _last_seen_pool(target, pid)
    if known is not None and children is not None and known[0] >= children:
        since = known[1]  # not grown since it was last seen growing
    while time.monotonic() - t0 < timeout:
        queue = target.accept_queue(pid, port)
        busy_ok = True
        if target.status_url:
            busy_ok = busy_workers(fetch_status(target.status_url, timeout=1.0)) == 0
        now = target.child_count(pid)
        if now is not None and children is not None and now > children:
            since = time.monotonic()
        children = now
        if not queue and busy_ok and time.monotonic() - since >= steady_s:
            return time.monotonic() - t0, True
        time.sleep(0.1)
    return time.monotonic() - t0, False


def remember_pool(pid: int, pool: tuple[int, float]) -> None:
    """Keep what a trial's child watcher saw last, (children, when a child was
    last born), for the next quiet wait on the server `pid`."""
    _POOL_SEEN[pid] = (*pool, time.monotonic())


def busy_workers(snap) -> int | None:
    """Workers busy with a request other than the status request itself:
    reading, sending, kept alive, logging, looking up a name. A C slot is a
    connection closing (a TLS connection can sit there a while) or an idle
    child being stopped: no work left. None: the status page did not answer."""
    if snap is None:
        return None
    return max(0, sum(snap.scoreboard.get(k, 0) for k in "RWKLD") - 1)
