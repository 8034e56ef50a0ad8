"""A trial's figure with its own measured uncertainty (issue 56).

The uncertainty is the standard deviation of the log of the figure (for
small values, its relative standard deviation), from what the trial itself
measured, its parts combined in quadrature as independent errors:

- the bracket: the knee lies somewhere between the highest rate that passed
  and the lowest that failed, evenly likely anywhere on the log scale, so
  ln(hi / lo) / sqrt(12) (advisor.tuner.stats.ratio.bracket_sd);
- the capacity readings: a probe that failed because the server was
  saturated served what the server could serve at that moment. Two such
  readings that disagree, or a probe that passed while serving more than a
  saturated one could, show the server's speed moved during the trial.
  Their spread is taken as a sample's deviation (a pair a apart: a / sqrt(2));
- the reference: a fixed piece of work timed on the server's cores before
  and after the trial (advisor.tuner.measure.cpu_reference); the change is
  the drift of the cores between two moments a trial apart, counted the
  same way as a pair of readings.

A figure can also be a bound rather than a measure: a search that climbed
to its top rate (or spent its probes) without a failing probe above its
peak has a floor ("lower"); one stopped at its first probe, failing
clearly below the incumbent's peak, has a ceiling ("upper").

`TrialUncertainty.to_dict()` is what `TrialOutcome.details["uncertainty"]`
holds; its keys (`rel_sd`, `bound`, `components`, `reference`) are read by
the optimizer and by the intervals as a floor: keep them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from advisor.tuner.stats.ratio import bracket_sd

LOWER = "lower"
UPPER = "upper"

MIN_SATURATED_SHARE = 0.05
"""A failed probe that served less than this share of its offer says nothing
of the speed (a server that stopped answering). The bound is low on
purpose: a server that slowed during the trial serves a small share of an
offer made for its earlier speed (a ninth, when a quota fell from half a
core to a tenth), and that is the reading that shows the move. A forking
pool that collapses under overload is left out by its verdict instead
(objective.reads_server_speed)."""
SATURATED_BELOW = 0.97
"""A failed probe that served less than this share of its offer was
saturated; one that served nearly all of it missed on reply time alone."""
CHECK_FACTOR = 2.0
"""How many standard deviations a later measure may lie from the figure
and still agree with it: 2 covers about 95 % of a normal error, the
confidence the session's intervals use."""


@dataclass(frozen=True)
class ProbeReading:
    """What the uncertainty needs of one knee probe."""

    rate: float
    """The offered rate (connections or sessions a second)."""
    served: float
    """What the server served (replies a second, or the served rate's unit)."""
    passed: bool
    offered: float | None = None
    """The offer in the served rate's unit, when known (served / offered is the share)."""
    counts: bool = True
    """False: the probe measured something else (the load generator, other programs)."""
    reads_speed: bool | None = None
    """Whether a failure's served rate reads the server's speed at that
    moment (None: as `counts`). A probe other programs disturbed does, with
    their share taken away: the trial cannot bracket with it, but the speed
    it saw is a speed the trial's figure could have met."""

    @property
    def share(self) -> float:
        if not self.offered or self.offered <= 0:
            return 1.0
        return min(1.0, self.served / self.offered)

    @property
    def saturated(self) -> bool:
        """Failed while serving clearly less than offered, yet not collapsed: a capacity reading."""
        reads = self.counts if self.reads_speed is None else self.reads_speed
        return (not self.passed and reads and self.served > 0
                and MIN_SATURATED_SHARE <= self.share < SATURATED_BELOW)


@dataclass(frozen=True)
class TrialUncertainty:
    """A trial figure's uncertainty: see the module's docstring."""

    rel_sd: float
    bound: str | None = None
    components: dict[str, float | None] = field(default_factory=dict)
    reference: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"rel_sd": round(self.rel_sd, 5), "bound": self.bound,
                "components": {k: (round(v, 5) if v is not None else None) for k, v in self.components.items()},
                "reference": self.reference, "notes": list(self.notes)}


def combine(components: Mapping[str, float | None]) -> float:
    """The parts in quadrature (those left out count as nothing)."""
    return math.sqrt(sum(v * v for v in components.values() if v is not None))


def pair_sd(log_difference: float) -> float:
    """The deviation that two readings `log_difference` apart show."""
    return abs(log_difference) / math.sqrt(2.0)


def sample_sd(logs: Sequence[float]) -> float:
    mean = sum(logs) / len(logs)
    return math.sqrt(sum((v - mean) ** 2 for v in logs) / (len(logs) - 1))


def bracket_component(readings: Sequence[ProbeReading], peak_rate: float | None) -> float | None:
    """ln(hi / lo) / sqrt(12) from the passing peak and the lowest counted failure above it; None: open."""
    if peak_rate is None or peak_rate <= 0:
        return None
    above = [r.rate for r in readings if not r.passed and r.counts and r.rate > peak_rate]
    if not above:
        return None
    return bracket_sd(min(above) / peak_rate - 1.0)


def capacity_component(readings: Sequence[ProbeReading]) -> float | None:
    """The spread the trial's own capacity readings show (None: too few to tell)."""
    saturated = [r for r in readings if r.saturated]
    passed = [r for r in readings if r.passed and r.served > 0]
    spreads: list[float] = []
    if len(saturated) >= 2:
        spreads.append(sample_sd([math.log(r.served) for r in saturated]))
    if saturated and passed:
        # A passing probe served at least what the server could do then; a
        # saturated probe served at most that: one above the other is a move.
        most, lowest = max(r.served for r in passed), min(r.served for r in saturated)
        if most > lowest:
            spreads.append(pair_sd(math.log(most / lowest)))
    failed = [r.rate for r in readings if not r.passed and r.counts]
    if failed and passed:
        # A rate that passed above one that failed: the server was faster
        # for the later (or slower for the earlier) probe.
        top = max(r.rate for r in passed)
        below = [rate for rate in failed if rate < top]
        if below:
            spreads.append(pair_sd(math.log(top / min(below))))
    return max(spreads) if spreads else None


def reference_component(before_ms: float | None, after_ms: float | None) -> float | None:
    if not before_ms or not after_ms or before_ms <= 0 or after_ms <= 0:
        return None
    return pair_sd(math.log(after_ms / before_ms))


def knee_uncertainty(readings: Sequence[ProbeReading], peak_rate: float | None, *, tolerance: float,
                     bound: str | None = None, reference: Mapping[str, Any] | None = None,
                     notes: Iterable[str] = ()) -> TrialUncertainty:
    """A knee search's uncertainty from its probes (`peak_rate`: the highest
    that passed, None when none did). With no failure above the peak the
    figure is a floor ("lower") whatever `bound` says, unless `bound` is
    "upper" (stopped early: it has no passing probe)."""
    notes = list(notes)
    bracket = bracket_component(readings, peak_rate)
    if bracket is None and bound != UPPER and peak_rate is not None:
        bound = LOWER
        notes.append("no probe failed above the peak: the figure is a lower bound")
    if bracket is None and bound in (LOWER, UPPER):
        # The tolerance's bracket stands for the open one: the search ended
        # no finer than that, and how far the bound lies from the peak is
        # not known at all (a ceiling's one reading is no finer either).
        bracket = bracket_sd(tolerance)
    components: dict[str, float | None] = {
        "bracket": bracket, "capacity": capacity_component(readings),
        "reference": reference_component(*(_reference_ms(reference))),
    }
    return TrialUncertainty(combine(components), bound, components, dict(reference) if reference else None,
                            tuple(notes))


def fixed_uncertainty(*, reference: Mapping[str, Any] | None = None, notes: Iterable[str] = ()) -> TrialUncertainty:
    """A run at a fixed rate: no bracket, one reading; the reference's drift is what the trial can tell."""
    components: dict[str, float | None] = {"bracket": None, "capacity": None,
                                           "reference": reference_component(*(_reference_ms(reference)))}
    return TrialUncertainty(combine(components), None, components, dict(reference) if reference else None,
                            tuple(notes))


def _reference_ms(reference: Mapping[str, Any] | None) -> tuple[float | None, float | None]:
    if not reference:
        return None, None
    return reference.get("before_ms"), reference.get("after_ms")


def readings_from_probes(probes: Sequence[Any], counts: Any = None, reads_speed: Any = None) -> list[ProbeReading]:
    """ProbeReadings from a knee search's TrialResults; `counts(result)`
    says whether a failed probe measured the config (default: it did unless
    the load generator set the pace or other programs took the cores),
    `reads_speed(result)` whether its served rate reads the server's speed
    (default: as counts)."""
    out = []
    for p in probes:
        offered = p.inputs.target_request_rate
        if counts is not None:
            counted = bool(counts(p))
        else:
            counted = p.verdict.label != "client-bound" and not p.interference["disturbed"]
        reads = bool(reads_speed(p)) if reads_speed is not None else None
        out.append(ProbeReading(float(p.inputs.rate), float(p.served_rate), bool(p.meets_slo),
                                float(offered) if offered else None, counted or p.meets_slo, reads))
    return out


NO_RATE_MET = "no rate met the SLO"
"""What a figure of 0 says: a knee search none of whose probes met the SLO
(no share of 0 is a spread)."""


def figure_text(value: float, unit: str, uncertainty: Mapping[str, Any] | None) -> str:
    """"1,234.5 replies/s ± 4 %", "at least 1,234.5 replies/s (± 3 %)", or the plain figure without one."""
    text = f"{value:,.1f} {unit}".rstrip()
    if value <= 0:
        return f"{text} ({NO_RATE_MET})"
    if not isinstance(uncertainty, Mapping) or uncertainty.get("rel_sd") is None:
        return text
    pct = 100.0 * float(uncertainty["rel_sd"])
    spread = f"± {pct:.0f} %" if pct >= 1 else f"± {pct:.1f} %"
    bound = uncertainty.get("bound")
    if bound == LOWER:
        return f"at least {text} ({spread})"
    if bound == UPPER:
        return f"at most {text} ({spread})"
    return f"{text} {spread}"


def agrees(figure: float, later_mean: float, uncertainty: Mapping[str, Any], factor: float = CHECK_FACTOR) -> bool:
    """Whether a later measure lies within `factor` x rel_sd of the figure
    on the log scale; a floor agrees with any later measure not far below
    it, a ceiling with any not far above."""
    if figure <= 0 or later_mean <= 0:
        return False
    reach = factor * float(uncertainty.get("rel_sd") or 0.0)
    gap = math.log(later_mean / figure)
    bound = uncertainty.get("bound")
    if bound == LOWER:
        return gap >= -reach
    if bound == UPPER:
        return gap <= reach
    return abs(gap) <= reach
