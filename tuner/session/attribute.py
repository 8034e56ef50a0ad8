"""The session's attribution: the winner and the winner less each of its
changes (or group of changes), measured in interleaved rounds, so that each
change the recommendation keeps has a measured effect, its own or its
group's. Before the rounds, the changes they could not judge go back (those
recommended only on an ablation of their own, and those a lint finding
would hold back with no round to measure them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from advisor.tuner.search.optimizer import TrialOutcome
from advisor.tuner.search.space import Value
from advisor.tuner.session.ablation_choice import (RuleAdvice, revert_unless_alone, rule_advice, single_ablations,
                                                   single_slots, split_unseen)
from advisor.tuner.session.lint_gate import lint_gate
from advisor.tuner.session.session_context import SessionContext
from advisor.tuner.session.simplify import Simplified
from advisor.tuner.trial.objective import PointRefused, TrialObjective, point_key


@dataclass
class Attribution:
    """What the attribution leaves: the point the rounds measured, the notes so
    far (the simplification's included), and the rounds' effects (None: no
    rounds ran)."""

    winner: dict[str, Value]
    notes: list[str] = field(default_factory=list)
    ablations: Any = None
    """advisor.tuner.session.ablation.Ablations, or None."""


def attribute(context: SessionContext, runner: TrialObjective, journal, earlier: list, simplified: Simplified,
              normal: bool) -> Attribution:
    """The ablation rounds on the simplified winner, when the session sets
    rounds and its search ended normally; else the simplified winner as it is."""
    winner = simplified.point
    notes = simplified.notes()
    if not (context.settings.ablation_rounds and normal):
        return Attribution(winner, notes)
    together, first = split_unseen([r.dimension for r in simplified.deferred])
    winner, unmeasured = revert_unless_alone(context, winner, together)
    notes += unmeasured
    # The rounds measure what may be recommended: a change that brings
    # a lint finding and that no round will measure on its own could
    # not earn its suppression, so it goes back before them.
    _, alone, _ = single_slots(context, winner, together)
    winner, _, gated = lint_gate(context, winner, None, None, measured_later=alone)
    for note in gated:
        context.events.note(note)
    notes += gated
    together = [name for name in together if winner.get(name) != context.space.start.get(name)]
    if together:
        context.events.note(f"the model of the trials sees no effect of {', '.join(together)}: "
                            "measured together, as one ablation, before any goes back")
    # Candidates for an ablation of their own: said only of those that get one.
    first = [name for name in first if name in alone]
    if first:
        context.events.note(f"the model of the trials sees no effect of {', '.join(first)} either, but "
                            f"{'it is' if len(first) == 1 else 'they are'} among the changes measured one "
                            "by one first (the MPM, the pool's size, what the seeds measured large)")
    ablations = ablate(context, runner, winner, journal, earlier, together=together, notes=notes)
    return Attribution(winner, notes, ablations)


def ablate(context: SessionContext, runner: TrialObjective, winner: dict[str, Value], journal, earlier: list,
           together: Sequence[str] = (), notes: list[str] | None = None):
    """The winner and the winner less each of its changes, in interleaved
    rounds, each run journalled; runs an interrupted session journalled
    for the same points are taken from the journal. The changes in
    `together` (the model saw no effect of each) are reverted as one.
    `notes`: where what the report must say of the rounds goes (a rule
    whose advice could not be measured)."""
    from advisor.tuner.session.ablation import measure_effects

    ablated = ablated_names(context, winner, together)
    if ablated is None:
        return None
    points, values, advice = ablation_points(context, winner, ablated)
    if not values:
        return None
    outcomes, stopped = run_rounds(context, runner, journal, earlier, points, values)
    ablations = measure_effects(as_runs(outcomes), values, floor_sd=run_floor(runner, outcomes))
    for name, advised in advice.items():
        if advised.value is None:
            fallback = (f"{advised.code} advises no single value of {name} the search holds: its ablation "
                        "set it back to the start's value instead, so its figure is not a comparison with "
                        "the rule's advice")
            ablations.notes.append(fallback)
            context.events.note(fallback)
            if notes is not None:
                notes.append(fallback)
            continue
        ablations.advised[name] = advised.value
        ablations.effects[name].advised_by = advised.code
    if stopped:
        ablations.notes.append(stopped)
    ablations.outcomes = outcomes
    ablations.tolerance = runner.probes.tolerance
    ablations.winner_point = dict(winner)
    return ablations


def ablated_names(context: SessionContext, winner: dict[str, Value], together: Sequence[str]) -> list[str] | None:
    """What the rounds revert, each on its own or as a group (joined by
    GROUP_JOIN); None with fewer than two changes."""
    from advisor.tuner.session.ablation import GROUP_JOIN

    changed, ablated, weaker = single_slots(context, winner, together)
    if len(changed) < 2:
        # One change: the gain's replicates are its ablation, unless a rule
        # it trips advises a value other than the start's.
        advice = rule_advice(context, winner, changed[0]) if changed else None
        if advice is None or advice.value is None or advice.value == context.space.start.get(changed[0]):
            return None
        return list(changed)
    grouped = [name for name in changed if name in together] + weaker
    if weaker:
        measurable = len(ablated) + len(weaker)
        which = ("the MPM is (under a switch it alone is measured on its own)" if ablated == ["MPM"] else
                 f"{', '.join(ablated)} {'is' if len(ablated) == 1 else 'are'} (the MPM, the pool's size and "
                 "what the seeds measured large first, then the model's strongest)")
        context.events.note(
            f"{measurable} changes could be measured one by one: {which}, and "
            f"{', '.join(weaker)} together with the changes the model saw no effect of, so a round "
            f"stays at {single_ablations(changed) + 3} points (one ablation each would take "
            f"{context.settings.ablation_rounds * (measurable + len(together) + 2)} runs)")
    if len(grouped) > 1:
        ablated.append(GROUP_JOIN.join(grouped))
    else:
        ablated += grouped
    return ablated


def ablation_points(context: SessionContext, winner: dict[str, Value], ablated: list[str]
                    ) -> tuple[dict[str, dict[str, Value]], dict[str, tuple[str, str]], dict[str, RuleAdvice]]:
    """({role: point} of the winner and of each reversion lint allows,
    {ablated: (the winner's values, the values it goes back to) as written},
    {ablated: the rule advice its finding carries}). A change measured on
    its own that brings a lint finding goes to the rule's advised value,
    not the start's (rule_advice)."""
    from advisor.tuner.session.ablation import WINNER, members, role_without

    space = context.space
    points: dict[str, dict[str, Value]] = {WINNER: dict(winner)}
    values: dict[str, tuple[str, str]] = {}
    advice: dict[str, RuleAdvice] = {}
    written = dict(space.as_written(space.start))
    for name in ablated:
        without = dict(winner)
        for member in members(name):
            without[member] = space.start[member]
        advised = rule_advice(context, winner, name) if len(members(name)) == 1 else None
        if advised is not None and advised.value is not None:
            without[name] = written[name] = advised.value
        errors = context.lint.check(without).errors if context.lint is not None else []
        if errors:
            context.events.note(f"{name} cannot be reverted alone (lint: {errors[0]}): "
                                "its effect is not measured on its own")
            continue
        points[role_without(name)] = without
        if advised is not None:
            advice[name] = advised
        values[name] = (", ".join(space.value_text(m, winner[m]) for m in members(name)),
                        ", ".join(space.value_text(m, written[m]) for m in members(name)))
    return points, values, advice


def run_rounds(context: SessionContext, runner: TrialObjective, journal, earlier: list,
               points: dict[str, dict[str, Value]], values: dict[str, tuple[str, str]]
               ) -> tuple[list[tuple[str, TrialOutcome]], str]:
    """The interleaved rounds' runs, (role, outcome) each, and why they
    stopped early ("" when they ran to the end)."""
    from advisor.tuner.session.ablation import MIN_ROUNDS, START, ablation_order, settled
    from advisor.tuner.session.journal import GainRun

    space = context.space
    # With a gain to measure, the start runs in every round too: the
    # gain of the winner, or of the winner less the one change the rounds
    # send back, then comes from the same interleaved runs (no second
    # set of ten).
    with_start = bool(context.settings.gain_replicates)
    if with_start:
        points[START] = dict(space.start)
    roles = ablation_order(list(values), context.settings.ablation_rounds, with_start=with_start)
    same = all(run.role in points and point_key(space, run.point) == point_key(space, points[run.role])
               for run in earlier)
    kept = {run.index: run for run in earlier if same and run.index <= len(roles)
            and roles[run.index - 1] == run.role}
    if kept:
        context.events.note(f"{len(kept)} ablation run(s) taken from the journal")
    runner.uncapped = True
    outcomes: list[tuple[str, TrialOutcome]] = []
    per_round = len(points)
    stopped = ""
    for index, role in enumerate(roles, start=1):
        if index > 1 and (index - 1) % per_round == 0 and (index - 1) // per_round >= MIN_ROUNDS \
                and settled(as_runs(outcomes), list(points), floor_sd=run_floor(runner, outcomes)):
            stopped = (f"the ablations stopped after {(index - 1) // per_round} of "
                       f"{context.settings.ablation_rounds} rounds: every comparison was settled (its 99 % "
                       "interval above 1.0, below it, or within ±5 %)")
            context.events.note(stopped)
            break
        if index in kept:
            run = kept[index]
            # A run journalled without a figure counts for nothing.
            outcomes.append((role, TrialOutcome(run.objective if run.objective is not None else 0.0,
                                                run.valid and run.objective is not None, run.verdict,
                                                dict(run.details))))
            continue
        point = points[role]
        try:
            outcome = runner(dict(point))
            if not outcome.valid:
                outcome = runner(dict(point))
        except PointRefused as refused:
            context.events.note(f"ablation run {index} ({role}) was refused: {refused.error.render()}")
            continue
        journal.append_gain(GainRun(index, role, dict(point), float(outcome.objective), outcome.valid,
                                    outcome.verdict, outcome.details, kind="ablation"))
        outcomes.append((role, outcome))
        context.events.ablation_done(index, len(roles), role, outcome)
    return outcomes, stopped


def run_floor(runner: TrialObjective, outcomes: list[tuple[str, TrialOutcome]]) -> float:
    """The least deviation of one run's log figure the rounds' intervals
    allow: the runs' own reported uncertainty, else the knee bracket's."""
    from advisor.tuner.stats.noise_floor import floor_sd

    return floor_sd((outcome.details for _, outcome in outcomes), runner.probes.tolerance)


def as_runs(outcomes: list[tuple[str, TrialOutcome]]) -> list[tuple[str, float | None, bool]]:
    """(role, objective, valid) of each run, as the ablation arithmetic reads them."""
    return [(role, outcome.objective, outcome.valid) for role, outcome in outcomes]
