"""The knee search: the peak rate that meets the SLO, bracketed probe by
probe (`KneeBracket`, `knee_search`), and Arlitt's stepped ramp (`ramp`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from advisor.errors import UsageError
from advisor.tuner.staging.target import StagingTarget
from advisor.tuner.trial.result import TrialInputs, TrialResult, with_rate
from advisor.tuner.trial.runner import run_trial
from advisor.tuner.trial.verdict import CLOSED_BY_SERVER, Verdict

# Failures that CPU taken by other programs can cause, and so are worth a
# second attempt. Churn, keep-alive, logging, network, disk and memory name a
# cause of their own.
RETRY_LABELS = ("server CPU", "worker pool exhausted", "client-bound", "none")


def ramp(target: StagingTarget, base: TrialInputs, rates: list[float], *, max_trials: int = 50,
         on_trial: Callable[[TrialResult], None] | None = None, **kwargs) -> list[TrialResult]:
    """Arlitt's stepped rate: one trial per rate, stopping at the first client-bound one."""
    if len(rates) > max_trials:
        raise UsageError(f"a ramp of {len(rates)} steps is too long", hint=f"use at most {max_trials} steps")
    results = []
    for rate in rates:
        result = run_trial(target, with_rate(base, rate), **kwargs)
        results.append(result)
        if on_trial:
            on_trial(result)
        if result.verdict.label == "client-bound":
            break
    return results


@dataclass
class KneeResult:
    """The highest rate that met the SLO, and how the search got there."""

    peak_rate: float | None  # connections/s that passed; None if even the lowest failed
    peak_reply_rate: float | None  # the passing probe's served_rate (sessions: less the think-time tail)
    lower_bound_only: bool  # True when the client, not the server, ended the search
    probes: list[TrialResult]
    limiting: Verdict | None  # verdict of the first failing probe above the peak
    stop_reason: str
    stopped_early: bool = False  # the first probe failed clearly: the point lies below the start rate
    reference_ms: tuple[float, ...] = ()
    """CPU-speed reference readings on the server's cores, before the search
    and after each probe, when the caller took them (bench --compare)."""

    @property
    def served_bound(self) -> float | None:
        """Stopped early: the replies per second the failing probe served, an upper bound of the peak's."""
        return self.probes[-1].served_rate if self.stopped_early and self.probes else None

    def to_dict(self) -> dict[str, object]:
        return {"peak_rate": self.peak_rate, "peak_reply_rate": self.peak_reply_rate,
                "lower_bound_only": self.lower_bound_only, "stop_reason": self.stop_reason,
                "stopped_early": self.stopped_early, "served_bound": self.served_bound,
                "limiting_verdict": self.limiting.to_dict() if self.limiting else None,
                "probes": [{"rate": p.inputs.rate, "reply_rate": round(p.httperf.reply_rate, 1),
                            "meets_slo": p.meets_slo, "valid": p.valid, "label": p.verdict.label,
                            "slo_failures": p.slo_failures(), "attempt": p.attempt,
                            "disturbed": p.interference["disturbed"],
                            # Where a probe's time goes (the plan's estimate, and making probes cheaper).
                            "wall_s": round(p.wall_s, 2), "quiet_wait_s": round(p.quiet_wait_s, 2),
                            "warmup_s": round(p.warmup.seconds + p.warmup.drain_s, 2) if p.warmup else 0.0,
                            **({"client_time": p.client_time.to_dict()} if p.inputs.rtt_ms else {})}
                           for p in self.probes]}


def _limiting(probes: list[TrialResult], bad: TrialResult | None, good: TrialResult | None) -> Verdict | None:
    """The verdict of what held the peak down: the lowest failing probe above
    the peak whose verdict names a cause. A search that brackets closely
    (KneeBracket probes just above what the server served) can fail its
    lowest probe by a hair, with nothing saturated enough to name; a probe
    further above shows the same limit plainly."""
    if bad is None:
        return None
    floor = good.inputs.rate if good is not None else 0.0
    named = [p for p in probes if not p.meets_slo and p.inputs.rate > floor and p.verdict.label != "none"
             and p.verdict.label != "client-bound"]
    return min(named, key=lambda p: p.inputs.rate).verdict if named else bad.verdict


def misses_at_any_rate(result: TrialResult) -> bool:
    """A missed probe whose added round trips alone reach the SLO's reply
    time (verdict.explain_miss): the rate does not change them."""
    cause = result.verdict.evidence.get("miss_cause")
    return not result.meets_slo and isinstance(cause, dict) and cause.get("cause") == "round trips"


def served_share(result: TrialResult) -> float:
    """The replies served over those offered (1.0 when the offer is not known)."""
    offered = result.inputs.target_request_rate
    if not offered or offered <= 0:
        return 1.0
    return min(1.0, result.served_rate / offered)


def worth_another_attempt(result: TrialResult, retry_short_pool: bool = False) -> bool:
    """Whether a failed probe may have measured something other than the config."""
    if result.client_failed:
        return True  # httperf died mid-run: the server was not measured at all
    if misses_at_any_rate(result):
        # The round trips alone take the SLO's time: other programs can only
        # take capacity away, and no rerun gives the time back (a CI run spent
        # a second probe on it, then stopped for the same cause).
        return False
    if result.interference["disturbed"] and result.verdict.label in RETRY_LABELS:
        return True
    return retry_short_pool and bool(result.short_capacity_reasons)


@dataclass
class KneeBracket:
    """The rates a knee search tries: up until a probe fails, down until one
    passes, then halving the bracket until it is within `tolerance`.

    The first move is by `step`, and each further move the same way squares
    the factor (at most 2): from a close guess the peak is bracketed in two
    or three probes, and a far one still in a few. Going down, a probe whose
    server served clearly less than its offer (`share`) says where its
    capacity lies, and the next rate is at most 95 % of what it served;
    except after a start at the point's own earlier peak, whose first move
    down is one step.
    """

    max_rate: float
    min_rate: float = 1.0
    tolerance: float = 0.1
    step: float = 2.0
    lo: float | None = None  # the highest rate that passed
    hi: float | None = None  # the lowest rate that failed
    reason: str = ""
    _factor: float = 0.0
    _moving: int = 0  # +1 after a move up, -1 after one down
    _served_at_hi: float = 0.0  # what the server served at `hi`: near its capacity

    def next_rate(self, rate: float, passed: bool | None, share: float = 1.0) -> float | None:
        """The rate to probe after `rate` passed or failed (None: neither, the
        bracket stays); None: the search is done (see `reason`)."""
        if passed:
            self.lo = rate if self.lo is None else max(self.lo, rate)
        elif passed is False and (self.hi is None or rate <= self.hi):
            self.hi = rate
            self._served_at_hi = share * rate
        if self.hi is None:
            if rate >= self.max_rate:
                self.reason = "max rate reached without failing"
                return None
            return min(self.max_rate, rate * self._move(+1))
        if self.lo is None:
            if rate <= self.min_rate:
                self.reason = "failed at the minimum rate"
                return None
            # A start at the point's own earlier peak (a first step within the
            # tolerance) that fails is most likely just above the peak: the
            # first move down is one step, whatever it served. A pool pushed
            # just past its peak can serve far less than its capacity (prefork
            # with MaxConnectionsPerChild 10 served 5 of 81.6 connections/s;
            # the event MPM under half its offer), and 95 % of that took three
            # more probes to climb back (a simulated search: 3.8 probes a
            # replicate, 2.6 with the step).
            own_peak_failed = self._moving == 0 and self.step <= 1 + self.tolerance + 1e-9
            down = rate / self._move(-1)
            if share < 1 - self.tolerance and not own_peak_failed:
                down = min(down, 0.95 * share * rate)
            return max(self.min_rate, down)
        # A hair of slack: a step of exactly 1 + tolerance closes the bracket
        # in spite of floating-point rounding (1.1 * 407.75 - 407.75).
        if (self.hi - self.lo) / self.lo <= self.tolerance + 1e-9:
            self.reason = f"bracketed within {self.tolerance:.0%}"
            return None
        # Just above what the lowest failing rate served, when that lies
        # inside: the peak is rarely far from it. Else halve a wide bracket
        # on the log scale (100 to 19 in two probes, not five), a narrow one
        # in the middle.
        guess = math.floor(1.05 * self._served_at_hi)
        if self.lo < guess < self.hi and self._served_at_hi < (1 - self.tolerance) * self.hi:
            return guess
        if self.hi / self.lo > 1.5:
            middle = math.floor(math.sqrt(self.lo * self.hi))
        else:
            middle = math.floor((self.lo + self.hi) / 2)
        if middle <= self.lo or middle >= self.hi:
            self.reason = "bracket cannot be split further"
            return None
        return middle

    def _move(self, direction: int) -> float:
        self._factor = min(2.0, self._factor * self._factor) if self._moving == direction else self.step
        self._moving = direction
        return self._factor


def knee_search(target: StagingTarget, base: TrialInputs, *, start_rate: float, max_rate: float,
                min_rate: float = 1.0, tolerance: float = 0.1, max_probes: int = 14, retries: int = 1,
                retry_short_pool: bool = False, step: float = 2.0, stop_clearly_below: bool = False,
                on_trial: Callable[[TrialResult], None] | None = None, **kwargs) -> KneeResult:
    """Peak sustainable rate under the SLO: double until a probe fails, then bisect.

    Exponential-then-binary search needs O(log(peak)) probes where a linear
    ramp needs peak/step of them. A client-bound probe ends the search: the
    rates above it cannot be measured with this load generator, so the peak
    is reported as a lower bound.

    Other programs on a shared machine can only take capacity away, never
    add it: a probe that failed while they took the server's or httperf's
    core, with a verdict their CPU use can explain (RETRY_LABELS), is run
    again (at most `retries` times), and the rate passes if any attempt
    passes. Repeats count against `max_probes`.

    With `retry_short_pool`, a probe that failed while the pool was short of
    its limit is run again too: the pool it measured was a transient (after a
    graceful restart prefork adds one child a second for ten growing cycles),
    and the probe left it larger.

    `step` is the first move's factor when the start rate is already a good
    guess (a point's own peak, measured before): 1.2 brackets a peak near it
    in two or three probes where doubling takes five or six. Each further
    move the same way squares the factor (at most 2), so a peak far away is
    still reached in a few probes. A probe that failed because the server
    served clearly less than it was offered tells where its capacity lies:
    the next rate down is at most 95 % of what it served.

    With `stop_clearly_below`, a search whose first probe (at an incumbent's
    peak) fails that clearly, served below 1 - 2 x tolerance of its offer,
    stops there (`stopped_early`): the point cannot beat the incumbent, and
    the probes that would find how far below it lies are the search's
    largest waste (Osogami & Kato, SIGMETRICS 2007, cut tuning time the
    same way). Its served rate is then an upper bound of its peak.

    A probe that missed because its added round trips alone take the SLO's
    reply time (KeepAlive Off over TLS at --rtt 50: 150 ms a reply) ends the
    search with no peak: every lower rate pays the same round trips, so
    probing down to the floor would only spend probes (the worst-practice
    start of bench/tune_bench.py took one probe and 18 s instead of 40 s).
    """
    if start_rate <= 0 or max_rate < start_rate:
        raise UsageError("the knee search needs 0 < --start-rate <= --max-rate")
    if retries < 0:
        raise UsageError("--retries must be 0 or more")
    probes: list[TrialResult] = []
    good: TrialResult | None = None
    bad: TrialResult | None = None
    rate: float | None = start_rate
    reason = "probe budget spent"
    bracket = KneeBracket(max_rate=max_rate, min_rate=min_rate, tolerance=tolerance, step=step)
    while rate is not None and len(probes) < max_probes:
        result = _probe_rate(target, base, rate, probes, retries=retries, max_probes=max_probes,
                             retry_short_pool=retry_short_pool, on_trial=on_trial, trial_options=kwargs)
        if result.meets_slo:
            good = result if good is None or rate > good.inputs.rate else good
        else:
            ended = _search_ended_by(result, good, probes)
            if ended is not None:
                return ended
            if result.verdict.label != "client-bound":
                bad = result if bad is None or result.inputs.rate < bad.inputs.rate else bad
                if stop_clearly_below and len(probes) == result.attempt and served_share(result) < 1 - 2 * tolerance:
                    return KneeResult(None, None, False, probes, result.verdict,
                                      f"stopped early: at the start rate the server served "
                                      f"{served_share(result):.0%} of its offer", stopped_early=True)
        # A client-bound probe below a passing rate says nothing of the server: the bracket stays.
        passed = None if result.verdict.label == "client-bound" and not result.meets_slo else result.meets_slo
        rate = bracket.next_rate(rate, passed, served_share(result))
        if rate is None:
            reason = bracket.reason
            break
    return _knee_result(good, False, probes, _limiting(probes, bad, good), reason)


def _probe_rate(target: StagingTarget, base: TrialInputs, rate: float, probes: list[TrialResult], *, retries: int,
                max_probes: int, retry_short_pool: bool, on_trial: Callable[[TrialResult], None] | None,
                trial_options: dict) -> TrialResult:
    """One probe at `rate`, run again while a failure may not be the
    config's (worth_another_attempt) and the budget allows; each attempt
    is appended to `probes`, and the last one is returned."""
    for attempt in range(1, retries + 2):
        result = run_trial(target, with_rate(base, rate), **trial_options)
        result.attempt = attempt
        probes.append(result)
        if on_trial:
            on_trial(result)
        if result.meets_slo or len(probes) >= max_probes or not worth_another_attempt(result, retry_short_pool):
            break
    return result


def _search_ended_by(result: TrialResult, good: TrialResult | None, probes: list[TrialResult]) -> KneeResult | None:
    """The search's result when the failed probe `result` ends it (no lower
    rate can pass, or the client limited it above the peak); None: go on."""
    if result.verdict.label == CLOSED_BY_SERVER:
        # Every rate fails the same way: the workload, not the load, is wrong for this config.
        return _knee_result(good, False, probes, result.verdict,
                            "the server closes connections before httperf's calls are done (see the verdict)")
    if misses_at_any_rate(result):
        # A lower rate pays the same round trips a reply: no probe can pass.
        return _knee_result(good, False, probes, result.verdict,
                            "the round trips alone take the SLO's reply time, at any rate (see the verdict)")
    if result.verdict.label == "client-bound":
        if good is None or result.inputs.rate > good.inputs.rate:
            return _knee_result(good, True, probes, result.verdict,
                                "client-bound probe: peak is at least the last passing rate")
    return None


def _knee_result(good: TrialResult | None, lower_bound_only: bool, probes: list[TrialResult],
                 limiting: Verdict | None, stop_reason: str) -> KneeResult:
    """The search's result with `good`, the highest passing probe, as its peak."""
    return KneeResult(good.inputs.rate if good else None, good.served_rate if good else None,
                      lower_bound_only, probes, limiting, stop_reason)
