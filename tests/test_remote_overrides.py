"""Issue 27 over SSH: an overridden `--set` is refused before any load on a
server in the test network's server namespace, reached only through ssh
(its tree copied here by its own httpd's DUMP_INCLUDES), and a remote
trial carries the pool check that a local one does."""

from __future__ import annotations

import json

import pytest

from advisor.tuner.staging.sandbox import INSTRUMENT_HEADER
from conftest import assert_one_line_error
from test_bench_support import SandboxRun, cli, require, two_cores

pytestmark = [pytest.mark.netns, pytest.mark.httpd]

PORT = 8080


def _remote(topo, run, config=None) -> list[str]:
    args = ["--host", f"root@{topo.server.addr}", "--allow-host", topo.server.addr, "--identity", str(topo.user_key)]
    for option in topo.ssh_options():
        args += ["--ssh-option", option]
    return args + ["--config", str(config or run.sandbox.config_path), "--managed", str(run.sandbox.managed_path),
                   "--reload-cmd", f"{run.state.binary} -f {run.sandbox.config_path} -k graceful",
                   "--url", f"http://{topo.server.addr}:{PORT}/index.html"]


def _sandbox(topo, **kwargs) -> SandboxRun:
    return SandboxRun(mpm="prefork", netns=topo.server.netns, host=topo.server.addr, port=PORT,
                      status_allow=["127.0.0.1", topo.root_addr], **kwargs)


def _accesses(run: SandboxRun) -> int:
    from advisor.tuner.measure.status import fetch_status

    snap = fetch_status(run.state.status_url, timeout=5.0)
    assert snap is not None and "Total Accesses" in snap.fields
    return int(snap.fields["Total Accesses"])


def test_bench_over_ssh_refuses_an_overridden_set_before_any_load(netns_topology, tmp_path):
    require("apache2")
    topo = netns_topology
    host = f"root@{topo.server.addr}"
    with _sandbox(topo, extended_status=True) as run:
        lines = run.sandbox.instrument_path.read_text().splitlines()
        line = next(i for i, text in enumerate(lines, 1) if text.startswith("MaxRequestWorkers"))
        before = _accesses(run)
        result = cli("bench", *_remote(topo, run), "--set", "MaxRequestWorkers 2", "--workload", "slow",
                     "--sleep-ms", "300", "--rate", "20", "--duration", "3", check=False, timeout=120)
        assert_one_line_error(result, f"{host}:{run.sandbox.instrument_path}:{line}: MaxRequestWorkers ",
                              "leave MaxRequestWorkers out")
        assert _accesses(run) - before < 10  # a 3 s trial at 20/s would have sent 60
        run.assert_stock_restored()
        # A KeepAliveTimeout of the virtual host the URL reaches, in the host's own tree.
        config = tmp_path / "httpd.conf"  # the namespaces share this file system
        config.write_text(f"<VirtualHost {topo.server.addr}:{PORT}>\n    KeepAliveTimeout 1\n</VirtualHost>\n"
                          + run.sandbox.config_path.read_text())
        result = cli("bench", *_remote(topo, run, config), "--set", "KeepAliveTimeout 7", "--rate", "50",
                     "--duration", "1", "--warmup", "0", check=False, timeout=120)
        assert_one_line_error(result, f"{host}:{config}:2: KeepAliveTimeout 1 in the <VirtualHost "
                                      f"{topo.server.addr}:{PORT}>")
        assert _accesses(run) - before < 20
        run.assert_stock_restored()


@pytest.mark.load
def test_a_remote_trial_has_a_pool_check_that_can_fail(netns_topology):
    """Prefork with a pool of 4 on a 200 ms endpoint at 40 requests/s: the
    pool runs out, and the collector's kept-alive status connection holds one
    of the four workers. The remote trial's pool check sees both, as a local
    one does, and the trial is invalid."""
    require("apache2", "httperf")
    two_cores()
    topo = netns_topology
    with _sandbox(topo) as run:
        run.sandbox.instrument_path.write_text(INSTRUMENT_HEADER)  # an admin's server: no compensation
        result = cli("bench", *_remote(topo, run), "--set", "MaxRequestWorkers 4", "--workload", "slow",
                     "--sleep-ms", "200", "--rate", "40", "--duration", "3", "--warmup", "0",
                     "--client-cpus", "1", "--format", "json", check=False, timeout=180)
        assert result.returncode == 0, result.stderr
        run.assert_stock_restored()
    trial = next(json.loads(line) for line in result.stdout.splitlines() if line.startswith('{"kind": "trial"'))
    pool = trial["pool"]
    print(f"\nremote pool check: {pool}; verdict {trial['verdict']['label']} at {trial['reply_rate']} replies/s")
    assert pool is not None, "a remote trial has a pool check"
    assert pool["configured"] == 4 and pool["collector_held"] == 1, pool
    assert trial["verdict"]["label"] == "worker pool exhausted", trial["verdict"]
    assert pool["full_samples"] > 0
    assert any("collector's status connection held 1 of the 4 workers" in r for r in pool["reasons"]), pool
    assert not trial["valid"]


def test_tune_over_ssh_leaves_the_overridden_dimension_out_with_the_hosts_line(netns_topology, tmp_path):
    require("apache2")
    topo = netns_topology
    with _sandbox(topo) as run:
        lines = run.sandbox.instrument_path.read_text().splitlines()
        line = next(i for i, text in enumerate(lines, 1) if text.startswith("MaxRequestWorkers"))
        result = cli("tune", *_remote(topo, run), "--dry-run", "--workload", "1k", "--format", "json",
                     "--report", str(tmp_path / "r"), check=False, timeout=120)
        assert result.returncode == 0, result.stderr
        plan = json.loads(result.stdout)
        note = f"MaxRequestWorkers left out: root@{topo.server.addr}:{run.sandbox.instrument_path}:{line}: "
        assert any(n.startswith(note) for n in plan["notes"]), plan["notes"]
        assert {d["name"]: d["fixed"] for d in plan["dimensions"]}["MaxRequestWorkers"]
        run.assert_stock_restored()
