"""`apache-advisor tune`: the plan, --dry-run, and every bad input as one line,
exit 2, the server on its original config and the journal intact.

No load is sent here: each case stops before the first trial. A real
sandbox (apache2 on 127.0.0.1) stands behind the cases that need a server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_bench_support import SandboxRun, cli, one_error_line, require

pytestmark = pytest.mark.httpd


@pytest.fixture(scope="module")
def run():
    require("apache2", "httperf")
    with SandboxRun(mpm="prefork") as sandbox:
        yield sandbox


def untouched(run: SandboxRun, generation: int | None = None) -> None:
    """The server runs the config it had: the managed include as `staging up`
    wrote it, nothing pending, and (when given) the same config generation."""
    run.assert_stock_restored()
    if generation is not None:
        assert run.sandbox.status()["generation"] == generation


def tune(run: SandboxRun, report: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return cli("tune", "--workdir", str(run.dir), "--report", str(report), *args, check=False, **kwargs)


def test_dry_run_prints_the_plan_and_leaves_the_server_alone(run, tmp_path):
    generation = run.sandbox.status()["generation"]
    lock = run.sandbox.managed_path.with_name("managed.conf.lock")
    had_lock = lock.exists()
    result = tune(run, tmp_path / "report", "--dry-run", "--budget", "15")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # Each dimension with its range and why, then the workload, objective, budget and time.
    assert "search space (" in out
    assert "MaxRequestWorkers: 16.." in out and "what RAM holds by capacity's sizing" in out
    assert "MaxConnectionsPerChild: 1,001..1,000,000" in out and "lint calls 1,000 or less an error" in out
    assert "KeepAlive: On | Off" in out and "starts at On" in out
    assert "workload: almeida-sessions" in out and "sessions of 5 requests, 0.2 s think time" in out
    assert "objective: peak sustainable rate under the SLO" in out
    assert "budget: 15 trials, bayesian search, seed 0" in out
    assert "estimated time: about" in out and "min" in out
    # Before any load: who loads what, and the most a trial may offer.
    assert "load: httperf on this host" in out and f"-> {run.sandbox.status()['url']}" in out
    assert "at most 20,000 sessions/s (100,000 requests/s)" in out
    untouched(run, generation)
    assert not (tmp_path / "report").exists()
    assert lock.exists() == had_lock  # not even the run lock was taken


def test_dry_run_as_json_and_the_estimate_grows_with_the_budget(run, tmp_path):
    small = json.loads(tune(run, tmp_path / "r", "--dry-run", "--format", "json", "--budget", "3").stdout)
    large = json.loads(tune(run, tmp_path / "r", "--dry-run", "--format", "json", "--budget", "30").stdout)
    assert small["mpm"] == "prefork" and small["budget"] == 3
    names = [d["name"] for d in small["dimensions"]]
    assert "MaxRequestWorkers" in names and "KeepAliveTimeout" in names
    assert all(d["text"].startswith(d["name"] + ":") for d in small["dimensions"])
    assert 0 < small["estimate_s"] < large["estimate_s"]
    untouched(run)


def test_a_space_file_narrows_the_plan(run, tmp_path):
    space = tmp_path / "space.toml"
    space.write_text('[KeepAlive]\nvalue = "On"\n\n[MaxRequestWorkers]\nlow = 50\nhigh = 400\n')
    out = tune(run, tmp_path / "r", "--dry-run", "--space", str(space)).stdout
    assert "KeepAlive: fixed at On" in out and "MaxRequestWorkers: 50..400" in out
    untouched(run)


def test_budget_0_is_one_line(run, tmp_path):
    line = one_error_line(tune(run, tmp_path / "r", "--budget", "0", "--yes"))
    assert "--budget 0" in line and "at least one trial" in line
    untouched(run)


@pytest.mark.parametrize("args, option", [(["--gain-replicates", "1"], "--gain-replicates 1"),
                                          (["--gain-replicates", "0", "--ablation-replicates", "1"],
                                           "--ablation-replicates 1"),
                                          (["--gain-replicates", "1", "--ablation-replicates", "0"],
                                           "--gain-replicates 1")])
def test_replicates_too_few_for_the_interval_are_one_line(run, tmp_path, args, option):
    """One run a side gives the ratio's interval no spread to measure the
    noise by: refused, saying the least value and why; 0 (none) is allowed."""
    line = one_error_line(tune(run, tmp_path / "r", *args, "--yes"))
    assert option in line and "at least 2 runs of each side" in line and "no spread" in line, line
    assert "or 0 for none" in line
    assert not (tmp_path / "r").exists()
    untouched(run)


def test_no_gain_and_no_ablations_are_still_allowed(run, tmp_path):
    result = tune(run, tmp_path / "r", "--dry-run", "--gain-replicates", "0", "--ablation-replicates", "0")
    assert result.returncode == 0, result.stderr
    assert "at least 2 runs" not in result.stderr


@pytest.mark.parametrize("body, fragments", [
    ("[MaxRequestWorkers\nlow = 5\n", ["space.toml:1:", "not valid TOML"]),
    ("[KeepAlive]\nvalue = \"On\"\n\n[MaxConnectionsPerChild]\nlow = 10\n",
     ["space.toml:4:", "MaxConnectionsPerChild low = 10 is outside its guard 1,001..1,000,000"]),
    ("[ServerLimit]\nhigh = 10\n", ["space.toml:1:", "ServerLimit cannot be set on its own"]),
])
def test_a_bad_space_file_is_one_line_and_the_journal_stays_as_it_was(run, tmp_path, body, fragments):
    report = tmp_path / "report"
    report.mkdir()
    journal = report / "journal.jsonl"
    journal.write_bytes(b'{"kind": "header"}\n{"kind": "trial", "trial": 1}\n')
    space = tmp_path / "space.toml"
    space.write_text(body)
    line = one_error_line(tune(run, report, "--space", str(space), "--resume", "--yes"))
    for fragment in fragments:
        assert fragment in line, line
    assert journal.read_bytes() == b'{"kind": "header"}\n{"kind": "trial", "trial": 1}\n'
    untouched(run)


def test_a_missing_space_file_is_one_line(run, tmp_path):
    line = one_error_line(tune(run, tmp_path / "r", "--space", str(tmp_path / "nowhere.toml"), "--yes"))
    assert "nowhere.toml: no such --space file" in line
    untouched(run)


def _journal_for(run: SandboxRun, report: Path) -> bytes:
    """A journal as a default session on this sandbox starts it (header only)."""
    from advisor.tuner.session.journal import Journal, JournalHeader
    from advisor.tuner.session.loop import TuneSession
    from advisor.tuner.session.session_context import SessionSettings
    from advisor.tuner.trial.objective_spec import ObjectiveSpec, ProbeSettings
    from advisor.tuner.trial.session_workload import make_session_workload
    from advisor.tuner.staging.target import SandboxTarget

    target = SandboxTarget(run.sandbox)
    workload = make_session_workload("almeida-sessions", run.dir)
    session = TuneSession(target, run.dir, workload, ObjectiveSpec(), ProbeSettings(), SessionSettings(report))
    session.prepare()
    Journal.create(report, JournalHeader(space=session.space.signature(), workload=workload.identity(),
                                         objective=ObjectiveSpec().identity(), seed=0))
    return (report / "journal.jsonl").read_bytes()


def test_resume_refuses_a_journal_of_another_objective_space_or_workload(run, tmp_path):
    report = tmp_path / "report"
    before = _journal_for(run, report)
    # The same search resumes (shown here with --dry-run: nothing runs).
    same = tune(run, report, "--resume", "--dry-run")
    assert same.returncode == 0, same.stderr
    other_space = tmp_path / "space.toml"
    other_space.write_text("[MaxRequestWorkers]\nhigh = 100\n")
    for args, what in ((["--objective", "throughput", "--rate", "5"], "objective"),
                       (["--space", str(other_space)], "space"),
                       (["--workload", "1k"], "workload")):
        line = one_error_line(tune(run, report, "--resume", "--yes", *args))
        assert f"journal.jsonl:1: this journal's {what} differs" in line, line
        assert "--resume" in line or "new session directory" in line
    assert (report / "journal.jsonl").read_bytes() == before
    # And a new session will not write over it.
    line = one_error_line(tune(run, report, "--yes"))
    assert "a tuning journal is already here" in line and "--resume" in line
    assert (report / "journal.jsonl").read_bytes() == before
    untouched(run)


def test_resume_without_a_journal_is_one_line(run, tmp_path):
    line = one_error_line(tune(run, tmp_path / "empty", "--resume", "--yes"))
    assert "no journal here" in line
    untouched(run)


def test_httperf_missing_is_one_line(run, tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))  # no httperf anywhere on it
    result = subprocess.run([sys.executable, "-m", "advisor", "tune", "--workdir", str(run.dir), "--report",
                             str(tmp_path / "r"), "--yes"], capture_output=True, text=True, timeout=60, env=env)
    line = one_error_line(result)
    assert "httperf not found" in line and "apt-get install httperf" in line
    untouched(run)


def test_stdin_that_is_not_a_terminal_needs_yes(run, tmp_path):
    result = tune(run, tmp_path / "r", stdin=subprocess.DEVNULL)
    line = one_error_line(result)
    assert "stdin is not a terminal" in line and "--yes" in line and "--dry-run" in line
    untouched(run)


def test_objective_at_a_fixed_rate_needs_the_rate(run, tmp_path):
    line = one_error_line(tune(run, tmp_path / "r", "--objective", "latency", "--yes"))
    assert "--objective latency" in line and "--rate" in line
    untouched(run)


def test_no_staging_server_is_one_line(tmp_path):
    require("httperf")
    line = one_error_line(cli("tune", "--workdir", str(tmp_path), "--yes", check=False))
    assert "no staging sandbox is running" in line and "staging up" in line


def test_a_target_off_loopback_is_refused_unless_its_host_is_allowed(tmp_path):
    require("httperf")
    config = tmp_path / "httpd.conf"
    managed = tmp_path / "apache-advisor-managed.conf"
    config.write_text(f"Listen 127.0.0.1:8\nIncludeOptional {managed}\n")
    common = ["tune", "--config", str(config), "--url", "http://192.0.2.10:8080/", "--yes"]
    line = one_error_line(cli(*common, check=False))
    assert "http://192.0.2.10:8080/ is not on loopback" in line and "--allow-host 192.0.2.10" in line
    # Named, the host passes that check and the next one speaks (nothing answers there).
    line = one_error_line(cli(*common, "--allow-host", "192.0.2.10", check=False, timeout=60))
    assert "not on loopback" not in line and "not healthy" in line


def test_the_command_is_listed_and_documented():
    result = subprocess.run([sys.executable, "-m", "advisor", "tune", "--help"], capture_output=True, text=True,
                            timeout=60, env=dict(os.environ, COLUMNS="200"))
    assert result.returncode == 0
    for option in ("--budget", "--workload", "--report", "--max-time", "--objective", "--space",
                   "--allow-mpm-switch", "--allow-host", "--seed", "--resume", "--dry-run", "--yes", "--format",
                   "--gain-replicates", "--search", "--workdir", "--config", "--url", "--reload-cmd", "--restart-cmd",
                   "--test-cmd",
                   "--managed", "--server-cpus", "--client-cpus", "--duration"):
        assert option in result.stdout, option


def test_the_estimate_left_ignores_the_long_first_trial(tmp_path, monkeypatch):
    """The first trial searches from the start rate (230 s in a measured stock
    session, where a later trial took 49 s): the time left after it comes from
    the plan, and after later trials from their own measured cost; the next
    session's plan on this host starts from those figures."""
    from advisor.tuner.search.optimizer import Observation
    from advisor.tuner.session.loop import TuneSession
    from advisor.tuner.session.session_context import SessionSettings
    from advisor.tuner.trial.objective_spec import ObjectiveSpec, ProbeSettings
    from advisor.tuner.trial.session_workload import make_session_workload
    from advisor.tuner.trial.pace import FIRST, SEARCH, Pace, load_earlier, save

    monkeypatch.setenv("APACHE_ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    workload = make_session_workload("almeida-sessions", tmp_path)

    def session_with(pace: Pace) -> TuneSession:
        session = TuneSession(None, tmp_path, workload, ObjectiveSpec(), ProbeSettings(),
                              SessionSettings(tmp_path / "r"))
        session.pace = pace
        return session

    session = session_with(Pace())
    plan = session.estimate_s(0)
    first = [Observation(trial=1, point={}, objective=1.0, valid=True, verdict="none", origin="start", elapsed_s=230.0)]
    session.pace.record(FIRST, 8, 230.0)
    after_first = session.eta(first)
    assert after_first is not None and after_first < plan
    etas = {}
    for name, seconds in (("fast", 20.0), ("slow", 200.0)):
        pace = Pace()
        pace.record(FIRST, 8, 230.0)
        pace.record(SEARCH, 3, seconds)
        etas[name] = session_with(pace).eta(first + [Observation(trial=2, point={}, objective=1.0, valid=True,
                                                                  verdict="none", origin="model",
                                                                  elapsed_s=seconds)])
        save(f"{name} host", pace)
        # The next session's plan starts from this one's cost per probe and probes per run.
        assert load_earlier(f"{name} host")["probe_s"]["all"] == round(seconds / 3, 2)
        assert session_with(Pace(earlier=load_earlier(f"{name} host"))).estimate_s(0) != plan
    assert etas["fast"] < after_first < etas["slow"]


def test_one_slow_session_does_not_make_the_next_plan(tmp_path, monkeypatch):
    """The plan takes the lower median of the last sessions' cost of a probe
    and probes per run: the mix session of 2026-12-07 planned 34:42 from one
    session slowed by a neighbour, and took 22:19."""
    from advisor.tuner.trial.pace import OWN, PACE_SESSIONS, SEARCH, Pace, load_earlier, save

    monkeypatch.setenv("APACHE_ADVISOR_CACHE_DIR", str(tmp_path / "cache"))

    def session(probe_s: float, probes: int = 3) -> Pace:
        pace = Pace(earlier=load_earlier("host"))
        pace.record(SEARCH, probes, probe_s * probes)
        pace.record(OWN, probes, probe_s * probes)
        return pace

    def planned() -> tuple[float | None, float | None]:
        pace = Pace(earlier=load_earlier("host"))
        return pace.probe_s(), pace.probes_per_run(SEARCH)

    save("host", session(10.0))
    save("host", session(25.0, probes=6))  # disturbed: its probes repeated, each slower
    assert planned() == (10.0, 3.0)
    save("host", session(11.0))
    assert planned() == (11.0, 3.0)
    # Near miss: when the host itself got slower, the plan follows within a few sessions.
    save("host", session(30.0, probes=6))
    save("host", session(30.0, probes=6))
    assert planned() == (25.0, 6.0)
    for _ in range(PACE_SESSIONS):
        save("host", session(30.0, probes=6))
    assert planned() == (30.0, 6.0) and len(load_earlier("host")["sessions"]) == PACE_SESSIONS


def test_an_entry_saved_before_the_sessions_were_kept_counts_as_one(tmp_path, monkeypatch):
    from advisor.tuner.trial.pace import SEARCH, Pace, past_sessions

    old = {"probe_s": {"all": 12.5}, "probes_per_run": {"search": 4.0}, "runs": {"search": 15}}
    assert past_sessions(old) == [{"probe_s": 12.5, "probes_per_run": {"search": 4.0}}]
    pace = Pace(earlier=old)
    assert (pace.probe_s(), pace.probes_per_run(SEARCH)) == (12.5, 4.0)
    assert past_sessions({}) == [] and past_sessions({"sessions": "damaged"}) == []


def test_the_plan_counts_the_runs_after_the_search_that_sessions_here_made(tmp_path, monkeypatch):
    """How many runs the rounds and the gain take, the search decides; the
    README's switch session of 2026-11-27 17:04 was planned at 19 min for
    rounds of four points and no gain runs, and took 29.6 with rounds of
    five and ten gain runs. The plan now takes the mean runs after the
    search of the last sessions on this host, and each session adds its own."""
    from advisor.tuner.session.loop import TuneSession
    from advisor.tuner.session.session_context import SessionSettings
    from advisor.tuner.trial.objective_spec import ObjectiveSpec, ProbeSettings
    from advisor.tuner.trial.session_workload import make_session_workload
    from advisor.tuner.trial.pace import (OWN, RECORD_FIELD, RECORD_SESSIONS, SEARCH, Pace, after_search_record,
                                          load_earlier, save)

    monkeypatch.setenv("APACHE_ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    workload = make_session_workload("almeida-sessions", tmp_path)

    def session_with(pace: Pace) -> TuneSession:
        session = TuneSession(None, tmp_path, workload, ObjectiveSpec(), ProbeSettings(),
                              SessionSettings(tmp_path / "r", gain_replicates=5))
        session.pace = pace
        return session

    def finished(runs_after: int | None) -> Pace:
        pace = Pace(earlier=load_earlier("host"))
        pace.record(SEARCH, 3, 30.0)
        pace.record(OWN, 3, 30.0)
        pace.after_search_runs = runs_after
        return pace

    unknown = session_with(Pace())
    # No record: five rounds of four points, and the ten gain runs at one in five, said so in the plan.
    assert unknown.estimate().after_search_runs() == 5 * 4 + 2
    assert "counted at one in five: no session here on record" in unknown.estimate_extras()
    save("host", finished(35))
    save("host", finished(25))
    assert after_search_record(load_earlier("host")) == (60.0, 2)
    planned = session_with(Pace(earlier=load_earlier("host")))
    assert planned.estimate().after_search_runs() == 30.0
    assert "about 30 runs of 30 s, the mean of the last 2 sessions here" in planned.estimate_extras()
    # The same cost per run (30 s here); only the number of runs differs.
    assert planned.estimate_s(0) - session_with(finished(None)).estimate_s(0) == pytest.approx(0.0)
    save("host", finished(45))
    assert session_with(Pace(earlier=load_earlier("host"))).estimate_s(0) - planned.estimate_s(0) \
        == pytest.approx((35 - 30) * 30.0)
    # Near miss: a session that ended before its runs after the search leaves the record as it was.
    save("host", finished(None))
    assert after_search_record(load_earlier("host")) == (105.0, 3)
    # The record keeps the latest sessions: older ones are scaled away.
    for _ in range(3 * RECORD_SESSIONS):
        save("host", finished(20))
    runs, sessions = after_search_record(load_earlier("host"))
    assert sessions == RECORD_SESSIONS and 20 * RECORD_SESSIONS <= runs < 21 * RECORD_SESSIONS
    # A damaged record is no record, nor is one of the rounds before 2026-11-28 (another design).
    assert after_search_record({RECORD_FIELD: {"runs": 40, "sessions": 2}}) == (40.0, 2)
    assert after_search_record({RECORD_FIELD: {"runs": -5, "sessions": 2}}) == (0.0, 0)
    assert after_search_record({RECORD_FIELD: "x"}) == (0.0, 0)
    assert after_search_record({"after_search": {"runs": 40, "sessions": 2}}) == (0.0, 0)


def test_a_session_of_short_probes_leaves_no_pace_for_a_session_of_default_ones(tmp_path, monkeypatch):
    """The worst-practice session of 2026-11-28 13:00 planned 5 minutes and
    took 18.6: its host had a record of 1-s probes without a warm-up (2 s a
    probe). A record is read only by sessions whose probes are alike."""
    from types import SimpleNamespace

    from test_tune_core import load_stock

    from advisor.tuner.session.loop import TuneSession
    from advisor.tuner.session.session_context import SessionSettings
    from advisor.tuner.trial.objective_spec import ObjectiveSpec, ProbeSettings
    from advisor.tuner.trial.session_workload import make_session_workload
    from advisor.tuner.trial.pace import OWN, SEARCH, Pace, save

    monkeypatch.setenv("APACHE_ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    workload = make_session_workload("almeida-sessions", tmp_path)
    _, space = load_stock(tmp_path)
    target = SimpleNamespace(describe=lambda: {"kind": "sandbox"})

    def session_with(probes: ProbeSettings) -> TuneSession:
        session = TuneSession(target, tmp_path, workload, ObjectiveSpec(), probes, SessionSettings(tmp_path / "r"))
        session.load_pace(space)
        return session

    short = session_with(ProbeSettings(duration_s=1.0, warmup_s=0.0))
    short.pace.record(SEARCH, 3, 6.0)
    short.pace.record(OWN, 3, 6.0)
    save(short.pace_key, short.pace)
    default = session_with(ProbeSettings())
    assert default.pace_key != short.pace_key and default.pace.earlier == {}
    # Near miss: a session with the same probes reads the record (and plans from its 2 s a probe).
    again = session_with(ProbeSettings(duration_s=1.0, warmup_s=0.0))
    assert again.pace.earlier["probe_s"]["all"] == 2.0
