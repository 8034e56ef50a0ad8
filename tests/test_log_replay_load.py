"""`--workload log:PATH` against the real sandbox (issue 15): a replayed log is a
valid trial whose reply mix is the log's, and tune runs on it end to end.

Real prefork apache2 on core 0, real httperf on core 1; one short trial and
one tiny tune session, both bounded by the CLI's timeout.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_bench_support import SandboxRun, cli, require, two_cores
from test_log_replay import write_known_log

# The trial asserts a valid run: it takes the host alone. The tune session
# at a fixed offered rate asserts a path and shares the host.
pytestmark = [pytest.mark.httpd]


def _log(tmp_path: Path):
    """36 sessions of 3 bursts (a page and 3 objects), 1 s of think time:
    each session lasts about 2 s of think, so a 3 s trial is short."""
    log = tmp_path / "access.log"
    known = write_known_log(log, clients=12, sessions_each=3, bursts=3, objects=3, think=1)
    sizes = [size for _uri, size in known.requests]
    return log, known, sum(sizes) / len(sizes)


@pytest.mark.load
def test_a_replayed_log_is_a_valid_trial_with_the_logs_reply_mix(tmp_path):
    require("apache2", "httperf")
    two_cores()
    log, known, mean_bytes = _log(tmp_path)
    with SandboxRun(mpm="prefork") as run:
        # 12 sessions/s for 3 s: the file's 36 sessions once each.
        result = run.bench("--workload", f"log:{log}", "--rate", "12", "--duration", "3", "--format", "json",
                           "--server-cpus", "0", "--client-cpus", "1")
        run.assert_stock_restored()
    documents = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(documents) == 1
    trial = documents[0]
    h = trial["httperf"]
    print(f"\nreplay: {h['replies']} replies, reply size {h['reply_size_b']}, log mean {mean_bytes:.0f} B, "
          f"errors {trial['errors']}, verdict {trial['verdict']['label']}, invalid {trial['invalid_reasons']}")
    # The summary came before the trial, without an address.
    assert "sessions: 36" in result.stderr and "requests per session: mean 12.00, p95 12" in result.stderr
    assert "192.0.2." not in result.stderr + result.stdout and "198.51.100." not in result.stderr + result.stdout
    assert trial["valid"], trial["invalid_reasons"]
    assert trial["inputs"]["session_log"].endswith("replay.sesslog")
    assert h["replies"] == 36 * 12 and trial["errors"]["total"] == 0
    assert h["status"].get("2xx") == 36 * 12
    content = h["reply_size_b"]["content"]
    assert abs(content - mean_bytes) <= 0.10 * mean_bytes, (content, mean_bytes)
    assert trial["meets_slo"], trial["slo_failures"]


def test_tune_runs_end_to_end_on_a_replayed_log(tmp_path):
    require("apache2", "httperf")
    two_cores()
    log, _known, _mean = _log(tmp_path)
    report = tmp_path / "report"
    space = tmp_path / "space.toml"
    space.write_text('[KeepAlive]\nvalue = "On"\n')
    with SandboxRun(mpm="prefork") as run:
        result = cli("tune", "--workdir", str(run.dir), "--report", str(report), "--workload", f"log:{log}",
                     "--space", str(space), "--budget", "2", "--objective", "throughput", "--speedup", "100",
                     "--duration", "2", "--gain-replicates", "0", "--retries", "2", "--warmup", "0", "--yes",
                     "--server-cpus", "0", "--client-cpus", "1", check=False)
        run.assert_stock_restored()
    assert result.returncode in (0, 1), result.stderr
    if result.returncode == 1:  # stopped by a disturbed trial: said so, and still reported
        assert "stopped early" in result.stderr
    assert "sessions: 36" in result.stdout and "the replay covers" in result.stdout
    journal = [json.loads(line) for line in (report / "journal.jsonl").read_text().splitlines()[1:]]
    assert journal and journal[0]["origin"] == "start"
    first = journal[0]["details"]
    assert first["httperf"]["replies"] > 0
    data = json.loads((report / "report.json").read_text())
    assert data["facts"]["workload"].startswith("log:access.log")
    assert (report / "recommended.conf").exists()
