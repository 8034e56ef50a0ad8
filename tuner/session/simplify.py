"""From the search's best point to the one the tune session recommends.

A search over a dozen dimensions ends on a point that differs from the start
in nearly all of them, most by the chance of the space-filling design: with
15 trials the data cannot tell a KeepAliveTimeout of 6 s from 5 s. Writing all
of them into the admin's config would present noise as advice, and some
would contradict lint (HostnameLookups On, say) for no measured reason. So
before the gain is measured, each changed dimension goes back to its start
value when

* it has no effect given the others (the keep-alive knobs with KeepAlive
  Off);
* it brings a lint warning the start value does not, unless the trials
  measured a gain from it (the model's 95 % interval above 1.0);
* the model of the trials (search/surrogate.py) sees no effect: the winner and
  the winner with this one dimension at its start value are modelled within
  2 % of each other, with an interval that includes 1.0. Only when no
  ablation follows: the model of 15 trials in a dozen dimensions often
  ignores a dimension outright (an interval of x1.00 to x1.00 is the model
  having learnt nothing of it, not evidence of no effect), and four such
  returns together once cost a winner a third of what the search had
  measured (1,673-2,006 replies/s at the search's best point, 1,172-1,246
  after the returns). With ablations to follow, these changes stay in the
  point and are listed as `deferred`: the session measures them together
  as one ablation, and returns them only if that measurement shows no gain.

Each return is kept only if the point stays free of lint errors. The gain
replicates then measure the simplified point against the start, so the gain
the report states is the gain of exactly what it recommends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from advisor.tuner.search.optimizer import Observation
    from advisor.tuner.search.space import Space, Value
    from advisor.tuner.session.session_context import SessionContext
    from advisor.tuner.search.space_lint import CandidateLint
    from advisor.tuner.search.surrogate import Surrogate

# Dimensions that do nothing while another has this value.
INERT_WHEN = {
    "KeepAliveTimeout": ("KeepAlive", "Off"),
    "MaxKeepAliveRequests": ("KeepAlive", "Off"),
}
NO_EFFECT_MARGIN = 0.02


@dataclass
class Reverted:
    dimension: str
    searched: str
    """The value the search's best point had (formatted)."""
    kept: str
    """The start's value, which the recommendation keeps (formatted)."""
    why: str


@dataclass
class Simplified:
    point: dict[str, "Value"]
    reverted: list[Reverted] = field(default_factory=list)
    deferred: list[Reverted] = field(default_factory=list)
    """Changes the model sees no effect of, left in the point for a
    measurement to judge (judge_model False)."""

    def notes(self) -> list[str]:
        return [f"{r.dimension} stays {r.kept} (the search's best point had {r.searched}): {r.why}"
                for r in self.reverted]


def simplify(space: "Space", winner: Mapping[str, "Value"], *, lint: "CandidateLint | None" = None,
             surrogate: "Surrogate | None" = None, judge_lint: bool = True,
             judge_model: bool = True) -> Simplified:
    """`judge_lint` False: a change that brings a lint finding is left for
    the measurements that follow (the ablations and the gain, then the
    session's lint gate) instead of being judged on the model here.
    `judge_model` False: no change goes back on the model's say-so; those it
    would have sent back are listed in `deferred` for the ablations that
    follow, and only the changes that cannot matter (inert, or ignored by
    the point's MPM) go back."""
    start = space.start
    point = dict(winner)
    reverted: list[Reverted] = []
    deferred: list[Reverted] = []
    warnings_now = lint.warnings(point) if lint is not None and judge_lint else []
    for dim in space.free:
        name = dim.name
        if point.get(name) == start.get(name):
            continue
        if space.mpm_of(point) not in dim.mpms:
            # The point's MPM ignores it (StartServers under event): never
            # written, so it is no change, and an ablation of it would
            # measure the winner again under another name.
            point[name] = start[name]
            continue
        if space.mpm_of(start) not in dim.mpms:
            continue  # the start's MPM has no such directive: nothing to go back to
        candidate = dict(point)
        candidate[name] = start[name]
        why = _reason(name, point, candidate, lint if judge_lint else None, surrogate, warnings_now)
        if why is None:
            continue
        if lint is not None and lint.check(candidate).errors:
            continue
        if not judge_model and not _structural(name, point):
            deferred.append(Reverted(name, space.value_text(name, point[name]), space.value_text(name, start[name]), why))
            continue
        reverted.append(Reverted(name, space.value_text(name, point[name]), space.value_text(name, start[name]), why))
        point = candidate
        if lint is not None and judge_lint:
            warnings_now = lint.warnings(point)
    return Simplified(point, reverted, deferred)


def simplify_best(context: "SessionContext", observations: "list[Observation]", best: dict[str, "Value"]
                  ) -> tuple[Simplified, "Surrogate"]:
    """The session's simplification: the search's best point less the changes
    the trials do not back, told to the display, and the model of the trials
    it was judged on (which then ranks the single ablations)."""
    from advisor.tuner.search.surrogate import Surrogate

    surrogate = Surrogate.fit(context.space, observations, seed=context.settings.seed)
    # With measurements to follow, a change that brings a lint finding is
    # judged on them (the lint gate after the gain), not on the model.
    measured_later = bool(context.settings.gain_replicates or context.settings.ablation_rounds)
    simplified = simplify(context.space, best, lint=context.lint, surrogate=surrogate,
                          judge_lint=not measured_later, judge_model=not context.settings.ablation_rounds)
    for note in simplified.notes():
        context.events.note(note)
    return simplified, surrogate


def _structural(name: str, point: Mapping[str, "Value"]) -> bool:
    """The change cannot matter given the rest of the point."""
    inert = INERT_WHEN.get(name)
    return inert is not None and point.get(inert[0]) == inert[1]


def _reason(name: str, point: Mapping[str, "Value"], candidate: Mapping[str, "Value"],
            lint: "CandidateLint | None", surrogate: "Surrogate | None", warnings_now: list[str]) -> str | None:
    """Why `name` goes back to its start value, or None to keep the search's."""
    if _structural(name, point):
        switch, value = INERT_WHEN[name]
        return f"it has no effect while {switch} is {value}"
    ratio = low = high = None
    if surrogate is not None:
        ratio, low, high = surrogate.ratio(point, candidate)
    if lint is not None:
        brought = sorted(set(warnings_now) - set(lint.warnings(candidate)))
        if brought and not (low is not None and low > 1.0):
            shown = (f" (modelled ×{ratio:.2f}, 95 % interval from ×{low:.2f})" if ratio is not None and low is not None
                     else " (too few trials for a model)")
            return f"it brings lint {', '.join(brought)} and the trials do not show a gain from it{shown}"
    if ratio is not None and low is not None and high is not None and low <= 1.0 <= high \
            and abs(ratio - 1.0) <= NO_EFFECT_MARGIN:
        return f"the trials show no effect of it (modelled ×{ratio:.3f}, 95 % interval ×{low:.2f} to ×{high:.2f})"
    return None
