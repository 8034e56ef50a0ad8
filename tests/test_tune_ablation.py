"""The ablations: which of the winner's changes earned the gain, measured.

The arithmetic is the gain's (a t interval on the log ratio, pooled and
floored: tuner/stats/ratio.py); what
these tests hold is the order the runs go in, what counts as an effect, and
the decision each effect leads to.
"""

from __future__ import annotations

import pytest

from advisor.tuner.session.ablation import (WINNER, ablation_order, dimension_of, measure_effects,
                                            role_without)
from advisor.tuner.session.ablation_choice import revert_unless_alone, single_ablation_order, single_slots
from advisor.tuner.session.advise import gate_the_gain
from advisor.tuner.session.attribute import ablate
from advisor.tuner.session.confirm import gain_from_rounds
from advisor.tuner.session.lint_gate import lint_gate
from advisor.tuner.session.pruning import drop_unearned, whole_when_no_part_earns
from advisor.tuner.trial.objective_spec import ProbeSettings


def test_every_round_measures_each_point_once_and_rotates_the_ablations():
    names = ["KeepAlive", "ListenBacklog", "MaxConnectionsPerChild"]
    order = ablation_order(names, 6)
    rounds = [order[i:i + 4] for i in range(0, len(order), 4)]
    for index, r in enumerate(rounds):
        # Every other round backwards: it begins with the point the last one
        # ended on, whose warm pool it keeps.
        assert (r[0] if index % 2 == 0 else r[-1]) == WINNER
        assert sorted(dimension_of(x) for x in r if x != WINNER) == names
        if index:
            assert r[0] == rounds[index - 1][-1]
    # No change is always measured right next to the winner's warm pool.
    beside_winner = [dimension_of(r[1] if index % 2 == 0 else r[-2]) for index, r in enumerate(rounds)]
    assert len(set(beside_winner)) == 3
    with pytest.raises(ValueError):
        ablation_order(["KeepAlive"], 0)


def _runs(winner: list[float], without: dict[str, list[float]]) -> list[tuple[str, float, bool]]:
    order = ablation_order(list(without), len(winner))
    seen = {name: iter(values) for name, values in without.items()}
    values = iter(winner)
    out = []
    for role in order:
        name = dimension_of(role)
        out.append((role, next(values) if name is None else next(seen[name]), True))
    return out


def test_a_change_that_carries_the_gain_is_kept_and_one_within_noise_is_not():
    runs = _runs([640, 655, 631, 648, 660],
                 {"MaxConnectionsPerChild": [122, 118, 130, 125, 119],  # reverting it loses 5x
                  "ListenBacklog": [645, 629, 650, 652, 640]})          # reverting it changes nothing
    result = measure_effects(runs, {"MaxConnectionsPerChild": ("0", "100"), "ListenBacklog": ("136", "511")})
    mcpc, backlog = result.effects["MaxConnectionsPerChild"], result.effects["ListenBacklog"]
    assert mcpc.beyond_noise and mcpc.verdict() == "a gain" and 4.5 < mcpc.ratio < 6.0
    assert mcpc.low > 1.0
    assert not backlog.beyond_noise and backlog.verdict() == "within noise"
    assert backlog.low <= 1.0 <= backlog.high
    assert [e.dimension for e in result.reverted()] == ["ListenBacklog"]
    assert "95 % CI" in mcpc.sentence() and "5 runs of the winner" in mcpc.sentence()


def test_a_change_that_measured_a_loss_is_reverted():
    runs = _runs([500, 505, 498], {"EnableSendfile": [600, 610, 598]})
    effect = measure_effects(runs, {"EnableSendfile": ("Off", "On")}).effects["EnableSendfile"]
    assert effect.verdict() == "a loss" and effect.high < 1.0
    assert not effect.beyond_noise


def test_invalid_runs_count_for_nothing_and_too_few_say_so():
    runs = [(WINNER, 500.0, True), (role_without("KeepAlive"), 100.0, False),
            (WINNER, 510.0, True), (role_without("KeepAlive"), 120.0, True)]
    effect = measure_effects(runs, {"KeepAlive": ("Off", "On")}).effects["KeepAlive"]
    assert not effect.measured and "too few valid runs" in effect.note
    assert effect.verdict() == effect.note


def test_without_the_change_no_rate_met_the_slo_is_a_decisive_gain():
    runs = _runs([300, 310, 305], {"KeepAlive": [0, 0, 0]})
    effect = measure_effects(runs, {"KeepAlive": ("Off", "On")}).effects["KeepAlive"]
    assert effect.beyond_noise and effect.without_served_nothing
    assert "no rate met the SLO" in effect.sentence()
    assert effect.to_dict()["verdict"] == "a gain"


# ---- the changes the model saw no effect of, measured together -----------------


def _grouped_context(space, lint):
    from types import SimpleNamespace

    from advisor.tuner.session.session_context import SessionContext, SessionEvents

    return SessionContext(space, lint, SimpleNamespace(ablation_rounds=3, gain_replicates=3), SessionEvents())


class _Journal:
    def __init__(self):
        self.runs = []

    def append_gain(self, run):
        self.runs.append(run)


class _Runner:
    """Serves a rate set by which of the group's changes a point keeps:
    the group carries the whole gain (the HTTPS session's search best,
    1,673-2,006 replies/s, against 1,172-1,246 with them returned)."""

    def __init__(self, space, group, carries):
        self.space, self.group, self.carries = space, group, carries
        self.uncapped, self.points, self.jitter = False, [], iter([0.0, 9.0, -7.0, 4.0, -3.0, 6.0] * 20)
        self.probes = ProbeSettings()  # the knee bracket that floors the rounds' intervals

    def __call__(self, point):
        from advisor.tuner.search.optimizer import TrialOutcome

        self.points.append(dict(point))
        kept = all(point[name] != self.space.start[name] for name in self.group)
        rate = (1800.0 if kept and self.carries else 1200.0) + next(self.jitter)
        return TrialOutcome(rate, True, "server CPU", {})


@pytest.mark.parametrize("carries", [True, False], ids=["the group carries the gain", "the group does nothing"])
def test_the_changes_the_model_ignored_are_one_ablation_kept_or_returned_on_its_measure(carries, tmp_path):
    from test_tune_core import HOST, load_stock

    from advisor.tuner.search.space_lint import CandidateLint
    from advisor.tuner.session.ablation import GROUP_JOIN

    cfg, space = load_stock(tmp_path)
    lint = CandidateLint(cfg, space)
    group = ["MaxRequestWorkers", "ListenBacklog"]
    winner = dict(space.start, MaxRequestWorkers=space.start["MaxRequestWorkers"] + 100, ListenBacklog=300,
                  KeepAliveTimeout=2000)
    context = _grouped_context(space, lint)
    runner = _Runner(space, group, carries)
    journal = _Journal()
    ablations = ablate(context, runner, winner, journal, [], together=group)
    roles = {run.role for run in journal.runs}
    assert roles == {WINNER, role_without("KeepAliveTimeout"), role_without(GROUP_JOIN.join(group)), "start"}
    assert len(journal.runs) == 3 * 4  # one run less per round than one ablation each (the start runs too)
    starts = [run for run in journal.runs if run.role == "start"]
    assert len(starts) == 3 and all(run.point == space.start for run in starts)
    together = ablations.effect_of("ListenBacklog")
    assert together is ablations.effect_of("MaxRequestWorkers") and together.members == group
    assert ablations.to_dict()["by_dimension"]["ListenBacklog"] == GROUP_JOIN.join(group)
    point, notes = drop_unearned(context, winner, ablations)
    if carries:
        assert together.beyond_noise and 1.4 < together.ratio < 1.6
        assert all(point[name] == winner[name] for name in group)
        assert not any("ListenBacklog" in note for note in notes)
    else:
        assert not together.beyond_noise
        assert all(point[name] == space.start[name] for name in group)
        assert any(note.startswith("MaxRequestWorkers, ListenBacklog stay ") and "together is within noise" in note
                   for note in notes)
    # KeepAliveTimeout did nothing in either world: it goes back on its own measure.
    assert point["KeepAliveTimeout"] == space.start["KeepAliveTimeout"]
    gain = gain_from_rounds(context, point, ablations)
    if carries:
        # The recommended point is the winner less KeepAliveTimeout, which
        # one role of the rounds measured beside the start: no second set of runs.
        assert gain is not None and len(gain.start) == len(gain.winner) == 3
        assert min(gain.winner) > 1700 > 1300 > max(gain.start)
    else:
        # Two returns: no role measured what is recommended (here the start
        # itself, which has no gain to measure).
        assert gain is None


class _EitherRunner(_Runner):
    """Two changes that stand in for each other: either one gives the gain."""

    def __call__(self, point):
        from advisor.tuner.search.optimizer import TrialOutcome

        self.points.append(dict(point))
        either = any(point[name] != self.space.start[name] for name in self.group)
        return TrialOutcome((1800.0 if either else 1200.0) + next(self.jitter), True, "server CPU", {})


def test_changes_that_stand_in_for_each_other_are_kept_together_on_the_rounds_measure(tmp_path):
    """Each reverted alone changes nothing (the other covers for it); both
    reverted lose the gain. Pruning one at a time would recommend the start,
    which the same rounds measured a third below the winner."""
    from test_tune_core import load_stock

    from advisor.tuner.search.space_lint import CandidateLint

    cfg, space = load_stock(tmp_path)
    context = _grouped_context(space, CandidateLint(cfg, space))
    pair = ["MaxRequestWorkers", "ListenBacklog"]
    winner = dict(space.start, MaxRequestWorkers=space.start["MaxRequestWorkers"] + 100, ListenBacklog=300)
    ablations = ablate(context, _EitherRunner(space, pair, True), winner, _Journal(), [])
    assert all(not ablations.effect_of(name).beyond_noise for name in pair)
    # Sending both back would recommend a point no round ran: the round that
    # sent back one of them, and beat the start, is recommended. Never the
    # one that keeps ListenBacklog, which is recommended only on its own
    # ablation's measure.
    pruned, notes = drop_unearned(context, winner, ablations)
    assert pruned == dict(winner, ListenBacklog=space.start["ListenBacklog"])
    assert any(note.startswith("MaxRequestWorkers keeps the search's ") and "a point no round ran" in note
               for note in notes), notes
    gain = gain_from_rounds(context, pruned, ablations)
    assert gain is not None and min(gain.winner) > 1700 > 1300 > max(gain.start)
    assert whole_when_no_part_earns(context, pruned, ablations) is None
    # Where no single return beat the start (each round's point measured only
    # beside the winner), the whole stands in for its parts.
    point, replicates, why = whole_when_no_part_earns(context, dict(space.start), ablations)
    assert point == winner
    assert min(replicates.winner) > 1700 > 1300 > max(replicates.start)
    assert "kept together" in why and "no single change carries the gain" in why
    # A whole that did not beat the start keeps the start.
    flat = ablate(context, _EitherRunner(space, [], True), winner, _Journal(), [])
    assert whole_when_no_part_earns(context, drop_unearned(context, winner, flat)[0], flat) is None


def test_the_rounds_start_runs_are_read_back_from_the_journal_on_resume(tmp_path):
    """A resume takes the completed ablation runs from the journal, the
    start's included (it gives the gain), in the order they ran."""
    from test_tune_core import header, load_stock

    from advisor.tuner.search.space_lint import CandidateLint
    from advisor.tuner.session.journal import Journal, read_journal

    cfg, space = load_stock(tmp_path)
    context = _grouped_context(space, CandidateLint(cfg, space))
    winner = dict(space.start, MaxRequestWorkers=space.start["MaxRequestWorkers"] + 100, ListenBacklog=300)
    journal = Journal.create(tmp_path / "report", header(space))
    first = ablate(context, _Runner(space, ["ListenBacklog"], True), winner, journal, [])
    runs = read_journal(journal.path).ablation_runs
    assert [r.role for r in runs].count("start") == 3
    again = _Runner(space, ["ListenBacklog"], True)
    resumed = ablate(context, again, winner, journal, runs)
    assert again.points == []  # every run was taken from the journal
    assert resumed.replicates_for("winner").start == first.replicates_for("winner").start


# ---- the rounds stop once every comparison is settled --------------------------


def test_settled_needs_three_rounds_and_a_decided_interval_for_every_role():
    from advisor.tuner.session.ablation import START, settled

    clear = _runs([1800, 1810, 1795], {"A": [1200, 1190, 1210], "B": [1802, 1799, 1805]})
    clear += [(START, v, True) for v in (600, 610, 590)]
    roles = [WINNER, role_without("A"), role_without("B"), START]
    # Runs precise to 0.5 % settle B as no effect within ±5 %...
    assert settled(clear, roles, floor_sd=0.005)
    # ...but figures known only to a 10 % knee bracket cannot claim that in
    # three rounds, however alike they read: the floor keeps B open.
    assert not settled(clear, roles)
    assert settled(clear, [WINNER, role_without("A"), START])
    # Two rounds settle nothing, however clear.
    assert not settled(clear[:6], [WINNER, role_without("A"), role_without("B")], floor_sd=0.005)
    # A role whose interval straddles 1.0 widely is not settled: more rounds are needed.
    noisy = _runs([1800, 1500, 2100], {"A": [1200, 1900, 1600]})
    assert not settled(noisy, [WINNER, role_without("A")])


class _NoisyRunner(_Runner):
    """KeepAliveTimeout's effect is noise as wide as the effect itself."""

    def __init__(self, space, noisy, rel_sd=None):
        super().__init__(space, ["ListenBacklog"], True)
        self.noisy, self.rel_sd = noisy, rel_sd
        self.wide = iter([300.0, -280.0, 260.0, -310.0, 290.0, -250.0] * 10)

    def __call__(self, point):
        outcome = super().__call__(point)
        if self.rel_sd is not None:  # the trial's own measured uncertainty
            outcome.details = {"uncertainty": {"rel_sd": self.rel_sd}}
        if self.noisy and point["KeepAliveTimeout"] == self.space.start["KeepAliveTimeout"]:
            outcome.objective += next(self.wide)
        return outcome


@pytest.mark.parametrize("noisy, rel_sd", [(False, 0.004), (False, None), (True, 0.004)],
                         ids=["every effect clear, precise runs", "every effect clear, a knee bracket's precision",
                              "one effect in the noise"])
def test_the_rounds_stop_early_only_when_every_comparison_is_settled(noisy, rel_sd, tmp_path):
    from test_tune_core import load_stock

    from advisor.tuner.search.space_lint import CandidateLint

    cfg, space = load_stock(tmp_path)
    context = _grouped_context(space, CandidateLint(cfg, space))
    context.settings.ablation_rounds = 5
    winner = dict(space.start, ListenBacklog=300, KeepAliveTimeout=2000)
    journal = _Journal()
    ablations = ablate(context, _NoisyRunner(space, noisy, rel_sd), winner, journal, [])
    per_round = 4  # winner, two ablations, the start
    if noisy or rel_sd is None:
        assert len(journal.runs) == 5 * per_round and not ablations.notes
    else:
        assert len(journal.runs) == 3 * per_round
        assert "stopped after 3 of 5 rounds" in ablations.notes[0]
        assert ablations.effect_of("ListenBacklog").beyond_noise
        assert not ablations.effect_of("KeepAliveTimeout").beyond_noise


class _RankingModel:
    """What the session asks of its surrogate when it ranks the winner's
    changes: the modelled ratio of the winner to the winner less one change."""

    def __init__(self, space, strength):
        self.space, self.strength = space, strength

    def ratio(self, point, other):
        reverted = [name for name in point if point[name] != other[name]]
        return self.strength.get(reverted[0], 1.0), None, None


def test_past_two_credited_changes_the_weaker_ones_join_the_group_so_a_round_stays_at_five_points(tmp_path):
    """The README's session at 07:38: a winner with ten changes, six the
    model credited, planned 10 points a round (50 runs). The two strongest
    are measured one by one, the rest together with those it ignored."""
    from test_tune_core import load_stock

    from advisor.tuner.search.space_lint import CandidateLint
    from advisor.tuner.session.ablation import GROUP_JOIN
    from advisor.tuner.session.ablation_choice import MAX_SINGLE_ABLATIONS

    cfg, space = load_stock(tmp_path)
    lint = CandidateLint(cfg, space)
    winner = dict(space.start, MaxRequestWorkers=space.start["MaxRequestWorkers"] + 100, ListenBacklog=300,
                  KeepAliveTimeout=2000, MaxKeepAliveRequests=500, EnableMMAP="Off")
    context = _grouped_context(space, lint)
    # The model credits MaxRequestWorkers least: the pool's size is measured alone all the same.
    context.model = _RankingModel(space, {"MaxRequestWorkers": 1.01, "KeepAliveTimeout": 0.8,
                                               "MaxKeepAliveRequests": 1.05, "EnableMMAP": 1.02})
    runner = _Runner(space, ["MaxRequestWorkers"], True)
    journal = _Journal()
    ablate(context, runner, winner, journal, [], together=["ListenBacklog"])
    roles = {run.role for run in journal.runs}
    # MaxRequestWorkers first, then x0.8 (a modelled loss is as strong a claim as a gain), one by one.
    group = GROUP_JOIN.join(["ListenBacklog", "MaxKeepAliveRequests", "EnableMMAP"])
    assert roles == {WINNER, "start", role_without("MaxRequestWorkers"), role_without("KeepAliveTimeout"),
                     role_without(group)}, roles
    assert MAX_SINGLE_ABLATIONS == 2 and len(journal.runs) == 3 * 5
    # Near miss: two credited changes are both measured alone, nothing is grouped for them.
    context2 = _grouped_context(space, lint)
    context2.model = context.model
    two = dict(space.start, MaxRequestWorkers=space.start["MaxRequestWorkers"] + 100, KeepAliveTimeout=2000)
    journal2 = _Journal()
    ablate(context2, _Runner(space, ["MaxRequestWorkers"], True), two, journal2, [], together=[])
    assert {run.role for run in journal2.runs} == {WINNER, "start", role_without("MaxRequestWorkers"),
                                                   role_without("KeepAliveTimeout")}


def test_the_mpm_is_always_measured_on_its_own():
    from types import SimpleNamespace

    from advisor.tuner.session.session_context import SessionContext, SessionEvents

    context = SessionContext(SimpleNamespace(start={"MPM": "prefork", "A": 1, "B": 1}), None, None, SessionEvents())
    context.space = SimpleNamespace(start={"MPM": "prefork", "A": 1, "B": 1, "KeepAlive": "On"})
    context.model = SimpleNamespace(ratio=lambda point, other: (
        {"A": 3.0, "B": 1.2, "KeepAlive": 1.0, "MPM": 1.0}[next(k for k in point if point[k] != other[k])],
        None, None))
    winner = {"MPM": "worker", "A": 2, "B": 0.5, "KeepAlive": "Off"}
    ranked = single_ablation_order(context, winner, ["A", "B", "KeepAlive", "MPM"])
    assert ranked == ["MPM", "KeepAlive", "A", "B"]


def test_a_change_measured_first_is_not_grouped_when_the_model_saw_no_effect_of_it():
    from advisor.tuner.session.ablation_choice import split_unseen

    # The worst-practice session: the model saw no effect of the per-child
    # limit or the pool; both stay candidates for an ablation of their own.
    together, first = split_unseen(["MaxRequestWorkers", "MaxConnectionsPerChild", "EnableSendfile"])
    assert together == ["EnableSendfile"] and first == ["MaxRequestWorkers", "MaxConnectionsPerChild"]
    # Near miss: changes outside FIRST_ABLATED stay in the group.
    assert split_unseen(["EnableSendfile", "ListenBacklog"]) == (["EnableSendfile", "ListenBacklog"], [])


def test_a_roles_first_run_in_the_rounds_starts_from_the_winners_uncapped_peak():
    from types import SimpleNamespace

    from advisor.tuner.trial.objective import TrialObjective

    runner = TrialObjective.__new__(TrialObjective)
    runner.space = SimpleNamespace(names=["A"])
    best = {"A": 1}
    runner.incumbent = lambda: best
    runner.peaks = {(1,): [283.0]}  # the search's incumbent, capped
    runner.uncapped_peaks = {}
    runner.highest_uncapped_peak = None
    runner.uncapped = True
    # No run of the rounds yet: the incumbent's peak.
    assert runner._start_rate({"A": 2}) == 283.0
    # The winner measured 2,264 uncapped (and the start 35): a role not yet run starts there.
    runner.peaks[(3,)] = [2264.0]
    runner.highest_uncapped_peak = 2264.0
    assert runner._start_rate({"A": 2}) == 2264.0
    # Its own peak, once measured, comes first.
    runner.peaks[(2,)] = [1800.0]
    assert runner._start_rate({"A": 2}) == 1800.0
    # Near miss: a search trial (capped) still starts from the incumbent.
    runner.uncapped = False
    assert runner._start_rate({"A": 4}) == 283.0


def test_an_uncapped_run_starts_from_its_uncapped_peaks_with_a_small_first_step():
    """The README session of 2026-11-27 17:04: the start's search trial
    measured 160 sessions/s on a cold pool and its rounds 243 to 259; every
    later run started from a mean that kept the 160 and took 4 or 5 probes.
    A role's first run started at the winner's peak and doubled from it
    (5 to 7 probes, two of them invalid at twice the peak)."""
    from types import SimpleNamespace

    from advisor.tuner.trial.objective import GUESS_STEP, TrialObjective

    runner = TrialObjective.__new__(TrialObjective)
    runner.space = SimpleNamespace(names=["A"])
    runner.probes = SimpleNamespace(tolerance=0.1)
    runner.incumbent = lambda: {"A": 9}
    runner.peaks = {(1,): [160.0, 259.0, 254.0]}
    runner.uncapped_peaks = {(1,): [259.0, 254.0]}
    runner.highest_uncapped_peak = 351.0
    runner.uncapped = True
    assert runner._start_rate({"A": 1}) == pytest.approx(256.5)
    assert runner._first_step({"A": 1}) == pytest.approx(1.1)
    # Only the search's figure: a guess, a step of 1.25, not the bracket's 1.1.
    runner.peaks[(2,)] = [375.0]
    assert runner._start_rate({"A": 2}) == 375.0
    assert runner._first_step({"A": 2}) == GUESS_STEP
    # A role not measured at all starts from the winner's uncapped peak, with the same step.
    assert runner._start_rate({"A": 3}) == 351.0 and runner._first_step({"A": 3}) == GUESS_STEP
    # Near miss: a search trial keeps its mean of every peak and its step of
    # 1.1 from its own peak; from the incumbent's it steps by GUESS_STEP,
    # not doubling to its cap (three overloaded probes a trial, 2026-11-28).
    runner.uncapped = False
    assert runner._start_rate({"A": 1}) == pytest.approx((160 + 259 + 254) / 3)
    assert runner._first_step({"A": 1}) == pytest.approx(1.1)
    assert runner._first_step({"A": 3}) == GUESS_STEP


def test_hostnamelookups_on_rides_in_no_group_but_off_may(tmp_path):
    """The README's no-switch session of 2026-11-27 19:16 kept a group of
    seven at +19.6 %, HostnameLookups On among them: on loopback the lookup
    costs nothing, and the group's gain came from the others. A change to
    On without an ablation of its own now goes back before the rounds; a
    change to Off (from a worst-practice start) stays in the group."""
    from test_tune_core import load_stock

    from advisor.tuner.search.space_lint import CandidateLint

    cfg, space = load_stock(tmp_path)
    lint = CandidateLint(cfg, space)
    assert space.start["HostnameLookups"] == "Off"
    winner = dict(space.start, MaxRequestWorkers=space.start["MaxRequestWorkers"] + 100,
                  MaxConnectionsPerChild=20000, HostnameLookups="On", KeepAliveTimeout=2000)
    context = _grouped_context(space, lint)
    context.model = _RankingModel(space, {"MaxRequestWorkers": 1.3, "MaxConnectionsPerChild": 1.1,
                                               "HostnameLookups": 1.05, "KeepAliveTimeout": 1.02})
    point, notes = revert_unless_alone(context, winner, together=["KeepAliveTimeout"])
    assert point == dict(winner, HostnameLookups="Off")
    assert len(notes) == 1 and notes[0].startswith("HostnameLookups stays Off (the search's best point had On)")
    assert "went to MaxRequestWorkers, MaxConnectionsPerChild" in notes[0]
    # Near miss: from a start with lookups On, the change to Off stays for the group's measure.
    space.start["HostnameLookups"] = "On"
    off = dict(winner, HostnameLookups="Off")
    kept, none = revert_unless_alone(context, off, together=["KeepAliveTimeout"])
    assert kept == off and none == []


def test_listenbacklog_without_an_ablation_of_its_own_goes_back_before_the_rounds(tmp_path):
    """Issue 28's worst-practice session: ListenBacklog 511 -> 136 rode in a
    group of six whose ablation measured +89 % and was recommended with it.
    When the two single ablations go to other changes it goes back to the
    start's value before the rounds, with the reason, so the rounds measure
    what is recommended."""
    from test_tune_core import load_stock

    from advisor.tuner.search.space_lint import CandidateLint
    from advisor.tuner.session.ablation import GROUP_JOIN

    cfg, space = load_stock(tmp_path)
    lint = CandidateLint(cfg, space)
    winner = dict(space.start, MaxRequestWorkers=space.start["MaxRequestWorkers"] + 100, ListenBacklog=136,
                  KeepAliveTimeout=2000, EnableMMAP="Off")
    context = _grouped_context(space, lint)
    context.model = _RankingModel(space, {"MaxRequestWorkers": 1.01, "KeepAliveTimeout": 0.8,
                                               "ListenBacklog": 1.1, "EnableMMAP": 1.02})
    point, notes = revert_unless_alone(context, winner, together=["EnableMMAP"])
    assert point["ListenBacklog"] == space.start["ListenBacklog"]
    assert {k: v for k, v in point.items() if k != "ListenBacklog"} == \
        {k: v for k, v in winner.items() if k != "ListenBacklog"}
    assert len(notes) == 1 and notes[0].startswith(f"ListenBacklog stays {space.start['ListenBacklog']} "
                                                   "(the search's best point had 136)")
    assert "went to MaxRequestWorkers, ListenBacklog" not in notes[0]
    assert "went to MaxRequestWorkers, KeepAliveTimeout" in notes[0]
    journal = _Journal()
    ablate(context, _Runner(space, ["MaxRequestWorkers"], True), point, journal, [], together=["EnableMMAP"])
    roles = {run.role for run in journal.runs}
    assert not any("ListenBacklog" in role for role in roles), roles
    # Near miss: ranked into a single slot (the model credits it most after
    # the pool), it is measured on its own and stays for its measure to judge.
    context.model = _RankingModel(space, {"MaxRequestWorkers": 1.01, "KeepAliveTimeout": 0.8,
                                               "ListenBacklog": 1.9, "EnableMMAP": 1.02})
    two = dict(winner)
    kept, none = revert_unless_alone(context, two, together=["EnableMMAP"])
    assert kept == two and none == []
    journal2 = _Journal()
    ablate(context, _Runner(space, ["MaxRequestWorkers"], True), kept, journal2, [], together=["EnableMMAP"])
    roles2 = {run.role for run in journal2.runs}
    assert role_without("ListenBacklog") in roles2
    assert role_without(GROUP_JOIN.join(["EnableMMAP", "KeepAliveTimeout"])) in roles2, roles2


# ---- the lint gate: the recommendation lint keeps, and the gain that is its own -----

M = "/usr/lib/apache2/modules"
# The README's session of 2026-11-28 (668b23b): the rounds' winner under event.
README_WINNER = {"MPM": "event", "MaxRequestWorkers": 238, "ThreadsPerChild": 61, "MinSpareThreads": 187,
                 "MaxSpareThreads": 361, "AsyncRequestWorkerFactor": 6, "MaxConnectionsPerChild": 6542,
                 "KeepAliveTimeout": 746, "MaxKeepAliveRequests": 931}


def _switch_context(tmp_path):
    from advisor.config import LoadOptions, load_config
    from advisor.tuner.search.space_derive import derive_space
    from advisor.tuner.search.space_lint import CandidateLint

    main = tmp_path / "httpd.conf"
    main.write_text(f"LoadModule mpm_prefork_module {M}/mod_mpm_prefork.so\n"
                    f"LoadModule cgi_module {M}/mod_cgi.so\nMaxRequestWorkers 256\n")
    cfg = load_config(str(main), LoadOptions(server_root=str(tmp_path)))
    space = derive_space(cfg, {"prefork": 2867, "worker": 17168, "event": 9392}, allow_mpm_switch=True)
    lint = CandidateLint(cfg, space)
    context = _grouped_context(space, lint)
    context.settings.session_dir = tmp_path / "report"
    return space, lint, context


def test_the_gate_lints_again_until_a_finding_that_stands_on_several_values_is_gone(tmp_path):
    """The README's session sent MinSpareThreads back for P105 (the line the
    finding points at), but the static pool stood on StartServers 3 x
    ThreadsPerChild 61 = MaxRequestWorkers 183, and the tuned tree kept the
    warning. The gate lints again after each return."""
    space, lint, context = _switch_context(tmp_path)
    winner = dict(space.start, **README_WINNER)
    codes = {key[0] for key in lint.brought(winner)}
    assert codes == {"P101", "P105"}, codes  # the start's own findings (no mod_reqtimeout...) are not the point's
    point, suppressions, notes = lint_gate(context, winner, None, None)
    assert lint.brought(point) == [], lint.brought(point)
    assert point["MPM"] == "event" and point["MaxConnectionsPerChild"] == space.start["MaxConnectionsPerChild"]
    returned = [name for name in space.names if point[name] != winner[name]]
    assert "MinSpareThreads" in returned and len(returned) >= 3, returned
    assert {"ThreadsPerChild", "MaxRequestWorkers", "MaxSpareThreads"} & set(returned), returned
    assert any("P105" in note and "with it the tuned tree brings lint P105" in note for note in notes), notes
    assert not any(code in comment for comment in suppressions.values() for code in ("P101", "P105"))
    # Before the rounds, a change the rounds measure on their own stays for them to judge.
    early, none, _ = lint_gate(context, winner, None, None, measured_later=["MPM", "MaxRequestWorkers"])
    assert none == {} and early["MaxRequestWorkers"] == winner["MaxRequestWorkers"]
    assert lint.brought(early) == []


def test_the_report_matches_a_finding_by_its_message_under_another_mpm(tmp_path):
    """Under another MPM the tuned tree is judged on its own, and httpd's
    defaults (ServerTokens Full, no mod_reqtimeout) stand at another line
    there: the report listed each as both gone and added."""
    from advisor.tuner.session.report_data import lint_comparison

    space, lint, context = _switch_context(tmp_path)
    point, _, _ = lint_gate(context, dict(space.start, **README_WINNER), None, None)
    comparison = lint_comparison(lint, point, {})
    # (P108, info, may stand in both: "EnableSendfile is Off: httpd's default,
    # not written" is gone, "EnableSendfile Off for the whole server" comes
    # with the include, which writes the start's value.)
    gone = {f["code"] for f in comparison["gone"] if f["severity"] != "info"}
    added = {f["code"] for f in comparison["added"] if f["severity"] != "info"}
    assert not gone & added, (comparison["gone"], comparison["added"])
    assert not {"S501", "S503", "R302"} & (gone | added)


def test_the_gain_stated_is_the_gated_points_not_the_whole_winners(tmp_path):
    """The README's session of 2026-11-28 fell back to the whole winner with
    its gain from the rounds, then the lint gate sent MaxConnectionsPerChild
    6542 (P101) back, and the report stated x1.38 for a point no run
    measured. The gain now comes from the round that ran the gated point."""
    from test_tune_core import load_stock

    from advisor.tuner.search.space_lint import CandidateLint

    cfg, space = load_stock(tmp_path)
    lint = CandidateLint(cfg, space)
    context = _grouped_context(space, lint)
    context.settings.session_dir = tmp_path / "report"
    pair = ["KeepAliveTimeout", "MaxConnectionsPerChild"]
    winner = dict(space.start, KeepAliveTimeout=2000, MaxConnectionsPerChild=6542)
    assert "P101" in {key[0] for key in lint.brought(winner)}
    runner, journal = _EitherRunner(space, pair, True), _Journal()
    ablations = ablate(context, runner, winner, journal, [])
    assert all(not ablations.effect_of(name).beyond_noise for name in pair)
    # The fallback to the whole winner, as the README's session took it.
    point, whole, _ = whole_when_no_part_earns(context, dict(space.start), ablations)
    assert point == winner
    gated, replicates, suppressions, notes = gate_the_gain(context, point, ablations, whole, runner, journal)
    assert gated == dict(winner, MaxConnectionsPerChild=space.start["MaxConnectionsPerChild"])
    assert "P101" not in {key[0] for key in lint.brought(gated)}
    ran = ablations.replicates_for(role_without("MaxConnectionsPerChild"))
    assert replicates.winner == ran.winner and replicates.winner != whole.winner
    assert any("MaxConnectionsPerChild stays" in note for note in notes)
    assert "the gain comes from the ablation rounds" in replicates.source
    assert not any("P101" in comment for comment in suppressions.values())
    runs = len(journal.runs)
    # No round ran the gated point: its gain is measured on its own, not taken from the whole's.
    no_rounds = type(ablations)(effects=ablations.effects, winner_point=ablations.winner_point,
                                outcomes=[o for o in ablations.outcomes
                                          if o[0] != role_without("MaxConnectionsPerChild")])
    gated, own, _, _ = gate_the_gain(context, point, no_rounds, whole, runner, journal)
    assert own is not None and len(own.start) == len(own.winner) == 3
    assert len(journal.runs) == runs + 6 and all(run.point in (space.start, gated) for run in journal.runs[runs:])


def test_under_an_mpm_switch_the_mpm_alone_is_measured_on_its_own_and_the_new_pool_together(tmp_path):
    """Rounds of five points under a switch took 14 minutes of the README's
    session of 2026-11-28: the MPM is measured alone, the new MPM's pool and
    keep-alive settings as one group, four points a round."""
    from advisor.tuner.session.ablation_choice import MAX_SINGLE_ABLATIONS, single_ablations

    space, lint, context = _switch_context(tmp_path)
    winner = dict(space.start, **README_WINNER)
    changed, alone, weaker = single_slots(context, winner, together=[])
    assert alone == ["MPM"] and set(weaker) == set(changed) - {"MPM"} and len(weaker) == 8
    assert single_ablations(changed) == 1
    # Near miss: without the MPM among the changes, two are measured alone.
    prefork = dict(winner, MPM="prefork")
    changed, alone, _ = single_slots(context, prefork, together=[])
    assert "MPM" not in changed and len(alone) == MAX_SINGLE_ABLATIONS == 2


class _MpmOrPoolRunner(_Runner):
    """The event MPM, or prefork with a larger pool: either gives the gain."""

    def __call__(self, point):
        from advisor.tuner.search.optimizer import TrialOutcome

        self.points.append(dict(point))
        either = point["MPM"] != "prefork" or point["MaxRequestWorkers"] != self.space.start["MaxRequestWorkers"]
        return TrialOutcome((1800.0 if either else 1200.0) + next(self.jitter), True, "server CPU", {})


def test_a_pruning_keeps_the_mpm_only_on_its_own_measure(tmp_path):
    """The README's session of 2026-11-28 10:55: the event MPM with the
    start's pool, and prefork with the winner's pool, each beat the start by
    about a third; each of the two was within noise of the winner. The
    pruning sends the MPM back (a switch is a full restart and another
    pool), not the pool."""
    space, lint, context = _switch_context(tmp_path)
    winner = dict(space.start, MPM="event", MaxRequestWorkers=17168, MaxKeepAliveRequests=1000)
    ablations = ablate(context, _MpmOrPoolRunner(space, [], True), winner, _Journal(), [],
                                together=["MaxKeepAliveRequests"])
    assert [name for name in ablations.effects] == ["MPM", "MaxKeepAliveRequests + MaxRequestWorkers"]
    assert all(not effect.beyond_noise for effect in ablations.effects.values())
    pruned, notes = drop_unearned(context, winner, ablations)
    assert pruned["MPM"] == "prefork" and pruned["MaxRequestWorkers"] == 17168, pruned
    assert any(note.startswith("MPM stays prefork") for note in notes), notes
    assert any(note.startswith("MaxKeepAliveRequests, MaxRequestWorkers keep the search's") for note in notes)
    gain = gain_from_rounds(context, pruned, ablations)
    assert gain is not None and min(gain.winner) > 1700 > 1300 > max(gain.start)


def test_under_another_mpm_a_finding_of_the_wrapper_alone_is_not_the_points(tmp_path):
    """Under another MPM the point is judged without the admin's tree; the
    README's session of 2026-11-28 10:55 then called S512 ("the main server
    has no access log", where the admin's tree answers through its virtual
    host) a finding the point brings, and the gate could clear it with no
    change."""
    from advisor.config import LoadOptions, load_config
    from advisor.tuner.search.space_derive import derive_space
    from advisor.tuner.search.space_lint import CandidateLint
    from advisor.tuner.session.report_data import lint_comparison

    main = tmp_path / "httpd.conf"
    main.write_text(f"LoadModule mpm_prefork_module {M}/mod_mpm_prefork.so\nLoadModule cgi_module {M}/mod_cgi.so\n"
                    "Listen 127.0.0.1:8080\nMaxRequestWorkers 256\nEnableSendfile On\n"
                    "<VirtualHost 127.0.0.1:8080>\n    DocumentRoot /tmp\n</VirtualHost>\n")
    cfg = load_config(str(main), LoadOptions(server_root=str(tmp_path)))
    space = derive_space(cfg, {"prefork": 2867, "worker": 17168, "event": 9392}, allow_mpm_switch=True)
    lint = CandidateLint(cfg, space)
    event = dict(space.start, MPM="event", MaxRequestWorkers=17168, MaxKeepAliveRequests=1000)
    assert lint.brought(event) == []
    comparison = lint_comparison(lint, event, {})
    assert not [f for f in comparison["added"] if f["severity"] != "info"], comparison["added"]
    assert not comparison["gone"], comparison["gone"]
    # Near miss: a finding on the include's own lines is the point's, under any MPM.
    static = dict(event, **README_WINNER)
    assert "P105" in {key[0] for key in lint.brought(static)}


class _PoolAndLossRunner(_Runner):
    """The no-switch session of 2026-11-28 12:55: the pool carries the gain,
    MaxConnectionsPerChild costs a little (its ablation measured ×0.92), and
    four other changes do nothing."""

    def __call__(self, point):
        from advisor.tuner.search.optimizer import TrialOutcome

        self.points.append(dict(point))
        rate = 1200.0 + next(self.jitter)
        if point["MaxRequestWorkers"] != self.space.start["MaxRequestWorkers"]:
            rate += 600.0
        if point["MaxConnectionsPerChild"] != self.space.start["MaxConnectionsPerChild"]:
            rate -= 150.0
        return TrialOutcome(rate, True, "server CPU", {})


def test_a_pruning_never_keeps_a_change_measured_as_a_loss_to_send_back_changes_within_noise(tmp_path):
    """Two points of the rounds beat the start: the winner without the four
    changes within noise (which keeps MaxConnectionsPerChild, a loss) and the
    winner without MaxConnectionsPerChild (which keeps the four, and
    measured higher). The second is recommended: the rounds showed the first
    one's kept change costs throughput."""
    from test_tune_core import load_stock

    from advisor.tuner.search.space_lint import CandidateLint

    cfg, space = load_stock(tmp_path)
    context = _grouped_context(space, CandidateLint(cfg, space))
    quiet = ["MinSpareServers", "MaxSpareServers", "KeepAliveTimeout", "MaxKeepAliveRequests"]
    winner = dict(space.start, MaxRequestWorkers=space.start["MaxRequestWorkers"] + 100,
                  MaxConnectionsPerChild=231680, MinSpareServers=62, MaxSpareServers=119,
                  KeepAliveTimeout=402, MaxKeepAliveRequests=207)
    ablations = ablate(context, _PoolAndLossRunner(space, [], True), winner, _Journal(), [], together=quiet)
    loss = ablations.effect_of("MaxConnectionsPerChild")
    assert loss.members == ["MaxConnectionsPerChild"] and loss.verdict() == "a loss", loss
    group = ablations.effect_of("KeepAliveTimeout")
    assert len(group.members) == 4 and group.verdict() == "within noise"
    assert ablations.effect_of("MaxRequestWorkers").beyond_noise
    pruned, notes = drop_unearned(context, winner, ablations)
    assert pruned == dict(winner, MaxConnectionsPerChild=space.start["MaxConnectionsPerChild"]), pruned
    assert any(note.startswith("MaxConnectionsPerChild stays ") and "a loss" in note for note in notes), notes
    gain = gain_from_rounds(context, pruned, ablations)
    assert gain is not None and min(gain.winner) > 1700 > 1300 > max(gain.start)
