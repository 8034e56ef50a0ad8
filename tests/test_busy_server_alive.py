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

import pytest
import requests
import urllib3

from advisor.errors import AdvisorError
from advisor.tuner.staging.target import ManagedConfig, SandboxTarget
from test_bench_support import SandboxRun, require

pytestmark = [pytest.mark.httpd]

ONE_WORKER = ["StartServers 1", "MinSpareServers 1", "MaxSpareServers 1", "ServerLimit 1", "MaxRequestWorkers 1"]
HOLD_MS = 5000


def _hold(url: str, done: list) -> None:
    urllib3.disable_warnings()
    try:
        requests.get(url, timeout=30, verify=False)
    finally:
        done.append(time.monotonic())


def test_a_busy_https_server_is_waited_for_and_a_stopped_one_fails_at_once():
    require("apache2")
    with SandboxRun(mpm="prefork", tls=True) as run:
        target = SandboxTarget(run.sandbox)
        with ManagedConfig(target) as managed:
            managed.apply(ONE_WORKER)
            slow = f"{target.base_url}/cgi-bin/sleep.cgi?ms={HOLD_MS}"
            done: list[float] = []
            holders = [threading.Thread(target=_hold, args=(slow, done)) for _ in range(2)]
            for holder in holders:
                holder.start()
                time.sleep(0.2)
            time.sleep(0.5)
            t0 = time.monotonic()
            target.check_alive()
            waited = time.monotonic() - t0
            for holder in holders:
                holder.join(timeout=30)
        run.assert_stock_restored()
        assert len(done) == 2
        # Its first handshake timed out (3 s): the check waited for a worker.
        assert 3.0 <= waited < 20.0, waited
        run.sandbox.down()
        t0 = time.monotonic()
        with pytest.raises(AdvisorError) as raised:
            target.check_alive()
        assert time.monotonic() - t0 < 2.0
        assert "cannot connect" in raised.value.message
