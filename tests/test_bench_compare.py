"""`bench --compare A B` and `--compare-quota`: the sides read, the bad input
refused in one line with nothing changed, and on a real sandbox an A/A
comparison that finds no difference and a halved CPU quota found slower.

The load tests keep to short probes (1 s, no warm-up on a pool that the
event MPM keeps), a wide knee tolerance and at most four rounds: each costs
about half a minute on an idle host.
"""

from __future__ import annotations

import json
import os

import pytest

from advisor.commands.bench_compare import side_lines
from advisor.errors import UsageError
from test_bench_support import SandboxRun, cli, one_error_line, require, require_cgroup_cpu, two_cores

# A workload whose cost is the server's CPU: the peak follows the quota.
CPU_BOUND = ["--workload", "mixed", "--sleep-ms", "0", "--cgi-n", "20000"]
SHORT = ["--duration", "1", "--warmup", "0", "--retries", "0", "--max-probes", "5", "--tolerance", "0.2",
         "--precision", "0.2"]


def test_a_side_is_a_file_a_list_or_the_config_as_it_is(tmp_path):
    include = tmp_path / "b.conf"
    include.write_text("# tuned\nKeepAlive Off\n\nMaxRequestWorkers \\\n  150\n")
    assert side_lines(str(include)) == (("KeepAlive Off", "MaxRequestWorkers 150"), str(include))
    assert side_lines("KeepAlive Off; MaxRequestWorkers 150\nTimeout 5")[0] == (
        "KeepAlive Off", "MaxRequestWorkers 150", "Timeout 5")
    assert side_lines("-") == ((), "the config as it is")
    assert side_lines("") == ((), "the config as it is")
    with pytest.raises(UsageError, match="no such include file"):
        side_lines(str(tmp_path / "missing.conf"))
    (tmp_path / "empty.conf").write_text("# nothing\n")
    with pytest.raises(UsageError, match="holds no directive"):
        side_lines(str(tmp_path / "empty.conf"))


@pytest.mark.parametrize("args, fragment", [
    (["--compare", "only-one"], "requires 2 arguments"),
    (["--compare", "-", "-", "--precision", "0"], "--precision must be above 0"),
    (["--compare", "-", "-", "--precision", "-0.1"], "--precision must be above 0"),
    (["--compare", "-", "-", "--max-rounds", "2"], "--max-rounds must be at least 3"),
    (["--compare", "-", "-", "--mode", "ramp", "--rates", "100,200"], "no --mode ramp or --rates"),
    (["--compare", "-", "-", "--rates", "100,200"], "no --mode ramp or --rates"),
    (["--compare-quota", "50", "2"], "--compare-quota 2 is out of range"),
    (["--fail-if-slower"], "--fail-if-slower needs --compare"),
])
def test_bad_options_are_one_line_before_any_server_is_touched(tmp_path, args, fragment):
    # The work directory holds no sandbox: these are refused before one is looked for.
    result = cli("bench", "--workdir", str(tmp_path), *args, check=False)
    line = one_error_line(result)
    assert fragment in line, line
    assert "Traceback" not in result.stdout


@pytest.mark.httpd
def test_a_side_httpd_refuses_and_a_quota_off_the_sandbox_change_nothing():
    require("apache2", "httperf")
    with SandboxRun(mpm="event") as run:
        refused = run.bench("--compare", "-", "KeepAlive Off; NoSuchDirective 1", "--seed", "1", check=False)
        line = one_error_line(refused)
        assert f"{run.sandbox.managed_path}:" in line and "NoSuchDirective" in line, line
        run.assert_stock_restored()
        # The sandbox as an existing server (its config and URL): no quota of ours to move.
        existing = cli("bench", "--config", str(run.state.config), "--url", run.state.base_url + "/",
                       "--managed", str(run.sandbox.managed_path), "--compare-quota", "50", "25", check=False)
        assert "needs the sandbox as the target" in one_error_line(existing)
        # A sandbox started without a quota has no group to move.
        unquoted = run.bench("--compare-quota", "50", "25", check=False)
        assert "started with a CPU quota" in one_error_line(unquoted)
        run.assert_stock_restored()


@pytest.mark.load
@pytest.mark.httpd
def test_a_config_against_itself_is_no_difference_and_a_third_of_the_cpu_is_slower():
    """Both on one sandbox, three rounds each (a load test's minute is CI's)."""
    require("apache2", "httperf")
    two_cores()
    require_cgroup_cpu()
    three = [*SHORT, "--max-rounds", "3"]
    with SandboxRun(mpm="event", cpu_quota_pct=50) as run:
        same = run.bench("--compare", "-", "-", *CPU_BOUND, *three, "--start-rate", "150", "--seed", "3")
        run.assert_stock_restored()
        quota_file = run.sandbox.cpu_quota()
        result = run.bench("--format", "json", "--compare-quota", "60", "20", *CPU_BOUND, *three,
                           "--start-rate", "150", "--seed", "4")
        run.assert_stock_restored()
        # The quota the sandbox was started with is back.
        limit = os.path.join(quota_file.path, "cpu.cfs_quota_us" if quota_file.version == 1 else "cpu.max")
        assert open(limit).read().split()[0] == str(int(quota_file.period_us * 0.5))
    lines = same.stdout.splitlines()
    assert len([line for line in lines if line.startswith("round ")]) == 3, same.stdout
    assert any(line.startswith("no difference measured (95 % CI x") for line in lines), same.stdout
    document = json.loads(result.stdout)
    assert {"sides", "rounds", "ratio", "low", "high", "half_width", "verdict", "stop_reason", "seed"} <= set(document)
    assert [side["quota_pct"] for side in document["sides"]] == [60, 20]
    assert document["verdict"] == "slower", json.dumps(document["rounds"], indent=1)
    # Three times less CPU: the ratio lies well below 1, its interval above the third a cruder host allows.
    assert document["high"] < 1.0 and 0.15 < document["ratio"] < 0.75, document
    for number, entry in enumerate(document["rounds"], 1):
        assert entry["round"] == number and sorted(entry["order"]) == ["A", "B"]
        assert all(entry["runs"][side]["probes"] >= 1 and entry["runs"][side]["figure"] > 0 for side in "AB")
        assert all(entry["runs"][side]["passing_figure"] > 0 for side in "AB")
    assert document["stop_reason"] in ("precision reached", "max rounds spent")
    # What set each side's peak, counted over the rounds (a CGI that sums numbers: mostly the server's CPU).
    counts = document["bottlenecks"]
    assert set(counts) == {"A", "B"} and all(sum(counts[s].values()) == len(document["rounds"]) for s in "AB")
    assert all("bottleneck" in entry["runs"][side] for entry in document["rounds"] for side in "AB")
    # The CPU-speed reference on the server's core, before each search and after each of its probes.
    assert all(len(entry["runs"][side]["reference_ms"]) >= 1 + entry["runs"][side]["probes"]
               and all(v > 0 for v in entry["runs"][side]["reference_ms"])
               for entry in document["rounds"] for side in "AB")


def _rounds(labels_a: list[str | None], labels_b: list[str | None], quotas=(50.0, 45.0)):
    from types import SimpleNamespace

    from advisor.tuner.trial.compare import CompareResult, CompareRound, CompareSettings, CompareSide

    def run(side, label):
        return SimpleNamespace(side=side, bottleneck=label)

    sides = (CompareSide("A", (), "the config as it is", quotas[0]), CompareSide("B", (), "the config as it is", quotas[1]))
    result = CompareResult(sides, CompareSettings(start_rate=10, max_rate=1000))
    result.rounds = [CompareRound(n, ("A", "B"), {"A": run("A", a), "B": run("B", b)}, None)
                     for n, (a, b) in enumerate(zip(labels_a, labels_b), 1)]
    return result


def test_a_quota_comparison_whose_peaks_the_pool_set_says_so():
    """On this host (2026-12-07) the prefork sandbox with 256 workers read the
    same peak with the whole core and with half of it: its sessions held
    every worker first. The comparison's ratio is right; it must say what it measured."""
    pool = "keep-alive holding workers"
    result = _rounds([pool, pool, "server CPU"], [pool, pool, pool])
    assert result.bottlenecks == {"A": {pool: 2, "server CPU": 1}, "B": {pool: 3}}
    notes = result.notes
    assert len(notes) == 2 and all("did not set its peak" in note for note in notes), notes
    assert "side A's peak was set by keep-alive holding workers in 2 of 3 rounds" in notes[0]
    assert result.notes == notes  # made afresh from the rounds, as to_dict() writes them
    # Near misses: both sides on the server's CPU say nothing; without a quota moved, only differing limits do.
    assert _rounds(["server CPU"] * 3, ["server CPU", "server CPU", None]).notes == []
    assert _rounds([pool] * 3, [pool] * 3, quotas=(None, None)).notes == []
    assert _rounds([pool] * 3, ["server CPU"] * 3, quotas=(None, None)).notes == [
        "the sides ran into different limits: A keep-alive holding workers, B server CPU"]
