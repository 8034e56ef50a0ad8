"""The tuner's advice is advice that `lint` and `fix` keep.

A real session whose winner brings lint P102 (KeepAlive Off): prefork with
a pool of 64 workers and sessions of five requests at 100 sessions/s, where
each kept-alive session holds a worker through its think times (about 0.8 s
each, so some 80 workers would be needed) and KeepAlive Off frees the worker
between requests. Only KeepAlive is searched; every other dimension is fixed
at the sandbox's own value, except the pool, fixed at 64.

The winner's gain is measured (interleaved replicates); KeepAlive being its
only change, that gain is the change's own effect. The drop-in then carries
the suppression comment with the figure, `lint` of the tuned tree adds no
finding at the default --fail-on that the start's tree lacked, and `fix`
of the tuned tree leaves the recommended line alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from test_bench_support import SandboxRun, cli, require, two_cores

pytestmark = [pytest.mark.load, pytest.mark.httpd]

# The sandbox's own values (tune --dry-run: "starts at"), and a pool of 64.
SPACE = """
[MaxRequestWorkers]
value = 64
[StartServers]
value = 5
[MinSpareServers]
value = 5
[MaxSpareServers]
value = 10
[MaxConnectionsPerChild]
value = 0
[KeepAliveTimeout]
value = 5000
[MaxKeepAliveRequests]
value = 100
[EnableSendfile]
value = "Off"
[EnableMMAP]
value = "On"
[HostnameLookups]
value = "Off"
[ListenBacklog]
value = 511
"""


def _lint_findings(main: Path, cwd: Path) -> tuple[int, set[tuple[str, str]]]:
    result = cli("lint", "--format", "json", "--no-cache", "--isolated", str(main), check=False, cwd=cwd)
    assert result.returncode in (0, 1), result.stderr
    found = json.loads(result.stdout)
    findings = found["findings"] if isinstance(found, dict) else found
    at_fail_on = {(f["code"], f["message"]) for f in findings if f["severity"] in ("warning", "error")}
    return result.returncode, at_fail_on


def test_a_winner_that_brings_p102_keeps_its_measured_reason_and_lint_and_fix_agree(tmp_path):
    require("apache2", "httperf")
    two_cores()
    space = tmp_path / "space.toml"
    space.write_text(SPACE)
    # The premise is a measurement: KeepAlive Off's gain beyond noise in three
    # replicates a side. On a host whose speed swings within minutes (a CI run
    # of 2026-12-08 measured it at x0.78 to x2.01) the session rightly keeps
    # KeepAlive On and says why; then a second session must show the gain.
    for attempt in (1, 2):
        report = tmp_path / f"report-{attempt}"
        with SandboxRun(mpm="prefork") as run:
            result = cli("tune", "--workdir", str(run.dir), "--report", str(report), "--space", str(space),
                         "--objective", "throughput", "--rate", "100", "--duration", "2", "--budget", "3",
                         "--gain-replicates", "3", "--retries", "2", "--yes", check=False,
                         cwd=tmp_path)
            assert result.returncode == 0, result.stderr[-3000:]
            run.assert_stock_restored()
            config = run.sandbox.config_path
            data = json.loads((report / "report.json").read_text())
            kept = {c["directive"]: c["value"] for c in data["recommendation"]["changes"]}.get("KeepAlive")
            if kept == "Off" or attempt == 2:
                _check_report(report, config, result.stdout, tmp_path)
                return
            assert any("KeepAlive stays On" in note and "not beyond noise" in note for note in data["notes"]), \
                data["notes"]


def _check_report(report: Path, config: Path, stdout: str, tmp_path: Path) -> None:
    data = json.loads((report / "report.json").read_text())
    changes = {c["directive"]: c["value"] for c in data["recommendation"]["changes"]}
    print(stdout[-3000:])
    assert changes.get("KeepAlive") == "Off", (changes, data["notes"])
    gain = data["gain"]
    assert gain["low"] > 1.0, gain  # KeepAlive Off measured a gain beyond noise

    include = (report / "recommended.conf").read_text()
    lines = include.splitlines()
    at = lines.index("KeepAlive Off")
    comment = lines[at - 1]
    assert re.match(r"# apache-advisor: disable=P102 -- measured ×[\d.]+ \(95 % CI ×[\d.]+ to ×[\d.]+\)", comment), \
        include
    assert "almeida-sessions" in comment and str(report) in comment

    # lint of the tuned tree: nothing at --fail-on warning that the start lacked.
    # The admin's tree is the sandbox's less instrument.conf: that file is the
    # tool's own (one more worker for its status connection), which the tuner
    # reads the tree without and no admin's tree has.
    admin = tmp_path / "admin.conf"
    admin.write_text("".join(line for line in config.read_text().splitlines(keepends=True)
                             if "instrument.conf" not in line))
    start_main = tmp_path / "start.conf"
    start_main.write_text(f'Include "{admin}"\n')
    tuned_main = tmp_path / "tuned.conf"
    tuned_main.write_text(f'Include "{admin}"\nInclude "{report / "recommended.conf"}"\n')
    start_exit, start_found = _lint_findings(start_main, tmp_path)
    tuned_exit, tuned_found = _lint_findings(tuned_main, tmp_path)
    assert tuned_found - start_found == set(), tuned_found - start_found
    assert tuned_exit <= start_exit
    # Without the comment, lint would have flagged the line: the test can fail.
    bare = tmp_path / "bare.conf"
    bare.write_text(include.replace(comment + "\n", ""))
    bare_main = tmp_path / "bare-main.conf"
    bare_main.write_text(f'Include "{admin}"\nInclude "{bare}"\n')
    _, bare_found = _lint_findings(bare_main, tmp_path)
    assert any(code == "P102" for code, _ in bare_found - start_found)
    # The report's own comparison says the same.
    comparison = data["lint_comparison"]
    added = [f for f in comparison["added"] if f["code"] == "P102"]
    assert added and all(f["suppressed"] and "measured" in f["reason"] for f in added)

    # fix of the tuned tree changes nothing the session recommended.
    fixed = cli("fix", "--isolated", "--check-cmd", "true", str(tuned_main), check=False, cwd=tmp_path)
    assert fixed.returncode in (0, 1), fixed.stderr
    edited = [line[4:] for line in fixed.stdout.splitlines() if line.startswith(("--- ", "+++ "))]
    assert not any(name.endswith("recommended.conf") for name in edited), fixed.stdout
    assert not any(line.startswith("+") and "KeepAlive" in line for line in fixed.stdout.splitlines()), fixed.stdout
