"""A server still busy with the last trial's backlog is alive, a stopped one is not.

bench/tune_bench.py lost its run (2026-11-28) when the session's check
between two trials made one TLS handshake with a 3 s timeout while the
HTTPS sandbox was still serving the previous trial's queue, and called the
server dead. Here a real prefork sandbox over HTTPS has every worker held by
a 5-s CGI, so a new connection waits in the accept queue: the check waits
for it (its first handshake times out) and passes. The near miss: the same
check on the stopped server fails at once.
"""

from __future__ import annotations

import threading
import time
from urllib.parse import urlsplit

import psutil
import pytest
import requests
import urllib3

from advisor.errors import AdvisorError
from advisor.tuner.staging.managed_config import ManagedConfig
from advisor.tuner.staging.target import SandboxTarget
from test_bench_support import SandboxRun, require, wait_for

pytestmark = [pytest.mark.httpd]

ONE_WORKER = ["StartServers 1", "MinSpareServers 1", "MaxSpareServers 1", "ServerLimit 1", "MaxRequestWorkers 1"]
HOLD_MS = 5000


def _hold(url: str, done: list) -> None:
    urllib3.disable_warnings()
    try:
        requests.get(url, timeout=30, verify=False)
    finally:
        done.append(time.monotonic())


def _connections_to(port: int | None) -> int:
    """Established connections to the server's port, accepted or waiting for accept()."""
    return sum(1 for c in psutil.net_connections("tcp")
               if c.status == psutil.CONN_ESTABLISHED and c.laddr and c.laddr.port == port)


def _hold_the_worker(target: SandboxTarget, count: int, hold_ms: int) -> tuple[list[threading.Thread], list[float]]:
    slow = f"{target.base_url}/cgi-bin/sleep.cgi?ms={hold_ms}"
    done: list[float] = []
    holders = [threading.Thread(target=_hold, args=(slow, done)) for _ in range(count)]
    for holder in holders:
        holder.start()
        time.sleep(0.1)
    # The check must meet every worker held: on a host busy with other tests
    # a fixed half second was not always enough for the holders to connect,
    # and the check's own handshake got a worker first. (The sandbox runs one
    # worker more than ONE_WORKER says, for the status collector.)
    port = urlsplit(target.base_url).port
    wanted = min(count, 6)
    assert wait_for(lambda: _connections_to(port) >= wanted, 10.0, step=0.05), "the holders did not connect in 10 s"
    time.sleep(0.2)  # their requests sent behind the handshakes
    return holders, done


def _timed_check(target: SandboxTarget, holders: list[threading.Thread], **kwargs) -> tuple[float, AdvisorError | None]:
    """Seconds check_alive took and the error it raised (None if none); then
    the holders are let finish."""
    t0 = time.monotonic()
    error = None
    try:
        target.check_alive(**kwargs)
    except AdvisorError as raised:
        error = raised
    seconds = time.monotonic() - t0
    for holder in holders:
        holder.join(timeout=40)
    return seconds, error


def test_a_busy_https_server_is_waited_for_and_a_stopped_one_fails_at_once():
    require("apache2")
    with SandboxRun(mpm="prefork", tls=True) as run:
        target = SandboxTarget(run.sandbox)
        with ManagedConfig(target) as managed:
            managed.apply(ONE_WORKER)
            holders, done = _hold_the_worker(target, 2, HOLD_MS)
            waited, error = _timed_check(target, holders)
        run.assert_stock_restored()
        assert error is None and len(done) == 2
        # Its first handshake timed out (3 s): the check waited for a worker.
        assert 3.0 <= waited < 20.0, waited
        run.sandbox.down()
        t0 = time.monotonic()
        with pytest.raises(AdvisorError) as raised:
            target.check_alive()
        assert time.monotonic() - t0 < 2.0
        assert "cannot connect" in raised.value.message


def test_a_server_still_draining_its_queue_is_waited_for_past_the_busy_bound():
    """tune_bench's worst-practice search (2026-11-28) called its server dead
    20 s after a trial, while it was still working through a queue of TLS
    handshakes. Here sixteen 1-s requests wait for one worker (about two a
    second are served): the queue shrinks between the check's 3-s handshake
    attempts, so it keeps waiting past its 2-s bound. The near miss: a queue
    that does not move (one 12-s request ahead) fails at the bound."""
    require("apache2")
    with SandboxRun(mpm="prefork", tls=True) as run:
        target = SandboxTarget(run.sandbox)
        with ManagedConfig(target) as managed:
            managed.apply(ONE_WORKER)
            holders, done = _hold_the_worker(target, 16, 1000)
            draining, error = _timed_check(target, holders, busy_wait_s=2.0)
            holders, _ = _hold_the_worker(target, 2, 12000)
            stuck, raised = _timed_check(target, holders, busy_wait_s=2.0)
        run.assert_stock_restored()
    assert error is None and len(done) == 16
    # Past the 2-s bound (its first handshake alone timed out at 3 s), and
    # before the sixteen 1-s requests could have been served one at a time.
    assert 3.0 <= draining < 16.0, draining
    assert raised is not None and "no TLS handshake" in raised.message
    assert stuck < 7.0, stuck
