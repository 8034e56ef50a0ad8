"""`staging up --php-fpm` (issue 30) on real apache2, php-fpm and httperf.

The sandbox's httpd hands /work.php to a php-fpm pool of its own; lint and
capacity read that pool from its php-fpm.conf and measure its children;
bench reads the pool's status socket and names the pool as the bottleneck
when 50 httpd workers feed 2 php-fpm children.
"""

from __future__ import annotations

import json
import shutil
import urllib.request

import psutil
import pytest

from advisor.tuner.measure.fpm_status import read_status
from advisor.tuner.staging.sandbox import Sandbox
from test_bench_support import SandboxRun, cli, require, work_dir

# 2 children of 25 threads: 50 httpd workers.
FIFTY_WORKERS = ("LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so\n"
                 "ServerLimit 2\nThreadsPerChild 25\nMaxRequestWorkers 50\n")


def _require_php_fpm() -> None:
    require("apache2", "httperf")
    from advisor.tuner.staging.phpfpm import BINARY_GLOBS

    import glob

    if not any(glob.glob(pattern) for pattern in BINARY_GLOBS):
        require("php-fpm8.2")  # fails under CI, skips on a developer's machine


@pytest.fixture
def fifty_workers(tmp_path):
    conf = tmp_path / "fifty.conf"
    conf.write_text(FIFTY_WORKERS)
    return str(conf)


def _pool_processes(pool: str) -> list[int]:
    return [p.pid for p in psutil.process_iter(["cmdline"])
            if any(f"pool {pool}" in arg for arg in (p.info["cmdline"] or []))]


def test_the_sandbox_pool_serves_php_and_is_read_as_part_of_the_config(fifty_workers):
    _require_php_fpm()
    with SandboxRun(source_config=fifty_workers, php_fpm_children=2) as run:
        fpm = run.state.php_fpm
        with urllib.request.urlopen(f"{run.state.base_url}/work.php?n=100&wait_ms=1", timeout=10) as reply:
            assert reply.status == 200 and reply.read().startswith(b"n=100 wait_ms=1 ")
        status = read_status(fpm["status_socket"])
        assert status is not None and status.total == 2 and status.accepted >= 1
        # lint and capacity find the pool behind the sandbox's SetHandler, by its TCP address.
        capacity = cli("capacity", run.state.config, "--fpm-config", fpm["config"], "--ram", "4G",
                       "--format", "json")
        [pool] = json.loads(capacity.stdout)["memory"]["fpm_pools"]
        assert pool["name"] == fpm["pool"] and pool["settings"]["pm.max_children"]["value"] == "2"
        # Its children run: their PSS is measured, as --reserve-process does.
        assert pool["child_source"] == "measured: mean PSS of 2 running children"
        assert 1 << 20 < pool["child_bytes"] < 512 << 20
        linted = cli("lint", "--isolated", "--no-cache", "--fail-on", "never", "--format", "json",
                     "--select", "C205,C206,C207,C208", "--ram", "4G", "--fpm-config", fpm["config"],
                     run.state.config)
        assert json.loads(linted.stdout) == []  # 50 workers < 2 children + a backlog of 511
        assert len(_pool_processes(fpm["pool"])) >= 2
    assert _pool_processes(fpm["pool"]) == []  # staging down ended the pool too


def test_fpm_children_needs_php_fpm():
    sandbox_dir = work_dir()
    try:
        result = cli("staging", "up", "--workdir", str(sandbox_dir), "--fpm-children", "2", check=False)
        assert result.returncode == 2 and "--fpm-children without --php-fpm" in result.stderr
        assert Sandbox(sandbox_dir).running_pid() is None
    finally:
        shutil.rmtree(sandbox_dir, ignore_errors=True)


@pytest.mark.load
def test_two_children_behind_fifty_workers_are_found_exhausted(fifty_workers):
    """60 requests/s of 100 ms each need 6 children; 2 serve about 20/s and
    the other requests wait in php-fpm's listen queue until httperf gives up."""
    _require_php_fpm()
    with SandboxRun(source_config=fifty_workers, php_fpm_children=2) as run:
        [trial] = run.bench_json("--workload", "php", "--cgi-n", "2000", "--sleep-ms", "100", "--rate", "60",
                                 "--duration", "4", "--warmup", "0", "--timeout", "4")
        # What capacity predicts from the two pools' files, with the script's 100 ms.
        predicted = json.loads(cli("capacity", run.state.config, "--fpm-config", run.state.php_fpm["config"],
                                   "--ram", "4G", "--no-measure", "--service-time", "0.1", "--rate", "60",
                                   "--format", "json").stdout)
        pool_name = run.state.php_fpm["pool"]
    verdict = trial["verdict"]
    assert verdict["label"] == "php-fpm pool exhausted", verdict
    fpm = verdict["evidence"]["php_fpm"]
    assert fpm["children"] == 2 and fpm["active_max"] == 2 and fpm["idle_min"] == 0
    # 50 workers, 2 of them with a php-fpm child: the rest queue at php-fpm.
    assert 20 <= fpm["listen_queue_max"] <= 48
    assert fpm["client_timeouts"] + fpm["status_5xx"] > 0
    assert fpm["exhausted_share"] >= 0.5
    assert trial["reply_rate"] < 30  # 2 children x 10 replies/s each, not the 60 offered
    # capacity predicted it from the two pools: 2 children of 100 ms behind
    # 50 workers serve c / x = 20/s, within 15 % of what bench measured.
    [(name, row)] = predicted["fpm_predictions"]
    assert name == pool_name and row["children"] == 2 and row["capacity"] == 50
    # Held out: the pool's own throughput while exhausted (its status page's
    # accepted connections per second). The clients saw fewer replies: those
    # that timed out still had PHP run for them.
    measured = fpm["accepted_per_s"]
    assert abs(row["throughput"] - measured) <= 0.15 * measured, (row, measured, trial["served_rate"])
    assert trial["served_rate"] <= measured * 1.15


def test_the_verdict_takes_the_pool_only_when_the_readings_show_it():
    from advisor.tuner.measure.fpm_status import FpmStatus
    from advisor.tuner.trial.verdict import FPM_EXHAUSTED, Verdict, fpm_verdict

    def reading(t, queue, idle):
        return FpmStatus(t, queue, queue, 511, idle, 2 - idle, 2, 2, 0, 10)

    busy = [reading(0.5, 0, 1), reading(1.0, 30, 0), reading(1.5, 48, 0), reading(2.0, 48, 0)]
    workers = Verdict("worker pool exhausted", {"busy": 50}, 0.8)
    found = fpm_verdict(workers, busy, timeouts=3, status_5xx=1, replies=40)
    assert found.label == FPM_EXHAUSTED and found.onset_s == 1.0
    assert found.consequences[0] == {"label": "worker pool exhausted", "onset_s": 0.8}
    assert found.evidence["php_fpm"]["listen_queue_max"] == 48 and found.evidence["busy"] == 50
    calm = [reading(t, 0, 1) for t in (0.5, 1.0, 1.5, 2.0)]
    assert fpm_verdict(workers, calm, timeouts=0, status_5xx=0, replies=40).label == "worker pool exhausted"
    client = Verdict("client-bound", {}, None)
    assert fpm_verdict(client, busy, timeouts=3, status_5xx=1, replies=40).label == "client-bound"
