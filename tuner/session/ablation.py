"""Which of the winner's changes earned the gain: one change reverted at a time.

A model fitted to fifteen trials in a dozen dimensions cannot say which
change did the work; it spreads the credit over whatever varied together
(a session from MaxConnectionsPerChild 100 credited ListenBacklog with
+94 %). Arlitt & Williamson (2004, sec. 5.1) settled each factor the way
this module does: the same server, one setting changed, measured side by
side. Each ablation is the winner with one change set back to the start's
value (or, for a change that brings a lint finding, set to the value the
rule advises: the reason to keep it is its gain over that advice); the
winner and its ablations run in interleaved rounds (the winner first, the
ablations in a rotating order), so every side sees the same drift of the
host. A change's measured effect is the ratio of the
geometric means of the winner's runs and the runs without it, with the
interval the gain uses (a t interval on the log ratio, its variance pooled
and floored by what one run can measure: tuner/stats/ratio.py), which stays
finite and positive with two runs a side. A change whose interval includes
1.0, or that measured a loss, goes back to the value its ablation ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from advisor.tuner.session.gain import CONFIDENCE
from advisor.tuner.stats.ratio import DEFAULT_TOLERANCE, ratio_interval

WINNER = "winner"
WITHOUT = "without:"
START = "start"
"""The starting point, run in each round beside the winner when the gain
is to come from the same rounds (the winner less every change)."""
GROUP_JOIN = " + "
"""Joins the members of a change measured as one: the changes the model of
the trials saw no effect of are reverted together in one ablation, so a
search's finds the model ignored are measured, not dropped, at the cost of
one ablation rather than one each."""


def members(name: str) -> list[str]:
    """The dimensions of an ablated change: one, or a group's several."""
    return name.split(GROUP_JOIN)


def role_without(dimension: str) -> str:
    return WITHOUT + dimension


def dimension_of(role: str) -> str | None:
    return role[len(WITHOUT):] if role.startswith(WITHOUT) else None


def ablation_order(dimensions: Sequence[str], rounds: int, with_start: bool = False) -> list[str]:
    """winner, then each ablation (and the start, `with_start`), per round;
    the ablations rotate, so none always runs right after the winner's warm
    pool, and every other round runs backwards, so a round begins with the
    point the last one ended on and keeps its warm pool (no reload in
    between: ManagedConfig.apply)."""
    if rounds < 1:
        raise ValueError("at least one round")
    order: list[str] = []
    others = [role_without(name) for name in dimensions] + ([START] if with_start else [])
    for round_index in range(rounds):
        shift = (round_index // 2) % len(others) if others else 0
        one = [WINNER] + others[shift:] + others[:shift]
        order += one if round_index % 2 == 0 else one[::-1]
    return order


@dataclass
class ChangeEffect:
    """The measured effect of one change of the winner."""

    dimension: str
    winner_value: str
    start_value: str
    winner_runs: list[float]
    without_runs: list[float]
    ratio: float | None
    low: float | None
    high: float | None
    confidence: float = CONFIDENCE
    note: str = ""
    without_served_nothing: bool = False
    """Without the change the point met the SLO at no rate, where the
    winner did: no ratio, and no doubt either."""
    advised_by: str = ""
    """The lint rule whose advice the ablation set the change to, in place of
    the start's value (start_value is then the advised value): a change that
    brings a finding is measured against what the rule advises."""

    def against(self) -> str:
        """What the winner was measured against, as the notes say it."""
        if self.advised_by:
            return f"{self.dimension} {self.start_value}, which {self.advised_by} advises"
        return f"the winner without {', '.join(self.members)}" if len(self.members) > 1 else "the winner without it"

    def back_to(self) -> str:
        """Where a change that did not earn its place goes, as the notes say it."""
        if self.advised_by:
            return f"goes to {self.start_value}, which {self.advised_by} advises"
        return f"{'stay' if len(self.members) > 1 else 'stays'} {self.start_value}"

    @property
    def members(self) -> list[str]:
        return members(self.dimension)

    @property
    def measured(self) -> bool:
        return self.ratio is not None or self.without_served_nothing

    @property
    def beyond_noise(self) -> bool:
        """A gain whose interval excludes 1.0."""
        if self.without_served_nothing:
            return True
        return self.low is not None and self.high is not None and self.low > 1.0

    @property
    def a_loss(self) -> bool:
        """Measured worse with the change than without it, beyond noise."""
        return not self.without_served_nothing and self.high is not None and self.high < 1.0

    def verdict(self) -> str:
        if self.without_served_nothing:
            return "a gain"
        if self.ratio is None:
            return self.note or "not measured"
        if self.low is None or self.high is None:
            return f"×{self.ratio:.2f}, no finite interval"
        if self.low > 1.0:
            return "a gain"
        if self.high < 1.0:
            return "a loss"
        return "within noise"

    def sentence(self) -> str:
        if self.without_served_nothing:
            return (f"without it no rate met the SLO ({len(self.without_runs)} runs), with it "
                    f"{sum(self.winner_runs) / len(self.winner_runs):,.4g}")
        if self.ratio is None:
            return self.note or "not measured"
        interval = (f"95 % CI ×{self.low:.2f} to ×{self.high:.2f}" if self.low is not None and self.high is not None
                    else "no finite 95 % interval")
        return (f"×{self.ratio:.2f} ({interval}; {len(self.winner_runs)} runs of the winner, "
                f"{len(self.without_runs)} {'at the advice' if self.advised_by else 'without it'})")

    def to_dict(self) -> dict[str, Any]:
        return {"dimension": self.dimension, "members": self.members, "winner_value": self.winner_value,
                "start_value": self.start_value, "winner_runs": list(self.winner_runs), "without_runs": list(self.without_runs),
                "ratio": self.ratio, "low": self.low, "high": self.high, "confidence": self.confidence,
                "verdict": self.verdict(), "note": self.note,
                "without_served_nothing": self.without_served_nothing, "advised_by": self.advised_by}


@dataclass
class Ablations:
    effects: dict[str, ChangeEffect] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    winner_point: dict[str, Any] | None = None
    """The winner the rounds measured (before any change went back)."""
    outcomes: list[tuple[str, Any]] = field(default_factory=list)
    """(role, TrialOutcome) of every run, in order: the gain's replicates
    when the start ran in the rounds (see replicates_for)."""
    tolerance: float = DEFAULT_TOLERANCE
    """The knee bracket the runs were measured to (the replicates' floor)."""

    def replicates_for(self, role: str):
        """The start's runs against the runs of `role` (the winner, or the
        winner less one change), as the gain's Replicates, when the start
        ran in these rounds; else None. The rounds interleave every role, so
        the comparison sees the host's drift on both sides as the gain's
        own ABBA runs would."""
        from advisor.tuner.session.gain import Replicates

        if not any(r == START for r, _ in self.outcomes):
            return None
        runs = [("start" if r == START else "winner", outcome) for r, outcome in self.outcomes
                if r in (START, role)]
        return Replicates.from_outcomes(runs, self.tolerance)

    advised: dict[str, Any] = field(default_factory=dict)
    """{dimension: the value its ablation measured in place of the start's}:
    the rule's advice, for a change that brings a lint finding."""

    def point_of(self, role: str, start: Mapping[str, Any]) -> dict[str, Any] | None:
        """The point a role of the rounds measured: the winner, or the
        winner with a change's members at the start's values (or at the
        value a rule advises, `advised`)."""
        if self.winner_point is None:
            return None
        if role == WINNER:
            return dict(self.winner_point)
        name = dimension_of(role)
        if name is None:
            return None
        point = dict(self.winner_point)
        for member in members(name):
            point[member] = self.advised.get(member, start[member])
        return point

    def reverted(self) -> list[ChangeEffect]:
        """The measured changes that do not earn their place: within noise or a loss."""
        return [e for e in self.effects.values() if e.measured and not e.beyond_noise]

    def effect_of(self, dimension: str) -> ChangeEffect | None:
        """The measured effect that covers `dimension`, alone or in a group."""
        for effect in self.effects.values():
            if dimension in effect.members:
                return effect
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"order": list(self.order), "notes": list(self.notes),
                "effects": {name: effect.to_dict() for name, effect in self.effects.items()},
                "by_dimension": {member: name for name, effect in self.effects.items()
                                 for member in effect.members}}


def measure_effects(runs: Sequence[tuple[str, float | None, bool]], values: Mapping[str, tuple[str, str]],
                    floor_sd: float | None = None) -> Ablations:
    """From (role, objective, valid) in the order they ran; `values`: for
    each ablated dimension, (the winner's value, the start's value) as text;
    `floor_sd`: the least deviation of one run's log figure
    (tuner/stats/noise_floor.py; None: a 10 % knee bracket's)."""
    winner = [float(v) for role, v, ok in runs if role == WINNER and ok and v is not None]
    out = Ablations(order=[role for role, _, _ in runs])
    for name, (winner_value, start_value) in values.items():
        without = [float(v) for role, v, ok in runs if role == role_without(name) and ok and v is not None]
        effect = ChangeEffect(name, winner_value, start_value, winner, without, None, None, None)
        if len(winner) < 2 or len(without) < 2:
            effect.note = (f"too few valid runs to measure ({len(winner)} of the winner, "
                           f"{len(without)} without it; two of each at the least)")
        elif max(without) <= 0 < min(winner):
                effect.without_served_nothing = True
        else:
            try:
                interval = ratio_interval(without, winner, floor_sd=floor_sd)
            except ValueError as exc:  # a run that met the SLO at no rate has no log
                effect.note = f"not measurable: {exc}"
            else:
                effect.ratio, effect.low, effect.high = interval.ratio, interval.low, interval.high
        out.effects[name] = effect
    return out


# --------------------------------------------------------------------------
# Stopping the rounds once every comparison is settled

MIN_ROUNDS = 3
INTERIM_CONFIDENCE = 0.99
"""A look before the last round uses a stricter interval, so that looking
more than once does not make a chance difference look settled (the final
verdicts still use the 95 % interval on every run made)."""
NEGLIGIBLE = 0.05
"""An interim interval inside x0.95 to x1.05 settles a comparison as no
effect worth a line in the config."""


def settled(runs: Sequence[tuple[str, float | None, bool]], roles: Sequence[str],
            floor_sd: float | None = None) -> bool:
    """Whether every role's comparison with the winner is settled on the
    runs so far: its 99 % interval lies above 1.0 (a gain), below it (a
    loss), or inside x0.95 to x1.05 (nothing to keep). Fewer than
    MIN_ROUNDS runs of a side settle nothing."""
    winner = [float(v) for role, v, ok in runs if role == WINNER and ok and v is not None]
    if len(winner) < MIN_ROUNDS:
        return False
    for role in roles:
        if role == WINNER:
            continue
        other = [float(v) for r, v, ok in runs if r == role and ok and v is not None]
        if len(other) < MIN_ROUNDS:
            return False
        if role != START and max(other) <= 0 < min(winner):
            continue  # without the change nothing met the SLO: as settled as it gets
        try:
            interval = ratio_interval(other, winner, confidence=INTERIM_CONFIDENCE, floor_sd=floor_sd)
        except ValueError:
            return False
        low, high = interval.low, interval.high
        if not (low > 1.0 or high < 1.0 or (low >= 1.0 - NEGLIGIBLE and high <= 1.0 + NEGLIGIBLE)):
            return False
    return True

