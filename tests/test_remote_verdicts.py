"""bench over SSH names the bottleneck a scenario injects, as bench on this
machine does (issue 14).

Each injected scenario runs against a sandbox in the test network's server
namespace, reached only through `--host` (ssh for the config, the reload,
processes, the cgroup and the metrics sampler; HTTP for the load and
mod_status), server on core 0, httperf on core 1. The verdict must be the
one the scenario injects. The same bottlenecks on loopback, read by the
local collector, are test_bench_findings.py's (the pool held by a slow
endpoint, churn from MaxConnectionsPerChild, a CPU-bound CGI): these tests
once ran each scenario on loopback as well, about 40 s of CI's load block
spent on what those tests already hold.
"""

from __future__ import annotations

import json

import pytest

from advisor.tuner.staging.sandbox import INSTRUMENT_HEADER
from test_bench_support import SandboxRun, cli, require, require_cgroup_cpu, samplers_watching, two_cores

pytestmark = [pytest.mark.netns, pytest.mark.load, pytest.mark.httpd]

PORT = 8080

# A fifth of a core runs about 20 of these CGI requests a second (20.4-23.5
# here on 2026-12-06, 22.8-24.0 over the bridge): at 30/s the cgroup is
# throttled in nearly every period (99.6-100 %) and the verdict is the
# server's CPU. (Perl's start-up is most of a small request: with 1,000
# numbers, a fifth of a core once ran 16 a second here and later about 40,
# when 30/s sat at the quota and failed CI; with 100,000, 25 a second, and
# 80-88 % of the periods throttled failed it again.) (At 100/s, ten times
# what fits, the queue took 7-11 s to drain after each trial and the remote
# run served no reply in its window.) (1 KB files at 3,000/s, bench's other quota
# scenario, is not used here: over the bridge that overload overflows the
# accept queue and connections stall in the network for seconds, workers
# held in R and C with the CPU idle: a property of the path, not of the
# server.)
QUOTA = dict(up={"cpu_quota_pct": 20}, args=["--workload", "cgi", "--cgi-n", "150000", "--rate", "30",
                                             "--duration", "4", "--timeout", "5"])

SCENARIOS = {
    # Two workers held 300 ms each cannot serve 10/s: connections wait for accept().
    # KeepAlive Off (one request per connection either way): on prefork the
    # collector's kept-alive status connection would hold one of the two, and
    # the pool check (remote too, issue 27) would rightly call the trial
    # invalid; ServerLimit stays as the server started (a graceful restart
    # would not lower it, which the check also reports).
    "worker pool exhausted": dict(
        up={}, args=["--workload", "slow", "--sleep-ms", "300", "--rate", "10", "--duration", "3", "--timeout", "10",
                     "--set", "MaxRequestWorkers 2", "--set", "KeepAlive Off", "--set", "StartServers 2",
                     "--set", "MinSpareServers 1", "--set", "MaxSpareServers 2"]),
    # Every child retires after 5 connections: at 400/s the parent forks 80 a second.
    "process churn": dict(
        up={}, args=["--workload", "1k", "--rate", "400", "--duration", "3",
                     "--set", "MaxConnectionsPerChild 5", "--set", "StartServers 4", "--set", "MinSpareServers 4",
                     "--set", "MaxSpareServers 8"]),
}


def _trial(result) -> dict:
    docs = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return next(d for d in docs if d.get("kind") == "trial")


def _remote(topo, scenario: dict) -> dict:
    with SandboxRun(mpm="prefork", netns=topo.server.netns, host=topo.server.addr, port=PORT,
                    status_allow=["127.0.0.1", topo.root_addr], **scenario["up"]) as run:
        # A server on another host has no sandbox instrument: without this the
        # sandbox's compensation for the collector's worker (the stock pool's
        # size plus one) would override the scenario's MaxRequestWorkers.
        run.sandbox.instrument_path.write_text(INSTRUMENT_HEADER)
        ssh = ["--host", f"root@{topo.server.addr}", "--allow-host", topo.server.addr,
               "--identity", str(topo.user_key)]
        for option in topo.ssh_options():
            ssh += ["--ssh-option", option]
        result = cli("bench", *ssh, "--config", str(run.sandbox.config_path),
                     "--managed", str(run.sandbox.managed_path),
                     "--reload-cmd", f"{run.state.binary} -f {run.sandbox.config_path} -k graceful",
                     "--url", f"http://{topo.server.addr}:{PORT}/index.html",
                     "--format", "json", "--client-cpus", "1", *scenario["args"])
        run.assert_stock_restored()
    return _trial(result)


def _brief(trial: dict) -> str:
    v = trial["verdict"]
    warm = trial.get("warmup") or {}
    return (f"{v['label']} at {trial['reply_rate']} replies/s of {trial['inputs']['rate']}/s, evidence {v['evidence']}"
            f" (quiet {trial.get('quiet_wait_s')} s, warm-up {warm.get('seconds')} s ({warm.get('stopped_by')})"
            f" + drain {warm.get('drain_s')} s, run {trial.get('wall_s')} s)")


@pytest.mark.parametrize("label", list(SCENARIOS))
def test_remote_bench_names_the_same_bottleneck(netns_topology, label):
    require("apache2", "httperf")
    two_cores()
    scenario = SCENARIOS[label]
    remote = _remote(netns_topology, scenario)
    print(f"\n{label}\n  remote: {_brief(remote)}")
    assert remote["verdict"]["label"] == label, _brief(remote)
    assert remote["valid"], remote["invalid_reasons"]
    if label == "worker pool exhausted":  # the remote trial's pool check ran, and found the pool it claims
        assert remote["pool"] is not None and remote["pool"]["configured"] == 2 and not remote["pool"]["reasons"]
    evidence = remote["verdict"]["evidence"]
    if label == "worker pool exhausted":
        assert evidence["accept_queue_max"] > 0  # read from the host's /proc
    if label == "process churn":
        assert evidence["children_retired"] >= 10


def test_the_hosts_cpu_quota_is_found_and_names_the_same_bottleneck(netns_topology):
    require("apache2", "httperf")
    two_cores()
    require_cgroup_cpu()
    remote = _remote(netns_topology, QUOTA)
    print(f"\nquota\n  remote: {_brief(remote)}")
    assert remote["verdict"]["label"] == "server CPU", _brief(remote)
    # Found on the host's cgroup of the parent httpd, with its period; throttling read there.
    assert remote["inputs"]["server_cpu_quota_pct"] == 20 and remote["inputs"]["server_cpu_period_ms"] == 10
    cpu = [s["httpd_cpu_pct"] for s in remote["metrics"][1:-1] if s["httpd_cpu_pct"] is not None]
    throttled = [s["cpu_throttled_pct"] for s in remote["metrics"][1:-1] if s["cpu_throttled_pct"] is not None]
    assert cpu and sum(cpu) / len(cpu) <= 21, cpu  # the quota held
    assert throttled and sum(throttled) / len(throttled) > 90, throttled


def test_a_connection_lost_mid_trial_makes_it_invalid_and_the_config_is_restored(netns_topology):
    """The master connection dies while the sampler streams: the trial says so
    and is invalid, and the restore reconnects to put the include back."""
    import subprocess
    import sys
    import time

    from advisor.tuner.transport.ssh import HostSpec, SshConnection

    require("apache2", "httperf")
    two_cores()
    topo = netns_topology
    with SandboxRun(mpm="prefork", netns=topo.server.netns, host=topo.server.addr, port=PORT,
                    status_allow=["127.0.0.1", topo.root_addr]) as run:
        run.sandbox.instrument_path.write_text(INSTRUMENT_HEADER)
        ssh = ["--host", f"root@{topo.server.addr}", "--allow-host", topo.server.addr,
               "--identity", str(topo.user_key)]
        for option in topo.ssh_options():
            ssh += ["--ssh-option", option]
        bench = subprocess.Popen(
            [sys.executable, "-m", "advisor", "bench", *ssh, "--config", str(run.sandbox.config_path),
             "--managed", str(run.sandbox.managed_path),
             "--reload-cmd", f"{run.state.binary} -f {run.sandbox.config_path} -k graceful",
             "--url", f"http://{topo.server.addr}:{PORT}/index.html", "--format", "json", "--client-cpus", "1",
             "--workload", "1k", "--rate", "100", "--duration", "5", "--warmup", "0",
             "--set", "KeepAliveTimeout 3"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # The sampler runs on the host (here: a process on this machine) once the window starts.
            deadline = time.monotonic() + 60
            httpd_pid = run.sandbox.running_pid()
            while not samplers_watching(httpd_pid):
                assert time.monotonic() < deadline and bench.poll() is None, "the trial never started sampling"
                time.sleep(0.2)
            time.sleep(2.0)
            # The same destination and options: the tool's own master, which ends every session on it.
            conn = SshConnection(HostSpec(topo.server.addr, "root"), options=topo.ssh_options(),
                                 identity=str(topo.user_key))
            subprocess.run([*conn.base_argv(), "-O", "exit", "--", conn.spec.destination], capture_output=True,
                           timeout=10)
            out, err = bench.communicate(timeout=120)
        finally:
            if bench.poll() is None:
                bench.kill()
        assert bench.returncode == 0, err[-2000:]
        trial = next(json.loads(line) for line in out.splitlines() if line.startswith("{"))
        assert not trial["valid"]
        assert any("SSH connection" in r and "lost mid-trial" in r for r in trial["invalid_reasons"]), trial
        run.assert_stock_restored()  # through a new connection
