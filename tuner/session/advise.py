"""The session's advice: the confirmed recommendation held to the admin's
lint (session/lint_gate.py), with the suppression comments its kept findings
carry, and a gain that is still the recommendation's when the gate sent a
change back (from the ablation rounds, else measured on its own)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor.tuner.search.space import Value
from advisor.tuner.session.confirm import Confirmation, gain_from_rounds, measure_replicates
from advisor.tuner.session.lint_gate import lint_gate, suppression_comments
from advisor.tuner.session.pruning import keep_start_without_a_gain
from advisor.tuner.session.session_context import SessionContext
from advisor.tuner.trial.objective import TrialObjective, point_key


@dataclass
class Advice:
    """What the session recommends: the point, its gain's runs (None: no gain
    measured), the suppression comment of each finding it keeps, and every
    note on how it got there."""

    winner: dict[str, Value]
    replicates: Any = None
    """advisor.tuner.session.gain.Replicates, or None."""
    suppressions: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def advise(context: SessionContext, runner: TrialObjective, journal, confirmed: Confirmation,
           ablations) -> Advice:
    """The lint gate on the confirmed recommendation (`ablations`: the
    attribution's rounds, or None)."""
    winner, replicates, suppressions, gated = gate_the_gain(context, confirmed.winner, ablations,
                                                            confirmed.replicates, runner, journal)
    return Advice(winner, replicates, suppressions, confirmed.notes + gated)


def gate_the_gain(context: SessionContext, winner: dict[str, Value], ablations, replicates, runner: TrialObjective,
                  journal):
    """The lint gate on the recommendation, and a gain that is still the
    recommendation's: when the gate sends a change back, the replicates
    measured the point before it. A role of the rounds may have run the
    gated point (its gain comes from there); else it is measured on its
    own. Returns (point, replicates, suppressions, notes)."""
    measured = dict(winner)
    point, suppressions, notes = lint_gate(context, winner, ablations, replicates)
    if replicates is None or point_key(context.space, point) == point_key(context.space, measured):
        return point, replicates, suppressions, notes
    for note in notes:
        context.events.note(note)
    again = gain_from_rounds(context, point, ablations) if ablations is not None else None
    if again is not None:
        return point, again, suppression_comments(context, point, ablations, again), notes + [again.source]
    if not context.settings.gain_replicates:
        return point, None, suppressions, notes + [
            "the gain measured before the lint gate is not this point's, and no gain runs are set"]
    context.events.note("the lint gate changed the measured point: its gain is measured on its own")
    again = measure_replicates(context, runner, point, journal, [])
    if again is None:
        return point, None, suppressions, notes
    point, unearned = keep_start_without_a_gain(context, point, again)
    if unearned:
        return point, again, {}, notes + unearned
    return point, again, suppression_comments(context, point, ablations, again), notes
