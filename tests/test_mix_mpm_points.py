"""An HTTP/2 mix with --allow-mpm-switch tries worker and event (issue 57).

A session over `--protocol mix` from a prefork sandbox ran all its trials
under prefork: the candidate lint judged each worker and event point on a
tree of one LoadModule line, where the point's mod_http2 lines
(H2MaxSessionStreams, H2MaxWorkers) read as E401, and run_search refused
them without a word. The tree here is the sandbox's as `staging up --mpm
prefork --tls --h2` writes it, read by the real reader; no httpd runs. A
point lint does refuse is told on the console, journalled and listed in the
report (the simulated host answers the trials)."""

from __future__ import annotations

from pathlib import Path

from advisor.config import LoadOptions, load_config
from advisor.output.tune_files import render_markdown
from advisor.tuner.search.optimizer import SearchSettings, _first_points, make_searcher
from advisor.tuner.search.simulated import SimulatedObjective
from advisor.tuner.search.space_derive import derive_space
from advisor.tuner.search.space_lint import CandidateLint
from advisor.tuner.session.journal import JournalHeader, open_journal, read_journal
from advisor.tuner.session.report_data import SessionFacts, build_report
from advisor.tuner.session.session_context import SessionContext, SessionEvents, SessionSettings
from advisor.tuner.session.trials import run_trials

MODULES = Path("/usr/lib/apache2/modules")
RAM = {"prefork": 2867, "worker": 17168, "event": 9392}


def _sandbox_like_tree(tmp_path: Path) -> str:
    """A prefork tree with mod_http2 and mod_ssl, offering h2 as the sandbox does."""
    lines = [f'ServerRoot "{tmp_path}"', "ServerName 127.0.0.1", f'PidFile "{tmp_path}/httpd.pid"',
             f'ErrorLog "{tmp_path}/error.log"', "User www-data", "Group www-data"]
    lines += [f'LoadModule {name}_module "{MODULES}/mod_{name}.so"'
              for name in ("mpm_prefork", "authz_core", "mime", "dir", "status", "http2", "socache_shmcb", "ssl")]
    lines += ["Listen 127.0.0.1:8443", f'DocumentRoot "{tmp_path}"', "Protocols h2 http/1.1",
              f'SSLSessionCache "shmcb:{tmp_path}/ssl_scache(512000)"', "SSLProtocol -all +TLSv1.2 +TLSv1.3",
              "<VirtualHost 127.0.0.1:8443>", "    SSLEngine on",
              f'    SSLCertificateFile "{tmp_path}/server.crt"', f'    SSLCertificateKeyFile "{tmp_path}/server.key"',
              "</VirtualHost>"]
    main = tmp_path / "httpd.conf"
    main.write_text("\n".join(lines) + "\n")
    return str(main)


def test_the_first_points_of_a_mix_with_an_mpm_switch_pass_the_candidate_lint(tmp_path):
    cfg = load_config(_sandbox_like_tree(tmp_path), LoadOptions(apache_version="2.4.71"))
    space = derive_space(cfg, RAM, allow_mpm_switch=True, over_tls=True, protocol="mix")
    assert {"Protocols", "H2MaxSessionStreams", "H2MaxWorkers"} <= set(space.names)
    lint = CandidateLint(cfg, space)
    lint.freeze()  # as tune judges its candidates: on the tree as the plan read it
    try:
        first = _first_points(space, None)
        by_mpm = {space.mpm_of(point): origin for point, origin in first if origin == "mpm"}
        assert by_mpm == {"worker": "mpm", "event": "mpm"}
        for point, origin in first:
            verdict = lint.check(point)
            assert verdict.errors == [], (origin, space.mpm_of(point), verdict.errors)
        # The worker and event points write mod_http2's lines, and they were judged.
        worker = next(point for point, origin in first if space.mpm_of(point) == "worker")
        assert any(line.startswith("H2MaxWorkers ") for line in lint.check(worker).lines)
        # The switched MPM's point is still judged: an error it brings is refused.
        refused = lint.check(dict(worker, MaxConnectionsPerChild=500)).errors
        assert refused and all(error.startswith("candidate line") for error in refused), refused
        assert any(" P101 " in error for error in refused), refused
    finally:
        lint.close()


class _Notes(SessionEvents):
    """The session's display: the notes it was told, in order."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        self.notes.append(text)


class _SimulatedRunner:
    """The trial objective as run_trials drives it, answered by the simulated host."""

    def __init__(self, space) -> None:
        self.simulated = SimulatedObjective(space, seed=1)
        self.on_start = None
        self.last_elapsed = 0.0
        self.asked: list[dict] = []

    def learn(self, observation) -> None:
        return None

    def __call__(self, point, directives=None):
        self.asked.append(dict(point))
        return self.simulated(point)


def test_the_report_the_journal_and_the_console_list_the_points_lint_refused(tmp_path):
    cfg = load_config(_sandbox_like_tree(tmp_path), LoadOptions(apache_version="2.4.71"))
    space = derive_space(cfg, RAM, allow_mpm_switch=True, over_tls=True, protocol="mix")
    lint = CandidateLint(cfg, space)
    settings = SessionSettings(session_dir=tmp_path / "report", budget=3, search="random", allow_mpm_switch=True)
    # The worker point with MaxConnectionsPerChild 500: lint P101 calls it an error.
    evidence = space.evidence_point()
    refused_point = dict(evidence, MPM="worker", MaxConnectionsPerChild=500)
    searcher = make_searcher("random", space, SearchSettings(budget=3, seed=0),
                             first_points=[space.start, refused_point, dict(evidence, MPM="event")])
    events = _Notes()
    context = SessionContext(space, lint, settings, events, workload_name="browser")
    header = JournalHeader(space=space.signature(), workload={"name": "browser"}, objective={}, seed=0)
    journal, _ = open_journal(settings.session_dir, header, resume=False)
    runner = _SimulatedRunner(space)
    refused: list = []
    try:
        result = run_trials(context, searcher, runner, journal, [], 0.0, raise_if_signalled=lambda: None,
                            eta=lambda observations: None, lint_refused=refused)
    finally:
        lint.close()
    assert len(result.observations) == 3 and refused_point not in runner.asked
    assert [point for point, _ in result.rejected] == [refused_point]
    # The console was told as it happened, with the first error.
    told = [note for note in events.notes if note.startswith("lint refused a worker point (first)")]
    assert len(told) == 1 and "P101" in told[0], events.notes
    # The journal keeps it, and a resumed session reads it back.
    contents = read_journal(settings.session_dir / "journal.jsonl")
    assert [(r.point, r.origin) for r in contents.lint_refusals] == [(refused_point, "first")]
    assert "P101" in contents.lint_refusals[0].errors[0]
    # report.json and report.md say how many and the first error of each; the notes (the console's end) too.
    report = build_report(cfg, space, result.observations, result.best, SessionFacts(workload="browser"),
                          lint_refused=refused)
    data = report.to_dict()
    assert len(data["lint_refused"]) == 1
    entry = data["lint_refused"][0]
    assert entry["mpm"] == "worker" and entry["origin"] == "first" and "P101" in entry["first_error"]
    assert entry["changed"]["MaxConnectionsPerChild"] == "500"
    assert any(note.startswith("lint refused 1 point(s)") and "P101" in note for note in report.notes)
    markdown = render_markdown(report)
    assert "lint refused 1 point(s), never tried" in markdown
    section = markdown.split("### Points lint refused", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in section.splitlines() if line.startswith("| worker"))
    assert "MaxConnectionsPerChild 500" in row and "P101" in row
