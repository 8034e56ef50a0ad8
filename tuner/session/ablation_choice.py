"""Which of the winner's changes the ablation rounds measure one by one, and
which together: the MPM, the pool's size and what the seeds measured large
first, then the model's strongest; the changes recommended only on an
ablation of their own, sent back before the rounds when they would ride in a
group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from advisor.tuner.search.space import Value
from advisor.tuner.session.session_context import SessionContext, changed_names, model_strength

# Changes the ablation rounds measure one by one; the winner's other changes
# are measured together, with those the model saw no effect of. A model
# point of the README's session at 07:38 on 2026-11-27 changed ten
# directives, six of them credited by a model of 15 trials in 16
# dimensions: one ablation each made 10 points a round, 50 runs, about 25
# minutes after the search. With two, a round has at most five points.
MAX_SINGLE_ABLATIONS = 2
# With the MPM among the changes, it is the one change measured alone; the
# new MPM's pool and keep-alive settings are measured together. A round of
# five points under a switch took 25 runs and 14 minutes in the README's
# session of 2026-11-28 (a prefork point after a reload warms up for 12 to
# 14 s while its pool grows), which kept the session above 20 minutes; the
# second single ablation had measured the pool's size within noise there
# and in the session of 2026-11-27. Under another MPM the pool's size means
# threads, not processes: judged with the thread settings it goes with.
SINGLE_ABLATIONS_WITH_MPM = 1


def single_ablations(changed: Sequence[str]) -> int:
    """How many of the changes the ablation rounds measure one by one."""
    return SINGLE_ABLATIONS_WITH_MPM if "MPM" in changed else MAX_SINGLE_ABLATIONS


# Measured one by one before any the model ranks: the MPM, the pool's size,
# and the directives the seeds measured large effects of (Arlitt &
# Williamson 2004: KeepAlive +53 % at 8 requests a connection, sec. 5.1.6;
# MaxRequestsPerChild 1,000 halving the peak, sec. 5.1.3), then
# HostnameLookups and BufferedLogs (work on every request).
FIRST_ABLATED = ("MPM", "MaxRequestWorkers", "KeepAlive", "MaxConnectionsPerChild", "HostnameLookups",
                 "BufferedLogs")


# Recommended only on an ablation of their own: a change whose effect shows
# only in some runs is the one a group's measured gain credits falsely.
# ListenBacklog acts only when the accept queue overflows; in the
# worst-practice session of 2026-11-27 it rode in a group of six whose
# ablation measured +89 %, while MaxConnectionsPerChild alone measured
# +1,307 % (the seeds' finding, Arlitt & Williamson 2004, sec. 5.1.3).
# Each with its reason and the values a change must go to for the rule to
# hold (None: any). The README's no-switch session of 2026-11-27 19:16
# recommended HostnameLookups On inside a group of seven whose measured
# +19.6 % came from the others (on loopback the lookup costs nothing), while
# On -> Off from a worst-practice start only takes work away and may ride
# in a group.
MEASURED_ALONE_ONLY: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "ListenBacklog": ("it acts only when the accept queue overflows", None),
    "HostnameLookups": ("a reverse lookup costs what the resolver takes, and on a staging link /etc/hosts "
                        "answers it for nothing", ("On", "Double")),
}


def split_unseen(unseen: Sequence[str]) -> tuple[list[str], list[str]]:
    """The changes the model saw no effect of: (those measured together as one
    ablation, those of FIRST_ABLATED, which stay candidates to be measured on
    their own). In the worst-practice session of 2026-11-27 a model of five
    trials in twelve dimensions saw no effect of MaxConnectionsPerChild
    100 -> 3,540 (the start lies outside the space, and 1,001 stood for it),
    the change the seeds say halves the peak (Arlitt & Williamson 2004,
    sec. 5.1.3): grouped, its effect had no figure of its own."""
    return ([name for name in unseen if name not in FIRST_ABLATED],
            [name for name in unseen if name in FIRST_ABLATED])


def measured_alone_only(name: str, point: Mapping[str, Value]) -> bool:
    """Whether `name` at the point's value is recommended only on an ablation of its own."""
    if name not in MEASURED_ALONE_ONLY:
        return False
    _, towards = MEASURED_ALONE_ONLY[name]
    return towards is None or point.get(name) in towards


def single_slots(context: SessionContext, winner: dict[str, Value], together: Sequence[str]
                  ) -> tuple[list[str], list[str], list[str]]:
    """(the winner's changes, those the ablation rounds measure one by one,
    the weaker ones that join the group): of the changes outside
    `together`, the first MAX_SINGLE_ABLATIONS in single_ablation_order
    are measured alone, the rest (in that order) together."""
    changed = changed_names(context.space, winner)
    alone = [name for name in changed if name not in together]
    limit = single_ablations(changed)
    if len(alone) <= limit:
        return changed, alone, []
    ranked = single_ablation_order(context, winner, alone)
    return changed, ranked[:limit], ranked[limit:]


def revert_unless_alone(context: SessionContext, winner: dict[str, Value], together: Sequence[str]
                         ) -> tuple[dict[str, Value], list[str]]:
    """The changes of MEASURED_ALONE_ONLY that the rounds would measure only
    inside a group go back to the start's value before the rounds, with
    the reason (if the point stays free of lint errors): a group's gain
    says nothing of them, and the rounds then measure what is
    recommended."""
    changed, alone, _ = single_slots(context, winner, together)
    if len(changed) < 2:
        return winner, []  # one change: the gain's replicates are its ablation
    space = context.space
    point = dict(winner)
    notes = []
    for name in changed:
        if name in alone or not measured_alone_only(name, point):
            continue
        reason, _ = MEASURED_ALONE_ONLY[name]
        candidate = dict(point)
        candidate[name] = space.start[name]
        if context.lint is not None and context.lint.check(candidate).errors:
            continue
        note = (f"{name} stays {space.value_text(name, space.start[name])} (the search's best point had "
                f"{space.value_text(name, point[name])}): it is recommended only with an ablation of its own "
                f"({reason}, so a group's gain says nothing of it), "
                f"and this session's {single_ablations(changed)} went to {', '.join(alone) or 'none'}")
        point = candidate
        notes.append(note)
        context.events.note(note)
    return point, notes


def single_ablation_order(context: SessionContext, winner: dict[str, Value], names: list[str]) -> list[str]:
    """`names` in the order the ablations measure them one by one: first
    the directives of FIRST_ABLATED (the MPM, the advice lint and fix
    must keep; the pool's size; what the seeds measured large), then the
    rest by the model's effect of each (the winner against the winner
    with that one change reverted). A model of 15 trials in 16
    dimensions ranked ListenBacklog and EnableMMAP strongest in the
    no-switch session of 2026-11-27, above MaxRequestWorkers, whose
    ablation in the same session measured x1.4."""
    def first(name: str) -> int:
        return FIRST_ABLATED.index(name) if name in FIRST_ABLATED else len(FIRST_ABLATED)

    return sorted(names, key=lambda name: (first(name), -model_strength(context, winner, name), names.index(name)))


@dataclass(frozen=True)
class RuleAdvice:
    """A lint rule's own advice for a change of the winner that brings its
    finding: the value the change's ablation compares the winner with."""

    dimension: str
    code: str
    value: Value | None
    """The advised value as the search holds it; None when the rule's fix is
    not one value of the space (several lines, a value outside the range,
    or a point lint refuses)."""
    text: str = ""
    """The advised value as httpd.conf writes it."""

    def phrase(self) -> str:
        return f"{self.dimension} {self.text}, which {self.code} advises"


def rule_advice(context: SessionContext, winner: Mapping[str, Value], name: str) -> RuleAdvice | None:
    """What the rule behind a finding the winner's `name` brings advises
    instead (None: it brings none at the admin's --fail-on).

    A measured reason to keep a change against a rule is a comparison with
    the rule's advice: a worst-practice session (issue 56) kept
    MaxConnectionsPerChild 3,540 with P101 silenced as "x5.99 against the
    winner without it", where "without it" was the start's 100, not the 0
    P101 advises. The advice is the finding's own edit of the line, read as
    a value of the space, and counts only when the point with it lint
    accepts and the finding is gone there."""
    from advisor.tuner.search.space_lint import advised_value

    lint, space = context.lint, context.space
    if lint is None or space is None:
        return None
    found = lint.advice(winner, name)
    for code, line in found:
        value = advised_value(space, name, line) if line else None
        if value is None or value == winner.get(name):
            continue
        advised = dict(winner, **{name: value})
        if lint.check(advised).errors or code in {again for again, _ in lint.advice(advised, name)}:
            continue
        return RuleAdvice(name, code, value, space.value_text(name, value))
    return RuleAdvice(name, found[0][0], None) if found else None
