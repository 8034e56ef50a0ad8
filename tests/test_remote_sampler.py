"""The remote metrics sampler reads what the local collector reads.

Both watch the same sandbox httpd in the server namespace at once: the local
MetricsCollector through /proc on this machine, the sampler over ssh from
inside that namespace. They must fill the same fields, see the same
interfaces, cores and disks, count the same bytes and processes, and sum
the same httpd CPU time.
"""

from __future__ import annotations

import dataclasses
import subprocess
import time

import pytest

from advisor.tuner.measure.metrics import MetricsCollector, Sample
from advisor.tuner.measure.remote_sampler import RemoteMetricsCollector, sampler_source
from advisor.tuner.transport.ssh import HostSpec, SshConnection
from test_bench_support import samplers_watching, wait_for
from test_remote_target import remote_sandbox  # noqa: F401 - the fixture

pytestmark = pytest.mark.netns
INTERVAL = 0.5


def no_sampler_left(httpd_pid: int):
    """Stopped means gone: no sampler of this httpd left on the host. (It
    notices a closed connection at its next write, later on a busy machine.)"""
    return lambda: not samplers_watching(httpd_pid)


def test_sampler_source_is_one_self_contained_program():
    source = sampler_source()
    compile(source, "sampler", "exec")
    assert "advisor" not in [line.split()[1] for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert "def proc_snapshot" in source and "class ChildWatcher" in source


def _sent_bytes(samples: list[Sample], iface: str) -> float:
    total, previous_t = 0.0, 0.0
    for sample in samples:
        total += sample.net_bps.get(iface, {}).get("rx", 0) / 8 * (sample.t - previous_t)
        previous_t = sample.t
    return total


def test_remote_samples_match_the_local_collector(remote_sandbox):  # noqa: F811
    import requests

    topo, run = remote_sandbox
    pid = run.sandbox.running_pid()
    status = f"http://{topo.server.addr}:8080/server-status?auto"
    conn = SshConnection(HostSpec(topo.server.addr, "root"), options=topo.ssh_options(), identity=str(topo.user_key))
    conn.connect()
    local = MetricsCollector(interval=INTERVAL, server_pid=pid, port=8080, status_url=status, max_samples=40)
    remote = RemoteMetricsCollector(conn, remote_pid=pid, interval=INTERVAL, port=8080, status_url=status,
                                    max_samples=40)
    try:
        remote.prime()
        local.prime()
        remote.start()
        local.start()
        time.sleep(1.2)
        for _ in range(40):  # bounded, light: one connection per request
            assert requests.get(f"http://{topo.server.addr}:8080/index.html", timeout=5).status_code == 200
        time.sleep(1.5)
        remote_cpu, local_cpu = remote.httpd_cpu_seconds(), local.httpd_cpu_seconds()
        remote_pool = remote.pool_state()
    finally:
        remote_samples = remote.stop()
        local_samples = local.stop()
        conn.close()
    assert not remote.lost
    assert len(remote_samples) >= 4 and len(local_samples) >= 4
    # Link speeds: the sampler runs inside the namespace (ip netns exec mounts its
    # /sys); the local collector enters only the network namespace, where /sys
    # still shows the root namespace's links, and finds no speed for the bridge.
    assert remote.capacity["br0"] > 0
    assert all(remote.capacity[iface] == speed for iface, speed in local.capacity.items())
    skipped = {"t", "httperf_cpu_pct", "httperf_fds"}
    for name in (f.name for f in dataclasses.fields(Sample) if f.name not in skipped):
        filled_remote = {getattr(s, name) is None for s in remote_samples}
        filled_local = {getattr(s, name) is None for s in local_samples}
        assert filled_remote == filled_local, name
    last_remote, last_local = remote_samples[-1], local_samples[-1]
    assert set(last_remote.cpu) == set(last_local.cpu)
    assert set(last_remote.net_bps) == set(last_local.net_bps) >= {"lo", "br0", "port0"}
    assert set(last_remote.disk_util_pct) == set(last_local.disk_util_pct)
    assert last_remote.httpd_processes == last_local.httpd_processes > 1
    assert abs(last_remote.mem_available_pct - last_local.mem_available_pct) < 3
    assert abs(last_remote.loadavg1 - last_local.loadavg1) < 1.0
    # The same traffic over the server's bridge, seen from both sides.
    remote_bytes, local_bytes = _sent_bytes(remote_samples, "br0"), _sent_bytes(local_samples, "br0")
    assert remote_bytes > 40 * 100
    assert abs(remote_bytes - local_bytes) < 0.3 * local_bytes, (remote_bytes, local_bytes)
    # The httpd tree's CPU: /proc sums on the host equal psutil's here.
    assert remote_cpu is not None and local_cpu is not None
    assert abs(remote_cpu - local_cpu) < 0.1, (remote_cpu, local_cpu)
    assert remote_pool is not None and remote_pool[0] == last_local.httpd_processes - 1
    assert wait_for(no_sampler_left(pid), 10)


def test_a_lost_connection_ends_the_stream_and_says_so(remote_sandbox):  # noqa: F811
    topo, run = remote_sandbox
    conn = SshConnection(HostSpec(topo.server.addr, "root"), options=topo.ssh_options(), identity=str(topo.user_key))
    conn.connect()
    pid = run.sandbox.running_pid()
    remote = RemoteMetricsCollector(conn, remote_pid=pid, interval=INTERVAL, port=8080,
                                    max_samples=40)
    try:
        remote.prime()
        remote.start()
        time.sleep(1.2)
        subprocess.run([*conn.base_argv(), "-O", "exit", "--", conn.spec.destination], capture_output=True, timeout=10)
        remote.join(timeout=15)
        assert not remote.is_alive()
        assert remote.lost
        assert len(remote.samples) >= 1
    finally:
        remote.stop()
        conn.close()
    assert wait_for(no_sampler_left(pid), 10)
