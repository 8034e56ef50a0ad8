"""The lint gate: the recommendation as the admin's `lint --fail-on` judges
it. A finding a change brings is kept only when that change measured a gain
beyond noise, with a suppression comment that gives the figure; otherwise
the change goes back to the start's value."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from advisor.tuner.search.space import Space, Value
from advisor.tuner.session.session_context import SessionContext, changed_names, model_strength


# E406: a single-valued directive set twice; the tuned drop-in, read last,
# overrides the admin's line by design.
OVERRIDE_CODE = "E406"
CANDIDATE_FILE = "candidate.conf"


def lint_gate(context: SessionContext, winner: dict[str, Value], ablations, replicates, *,
              measured_later: Sequence[str] = ()):
    """The recommendation as the admin's `lint --fail-on` judges it: each
    finding it brings is kept only when the change behind it measured a
    gain beyond noise, and then carries a suppression comment with the
    figure; otherwise the change goes back to the start's value.

    The tree is linted again after each return: a finding that stands on
    several values (P105's StartServers x ThreadsPerChild against the
    pool) outlives the return of the line it points at, and then the
    other changes no measurement backs go back one at a time, the one
    the model credits least first, until it is gone. `measured_later`:
    changes the ablation rounds will measure on their own (the gate
    before the rounds leaves them to the gate after).

    Returns (point, {directive: suppression comment}, notes)."""
    lint, space = context.lint, context.space
    if lint is None or space is None:
        return winner, {}, []
    gate = LintGate(context, ablations, replicates, measured_later, dict(winner))
    for _ in range(len(space.free) + 1):
        left = gate.blocking(gate.point)
        if not left or not gate.send_back_one(left):
            break
    if measured_later:
        return gate.point, {}, gate.notes
    return gate.point, suppression_comments(context, gate.point, ablations, replicates), gate.notes


@dataclass
class LintGate:
    """The gate's work on one point: what it sent back so far (`notes`) and
    the measured figures it looked up."""

    context: SessionContext
    ablations: Any
    replicates: Any
    measured_later: Sequence[str]
    point: dict[str, Value]
    notes: list[str] = field(default_factory=list)
    figures: dict[tuple[str, tuple[str, ...]], str | None] = field(default_factory=dict)
    written: dict[str, Value] = field(init=False)

    def __post_init__(self) -> None:
        space = self.context.space
        self.written = space.as_written(space.start)

    def figure_of(self, dimension: str | None, changed: list[str]) -> str | None:
        if dimension is None:
            return None
        if dimension in self.measured_later:
            return "measured later"
        key = (dimension, tuple(changed))
        if key not in self.figures:
            self.figures[key] = measured_figure(self.context, dimension, changed, self.ablations, self.replicates,
                                                self.point)
        return self.figures[key]

    def blocking(self, candidate: dict[str, Value]) -> list[tuple[tuple, str | None, str | None]]:
        """(finding, directive, dimension) of each finding no measurement backs."""
        lint, space = self.context.lint, self.context.space
        changed = changed_names(space, candidate)
        out = []
        for key in lint.brought(candidate):
            directive = lint.directive_of(candidate, key)
            if key[0] == OVERRIDE_CODE and (directive is None or Path(key[1]).name != CANDIDATE_FILE):
                continue  # the drop-in overriding the admin's own line is how it works, not a risk
            dimension = dimension_for(space, directive, changed)
            if self.figure_of(dimension, changed) is None:
                out.append((key, directive, dimension))
        return out

    def send_back(self, name: str, why: str) -> None:
        space = self.context.space
        self.notes.append(f"{name} stays {space.value_text(name, self.written[name])} (the search's best point had "
                          f"{space.value_text(name, self.point[name])}): {why}")
        self.point = dict(self.point, **{name: space.start[name]})

    def send_back_one(self, left: list[tuple[tuple, str | None, str | None]]) -> bool:
        """Send back one change behind the findings `left`: False (with a note)
        when no change that no measurement backs clears them on its own."""
        lint, space, point = self.context.lint, self.context.space, self.point
        codes = ", ".join(sorted({key[0] for key, _, _ in left}))
        for key, directive, dimension in left:
            candidate = dict(point, **{dimension: space.start[dimension]}) if dimension else None
            if candidate is not None and not lint.check(candidate).errors:
                self.send_back(dimension, f"it brings lint {key[0]} at --fail-on {lint.fail_on}, and no "
                                          "measurement shows a gain from it beyond noise")
                return True
        # The finding outlived the return of the line it stands on: try
        # the other unbacked changes, one at a time.
        changed = changed_names(space, point)
        named = rule_directives({key[0] for key, _, _ in left})
        options = [name for name in changed if name != "MPM" and self.figure_of(name, changed) is None
                   and (not named or name.lower() in named)]
        options.sort(key=lambda name: model_strength(self.context, point, name))
        for name in options:
            candidate = dict(point, **{name: space.start[name]})
            if lint.check(candidate).errors or len(self.blocking(candidate)) >= len(left):
                continue
            self.send_back(name, f"with it the tuned tree brings lint {codes} at --fail-on {lint.fail_on} "
                                 f"({left[0][0][3]}), and no measurement shows a gain from it beyond noise")
            return True
        self.notes.append(f"the tuned tree still brings lint {codes} at --fail-on {lint.fail_on}: no change "
                          "that no measurement backs clears it on its own")
        return False


def suppression_comments(context: SessionContext, point: dict[str, Value], ablations, replicates) -> dict[str, str]:
    """{directive: the suppression comment} for each finding at or above
    --fail-on the point keeps: the change's measured figure, or the
    drop-in overriding the admin's own line on purpose."""
    lint, space = context.lint, context.space
    changed = changed_names(context.space, point)
    by_directive: dict[str, set[str]] = {}
    overridden: dict[str, list[str]] = {}
    for key in lint.brought(point):
        directive = lint.directive_of(point, key)
        if directive is None:
            continue
        if key[0] == OVERRIDE_CODE and Path(key[1]).name != CANDIDATE_FILE:
            overridden.setdefault(directive, []).append(f"{key[1]}:{key[2]}")
            continue
        by_directive.setdefault(directive, set()).add(key[0])
    stamp = f"tune session {today()}, {context.settings.session_dir}"
    suppressions: dict[str, str] = {}
    for directive in sorted(set(by_directive) | set(overridden)):
        codes = by_directive.get(directive, set())
        dimension = dimension_for(space, directive, changed)
        figure = (measured_figure(context, dimension, changed, ablations, replicates, point) if codes and dimension
                  else None)
        reasons = []
        if figure is not None:
            reasons.append(f"measured {figure} on {context.workload_name}{where_measured(context.rtt_ms)}")
        elif codes:
            reasons.append("set with the measured point (not measured on its own)")
        if directive in overridden:
            codes = codes | {OVERRIDE_CODE}
            reasons.append(f"overrides {', '.join(overridden[directive])} on purpose")
        suppressions[directive] = (f"# apache-advisor: disable={','.join(sorted(codes))} -- "
                                   f"{'; '.join(reasons)}; {stamp}")
    return suppressions


def measured_figure(context: SessionContext, dimension: str, changed: list[str], ablations,
                    replicates, point: Mapping[str, Value] | None = None) -> str | None:
    """The change's own measured gain, as a phrase, when beyond noise
    (`point`: the point that keeps it, for the rule's advice)."""
    from advisor.tuner.session.gain import measure_gain

    effect = ablations.effect_of(dimension) if ablations is not None else None
    if effect is not None:
        if not effect.beyond_noise:
            return None
        # A rule's advice, when the ablation measured against it: the reason
        # to keep a change lint warns of is its gain over what lint advises.
        # The comma closes the clause before the workload the suppression names next.
        return f"{effect.sentence()} against {effect.against()}{',' if effect.advised_by else ''}"
    if changed == [dimension] and replicates is not None and min(len(replicates.start),
                                                                 len(replicates.winner)) >= 2:
        try:
            gain = measure_gain(replicates)
        except ValueError:
            return None
        if gain.low is not None and gain.low > 1.0:
            return (f"×{gain.ratio:.2f} (95 % CI ×{gain.low:.2f} to ×{gain.high:.2f}) over the start"
                    f"{advice_beside_start(context, point, dimension)}, its only change")
    return None


def advice_beside_start(context: SessionContext, point: Mapping[str, Value] | None, dimension: str) -> str:
    """How the start stands to the advice of the rule the change trips:
    the same value (the gain is the comparison with the advice), or another
    (the gain is not; the ablation rounds, which measure against it, did
    not run)."""
    from advisor.tuner.session.ablation_choice import rule_advice

    advice = rule_advice(context, point, dimension) if point is not None else None
    if advice is None or advice.value is None:
        return ""
    if advice.value == context.space.start.get(dimension):
        return f" ({advice.phrase()})"
    return f", not against {advice.phrase()} (no ablation rounds ran)"


def where_measured(rtt_ms: float | None) -> str:
    return f" at {rtt_ms:g} ms RTT" if rtt_ms else " on this target"


def today() -> str:
    from datetime import date

    return date.today().isoformat()


def rule_directives(codes: set[str]) -> set[str]:
    """The directives (lower case) the rules of `codes` read, as their
    metadata names them; empty when one of them names none."""
    from advisor import rules as registry

    by_code = {rule.code: rule for rule in registry.all_rules()}
    named: set[str] = set()
    for code in codes:
        rule = by_code.get(code)
        if rule is None or not getattr(rule, "directives", None):
            return set()
        named |= {name.lower() for name in rule.directives}
    return named


def dimension_for(space: Space, directive: str | None, changed: list[str]) -> str | None:
    """The changed dimension that writes `directive` (most dimensions are
    named after theirs)."""
    if directive is None:
        return None
    for name in changed:
        if name.lower() == directive.lower():
            return name
    return None
