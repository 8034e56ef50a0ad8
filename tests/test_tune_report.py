"""The report of a tuning session (issue 11, "The report"): the drop-in include
passes the real apache2 -t, the diff points at the line httpd applies (old
spellings and MPM blocks included) and applying it gives httpd the
recommended values, the gain's confidence interval is right on known data,
the verdicts carry their evidence, the sensitivities agree with the simulated
truth, and the plots are real PNGs."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest

from advisor.config import LoadOptions, load_config
from advisor.output import tune_files as fmt
from advisor.tuner.search.optimizer import Observation, TrialOutcome
from advisor.tuner.search.recommend import edited_files, recommend
from advisor.tuner.search.simulated import SimulatedObjective
from advisor.tuner.search.space_derive import derive_space
from advisor.tuner.search.surrogate import Surrogate
from advisor.tuner.session import report_plots
from advisor.tuner.session.gain import Replicates, measure_gain, replicate_order
from advisor.tuner.session.report_data import EVIDENCE, SessionFacts, build_report, summarise_verdicts
from conftest import REPO, SAMPLES, require_httpd
from shared_data import seed_text

MODULES = "/usr/lib/apache2/modules"


def load(main: str, root: str):
    return load_config(str(SAMPLES / main), LoadOptions(server_root=str(SAMPLES / root)))


@pytest.fixture(scope="module")
def legacy():
    """httpd 2.2 spellings (MaxClients, MaxRequestsPerChild) in <IfModule prefork.c>."""
    return load("legacy-2.2/httpd.conf", "legacy-2.2")


@pytest.fixture(scope="module")
def debian():
    """The pool in mods-enabled/mpm_prefork.conf inside <IfModule mpm_prefork_module>, no ServerLimit."""
    return load("debian/apache2.conf", "debian")


def line_of(path: Path, pattern: str, after: int = 0) -> int:
    """The first line (1-based) at or after `after` matching `pattern`, read from the file itself."""
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if number >= after and re.match(pattern, text):
            return number
    raise AssertionError(f"{pattern!r} not in {path}")


# ---- where each directive is written, and the diff -----------------------------


def test_the_diff_points_at_the_active_old_spelling_inside_the_mpm_block(legacy):
    conf = SAMPLES / "legacy-2.2" / "httpd.conf"
    space = derive_space(legacy, 300)
    top = space.dimension("MaxConnectionsPerChild").high
    winner = dict(space.start, MaxRequestWorkers=200, MaxConnectionsPerChild=top, KeepAlive="On",
                  ListenBacklog=1024)
    rec = recommend(legacy, space, winner)
    by = {c.directive: c for c in rec.changes}
    assert set(by) == {"ServerLimit", "MaxRequestWorkers", "MaxConnectionsPerChild", "KeepAlive", "ListenBacklog"}

    prefork = line_of(conf, r"<IfModule prefork\.c>")
    worker = line_of(conf, r"<IfModule worker\.c>")
    mrw = by["MaxRequestWorkers"].written
    # The active MaxClients (prefork block), not the one in the inactive worker block.
    assert (mrw.file, mrw.line) == (str(conf), line_of(conf, r"MaxClients\s", prefork))
    assert mrw.line < worker < line_of(conf, r"MaxClients\s", worker)
    assert (mrw.name, mrw.value, mrw.blocks) == ("MaxClients", "256", ["<IfModule prefork.c>"])
    mcpc = by["MaxConnectionsPerChild"]
    assert (mcpc.written.line, mcpc.written.name, mcpc.value) == (line_of(conf, r"MaxRequestsPerChild\s", prefork),
                                                                  "MaxRequestsPerChild", "0")
    assert by["ServerLimit"].written.line == line_of(conf, r"ServerLimit\s")
    assert by["ServerLimit"].value == "200" and by["MaxRequestWorkers"].value == "200"
    assert by["KeepAlive"].written.line == line_of(conf, r"KeepAlive\s+Off")
    assert by["MaxRequestWorkers"].where == f"httpd.conf:{mrw.line} (as MaxClients)"
    backlog = by["ListenBacklog"]
    assert backlog.written is None
    assert backlog.where.startswith("not written (httpd's default 511): add to httpd.conf after line ")

    old, new = edited_files(legacy, rec)[str(conf)]
    assert len(new) == len(old) + 1  # five lines replaced in place, one added
    assert new[mrw.line - 1] == "MaxRequestWorkers  200"  # the value stays in the admin's column
    assert old[mrw.line - 1] == "MaxClients         256"
    assert new[-1] == "ListenBacklog 1024"
    assert [line for line in new if line not in old] == [
        "KeepAlive On", "ServerLimit        200", "MaxRequestWorkers  200", "MaxConnectionsPerChild 0",
        "ListenBacklog 1024"]


def test_applying_the_diff_gives_httpd_the_recommended_values(debian, tmp_path):
    """Edit a copy of the Debian tree as the diff says, read it again: every
    recommended directive is what httpd applies, a missing one was added
    inside the admin's <IfModule mpm_prefork_module> with their indentation."""
    space = derive_space(debian, 300)
    winner = dict(space.start, MaxRequestWorkers=150, KeepAliveTimeout=2500, BufferedLogs="On",
                  MinSpareServers=8, MaxSpareServers=20)
    rec = recommend(debian, space, winner)
    by = {c.directive: c for c in rec.changes}
    pool = SAMPLES / "debian" / "mods-enabled" / "mpm_prefork.conf"
    assert by["ServerLimit"].written is None
    assert by["ServerLimit"].add_after == (str(pool), line_of(pool, r"</IfModule>") - 1)
    assert by["ServerLimit"].where == ("not written (httpd's default 256): add to mods-enabled/mpm_prefork.conf "
                                       f"after line {line_of(pool, r'</IfModule>') - 1}, or include the drop-in")
    written_at = line_of(pool, r"\s*MaxRequestWorkers")
    assert by["MaxRequestWorkers"].written.location == f"mods-enabled/mpm_prefork.conf:{written_at}"
    assert by["MaxRequestWorkers"].written.blocks == ["<IfModule mpm_prefork_module>"]
    assert by["KeepAliveTimeout"].value == "2500ms"
    # The start lies outside the guard (MaxConnectionsPerChild 500 < 1,001) and was measured as written:
    # a winner that keeps it leaves the admin's line alone; one that moves off it changes 500.
    assert "MaxConnectionsPerChild" not in by
    moved = recommend(debian, space, dict(winner, MaxConnectionsPerChild=space.dimension("MaxConnectionsPerChild").high))
    change = next(c for c in moved.changes if c.directive == "MaxConnectionsPerChild")
    assert (change.value, change.current, change.start) == ("0", "500", "500")

    copy = tmp_path / "debian"
    shutil.copytree(SAMPLES / "debian", copy, symlinks=True)
    for file, (_, new) in edited_files(debian, rec).items():
        (copy / Path(file).relative_to(SAMPLES / "debian")).write_text("\n".join(new) + "\n")
    edited = load_config(str(copy / "apache2.conf"), LoadOptions(server_root=str(copy)))
    settings = space.settings(winner)
    for change in rec.changes:
        node = edited.server_directives(change.directive)[-1]
        assert node.args == [change.value], change.directive
        assert change.value == str(settings[change.directive]) or change.directive == "KeepAliveTimeout"
    added = edited.server_value("ServerLimit")
    assert added.file == str(copy / "mods-enabled" / "mpm_prefork.conf")
    assert [s.args for s in added.raw.enclosing()] == [["mpm_prefork_module"]]
    assert (copy / "mods-enabled" / "mpm_prefork.conf").read_text().splitlines()[added.line - 1] == "\tServerLimit 150"


def test_the_starting_point_recommends_nothing(legacy):
    """Values spelled differently (KeepAliveTimeout 15 is 15,000 ms, MaxClients
    is MaxRequestWorkers) are the same values: nothing to change."""
    space = derive_space(legacy, 300)
    assert not space.start_notes  # nothing was clipped: the start is the config as written
    rec = recommend(legacy, space, space.start)
    assert rec.changes == []


# ---- the drop-in passes the real apache2 -t ------------------------------------------


def config_test(httpd: str, tmp_path: Path, mpm: str, include: str) -> subprocess.CompletedProcess:
    """apache2 -t on a sandbox-like config that includes the drop-in last."""
    (tmp_path / "run").mkdir(exist_ok=True)
    drop_in = tmp_path / "recommended.conf"
    drop_in.write_text(include)
    main = tmp_path / "httpd.conf"
    main.write_text(
        f'ServerRoot "{tmp_path}"\nServerName tune-report.test\nPidFile "{tmp_path}/run/httpd.pid"\n'
        f'DefaultRuntimeDir "{tmp_path}/run"\nErrorLog "{tmp_path}/error.log"\n'
        f'LoadModule mpm_{mpm}_module "{MODULES}/mod_mpm_{mpm}.so"\n'
        f'LoadModule authz_core_module "{MODULES}/mod_authz_core.so"\n'
        f'Listen 127.0.0.1:8\nCustomLog "{tmp_path}/access.log" common\nInclude "{drop_in}"\n')
    return subprocess.run([httpd, "-t", "-f", str(main)], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)


def test_the_prefork_drop_in_passes_apache2_t_and_needs_its_server_limit(debian, tmp_path):
    httpd = require_httpd()
    space = derive_space(debian, 300)
    winner = dict(space.start, MaxRequestWorkers=300, KeepAliveTimeout=2500, BufferedLogs="On",
                  EnableSendfile="On", ListenBacklog=1024, MaxKeepAliveRequests=1000)
    report = build_report(debian, space, [], winner, SessionFacts(workload="almeida-sessions"))
    include = fmt.render_include(report)
    assert "<IfModule mpm_prefork_module>" in include and "    ServerLimit 300" in include
    assert "BufferedLogs On" in include and "MaxKeepAliveRequests 0" in include
    done = config_test(httpd, tmp_path, "prefork", include)
    assert done.returncode == 0 and "Syntax OK" in done.stderr + done.stdout, done.stderr
    assert "AH00" not in done.stderr, done.stderr  # no value httpd had to correct
    # Without its partner ServerLimit, httpd would cut the pool back to 256: the check sees it.
    alone = config_test(httpd, tmp_path, "prefork", include.replace("    ServerLimit 300\n", ""))
    assert "AH00180" in alone.stderr and "exceeds ServerLimit" in alone.stderr
    # And a value httpd refuses fails the check, on the drop-in's line.
    broken = config_test(httpd, tmp_path, "prefork", include.replace("EnableSendfile On", "EnableSendfile Sometimes"))
    assert broken.returncode != 0 and "recommended.conf" in broken.stderr


def test_the_worker_drop_in_passes_apache2_t(tmp_path):
    httpd = require_httpd()
    cfg = load("upstream/conf/httpd.conf", "upstream")
    space = derive_space(cfg, 1000)
    assert space.mpm == "worker"
    winner = dict(space.start, ThreadsPerChild=40, MaxRequestWorkers=800, MinSpareThreads=60)
    report = build_report(cfg, space, [], winner, SessionFacts())
    names = [c.directive for c in report.recommendation.changes]
    assert {"ThreadLimit", "ServerLimit", "ThreadsPerChild", "MaxRequestWorkers", "MaxSpareThreads"} <= set(names)
    include = fmt.render_include(report)
    assert "<IfModule mpm_worker_module>" in include
    done = config_test(httpd, tmp_path, "worker", include)
    assert done.returncode == 0 and "AH00" not in done.stderr, done.stderr


# ---- the gain and its confidence interval -----------------------------------------------


def test_identical_lists_give_an_interval_around_one():
    values = [1510.0, 1490.0, 1530.0, 1475.0, 1500.0]
    gain = measure_gain(Replicates(values, list(values)))
    assert gain.ratio == pytest.approx(1.0)
    assert gain.low < 1.0 < gain.high and not gain.excludes_one


def test_clearly_separated_lists_exclude_one():
    start, winner = [1000, 1020, 990, 1010, 1005], [1300, 1290, 1320, 1310, 1295]
    gain = measure_gain(Replicates(start, winner))
    assert gain.ratio == pytest.approx(statistics.geometric_mean(winner) / statistics.geometric_mean(start))
    assert gain.ratio == pytest.approx(gain.winner_mean / gain.start_mean)
    assert 1.0 < gain.low < gain.ratio < gain.high and gain.excludes_one
    assert "log ratio" in gain.method and gain.df == 8


def test_the_floor_is_the_runs_own_uncertainty_else_the_knee_bracket():
    """Runs that agree to the last digit are floored: by the uncertainty each
    reported (the median of them), else by the bracket the knee searches closed."""
    from advisor.tuner.stats.ratio import bracket_sd

    start, winner = [800.0, 800.0, 800.0], [1000.0, 1000.0, 1000.0]
    bare = measure_gain(Replicates(start, winner))
    assert bare.floored and bare.floor_sd == pytest.approx(bracket_sd(0.1))
    coarse = measure_gain(Replicates(start, winner, tolerance=0.3))
    assert coarse.floor_sd == pytest.approx(bracket_sd(0.3)) and coarse.high - coarse.low > bare.high - bare.low
    order = replicate_order(3)
    reported = [(role, TrialOutcome(800.0 if role == "start" else 1000.0, True, "server CPU",
                                    {"uncertainty": {"rel_sd": sd}})) for role, sd in zip(order, (0.01, 0.2, 0.01,
                                                                                                   0.01, 0.2, 0.2))]
    measured = measure_gain(Replicates.from_outcomes(reported, tolerance=0.3))
    assert measured.floor_sd == pytest.approx((0.01 + 0.2) / 2)  # the median of six
    assert any("sets the interval's width" in note for note in measured.notes)


def test_a_start_that_served_nothing_has_no_log_ratio():
    with pytest.raises(ValueError, match="positive"):
        measure_gain(Replicates([0.0, 310.0, 290.0], [1000.0, 1100.0, 1050.0]))


def test_replicates_from_outcomes_keep_the_run_order_and_skip_invalid_runs():
    order = replicate_order(3)
    # ABBA: interleaved, and every other run follows a run of its own point (its warm pool kept).
    assert order == ["start", "winner", "winner", "start", "start", "winner"]
    assert not measure_gain(Replicates.from_outcomes(
        [(role, TrialOutcome(100.0 + 10 * i, True, "server CPU", {})) for i, role in enumerate(order)])).notes[1:]
    runs = [(role, TrialOutcome(100.0 + i, i != 2, "server CPU", {})) for i, role in enumerate(order)]
    rep = Replicates.from_outcomes(runs)
    assert rep.start == [100.0, 103.0, 104.0] and rep.winner == [101.0, 105.0]
    assert rep.order == ["start", "winner", "start", "start", "winner"]
    notes = measure_gain(rep).notes
    assert any("did not follow the interleaved order" in n for n in notes) and any("only 2 replicates" in n for n in notes)


# ---- verdicts -----------------------------------------------------------------------------


def test_the_verdict_line_names_the_bottleneck_with_its_evidence_before_and_after():
    churn = {"verdict": {"label": "process churn", "evidence": {
        "retired_per_s": 41.5, "spawned_per_s": 40.0, "httpd_cpu_pct_mean": 48.2, "children_retired": 415}}}
    cpu = {"knee": {"peak_rate": 410.0, "limiting_verdict": {"label": "server CPU", "evidence": {
        "server_cpu_busy_pct_mean": 97.2, "run_queue_max": 3}}}}
    before = summarise_verdicts([("process churn", churn), ("server CPU", cpu), ("process churn", churn)])
    after = summarise_verdicts([("server CPU", cpu)])
    assert (before.label, before.count, before.runs) == ("process churn", 2, 3)
    assert before.summary == "process churn (41.5 children retired/s, 40 forked/s, httpd 48 % of a core)"
    assert after.summary == "server CPU (97 %, run queue 3)"


# ---- the surrogate: sensitivity and partial dependence --------------------------------------


@pytest.fixture(scope="module")
def session(legacy, tmp_path_factory):
    """A small simulated session on the legacy config: designed and random
    points, a winner that removes the churn of MaxRequestsPerChild 4000 and
    changes the backlog (which the model ignores while the CPU is the limit)."""
    space = derive_space(legacy, 300)
    objective = SimulatedObjective(space, seed=3)
    top = space.dimension("MaxConnectionsPerChild").high
    winner = dict(space.start, MaxConnectionsPerChild=top, ListenBacklog=1024)
    points = [space.start, winner, dict(space.start, ListenBacklog=1024), dict(space.start, MaxConnectionsPerChild=top)]
    points += [dict(p, KeepAlive="Off", HostnameLookups="Off") for p in space.random_points(10, seed=3)]
    points.append(winner)  # measured again, as the search replicates its incumbent
    observations = []
    for number, point in enumerate(points, start=1):
        outcome = objective(point)
        observations.append(Observation(number, point, outcome.objective, outcome.valid, outcome.verdict,
                                        outcome.details, replicate=number == len(points)))
    runs = [(role, objective(space.start if role == "start" else winner)) for role in replicate_order(5)]
    replicates = Replicates.from_outcomes(runs)
    facts = SessionFacts(workload="almeida-sessions", budget=14, seed=3, stop_reason="budget",
                         produced_at="2026-01-02T03:04:05+00:00", target="simulated")
    measured = [(space.start, v) for v in replicates.start] + [(winner, v) for v in replicates.winner]
    surrogate = Surrogate.fit(space, observations, extra=measured, seed=0)  # what build_report fits by default
    report = build_report(legacy, space, observations, winner, facts, replicates=replicates, surrogate=surrogate)
    return {"space": space, "objective": objective, "winner": winner, "report": report, "surrogate": surrogate,
            "observations": observations, "dir": tmp_path_factory.mktemp("tune-report")}


def test_sensitivity_agrees_with_the_simulated_truth(session):
    space, objective, winner = session["space"], session["objective"], session["winner"]
    effects = {s.dimension: s for s in session["report"].sensitivity}
    assert set(effects) == {"MaxConnectionsPerChild", "ListenBacklog"}
    for name, effect in effects.items():
        reverted = dict(winner, **{name: space.start[name]})
        truth = objective.true_value(winner) / objective.true_value(reverted)
        assert effect.ratio == pytest.approx(truth, rel=0.1), name
        assert effect.low <= effect.ratio <= effect.high
    assert effects["MaxConnectionsPerChild"].low > 1.1  # churn removed: a clear gain
    assert effects["ListenBacklog"].ratio == pytest.approx(1.0, abs=0.05)


def test_partial_dependence_is_skopts_average_on_a_linear_dimension(session):
    """Our curve averages the model exactly as skopt.plots.partial_dependence_1D does."""
    import numpy as np
    from skopt.plots import partial_dependence_1D

    space, surrogate = session["space"], session["surrogate"]
    index = space.names.index("StartServers")
    samples = surrogate.skspace.transform(surrogate.skspace.rvs(n_samples=50, random_state=4))
    xs, ys = partial_dependence_1D(surrogate.skspace, surrogate.model, index, samples, n_points=8)
    grid = [int(round(x)) for x in xs]
    average, _, _, _ = surrogate.curve(index, grid, session["winner"], samples=50, seed=4)
    assert average == pytest.approx([math.exp(-float(y)) for y in np.asarray(ys)], rel=1e-9)


def test_without_a_model_the_report_says_so_and_still_recommends(legacy):
    space = derive_space(legacy, 300)
    winner = dict(space.start, KeepAlive="On")
    report = build_report(legacy, space, [], winner, SessionFacts())
    assert report.sensitivity == [] and report.curves == []
    assert any("no model" in note for note in report.notes)
    assert [c.line for c in report.recommendation.changes] == ["KeepAlive On"]


# ---- the files: plots, report.md, JSON ---------------------------------------------------------


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_the_plots_are_pngs_and_report_md_links_them(session):
    from matplotlib.image import imread

    report, out = session["report"], session["dir"]
    plots = report_plots.write_plots(report, out)
    assert set(plots) == {"convergence", "partial_dependence"}
    for path in plots.values():
        assert path.read_bytes()[:8] == PNG_SIGNATURE
        height, width = imread(path).shape[:2]
        assert width >= 800 and height >= 400
    rows = math.ceil(len(report.curves) / report_plots.COLUMNS)
    assert imread(plots["partial_dependence"]).shape[0] == pytest.approx((3.1 * rows + 1.1) * report_plots.DPI, abs=2)

    files = fmt.write_report(report, out, plots)
    markdown = files["markdown"].read_text()
    for target in re.findall(r"\]\(([^)]+)\)", markdown):
        assert (out / target).is_file(), target
    assert "before: " in markdown and "; after: " in markdown
    assert report.verdict_line in markdown
    assert "excludes 1.0" in markdown and "t interval on the log ratio" in markdown
    assert "```diff" in markdown and "-MaxRequestsPerChild 4000" in markdown
    include = files["include"].read_text()
    assert include.startswith("# Recommended by apache-advisor tune on 2026-01-02T03:04:05+00:00")
    assert re.search(r"# Gain over the starting config: ×\d\.\d{3} \(95 % CI ×\d\.\d{3} to ×\d\.\d{3}, excludes 1\.0",
                     include)
    assert not list(out.glob("*.part"))
    if os.environ.get("TUNE_REPORT_KEEP"):  # a directory to keep the files in, to look at the PNGs by eye
        shutil.copytree(out, os.environ["TUNE_REPORT_KEEP"], dirs_exist_ok=True)


def test_the_json_holds_the_same_facts(session):
    report = session["report"]
    data = json.loads(fmt.render_json(report, {"convergence": "convergence.png"}))
    assert data["files"]["plots"] == {"convergence": "convergence.png"}
    assert data["gain"]["ratio"] == pytest.approx(report.gain.ratio)
    assert data["gain"]["excludes_one"] is report.gain.excludes_one is True
    assert data["verdict_line"] == report.verdict_line
    changes = data["recommendation"]["changes"]
    assert [c["line"] for c in changes] == report.recommendation.directives()
    assert all(c["where"] for c in changes)
    assert {c["dimension"] for c in data["sensitivity"]} == {"MaxConnectionsPerChild", "ListenBacklog"}
    assert len(data["trials"]) == len(session["observations"])
    assert data["evidence"]["MaxConnectionsPerChild"][0]["reference"] == "Arlitt & Williamson (2004, sec. 5.1.3)"


# ---- the figures quoted for each directive ---------------------------------------------------------

SEED_OF = {"Arlitt & Williamson": "000", "Almeida et al.": "001", "Hu, Nanda & Yang": "002", "Kegel": "003",
           "Andersson et al.": "004"}
NUMBER = re.compile(r"(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?:\s?%)?")


def test_every_figure_quoted_is_in_the_seed_and_on_the_evidence_page():
    page = re.sub(r"\s+", " ", (REPO / "docs" / "evidence.md").read_text())
    checked = 0
    for directive, citations in EVIDENCE.items():
        for citation in citations:
            text = seed_text(SEED_OF[citation.author]).replace("MB", " MB")
            for number in NUMBER.findall(citation.figure):
                compact = number.replace(" ", "")
                assert compact in text.replace(" %", "%").replace(" ", "") or number in text, (directive, number)
                if len(compact.strip("%")) > 1:
                    assert number in page or compact in page, (directive, number)
                checked += 1
    assert checked > 20


def test_a_continued_line_becomes_one_and_a_virtual_host_override_is_named(tmp_path):
    conf = tmp_path / "httpd.conf"
    conf.write_text(f"LoadModule mpm_event_module {MODULES}/mod_mpm_event.so\nServerName tune.test\nListen 80\n"
                    "KeepAlive Off\nKeepAliveTimeout \\\n    15\n<VirtualHost *:80>\n    ServerName a.test\n"
                    "    KeepAlive Off\n</VirtualHost>\n")
    cfg = load_config(str(conf), LoadOptions(server_root=str(tmp_path)))
    space = derive_space(cfg, 800)
    rec = recommend(cfg, space, dict(space.start, KeepAlive="On", KeepAliveTimeout=3000))
    by = {c.directive: c for c in rec.changes}
    timeout = by["KeepAliveTimeout"].written
    assert (timeout.line, timeout.end_line) == (5, 6)
    old, new = edited_files(cfg, rec)[str(conf)]
    assert new[3:6] == ["KeepAlive On", "KeepAliveTimeout 3", "<VirtualHost *:80>"] and len(new) == len(old) - 1
    assert by["KeepAlive"].overrides == ["httpd.conf:9 (<VirtualHost *:80>)".replace("httpd.conf", str(conf))]
    assert any("KeepAlive is also set in" in note and "keep their own value" in note for note in rec.notes)


def test_a_winner_on_another_mpm_says_which_module_to_load(debian):
    space = derive_space(debian, {"prefork": 150, "worker": 900, "event": 900}, allow_mpm_switch=True)
    rec = recommend(debian, space, dict(space.start, MPM="event", ThreadsPerChild=25, MaxRequestWorkers=400))
    load_file = SAMPLES / "debian" / "mods-enabled" / "mpm_prefork.load"
    load_line = line_of(load_file, r"LoadModule mpm_prefork_module")
    note = next(note for note in rec.notes if note.startswith("the winner runs the event MPM, not prefork"))
    assert f"mods-enabled/mpm_prefork.load:{load_line}: `LoadModule mpm_prefork_module" in note
    assert "-> `LoadModule mpm_event_module" in note and "mod_mpm_event.so`" in note and "restart in full" in note
    # The diff changes the line where it is written; the drop-in never loads a module.
    module = rec.module_lines[0]
    assert (module.file, module.line) == (str(load_file), load_line)
    old, new = edited_files(debian, rec)[str(load_file)]
    assert old[load_line - 1].split()[:2] == ["LoadModule", "mpm_prefork_module"]
    assert new[load_line - 1].split()[:2] == ["LoadModule", "mpm_event_module"]
    assert new[load_line - 1].endswith("mod_mpm_event.so") and len(new) == len(old)
    by = {c.directive: c for c in rec.changes}
    # The prefork block's lines stop applying with the switch: not where the event pool is written.
    assert by["MaxConnectionsPerChild"].written is None and by["MaxConnectionsPerChild"].current == "0"
    assert {c.mpm_block for c in rec.changes if c.directive in ("ThreadsPerChild", "ServerLimit")} == {
        "mpm_event_module"}


def test_a_change_measured_in_a_group_shows_the_groups_measure_and_its_members(session, legacy):
    """The changes the model saw no effect of are ablated together; the
    table gives each of them the group's measured figure, and says with which."""
    from advisor.tuner.session.ablation import GROUP_JOIN, measure_effects, role_without

    space, winner = session["space"], session["winner"]
    group = GROUP_JOIN.join(["MaxConnectionsPerChild", "ListenBacklog"])
    runs = [(r, v, True) for r, v in [("winner", 640.0), (role_without(group), 120.0), ("winner", 655.0),
                                      (role_without(group), 125.0), ("winner", 631.0), (role_without(group), 118.0)]]
    ablations = measure_effects(runs, {group: ("0, 1024", "4000, 511")})
    facts = SessionFacts(workload="almeida-sessions", budget=14, seed=3, stop_reason="budget",
                         produced_at="2026-01-02T03:04:05+00:00", target="simulated")
    report = build_report(legacy, space, session["observations"], winner, facts, ablations=ablations,
                          surrogate=session["surrogate"])
    out = session["dir"] / "grouped"
    out.mkdir()
    markdown = fmt.write_report(report, out, {})["markdown"].read_text()
    table = markdown.split("## Effect of each change", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith(("| MaxRequestsPerChild",
                                                                     "| MaxConnectionsPerChild", "| ListenBacklog"))]
    assert len(rows) == 2, rows
    for row in rows:
        assert "measured together with" in row and "(a gain)" in row
        assert "+4" in row  # ×5.2: +4xx %
    assert any("together with ListenBacklog" in row for row in rows)


def test_a_measured_mpm_switch_has_its_own_row(session, legacy):
    """The MPM is changed by a LoadModule line, not by a line of the
    drop-in; its ablation (the winner under the start's MPM) gets a row."""
    from advisor.tuner.session.ablation import measure_effects, role_without

    space, winner = session["space"], session["winner"]
    runs = [(r, v, True) for r, v in [("winner", 2182.8), (role_without("MPM"), 2149.8), ("winner", 2150.7),
                                      (role_without("MPM"), 1988.6), ("winner", 2219.1), (role_without("MPM"), 2062.2),
                                      ("winner", 2077.3), (role_without("MPM"), 1825.0), ("winner", 2310.7),
                                      (role_without("MPM"), 2050.0)]]
    ablations = measure_effects(runs, {"MPM": ("worker", "prefork")})
    report = build_report(legacy, space, session["observations"], winner, SessionFacts(), ablations=ablations,
                          surrogate=session["surrogate"])
    out = session["dir"] / "mpm-row"
    out.mkdir()
    markdown = fmt.write_report(report, out, {})["markdown"].read_text()
    table = markdown.split("## Effect of each change", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in table.splitlines() if line.startswith("| MPM (LoadModule)"))
    assert "prefork → worker" in row and "+8." in row and "under prefork (a gain)" in row


def test_a_winner_that_keeps_mod_http2s_defaults_writes_none_of_them(tmp_path):
    """H2MaxSessionStreams and H2MaxWorkers unset are 100 and 3/2 of the
    threads a child: a winner at those values is no change (an HTTP/2 session
    once recommended `H2MaxSessionStreams 100` and `H2MaxWorkers 37`, the
    start's own values). Once the winner's threads move, H2MaxWorkers' default
    moves with them (60 at 40 threads), and what was measured is written: the
    start's 37 raised to the 40 threads, as Space.settings and lint C209 ask."""
    conf = tmp_path / "httpd.conf"
    conf.write_text("LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so\n"
                    "LoadModule http2_module /usr/lib/apache2/modules/mod_http2.so\n"
                    "Protocols h2 http/1.1\n")
    cfg = load_config(str(conf), LoadOptions(server_root=str(tmp_path)))
    space = derive_space(cfg, 2000, http2=True, protocol="h2")
    assert (space.start["H2MaxSessionStreams"], space.start["H2MaxWorkers"]) == (100, 37)
    assert recommend(cfg, space, space.start).changes == []
    more_threads = recommend(cfg, space, dict(space.start, ThreadsPerChild=40))
    assert "H2MaxWorkers 40" in more_threads.directives() and "ThreadsPerChild 40" in more_threads.directives()
    assert not any(line.startswith("H2MaxSessionStreams") for line in more_threads.directives())
