"""A session from a worker-MPM sandbox tries all three MPMs (issue 28, done means).

The default search's first points are the start, the start with lint's
fixes (the evidence point), then the evidence point under each other MPM,
before the Latin-hypercube design (which does not stratify a categorical
dimension): a budget of four tries prefork, worker and event whatever the
seed (three when the evidence point is the start). The candidate lint judges each point against the tree as the session
first read it, not as the last switch left it on disk. Each trial's MPM is the
one the server itself reported (mod_status ServerMPM), and the session ends
on worker with its files as they were. No rate is asserted: 30
connections/s at a fixed rate only reach each path.
"""

from __future__ import annotations

import json

import pytest

from test_bench_support import CLI_TIMEOUT, SandboxRun, cli, require
from test_tune_mpm_switch import M, MpmWatch, check_trials_ran_their_mpm, server_mpm

pytestmark = [pytest.mark.httpd]

FIXED = ("--objective", "throughput", "--rate", "30", "--duration", "1", "--warmup", "0", "--gain-replicates",
         "0", "--ablation-replicates", "0", "--yes")


def test_a_worker_sandbox_session_tries_prefork_worker_and_event(tmp_path):
    require("apache2", "httperf")
    source = tmp_path / "source.conf"
    source.write_text(f"LoadModule mpm_worker_module {M}/mod_mpm_worker.so\nStartServers 1\n"
                      "ServerLimit 4\nThreadsPerChild 10\nMaxRequestWorkers 40\n")
    report = tmp_path / "report"
    with SandboxRun(mpm="worker", source_config=str(source)) as run:
        conf = run.sandbox.conf_dir
        files = {p: p.read_bytes() for p in (conf / "httpd.conf", conf / "site.conf")}
        with MpmWatch(run.state.status_url) as watch:
            result = cli("tune", "--workdir", str(run.dir), "--report", str(report), "--allow-mpm-switch",
                         "--workload", "1k", "--budget", "4", *FIXED, check=False, timeout=CLI_TIMEOUT)
        assert result.returncode == 0, result.stderr[-2000:]
        assert "MPM: worker | prefork | event" in result.stdout or "MPM: prefork | worker | event" in result.stdout
        assert check_trials_ran_their_mpm(report) == {"prefork", "worker", "event"}
        assert set(watch.seen) == {"prefork", "worker", "event"} and watch.seen[0] == watch.seen[-1] == "worker"
        run.assert_stock_restored()
        for path, data in files.items():
            assert path.read_bytes() == data, f"{path.name} not restored"
        assert server_mpm(run.state.status_url) == "worker"
        assert json.loads(run.sandbox.state_path.read_text())["mpm"] == "worker"
