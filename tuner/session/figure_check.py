"""Whether the search's figures were measurements: each searched figure
held against what the session measured of the same point later (issue 56).

A search trial reports its figure with its own uncertainty
(trial/precision.py). The session measures some points again afterwards:
a replicate in the search, the ablation rounds (the winner, the winner less
a change, the start), the gain's runs. For each searched figure of such a
point, the check asks whether the later runs' mean lies within
`CHECK_FACTOR` (2) x its reported deviation on the log scale: about the 95 %
that the session's intervals use, for a normal error. A floor agrees with
any later mean not clearly below it, a ceiling with any not clearly above.
A searched figure is one run of its point. What the trial measured of
itself (the knee's bracket, its capacity readings, the CPU reference) cannot
show how far a second run of the same point would land: the host's speed
between two runs minutes apart, a pool that starts elsewhere. The session's
repeated runs show it: the pooled deviation of the log figures of every
point it ran more than once (the ablation rounds, the gain's runs, the
search's replicates). With at least `MIN_RUN_DF` degrees of freedom, that
run-to-run part is added in quadrature to each figure's own, and once more
over the later runs' count for the later mean's own noise (the five
reports of 2026-12-07 had 10 of 14 figures within their own uncertainty
alone; the misses read ±2-3 % and lay 8-13 % from means whose runs spread
by 3-7 %). A share well under 95 % says the reported uncertainty is too small.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

from advisor.tuner.search.optimizer import Observation
from advisor.tuner.search.space import Space, Value
from advisor.tuner.trial.precision import CHECK_FACTOR, agrees, figure_text

GOAL_SHARE = 0.8
"""The share of searched figures the issue's done-means asks to agree."""

REPLICATE = "a replicate in the search"
ROUNDS = "the ablation rounds"
GAIN = "the gain's runs"
MIN_RUN_DF = 3
"""Degrees of freedom (runs beyond one per point) the run-to-run part needs."""


@dataclass
class FigureCheck:
    trial: int
    point: str
    """The point as the report names it: the changes from the start."""
    figure: float
    rel_sd: float
    bound: str | None
    later_mean: float
    later_runs: int
    sources: list[str]
    within: bool
    checked_sd: float | None = None
    """The deviation the check held the gap to (the figure's own, the run-to-run
    part and the later mean's); None: the figure's own alone."""

    def line(self, unit: str) -> str:
        measured = figure_text(self.figure, unit, {"rel_sd": self.rel_sd, "bound": self.bound})
        gap = 100.0 * (self.later_mean / self.figure - 1.0) if self.figure > 0 else 0.0
        verdict = "within" if self.within else "outside"
        held = f", held to ± {100 * self.checked_sd:.0f} % with run to run" if self.checked_sd is not None else ""
        return (f"trial {self.trial} ({self.point}): {measured}; later {self.later_mean:,.1f} "
                f"({self.later_runs} runs, {', '.join(self.sources)}; {gap:+.1f} %{held}): {verdict}")


@dataclass(frozen=True)
class RunToRun:
    """The pooled deviation of the log figures of the points run more than once."""

    sd: float
    df: int
    points: int

    def text(self) -> str:
        return (f"runs of one point spread by ± {100 * self.sd:.1f} % here (pooled over {self.points} "
                f"point(s) run more than once, {self.df} degrees of freedom)")


@dataclass
class FigureChecks:
    checks: list[FigureCheck] = field(default_factory=list)
    factor: float = CHECK_FACTOR
    unchecked: int = 0
    """Searched figures of a point measured again later that carried no uncertainty (an older journal)."""
    run_to_run: RunToRun | None = None

    @property
    def share(self) -> float | None:
        return sum(c.within for c in self.checks) / len(self.checks) if self.checks else None

    def summary(self) -> str:
        if not self.checks:
            return "no point the search measured was measured again later"
        within = sum(c.within for c in self.checks)
        goal = "meets" if (self.share or 0.0) >= GOAL_SHARE else "falls short of"
        spread = (f"; {self.run_to_run.text()}, added to each figure's own" if self.run_to_run
                  else "; too few repeated runs to measure the run-to-run spread: each figure's own alone")
        return (f"{within} of {len(self.checks)} searched figures lie within {self.factor:g} x their reported "
                f"uncertainty of the later mean ({100 * (self.share or 0.0):.0f} %; {goal} the "
                f"{100 * GOAL_SHARE:.0f} % asked{spread})")

    def to_dict(self) -> dict[str, Any]:
        return {"checks": [asdict(c) for c in self.checks], "factor": self.factor, "share": self.share,
                "goal_share": GOAL_SHARE, "unchecked": self.unchecked,
                "run_to_run": asdict(self.run_to_run) if self.run_to_run else None, "summary": self.summary()}


def _key(space: Space, point: Mapping[str, Value]) -> tuple:
    return tuple(point.get(name) for name in space.names)


def later_runs(space: Space, winner: Mapping[str, Value] | None, replicates=None, ablations=None
               ) -> list[tuple[tuple, float, str]]:
    """(point key, figure, source) of each valid run after the search: the
    ablation rounds' roles, and the gain's own runs of the start and of
    `winner` (the point the gain measured) when they were not taken from
    the rounds (Replicates.source then says where they came from)."""
    from advisor.tuner.session.ablation import START

    runs: list[tuple[tuple, float, str]] = []
    for role, outcome in (getattr(ablations, "outcomes", None) or []):
        point = dict(space.start) if role == START else ablations.point_of(role, space.start)
        if point is not None and outcome.valid and outcome.objective:
            runs.append((_key(space, point), float(outcome.objective), ROUNDS))
    if replicates is not None and not replicates.source:
        runs += [(_key(space, space.start), float(v), GAIN) for v in replicates.start if v]
        if winner is not None:
            runs += [(_key(space, winner), float(v), GAIN) for v in replicates.winner if v]
    return runs


def check_figures(space: Space, observations: Sequence[Observation], later: Sequence[tuple[tuple, float, str]] = ()
                  ) -> FigureChecks:
    """Each valid searched figure (not a replicate) of a point the session
    measured again afterwards: a replicate in the search with a later trial
    number, or a run in `later` (later_runs)."""
    from advisor.tuner.session.session_context import point_text

    out = FigureChecks(run_to_run=run_to_run(space, observations, later))
    for o in observations:
        if o.replicate or not o.valid or not o.objective:
            continue
        key = _key(space, o.point)
        again = [(float(r.objective), REPLICATE) for r in observations
                 if r.trial > o.trial and r.valid and r.objective and r.replicate and _key(space, r.point) == key]
        again += [(value, source) for k, value, source in later if k == key]
        if not again:
            continue
        uncertainty = o.details.get("uncertainty") if isinstance(o.details, Mapping) else None
        if not isinstance(uncertainty, Mapping) or uncertainty.get("rel_sd") is None:
            out.unchecked += 1
            continue
        mean = sum(v for v, _ in again) / len(again)
        sources = sorted({s for _, s in again}, key=[REPLICATE, ROUNDS, GAIN].index)
        own = float(uncertainty["rel_sd"])
        checked = None
        if out.run_to_run is not None:
            checked = math.sqrt(own ** 2 + out.run_to_run.sd ** 2 * (1.0 + 1.0 / len(again)))
        held = dict(uncertainty, rel_sd=checked if checked is not None else own)
        out.checks.append(FigureCheck(o.trial, point_text(space, o.point), float(o.objective), own,
                                      uncertainty.get("bound"), mean, len(again), sources,
                                      agrees(float(o.objective), mean, held), checked))
    return out


def run_to_run(space: Space, observations: Sequence[Observation], later: Sequence[tuple[tuple, float, str]]
               ) -> RunToRun | None:
    """The pooled deviation of log figures over the points run more than once
    after their searched figure: the search's replicates and the later runs.
    Searched figures themselves are left out (they are what is checked, and
    a search trial may stop below its point's peak). None below MIN_RUN_DF."""
    groups: dict[tuple, list[float]] = {}
    for o in observations:
        if o.replicate and o.valid and o.objective and o.objective > 0:
            groups.setdefault(_key(space, o.point), []).append(math.log(float(o.objective)))
    for key, value, _ in later:
        if value > 0:
            groups.setdefault(key, []).append(math.log(value))
    return pooled_log_sd(list(groups.values()))


def pooled_log_sd(groups: Sequence[Sequence[float]]) -> RunToRun | None:
    """The pooled deviation of groups of log figures (one group a point); None below MIN_RUN_DF."""
    squares, df, points = 0.0, 0, 0
    for logs in groups:
        if len(logs) < 2:
            continue
        centre = sum(logs) / len(logs)
        squares += sum((x - centre) ** 2 for x in logs)
        df += len(logs) - 1
        points += 1
    if df < MIN_RUN_DF:
        return None
    return RunToRun(math.sqrt(squares / df), df, points)
