"""A reload's settling is waited for once, and only where a trial follows.

ManagedConfig lets a reload settle (the old children gone, the new pool's
size still for 1.2 s) before a trial measures. The trial's quiet check used
to watch the same pool hold still for another 1.2 s, and the restore at the
end of a run waited for the original's pool to settle with nothing left to
measure: 2.6 s a run of one trial, some 150 s of the load tests. Real
prefork apache2 on 127.0.0.1.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from advisor.tuner.staging.managed_config import ManagedConfig
from advisor.tuner.staging.target import SandboxTarget
from advisor.tuner.trial.quiet_wait import POOL_STEADY_S, wait_quiet
from test_bench_support import SandboxRun, keepalive_header, require, require_cgroup_cpu

pytestmark = [pytest.mark.httpd]

# Where a cgroup's CPU limit is written, and what it reads without one, by version.
LIMIT_FILE = {2: "cpu.max", 1: "cpu.cfs_quota_us"}
UNLIMITED = {2: "max", 1: "-1"}


def test_the_quiet_check_after_an_apply_does_not_wait_for_the_pool_a_second_time():
    require("apache2")
    with SandboxRun(mpm="prefork") as run:
        target = SandboxTarget(run.sandbox)
        with ManagedConfig(target) as managed:
            managed.apply(["KeepAlive Off", "MaxSpareServers 10"])
            pid = target.server_pid()
            assert target.pool_settled is not None and target.pool_settled[0] == pid
            waited, quiet = wait_quiet(target, pid, run.state.port)
            assert quiet
            # The settling just saw the pool hold still: nothing more to watch.
            assert waited < POOL_STEADY_S / 2, waited
            # A pool that grew since the settling is watched again.
            settled_pid, count, since, seen = target.pool_settled
            target.pool_settled = (settled_pid, target.child_count(pid) - 1, since, seen)
            waited, quiet = wait_quiet(target, pid, run.state.port)
            assert quiet and waited >= POOL_STEADY_S, waited
        run.assert_stock_restored()


def test_the_restore_at_the_end_of_a_run_reloads_without_waiting_for_the_pool():
    require("apache2")
    with SandboxRun(mpm="prefork") as run:
        target = SandboxTarget(run.sandbox)
        stock_header = keepalive_header(run.state.base_url)
        assert stock_header is not None  # Debian's stock config keeps connections alive
        managed = ManagedConfig(target).__enter__()
        try:
            managed.apply(["KeepAlive Off"])
            assert keepalive_header(run.state.base_url) is None
        finally:
            started = time.monotonic()
            managed.__exit__(None, None, None)
            took = time.monotonic() - started
        # Reloaded and answering with the original before it returned...
        assert keepalive_header(run.state.base_url) == stock_header
        run.assert_stock_restored()
        # ...without a settling's 1.2 s of watching the pool.
        assert took < POOL_STEADY_S, took


def test_a_quota_is_lifted_before_the_server_is_stopped(monkeypatch):
    """On a fifth of a core, stopping a server behind a full accept queue
    took 14 s: down first gives the group its CPU back."""
    require("apache2")
    require_cgroup_cpu()
    from advisor.tuner.measure.cgroup import CpuQuota

    lifted: list[tuple[str, bool]] = []
    real_lift = CpuQuota.lift

    def watched_lift(quota):
        real_lift(quota)
        lifted.append((Path(quota.path).joinpath(LIMIT_FILE[quota.version]).read_text().split()[0],
                       pid is not None and Path(f"/proc/{pid}").exists()))

    with SandboxRun(mpm="prefork", cpu_quota_pct=10) as run:
        quota = run.sandbox.cpu_quota()
        pid = run.sandbox.running_pid()
        assert Path(quota.path).joinpath(LIMIT_FILE[quota.version]).read_text().split()[0] == "1000"
        monkeypatch.setattr(CpuQuota, "lift", watched_lift)
    # Lifted (no limit left) while the server still ran; then stopped, and the group removed.
    assert lifted == [(UNLIMITED[quota.version], True)], lifted
    assert not Path(quota.path).exists()  # removable only once every process of it is gone

