"""The remote target over SSH: ManagedConfig unchanged applies, validates,
reloads and restores a staging httpd in the server namespace, and a run
killed with -9 has the remote include put back by the next run.

The sandbox httpd runs inside the test network's server namespace; the tool
reaches it only through ssh (files, config test, reload, processes) and HTTP
(health, mod_status). Light load only: no httperf here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor.errors import AdvisorError, ConfigError
from advisor.tuner.staging.managed_config import ManagedConfig
from advisor.tuner.staging.remote_target import RemoteTarget
from advisor.tuner.transport.ssh import HostSpec, SshConnection
from test_bench_support import SandboxRun, require

pytestmark = pytest.mark.netns


@pytest.fixture
def remote_sandbox(netns_topology):
    require("apache2")
    topo = netns_topology
    with SandboxRun(mpm="prefork", netns=topo.server.netns, host=topo.server.addr, port=8080,
                    status_allow=["127.0.0.1", topo.root_addr]) as run:
        yield topo, run


def target_args(topo, run, state_root) -> dict:
    """What `bench --host ...` would pass: everything as paths and commands on the host."""
    return dict(
        host=f"root@{topo.server.addr}", options=topo.ssh_options(), identity=str(topo.user_key),
        config=str(run.sandbox.config_path), managed=str(run.sandbox.managed_path),
        url=f"http://{topo.server.addr}:8080/index.html",
        reload_cmd=f"{run.state.binary} -f {run.sandbox.config_path} -k graceful",
        state_root=str(state_root))


def make_target(args: dict) -> RemoteTarget:
    conn = SshConnection(HostSpec.parse(args["host"]), options=args["options"], identity=args["identity"])
    return RemoteTarget(conn, args["config"], args["url"], reload_cmd=args["reload_cmd"], managed=args["managed"],
                        state_root=Path(args["state_root"]))


def test_apply_validate_reload_restore_over_ssh(remote_sandbox, tmp_path):
    topo, run = remote_sandbox
    target = make_target(target_args(topo, run, tmp_path / "state"))
    try:
        target.check_alive()
        parent = target.remote_server_pid()
        assert parent == run.sandbox.running_pid()  # found through ps on the host
        assert target.server_pid() is None  # nothing on this machine to measure as the server
        children_before = target.server_children()
        assert children_before
        generation = target.generation()
        with ManagedConfig(target) as managed:
            managed.apply(["KeepAliveTimeout 7", "MaxKeepAliveRequests 50"])
            text = run.sandbox.managed_path.read_text()
            assert "KeepAliveTimeout 7" in text and "MaxKeepAliveRequests 50" in text
            assert target.generation() > generation  # the server reloaded with it
            assert not children_before & target.server_children()  # a new generation of workers
            # The journal is on this machine, not beside the remote file.
            assert managed.journal_path.is_relative_to(tmp_path / "state")
            assert json.loads(managed.journal_path.read_text())["original"] == run.stock
            # A candidate httpd refuses: rolled back, the error names the host's file and line.
            with pytest.raises(ConfigError) as caught:
                managed.apply(["KeepAliveTimeout 8", "NoSuchDirective 1"])
            assert str(caught.value).startswith(f"root@{topo.server.addr}:{run.sandbox.managed_path}:4: ")
            assert "KeepAliveTimeout 7" in run.sandbox.managed_path.read_text()
        assert run.sandbox.managed_path.read_text() == run.stock
        assert not list((tmp_path / "state").rglob("*.journal"))
        target.check_alive()
        # A trial's collector for this target samples the host, for the host's httpd.
        collector = target.metrics_collector(interval=0.3, server_pid=None, port=8080, status_url=target.status_url,
                                             max_samples=3, cpu_quota=None)
        assert collector.remote_pid == parent
        collector.prime()
        collector.start()
        collector.join(timeout=10)
        samples = collector.stop()
        assert len(samples) == 3 and all(s.httpd_processes >= 2 and s.status_ok for s in samples)
    finally:
        target.conn.close()


def test_refused_reload_is_one_line_and_restored(remote_sandbox, tmp_path):
    topo, run = remote_sandbox
    args = target_args(topo, run, tmp_path / "state")
    args["reload_cmd"] = "echo 'graceful: no permission' >&2; exit 1"
    target = make_target(args)
    try:
        with pytest.raises(AdvisorError) as caught:
            with ManagedConfig(target) as managed:
                managed.apply(["KeepAliveTimeout 7"])
        assert "reload command refused on root@" in str(caught.value)
        assert "no permission" in str(caught.value) and "--reload-cmd" in str(caught.value)
        assert run.sandbox.managed_path.read_text() == run.stock
    finally:
        target.conn.close()


def test_config_without_the_managed_include_is_refused(remote_sandbox, tmp_path):
    topo, run = remote_sandbox
    args = target_args(topo, run, tmp_path / "state")
    args["managed"] = "/etc/apache2/elsewhere.conf"
    with pytest.raises(ConfigError) as caught:
        make_target(args)
    assert f"root@{topo.server.addr}:{run.sandbox.config_path}: the config does not include" in str(caught.value)
    args["config"] = "/nonexistent/httpd.conf"
    with pytest.raises(ConfigError) as caught:
        make_target(args)
    assert "config file not found" in str(caught.value)
    # A refused target leaves no master connection behind.
    assert not SshConnection(HostSpec.parse(args["host"]), options=args["options"],
                             identity=args["identity"]).master_alive()


TOOL = """
import json, sys, time
sys.path.insert(0, {tests!r})
from test_remote_target import make_target
from advisor.tuner.staging.managed_config import ManagedConfig
args = json.loads(sys.argv[1])
target = make_target(args)
with ManagedConfig(target) as managed:
    print(json.dumps({{"recovered": managed.recovered.applied if managed.recovered else None}}), flush=True)
    if sys.argv[2] == "apply":
        managed.apply(["KeepAliveTimeout 9"])
        print("applied", flush=True)
        time.sleep(60)  # killed here
target.conn.close()
"""


def test_kill_9_mid_run_is_restored_by_the_next_run(remote_sandbox, tmp_path):
    topo, run = remote_sandbox
    args = json.dumps(target_args(topo, run, tmp_path / "state"))
    script = TOOL.format(tests=os.path.dirname(__file__))
    tool = subprocess.Popen([sys.executable, "-c", script, args, "apply"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 30
        while "applied" not in lines and time.monotonic() < deadline and tool.poll() is None:
            lines.append(tool.stdout.readline().strip())
        assert "applied" in lines, (lines, tool.stderr.read() if tool.poll() is not None else "")
        assert "KeepAliveTimeout 9" in run.sandbox.managed_path.read_text()
        tool.send_signal(signal.SIGKILL)
        tool.wait(timeout=10)
    finally:
        if tool.poll() is None:
            tool.kill()
            tool.wait(timeout=10)
    # Killed: the candidate is still on the host, the journal on this machine.
    assert "KeepAliveTimeout 9" in run.sandbox.managed_path.read_text()
    assert list((tmp_path / "state").rglob("*.journal"))
    again = subprocess.run([sys.executable, "-c", script, args, "check"], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.splitlines()[0]) == {"recovered": ["KeepAliveTimeout 9"]}
    assert run.sandbox.managed_path.read_text() == run.stock
    assert not list((tmp_path / "state").rglob("*.journal"))
    # And the server runs the original again (the restore reloaded it).
    from advisor.tuner.measure.status import wait_healthy

    wait_healthy(f"http://{topo.server.addr}:8080/index.html", timeout=5)


def _kill_master(conn: SshConnection) -> None:
    """The master connection dies as if the network or the process failed (no clean exit)."""
    found = subprocess.run(["pgrep", "-f", f"{conn.control_path} \\[mux\\]"], capture_output=True, text=True)
    for pid in found.stdout.split():
        os.kill(int(pid), signal.SIGKILL)
    time.sleep(0.2)


def test_a_lost_connection_is_reopened_to_restore(remote_sandbox, tmp_path):
    topo, run = remote_sandbox
    target = make_target(target_args(topo, run, tmp_path / "state"))
    try:
        with ManagedConfig(target) as managed:
            managed.apply(["KeepAliveTimeout 6"])
            _kill_master(target.conn)
            assert not target.conn.master_alive()
        # The restore opened a new connection (the stale socket is replaced).
        assert run.sandbox.managed_path.read_text() == run.stock
        assert target.conn.master_alive()
    finally:
        target.conn.close()


def test_an_unreachable_host_keeps_the_journal_for_the_next_run(remote_sandbox, tmp_path):
    topo, run = remote_sandbox
    args = target_args(topo, run, tmp_path / "state")
    target = make_target(args)
    target.conn.connect_timeout_s = 2
    down = ["ip", "-n", topo.server.netns, "link", "set", "port0"]  # the root namespace's leg
    try:
        with pytest.raises(AdvisorError) as caught:
            with ManagedConfig(target) as managed:
                managed.apply(["KeepAliveTimeout 5"])
                _kill_master(target.conn)
                subprocess.run([*down, "down"], check=True, timeout=10)
        assert "host unreachable" in str(caught.value)
        assert "KeepAliveTimeout 5" in run.sandbox.managed_path.read_text()  # could not be restored...
        assert list((tmp_path / "state").rglob("*.journal"))  # ...so the journal stays
    finally:
        subprocess.run([*down, "up"], check=True, timeout=10)
        target.conn.close()
    time.sleep(0.5)  # the bridge port forwards again
    again = make_target(args)
    try:
        with ManagedConfig(again) as managed:
            assert managed.recovered is not None and managed.recovered.applied == ["KeepAliveTimeout 5"]
        assert run.sandbox.managed_path.read_text() == run.stock
        assert not list((tmp_path / "state").rglob("*.journal"))
    finally:
        again.conn.close()
