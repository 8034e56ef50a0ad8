"""Advice against advice: a change of the winner that brings a lint finding
is measured against what the rule advises, not against the start.

The start is a worst-practice prefork config (MaxConnectionsPerChild 100,
KeepAlive Off); the winner keeps MaxConnectionsPerChild 3,540, which P101
warns of and whose fix is 0. The runs are the simulated host's
(tuner/search/simulated.py): its process churn makes 0 the better value, as
Arlitt & Williamson measured; a host with a leaking module, where children
that are never recycled swell until they swap, is the one case P101's own
text allows a limit for, and there the limit measures better than 0.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from test_tune_core import DEBIAN_STOCK, HOST

from advisor.config import LoadOptions, load_config
from advisor.tuner.search.simulated import SimulatedObjective
from advisor.tuner.search.space_derive import derive_space
from advisor.tuner.search.space_lint import CandidateLint, advised_value, edited_line
from advisor.tuner.session.ablation import START, WINNER, role_without
from advisor.tuner.session.ablation_choice import rule_advice
from advisor.tuner.session.advise import advise
from advisor.tuner.session.attribute import Attribution, ablate
from advisor.tuner.session.confirm import confirm
from advisor.tuner.session.session_context import SessionContext, SessionEvents
from advisor.tuner.trial.objective_spec import ProbeSettings

WORST = DEBIAN_STOCK.replace("MaxConnectionsPerChild   0", "MaxConnectionsPerChild 100") \
    .replace("KeepAlive On", "KeepAlive Off")
MCPC = "MaxConnectionsPerChild"
LEAK_COST = 0.6
"""What a child never recycled serves of its peak on the leaking host."""


class _Journal:
    def __init__(self) -> None:
        self.runs: list = []

    def append_gain(self, run) -> None:
        self.runs.append(run)


class _Host:
    """The simulated host as the session's trial objective; `leaks`: a module
    leaks, so a child that is never recycled (MaxConnectionsPerChild 0)
    swaps and serves LEAK_COST of its peak."""

    def __init__(self, space, leaks: bool, seed: int = 5) -> None:
        self.space, self.leaks = space, leaks
        self.simulated = SimulatedObjective(space, HOST, seed=seed)
        self.probes = ProbeSettings()
        self.uncapped = False
        self.points: list[dict] = []

    def __call__(self, point):
        self.points.append(dict(point))
        outcome = self.simulated(point)
        if self.leaks and point[MCPC] == self.space.dimension(MCPC).high:
            outcome.objective = round(outcome.objective * LEAK_COST, 2)
        return outcome


@pytest.fixture()
def worst(tmp_path):
    (tmp_path / "apache2.conf").write_text(WORST)
    cfg = load_config(str(tmp_path / "apache2.conf"), LoadOptions(server_root=str(tmp_path)))
    space = derive_space(cfg, HOST.ram_workers["prefork"])
    lint = CandidateLint(cfg, space)
    settings = SimpleNamespace(ablation_rounds=3, gain_replicates=3, session_dir=tmp_path / "report")
    context = SessionContext(space, lint, settings, SessionEvents(), workload_name="almeida-sessions")
    return context, space, lint


def _session_end(context, runner, winner):
    """The rounds, the pruning and the gain, then the lint gate, as the session runs them."""
    journal = _Journal()
    ablations = ablate(context, runner, winner, journal, [])
    confirmed = confirm(context, runner, journal, [], Attribution(dict(winner), [], ablations), True)
    return ablations, journal, advise(context, runner, journal, confirmed, ablations)


def test_the_rules_advice_is_read_from_its_own_fix_as_a_value_of_the_space(worst):
    context, space, lint = worst
    top = space.dimension(MCPC).high
    assert space.start[MCPC] != top  # the start, 100, is far from P101's 0
    winner = dict(space.start, **{MCPC: 3540})
    advice = rule_advice(context, winner, MCPC)
    assert (advice.code, advice.value, advice.text) == ("P101", top, "0")
    assert advice.phrase() == "MaxConnectionsPerChild 0, which P101 advises"
    # A change that brings no finding has no advice to be measured against.
    assert rule_advice(context, dict(space.start, MaxRequestWorkers=300), "MaxRequestWorkers") is None
    # HostnameLookups On brings P107, whose fix is Off.
    lookups = rule_advice(context, dict(winner, HostnameLookups="On"), "HostnameLookups")
    assert (lookups.code, lookups.value) == ("P107", "Off")
    # A fix that writes another directive, or several words, is no single value.
    assert advised_value(space, MCPC, "MaxRequestWorkers 0") is None
    assert advised_value(space, MCPC, "MaxConnectionsPerChild 0 0") is None
    assert advised_value(space, MCPC, "MaxRequestsPerChild 0") == top
    assert advised_value(space, "KeepAliveTimeout", "KeepAliveTimeout 2") == 2000
    assert edited_line(None, 1) is None


def test_a_change_that_trips_p101_is_ablated_against_0_and_its_reason_quotes_that(worst):
    context, space, lint = worst
    top = space.dimension(MCPC).high
    winner = dict(space.start, **{MCPC: 3540}, MaxRequestWorkers=300)
    assert "P101" in {key[0] for key in lint.brought(winner)}
    runner = _Host(space, leaks=True)
    ablations, journal, advice = _session_end(context, runner, winner)
    without = [run for run in journal.runs if run.role == role_without(MCPC)]
    assert without and all(run.point[MCPC] == top for run in without), "measured against P101's 0"
    assert not any(run.point[MCPC] == space.start[MCPC] for run in journal.runs if run.role != START)
    effect = ablations.effects[MCPC]
    assert (effect.advised_by, effect.start_value) == ("P101", "0") and effect.beyond_noise
    assert effect.to_dict()["advised_by"] == "P101"
    assert advice.winner[MCPC] == 3540
    reason = advice.suppressions[MCPC]
    assert reason.startswith("# apache-advisor: disable=") and "P101" in reason.split("--")[0]
    assert "against MaxConnectionsPerChild 0, which P101 advises, on almeida-sessions" in reason
    assert "without it" not in reason


def test_where_p101s_advice_measures_as_good_the_recommendation_takes_it(worst):
    context, space, lint = worst
    top = space.dimension(MCPC).high
    winner = dict(space.start, **{MCPC: 3540}, MaxRequestWorkers=300)
    ablations, _, advice = _session_end(context, _Host(space, leaks=False), winner)
    effect = ablations.effects[MCPC]
    assert effect.advised_by == "P101" and not effect.beyond_noise
    # The change goes to the advised value, not back to the start's 100.
    assert advice.winner[MCPC] == top
    assert "P101" not in {key[0] for key in lint.brought(advice.winner)}
    # The drop-in writes 0 over the admin's 100 (E406, on purpose); nothing silences P101.
    assert not any("P101" in comment.split("--")[0] for comment in advice.suppressions.values())
    assert any(note.startswith("MaxConnectionsPerChild goes to 0, which P101 advises (the search's best point "
                               "had 3540): its measured effect against the advice is ") for note in advice.notes), \
        advice.notes
    # The recommendation's gain is the advised point's, from the rounds that ran it.
    assert advice.replicates is not None and advice.replicates.source.startswith("the gain comes from the ablation")


def test_a_single_change_whose_rule_advises_other_than_the_start_gets_its_round(worst):
    """One change: the gain's runs measure it against the start (100); a
    round beside P101's 0 is what its suppression needs."""
    context, space, _ = worst
    top = space.dimension(MCPC).high
    winner = dict(space.start, **{MCPC: 3540})
    journal = _Journal()
    ablations = ablate(context, _Host(space, leaks=True), winner, journal, [])
    assert ablations is not None
    assert {run.role for run in journal.runs} == {WINNER, role_without(MCPC), START}
    assert all(run.point[MCPC] == top for run in journal.runs if run.role == role_without(MCPC))


@pytest.mark.parametrize("leaks", [True, False], ids=["the limit beats the advice", "the advice is as good"])
def test_the_report_says_what_each_change_was_measured_against(worst, leaks):
    from advisor.output.tune_files import render_include, render_markdown
    from advisor.tuner.session.report_data import SessionFacts, build_report

    context, space, lint = worst
    winner = dict(space.start, **{MCPC: 3540}, MaxRequestWorkers=300)
    ablations, _, advice = _session_end(context, _Host(space, leaks=leaks), winner)
    facts = SessionFacts(workload="almeida-sessions", stop_reason="budget", produced_at="2026-12-07T05:00:00+00:00")
    report = build_report(lint.cfg, space, [], advice.winner, facts, replicates=advice.replicates,
                          notes=advice.notes, ablations=ablations, suppressions=advice.suppressions, lint=lint)
    assert report.no_response is None and report.recommendation.changes
    text, include = render_markdown(report), render_include(report)
    row = next(line for line in text.splitlines() if line.startswith("| MaxConnectionsPerChild |") and "→" in line)
    if leaks:
        assert "| 100 → 3540 |" in row and "the winner against MaxConnectionsPerChild 0, which P101 advises" in row
        assert "against MaxConnectionsPerChild 0, which P101 advises" in include
        assert report.to_dict()["ablations"]["effects"][MCPC]["advised_by"] == "P101"
    else:
        assert "| 100 → 0 |" in row and "P101's advice: the search's 3540 measured against it" in row
        assert "MaxConnectionsPerChild 0" in [line.strip() for line in include.splitlines()]
        assert "P101" not in include


def test_a_rule_whose_fix_is_no_single_value_is_measured_against_the_start_and_the_report_says_so(tmp_path):
    """P112 (a short ListenBacklog, info) gives its fix as text only, with no
    edit of the line: at --fail-on info its ablation keeps today's
    comparison, with the start, and a note says that is not the rule's."""
    from advisor.tuner.search.space_lint import LintPolicy

    (tmp_path / "apache2.conf").write_text(DEBIAN_STOCK)
    cfg = load_config(str(tmp_path / "apache2.conf"), LoadOptions(server_root=str(tmp_path)))
    space = derive_space(cfg, HOST.ram_workers["prefork"])
    lint = CandidateLint(cfg, space, policy=LintPolicy(fail_on="info"))
    settings = SimpleNamespace(ablation_rounds=3, gain_replicates=3, session_dir=tmp_path / "report")
    context = SessionContext(space, lint, settings, SessionEvents())
    winner = dict(space.start, MaxRequestWorkers=300, ListenBacklog=100)
    assert rule_advice(context, winner, "ListenBacklog").value is None
    journal, notes = _Journal(), []
    ablations = ablate(context, _Host(space, leaks=False), winner, journal, [], notes=notes)
    without = [run for run in journal.runs if run.role == role_without("ListenBacklog")]
    assert without and all(run.point["ListenBacklog"] == space.start["ListenBacklog"] for run in without)
    assert ablations.effects["ListenBacklog"].advised_by == ""
    assert any(note.startswith("P112 advises no single value of ListenBacklog") for note in notes), notes
