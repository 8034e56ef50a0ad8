"""A run of the point the server already runs keeps its warm pool.

The gain's replicates run start, winner, winner, start ... and the ablation
rounds alternate direction, so every other run follows a run of its own
point. Applying the same lines again must not reload httpd: a graceful
restart replaces every prefork child, and the next warm-up would grow the
pool again from StartServers. A real prefork apache2 on 127.0.0.1; the
children's pids tell whether a reload happened.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from advisor.tuner.staging.managed_config import ManagedConfig
from advisor.tuner.staging.target import SandboxTarget
from test_bench_support import SandboxRun, require, wait_for

pytestmark = [pytest.mark.httpd]


def _children(pid: int) -> set[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return {int(p) for p in text.split()}


def _settled(pid: int) -> set[int]:
    """The children once the pool has not changed for a second (after a reload's start-up)."""
    last, since = _children(pid), time.monotonic()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = _children(pid)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= 1.2:
            return now
    return last


def test_applying_the_lines_in_effect_again_keeps_the_children_and_other_lines_replace_them():
    require("apache2")
    with SandboxRun(mpm="prefork") as run:
        target = SandboxTarget(run.sandbox)
        with ManagedConfig(target) as managed:
            managed.apply(["KeepAlive Off", "MaxSpareServers 10"])
            pid = target.server_pid()  # the first apply may restart in full (the tool's instruments)
            first = _settled(pid)
            assert first
            managed.apply(["KeepAlive Off", "MaxSpareServers 10"])
            assert managed.reused == 1
            assert target.server_pid() == pid and _settled(pid) == first  # no reload: the same children, warm
            managed.apply(["KeepAlive On", "MaxSpareServers 10"])
            assert managed.reused == 1
            pid = target.server_pid()
            assert wait_for(lambda: not (_children(pid) & first), timeout=10)  # a reload replaced them all
            assert "KeepAlive On" in run.sandbox.managed_path.read_text()
        run.assert_stock_restored()
