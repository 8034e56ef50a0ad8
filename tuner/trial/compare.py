"""`bench --compare A B`: is B faster than A, and how sure is that.

Each round measures both sides back to back, in an order drawn afresh for
the round from a seeded generator, and the comparison is made within the
rounds (advisor.tuner.stats.ratio.paired_interval): a host whose speed
drifts from minute to minute moves both figures of a round together, and
neither side always runs on the minute after the other. Abedi & Brecht
(ICPE 2017) found such randomized multiple interleaved trials repeatable on
cloud hosts where back-to-back blocks of runs of one system, then the other,
called two identical systems 38 % apart.

A side's figure is the peak rate under the SLO, found by a knee search
that starts from the side's own last peak with a first step as wide as the
tolerance: the bracket closes in two or three probes where a search from
afar takes five or more. `compare_rounds` is the loop, with the
measurement handed in; `knee_measure` is that measurement on a real target.
Nothing here prints.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from advisor.errors import UsageError
from advisor.tuner.staging.managed_config import ManagedConfig
from advisor.tuner.staging.target import SandboxTarget, StagingTarget
from advisor.tuner.stats.ratio import RatioInterval, bracket_sd, paired_interval
from advisor.tuner.trial.compare_limits import bottleneck_notes, bottlenecks
from advisor.tuner.trial.knee import KneeResult, knee_search
from advisor.tuner.trial.objective import GUESS_STEP
from advisor.tuner.trial.result import TrialInputs, TrialResult

SIDE_NAMES = ("A", "B")
FIRST_DECISION_ROUND = 3
"""The first round after which the precision may end the comparison: two
rounds give one degree of freedom, whose t quantile (12.7) makes any
interval that happens to be narrow then a matter of luck."""
FASTER, SLOWER, NO_DIFFERENCE, UNDETERMINED = "faster", "slower", "no difference", "undetermined"
PRECISION_REACHED = "precision reached"
ROUNDS_SPENT = "max rounds spent"
START_STEP = 2.0
"""The first step of a side's first search when nothing near its peak is known (bench's doubling)."""


@dataclass(frozen=True)
class CompareSide:
    """One side of the comparison: the managed include's lines and, on the
    sandbox, the CPU quota its server runs under (None: as it is)."""

    name: str
    directives: tuple[str, ...]
    source: str
    """How the admin named it: a file's path, the lines given, or "the config as it is"."""
    quota_pct: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "directives": list(self.directives),
                "quota_pct": self.quota_pct}


@dataclass(frozen=True)
class CompareSettings:
    """How each side's peak is searched and when the rounds end."""

    start_rate: float
    max_rate: float
    tolerance: float = 0.1
    max_probes: int = 12
    retries: int = 1
    precision: float = 0.05
    """The interval's half-width (relative) that ends the rounds."""
    max_rounds: int = 15
    seed: int = 0

    def check(self) -> None:
        if not self.precision > 0:
            raise UsageError(f"--precision must be above 0 (got {self.precision:g})",
                             hint="give the 95 % interval's half-width wanted, e.g. 0.05 for ±5 %")
        if self.max_rounds < FIRST_DECISION_ROUND:
            raise UsageError(f"--max-rounds must be at least {FIRST_DECISION_ROUND} (got {self.max_rounds})",
                             hint="a paired interval from fewer rounds is too wide to say anything")
        if not 0 < self.tolerance < 1:
            raise UsageError("--tolerance must lie between 0 and 1 for --compare")


@dataclass(frozen=True)
class SideRun:
    """One side's knee search in one round."""

    side: str
    start_rate: float
    first_step: float
    peak_rate: float | None
    figure: float | None
    """Replies per second at the peak, read inside the search's bracket
    (advisor.tuner.trial.knee_figure): the side's figure."""
    probes: int
    stop_reason: str
    lower_bound: bool
    """The search never failed a probe (client-bound, or --max-rate passed): the peak is a floor."""
    seconds: float
    """The search's wall time, its side's reload included: what a round costs."""
    probe_rates: tuple[float, ...] = ()
    passing_figure: float | None = None
    """The passing probe's served rate: the bracket's lower end, the figure before issue 56."""
    figure_how: str = ""
    probe_served: tuple[float, ...] = ()
    probe_met: tuple[bool, ...] = ()
    bottleneck: str | None = None
    """The verdict of the first failing probe above the peak: what set this peak."""
    reference_ms: tuple[float, ...] = ()
    """The CPU-speed reference on the server's cores before the search and
    after each probe (a server on this machine): how fast its cores ran."""

    def to_dict(self) -> dict[str, Any]:
        return {"side": self.side, "start_rate": self.start_rate, "first_step": round(self.first_step, 4),
                "bottleneck": self.bottleneck, "reference_ms": [round(v, 4) for v in self.reference_ms],
                "peak_rate": self.peak_rate, "figure": self.figure, "passing_figure": self.passing_figure,
                "figure_how": self.figure_how, "probes": self.probes,
                "probe_served": [round(v, 2) for v in self.probe_served], "probe_met": list(self.probe_met),
                "probe_rates": list(self.probe_rates), "stop_reason": self.stop_reason,
                "lower_bound": self.lower_bound, "seconds": round(self.seconds, 2)}


@dataclass(frozen=True)
class CompareRound:
    number: int
    order: tuple[str, ...]
    runs: dict[str, SideRun]
    interval: RatioInterval | None
    """B over A over the rounds so far (from the second round on)."""

    @property
    def ratio(self) -> float | None:
        a, b = self.runs.get("A"), self.runs.get("B")
        if a is None or b is None or not a.figure or not b.figure:
            return None
        return b.figure / a.figure

    def to_dict(self) -> dict[str, Any]:
        return {"round": self.number, "order": list(self.order),
                "runs": {name: run.to_dict() for name, run in self.runs.items()}, "ratio": self.ratio,
                "interval": self.interval.to_dict() if self.interval is not None else None}


@dataclass
class CompareResult:
    sides: tuple[CompareSide, ...]
    settings: CompareSettings
    rounds: list[CompareRound] = field(default_factory=list)
    interval: RatioInterval | None = None
    verdict: str = UNDETERMINED
    stop_reason: str = ""

    @property
    def bottlenecks(self) -> dict[str, dict[str, int]]:
        """Per side, how many rounds each verdict set its peak."""
        return bottlenecks(self)

    @property
    def notes(self) -> list[str]:
        """What the sides' limits mean for the ratio (compare_limits)."""
        return bottleneck_notes(self)

    @property
    def precision_reached(self) -> bool:
        return self.interval is not None and self.interval.half_width <= self.settings.precision

    def to_dict(self) -> dict[str, Any]:
        interval = self.interval
        settings = self.settings
        return {"kind": "compare", "sides": [side.to_dict() for side in self.sides],
                "seed": settings.seed, "precision": settings.precision, "max_rounds": settings.max_rounds,
                "tolerance": settings.tolerance, "rounds": [r.to_dict() for r in self.rounds],
                "ratio": interval.ratio if interval else None, "low": interval.low if interval else None,
                "high": interval.high if interval else None,
                "half_width": interval.half_width if interval else None,
                "confidence": interval.confidence if interval else None,
                "method": interval.method if interval else None,
                "verdict": self.verdict, "stop_reason": self.stop_reason,
                "precision_reached": self.precision_reached,
                "bottlenecks": self.bottlenecks, "notes": self.notes}


MeasureSide = Callable[[CompareSide, float, float], KneeResult]
"""A side's knee search from a start rate with a first step."""


def verdict_of(interval: RatioInterval) -> str:
    """B against A: faster or slower when the interval leaves 1 out, else no difference."""
    if not interval.excludes_one:
        return NO_DIFFERENCE
    return FASTER if interval.ratio > 1.0 else SLOWER


def compare_rounds(sides: tuple[CompareSide, CompareSide], settings: CompareSettings, measure: MeasureSide,
                   on_round: Callable[[CompareRound], None] | None = None) -> CompareResult:
    """Rounds of both sides in a random order each, until the interval of B/A
    is within the precision (from FIRST_DECISION_ROUND on) or the rounds are spent."""
    settings.check()
    rng = random.Random(settings.seed)
    by_name = {side.name: side for side in sides}
    result = CompareResult(sides, settings)
    last_peak: dict[str, float] = {}
    for number in range(1, settings.max_rounds + 1):
        order = SIDE_NAMES if rng.random() < 0.5 else SIDE_NAMES[::-1]
        runs: dict[str, SideRun] = {}
        for name in order:
            start, step = _start(name, last_peak, settings)
            began = time.monotonic()
            knee = measure(by_name[name], start, step)
            run = _side_run(name, start, step, knee, settings, time.monotonic() - began)
            runs[name] = run
            problem = _unusable(run, settings)
            if problem is not None:
                result.rounds.append(CompareRound(number, order, runs, result.interval))
                result.stop_reason = problem
                result.verdict = UNDETERMINED
                return result
            last_peak[name] = float(run.peak_rate or 0.0)
        pairs = [(r.runs["A"].figure, r.runs["B"].figure) for r in result.rounds] + \
                [(runs["A"].figure, runs["B"].figure)]
        interval = (paired_interval(pairs, floor_sd=bracket_sd(settings.tolerance)) if len(pairs) >= 2 else None)
        current = CompareRound(number, order, runs, interval)
        result.rounds.append(current)
        result.interval = interval
        if on_round is not None:
            on_round(current)
        if number >= FIRST_DECISION_ROUND and interval is not None and interval.half_width <= settings.precision:
            result.stop_reason = PRECISION_REACHED
            break
    else:
        result.stop_reason = ROUNDS_SPENT
    result.verdict = verdict_of(result.interval) if result.interval is not None else UNDETERMINED
    return result


def _start(name: str, last_peak: dict[str, float], settings: CompareSettings) -> tuple[float, float]:
    """Where a side's search starts and its first step: its own last peak,
    the lower end of a bracket as wide as the tolerance; else the other
    side's, a good guess but no bracket's end; else bench's start rate."""
    own = last_peak.get(name)
    if own:
        return min(own, settings.max_rate), 1.0 + settings.tolerance
    other = next((peak for side, peak in last_peak.items() if side != name and peak), None)
    if other:
        return min(other, settings.max_rate), GUESS_STEP
    return min(settings.start_rate, settings.max_rate), START_STEP


def _side_run(name: str, start: float, step: float, knee: KneeResult, settings: CompareSettings,
              seconds: float) -> SideRun:
    from advisor.tuner.trial.knee_figure import knee_figure
    from advisor.tuner.trial.objective import measured_something_else, reads_server_speed
    from advisor.tuner.trial.precision import readings_from_probes

    never_failed = knee.lower_bound_only or (knee.peak_rate is not None and knee.limiting is None
                                             and knee.peak_rate >= settings.max_rate)
    readings = readings_from_probes(knee.probes, counts=lambda r: not measured_something_else(r),
                                    reads_speed=reads_server_speed)
    figure = knee_figure(readings, knee.peak_rate, knee.peak_reply_rate)
    return SideRun(name, start, step, knee.peak_rate, figure.value if figure else None,
                   len(knee.probes), knee.stop_reason, never_failed, seconds,
                   tuple(p.inputs.rate for p in knee.probes), figure.passing if figure else None,
                   figure.how if figure else "", tuple(float(p.served_rate) for p in knee.probes),
                   tuple(bool(p.meets_slo) for p in knee.probes),
                   knee.limiting.label if knee.limiting is not None else None, knee.reference_ms)


def _unusable(run: SideRun, settings: CompareSettings) -> str | None:
    """Why a side's figure cannot enter a ratio, or None when it can."""
    if run.figure is None or run.peak_rate is None:
        return f"side {run.side} met the SLO at no rate tried ({run.stop_reason}): it has no peak to compare"
    if run.lower_bound:
        return (f"side {run.side}'s peak is only a floor ({run.stop_reason}): the server was not the limit "
                f"(raise --max-rate above {settings.max_rate:g}, or load from more clients)")
    return None


class QuotaSandboxTarget(SandboxTarget):
    """The sandbox whose CPU quota the comparison moves between its sides: the
    trials read the quota in force (their verdict holds the server to it),
    not the one `staging up` recorded."""

    def __init__(self, sandbox) -> None:
        super().__init__(sandbox)
        self.original_quota = sandbox.cpu_quota()
        self.moved_quota = None

    def cpu_quota(self):
        return self.moved_quota if self.moved_quota is not None else self.original_quota

    def move_quota(self, pct: float | None) -> None:
        """Hold the server to `pct` % of a core (None: the quota it was started with)."""
        if self.original_quota is None:
            return
        if pct is None or pct == self.original_quota.pct:
            if self.moved_quota is not None:
                self.original_quota.with_pct(self.original_quota.pct)
                self.moved_quota = None
            return
        self.moved_quota = self.original_quota.with_pct(pct)


def quota_target(target: StagingTarget) -> QuotaSandboxTarget:
    """The target whose quota --compare-quota moves; refused off the sandbox
    or on a sandbox started without a quota (nothing changed either way)."""
    if not isinstance(target, SandboxTarget):
        raise UsageError("--compare-quota moves the sandbox's CPU quota: it needs the sandbox as the target",
                         hint="leave out --config/--url/--host, or compare directives with --compare alone")
    moved = QuotaSandboxTarget(target.sandbox)
    if moved.original_quota is None:
        raise UsageError("--compare-quota needs a sandbox started with a CPU quota",
                         hint="apache-advisor staging up --cpu-quota 50 (as root)")
    return moved


def knee_measure(target: StagingTarget, managed: ManagedConfig, base: TrialInputs, settings: CompareSettings,
                 *, on_side: Callable[[CompareSide], None] | None = None,
                 on_trial: Callable[[TrialResult], None] | None = None, **trial_options) -> MeasureSide:
    """The measurement of a side on a real target: its lines after the
    common ones (--set) in the managed include, through ManagedConfig's
    reload and its checks, its quota moved (QuotaSandboxTarget), then an
    uncapped knee search; the runner's warm-up waits for the pool."""

    def measure(side: CompareSide, start_rate: float, step: float) -> KneeResult:
        if on_side is not None:
            on_side(side)
        lines = list(base.directives) + list(side.directives)
        if isinstance(target, QuotaSandboxTarget):
            target.move_quota(side.quota_pct)
        managed.apply(lines)
        inputs = replace(base, directives=lines)
        readings: list[float] = []
        read = _reference_reader(target, base.server_cpus, readings)
        read()

        def after_probe(trial: TrialResult) -> None:
            read()
            if on_trial is not None:
                on_trial(trial)

        knee = knee_search(target, inputs, start_rate=start_rate, max_rate=settings.max_rate,
                           tolerance=settings.tolerance, max_probes=settings.max_probes, retries=settings.retries,
                           retry_short_pool=True, step=step, on_trial=after_probe, **trial_options)
        return replace(knee, reference_ms=tuple(readings))

    return measure


def _reference_reader(target: StagingTarget, server_cpus: list[int] | None, readings: list[float]
                      ) -> Callable[[], None]:
    """Appends a reading of the CPU-speed reference on the server's cores
    (15 to 35 ms) to `readings`; does nothing for a server on another machine."""
    from advisor.tuner.measure.cpu_reference import read_reference

    if not getattr(target, "on_this_machine", True):
        return lambda: None
    return lambda: readings.append(read_reference(server_cpus).ms)
