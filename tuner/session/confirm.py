"""The session's confirmation: the recommendation pruned to the changes the
ablation rounds back, and its gain over the starting config, taken from the
rounds when one of their points is the one recommended, else measured in
interleaved replicates of its own (runs a resumed session journalled for the
same comparison are taken from the journal)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor.tuner.search.optimizer import TrialOutcome
from advisor.tuner.search.space import Value
from advisor.tuner.session.attribute import Attribution
from advisor.tuner.session.pruning import (drop_single_within_noise, drop_unearned, keep_start_without_a_gain,
                                           whole_when_no_part_earns)
from advisor.tuner.session.session_context import SessionContext
from advisor.tuner.trial.objective import PointRefused, TrialObjective, point_key


@dataclass
class Confirmation:
    """The recommendation the measurements back, its gain's runs (None: no
    gain measured) and the notes so far."""

    winner: dict[str, Value]
    replicates: Any = None
    """advisor.tuner.session.gain.Replicates, or None."""
    notes: list[str] = field(default_factory=list)


def confirm(context: SessionContext, runner: TrialObjective, journal, earlier: list, attributed: Attribution,
            normal: bool) -> Confirmation:
    """Prune the attributed winner on the rounds' effects, measure its gain
    (from the rounds, or on its own when the session sets gain runs and its
    search ended normally), and keep the start unless the gain is beyond
    noise; the whole winner when no part of it earns the gain alone."""
    winner, ablations = attributed.winner, attributed.ablations
    notes = list(attributed.notes)
    replicates = None
    before_pruning = list(notes)
    if ablations is not None:
        winner, reverted = drop_unearned(context, winner, ablations)
        notes += reverted
        replicates = gain_from_rounds(context, winner, ablations)
        if replicates is not None:
            notes.append(replicates.source)
    if context.settings.gain_replicates and normal and replicates is None:
        replicates = measure_replicates(context, runner, winner, journal, earlier)
    if ablations is None and replicates is not None:
        winner, single = drop_single_within_noise(context, winner, replicates)
        notes += single
    if replicates is not None:
        winner, unearned = keep_start_without_a_gain(context, winner, replicates)
        notes += unearned
    whole = whole_when_no_part_earns(context, winner, ablations)
    if whole is not None:
        winner, replicates, why = whole
        notes = before_pruning + [why]
    return Confirmation(winner, replicates, notes)


def measure_replicates(context: SessionContext, runner: TrialObjective, winner: dict[str, Value],
                       journal, earlier: list):
    """The interleaved gain runs, each journalled as it completes; runs an
    interrupted session journalled for this same start and winner are
    taken from the journal instead of measured again."""
    from advisor.tuner.session.gain import Replicates, replicate_order
    from advisor.tuner.session.journal import GainRun

    space = context.space
    if point_key(space, winner) == point_key(space, space.start):
        context.events.note("the starting config is the winner: no gain to measure")
        return None
    roles = replicate_order(context.settings.gain_replicates)
    points = {"start": dict(space.start), "winner": dict(winner)}
    # Runs of another winner measured another comparison: none of them counts.
    same = all(point_key(space, run.point) == point_key(space, points[run.role]) for run in earlier)
    kept = {run.index: run for run in earlier if same and run.index <= len(roles)
            and roles[run.index - 1] == run.role}
    if kept:
        context.events.note(f"{len(kept)} gain run(s) taken from the journal")
    runner.uncapped = True
    runs: list[tuple[str, TrialOutcome]] = []
    for index, role in enumerate(roles, start=1):
        point = points[role]
        if index in kept:
            run = kept[index]
            runs.append((role, TrialOutcome(run.objective if run.objective is not None else 0.0, run.valid,
                                            run.verdict, dict(run.details))))
            continue
        try:
            outcome = runner(dict(point))
            if not outcome.valid:
                outcome = runner(dict(point))  # once more, as the search does
        except PointRefused as refused:
            context.events.note(f"replicate {index} of the {role} was refused: {refused.error.render()}")
            continue
        journal.append_gain(GainRun(index, role, dict(point), float(outcome.objective), outcome.valid,
                                    outcome.verdict, outcome.details))
        runs.append((role, outcome))
        context.events.replicate_done(index, len(roles), role, outcome)
    return Replicates.from_outcomes(runs, runner.probes.tolerance)


def gain_from_rounds(context: SessionContext, winner: dict[str, Value], ablations):
    """The gain's replicates from the ablation rounds, when the start ran
    in them and some role of them is exactly the recommended point (the
    winner, or the winner less the one change sent back); else None, and
    the gain is measured on its own."""
    from advisor.tuner.session.ablation import WINNER, role_without

    space = context.space
    target = point_key(space, winner)
    if target == point_key(space, space.start):
        return None
    roles = [WINNER] + [role_without(name) for name in ablations.effects]
    for role in roles:
        point = ablations.point_of(role, space.start)
        if point is not None and point_key(space, point) == target:
            replicates = ablations.replicates_for(role)
            if replicates is not None and min(len(replicates.start), len(replicates.winner)) >= 2:
                replicates.source = (f"the gain comes from the ablation rounds: the starting config ran in "
                                     f"each round beside the recommended point ({len(replicates.start)} "
                                     f"runs of each, interleaved with the ablations)")
                context.events.note(replicates.source)
                return replicates
    return None
