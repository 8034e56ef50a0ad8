"""One trial of a tuning session on a real staging server: `TrialObjective`
applies a point through ManagedConfig and measures it (a knee search for the
peak, or one run at a fixed rate), and what it keeps of each run for the
journal. `PointRefused` says httpd refused the point; `TrialEvents` is what a
trial tells its display."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, fields, replace
from typing import Any, Callable, Mapping

from advisor.errors import AdvisorError
from advisor.tuner.search.optimizer import Observation, TrialOutcome
from advisor.tuner.search.space import Space, Value
from advisor.tuner.trial.objective_spec import ObjectiveSpec, ProbeSettings
from advisor.tuner.trial.precision import (LOWER, TrialUncertainty, fixed_uncertainty, knee_uncertainty,
                                           readings_from_probes)
from advisor.tuner.trial.session_workload import SessionWorkload

# The first step of an uncapped knee search from a good guess that is not
# the point's own measured peak (see TrialObjective._peak); knee_search
# squares it (1.56, then 2) while the probes keep passing or failing.
GUESS_STEP = 1.25


class PointRefused(Exception):
    """httpd (or the target) refused a candidate: the trial failed, the session goes on."""

    def __init__(self, error: AdvisorError):
        super().__init__(error.render())
        self.error = error


class TrialEvents:
    """What a trial tells its display; the session's events add the rest."""

    def probe(self, result) -> None:
        """One httperf run (advisor.tuner.trial.result.TrialResult) inside a trial."""


class TrialObjective:
    """point -> TrialOutcome on a real staging server: apply the point through
    ManagedConfig (a refusal raises PointRefused), measure it as `objective`
    says, check the server is still there.

    Used by TuneSession, and usable alone (a benchmark script): `incumbent`
    returns the point whose peak the next knee search starts from (None:
    the best peak measured so far, else `probes.start_rate`).
    """

    def __init__(self, target, managed, space: Space, workload: SessionWorkload, objective: ObjectiveSpec,
                 probes: ProbeSettings, *, server_cpus: list[int] | None = None,
                 client_cpus: list[int] | None = None, events: TrialEvents | None = None,
                 registry: list | None = None,
                 incumbent: Callable[[], Mapping[str, Value] | None] | None = None, clients=None,
                 pace=None) -> None:
        from advisor.tuner.trial.pace import Pace
        from advisor.tuner.trial.result import TrialInputs

        self.pace = pace if pace is not None else Pace()
        self.last_kind: str | None = None
        self.last_probes = 0

        self.target = target
        self.managed = managed
        self.space = space
        self.objective = objective
        self.probes = probes
        self.events = events or TrialEvents()
        self.registry = registry if registry is not None else []
        self.clients = clients
        self.incumbent = incumbent
        self.peaks: dict[tuple, list[float]] = {}
        self.highest_uncapped_peak: float | None = None
        """The highest peak an uncapped run (the rounds, the gain) measured this session."""
        self.uncapped_peaks: dict[tuple, list[float]] = {}
        """Each point's peaks from uncapped runs only: a search trial's peak
        may be a floor (its four probes spent climbing) or measured on a cold pool
        (the README session's start: 160 sessions/s in the search, 243-259
        in the rounds), so a mean that keeps it starts every later run low."""
        self.last_elapsed = 0.0
        self.on_start: Callable[[dict], None] | None = None
        self.uncapped = False
        """Gain replicates and ablation rounds: each knee search from the
        point's own peak, with the first search's probe budget and no early
        stop below the incumbent, so that neither side of the ratio is a bound."""
        inputs: dict[str, Any] = dict(
            workload=workload.name, uri=workload.uri, rate=probes.start_rate, duration_s=probes.duration_s,
            num_calls=workload.num_calls, timeout_s=probes.timeout_s, uri_list=workload.uri_list,
            wsess=workload.wsess, server_cpus=server_cpus, client_cpus=client_cpus,
            slo_errors_pct=objective.slo_errors_pct, slo_reply_ms=objective.slo_ms,
            tls_resume=probes.tls_resume, protocol=objective.protocol, h2_share=objective.h2_share)
        if workload.session_log:
            inputs["session_log"] = workload.session_log
        # The warm-up knob arrives with the steady-state trials; an older trial layer has none.
        if "warmup_s" in {f.name for f in fields(TrialInputs)}:
            inputs["warmup_s"] = probes.warmup_s
        from advisor.tuner.trial.result import with_rtt

        self.base = with_rtt(TrialInputs(**inputs), objective.rtt_ms, objective.rtt_how)

    def learn(self, obs: Observation) -> None:
        """Remember a trial's peak rate, where the next knee search starts."""
        knee = obs.details.get("knee") if isinstance(obs.details, Mapping) else None
        if obs.valid and isinstance(knee, Mapping) and knee.get("peak_rate"):
            self.peaks.setdefault(point_key(self.space, obs.point), []).append(float(knee["peak_rate"]))

    def __call__(self, point: dict[str, Value], directives: list[str] | None = None) -> TrialOutcome:
        """`directives`, when given, are applied in place of the point's: a
        benchmark's deliberately bad start lies outside the space's guards,
        and is measured as written (its peaks are kept under `point`)."""
        started = time.monotonic()
        self.last_elapsed = 0.0
        self.last_kind, self.last_probes = None, 0
        if self.on_start is not None:
            self.on_start(point)
        self._check_server()
        if directives is None:
            directives = self.space.directives(point)
        try:
            self.managed.apply(directives, mpm=self._mpm_for(point))
        except AdvisorError as error:
            self._check_server()  # a dead server explains the refusal better than its symptom
            self.last_elapsed = time.monotonic() - started
            raise PointRefused(error) from None
        base = replace(self.base, directives=list(directives))
        reference = self._reference()  # the cores' speed now; read again when the measuring is done
        outcome = self._peak(point, base, reference) if self.objective.kind == "peak" else self._fixed(base, reference)
        self._check_server()
        outcome.details["directives"] = directives
        if self._mpm_for(point) is not None:  # what the server said it ran, beside what the point asked
            outcome.details["server_mpm"] = self.target.running_mpm()
        outcome.details = plain(outcome.details)
        self.last_elapsed = time.monotonic() - started
        if self.last_kind is not None:
            self.pace.record(self.last_kind, self.last_probes, self.last_elapsed)
        return outcome

    def _mpm_for(self, point: Mapping[str, Value]) -> str | None:
        """The MPM the point runs under, when the MPM is searched (None: the running one stays)."""
        dim = self.space.dimension("MPM")
        return None if dim is None else self.space.mpm_of(point)

    def _check_server(self) -> None:
        target = self.target
        try:
            target.check_alive()
        except AdvisorError as error:
            raise AdvisorError(f"the staging server at {target.base_url} stopped answering during the session "
                               f"({error.message})",
                               hint="start it again (apache-advisor staging up) and continue with "
                                    "apache-advisor tune --resume; the journal keeps every completed trial") \
                from None

    def _kwargs(self) -> dict[str, Any]:
        return {"interval": self.probes.sample_interval, "registry": self.registry, "clients": self.clients}

    def _start_rate(self, point: Mapping[str, Value]) -> float | None:
        """The incumbent's peak (this point's own when it was measured)."""
        space = self.space
        key = point_key(space, point)
        own = (self.uncapped and self.uncapped_peaks.get(key)) or self.peaks.get(key)
        if own:
            return sum(own) / len(own)
        if self.uncapped and self.highest_uncapped_peak is not None:
            # A role's first run in the rounds: the winner, measured uncapped
            # in the same round, lies nearer than the search's incumbent, whose
            # peak a search trial capped at twice the one before. In the
            # worst-practice session of 2026-11-27 the incumbent stood at 283
            # sessions/s and the winner peaked at 2,264-2,381: each role's
            # first run doubled up from 283 and took nine probes.
            return self.highest_uncapped_peak
        best = self.incumbent() if self.incumbent is not None else None
        if best is not None:
            peaks = self.peaks.get(point_key(space, best))
            if peaks:
                return sum(peaks) / len(peaks)
        known = [sum(v) / len(v) for v in self.peaks.values() if v]
        return max(known) if known else None

    def _first_step(self, point: Mapping[str, Value]) -> float:
        """The factor of a knee search's first move from its start rate."""
        key = point_key(self.space, point)
        # A point's own peak, measured before, was the lower end of a bracket
        # as wide as the tolerance: a first step of that width most often
        # closes the bracket with the next probe, two probes a run where a
        # step of 1.2 took three or more (4.1-4.5 a run in the README's
        # session of 2026-11-27). knee_search squares later steps.
        if self.peaks.get(key) and (not self.uncapped or key in self.uncapped_peaks):
            return 1.0 + self.probes.tolerance
        if self.uncapped:
            # An uncapped run from a neighbour's peak or from the search's
            # (capped, or cold) figure: a good guess, not a bracket's end.
            # Doubling from it overshot to twice the peak, where the pool
            # could not grow in the warm-up and the probe ran twice as
            # invalid: 5 to 7 probes a first-round run in the README session
            # of 2026-11-27 17:04, where 3 or 4 bracket a peak within ±25 %.
            return GUESS_STEP
        # A search trial from the incumbent's peak: most points of a good
        # region meet the same limit (the server's CPU), just above or below
        # it. Doubling sent them to twice the incumbent, then bisected down:
        # in the README's session of 2026-11-28 four trials each spent
        # three overloaded probes (736, 520, 444 sessions/s, 7 to 9 s each
        # against 4 s for a probe that passes) to learn that the peak lay
        # within 21 % above 368. A step of GUESS_STEP probes near the
        # incumbent, where the search's comparison lies; knee_search squares
        # later steps, so a point far better is still bracketed in the trial's probes.
        return GUESS_STEP

    def _reference(self):
        """The CPU-speed reference on the server's cores (None: a remote server's cores are not here)."""
        from advisor.tuner.measure.cpu_reference import read_reference

        return None if self._remote() else read_reference(self.base.server_cpus)

    def _drift(self, before) -> dict[str, Any] | None:
        from advisor.tuner.measure.cpu_reference import ReferenceDrift, read_reference

        return None if before is None else ReferenceDrift(before, read_reference(self.base.server_cpus)).to_dict()

    def _remote(self) -> bool:
        return not getattr(self.target, "on_this_machine", True)

    def _peak(self, point: Mapping[str, Value], base, reference=None) -> TrialOutcome:
        from advisor.tuner.trial.knee import knee_search

        p = self.probes
        start = self._start_rate(point)
        own = bool(self.peaks.get(point_key(self.space, point)))
        step = self._first_step(point)
        stop_below = False
        if start is None:
            start_rate, max_rate, probes = p.start_rate, p.max_rate, p.first_max_probes
        elif self.uncapped:
            start_rate = max(1.0, min(start, p.max_rate))
            max_rate, probes = p.max_rate, p.first_max_probes
        else:
            start_rate = max(1.0, min(start, p.max_rate))
            # No ceiling at twice the incumbent's peak: a climb that reached
            # it without failing reported a floor as if it were a measure
            # (issue 56: 1,797 and 3,499 in the search for a point that
            # served 5,510 to 8,724 in the rounds). The probe budget bounds it.
            max_rate, probes = p.max_rate, p.max_probes
            # A search trial starts at the incumbent's peak: failing it clearly
            # is all the search needs to know.
            stop_below = not own
        knee = knee_search(self.target, base, start_rate=start_rate, max_rate=max_rate,
                           tolerance=p.tolerance, max_probes=probes, retries=p.retries,
                           retry_short_pool=True, step=step, stop_clearly_below=stop_below,
                           on_trial=self.events.probe, **self._kwargs())
        from advisor.tuner.trial.pace import FIRST, OWN, SEARCH

        self.last_kind = OWN if self.uncapped else FIRST if start is None else SEARCH
        self.last_probes = len(knee.probes)
        if self.uncapped and knee.peak_rate and knee.lower_bound_only is False:
            # Replicates and ablation rounds: the next run of this point starts from its own peak.
            key = point_key(self.space, point)
            self.peaks.setdefault(key, []).append(float(knee.peak_rate))
            self.uncapped_peaks.setdefault(key, []).append(float(knee.peak_rate))
            self.highest_uncapped_peak = max(float(knee.peak_rate), self.highest_uncapped_peak or 0.0)
        outcome = knee_outcome(knee, start_rate, max_rate)
        outcome.details["uncertainty"] = knee_trial_uncertainty(
            knee, p.tolerance, outcome.details.get("bound"), self._drift(reference), self._remote()).to_dict()
        return outcome

    def _fixed(self, base, reference=None) -> TrialOutcome:
        """One run at the objective's fixed rate, run again (up to
        `probes.retries` times) while a disturbance could have changed it."""
        from advisor.tuner.trial.result import with_rate
        from advisor.tuner.trial.runner import run_trial

        objective = self.objective
        for attempt in range(1, self.probes.retries + 2):
            result = run_trial(self.target, with_rate(base, float(objective.rate)), **self._kwargs())
            result.attempt = attempt
            self.events.probe(result)
            # A pool short of its limit is a transient the run itself ends (the
            # parent forks while the load waits), as knee_search's
            # retry_short_pool says: the next run meets the grown pool. Without
            # the rerun the search ran the same short pool again and stopped
            # (CI of 2026-11-29: "trial 1 was invalid twice").
            if not self._disturbed(result) and not result.short_capacity_reasons:
                break
        reasons = list(result.invalid_reasons)
        if self._disturbed(result):
            reasons += list(result.interference["reasons"])
        h = result.httperf
        # With --rtt: the client-perceived mean (measured and added parts in the details).
        reply_ms = result.reply_time_for_slo_ms
        if objective.kind == "throughput":
            over = reply_ms / objective.slo_ms if reply_ms > objective.slo_ms else 1.0
            # Sessions: the rate over the window sessions started in (their think-time tail left out).
            value = float(getattr(result, "served_rate", h.reply_rate)) / over
        else:
            # A request that got no reply counts as one that waited the whole timeout.
            attempted = result.attempted
            lost = min(result.errors, attempted)
            mean_ms = ((attempted - lost) * reply_ms + lost * base.timeout_s * 1000.0) / attempted
            value = 1000.0 / max(mean_ms, 1e-3)
        from advisor.tuner.trial.pace import OWN, SEARCH

        self.last_kind, self.last_probes = (OWN if self.uncapped else SEARCH), result.attempt
        details = {"objective_kind": objective.kind, "rate": objective.rate, "attempts": result.attempt,
                   "verdict": result.verdict.to_dict(), "invalid_reasons": reasons, **trial_summary(result),
                   "uncertainty": fixed_uncertainty(reference=self._drift(reference),
                                                    notes=remote_notes(self._remote())).to_dict()}
        return TrialOutcome(float(value), not reasons, result.verdict.label, details)

    def _disturbed(self, result) -> bool:
        """Other programs took the server's or httperf's cores in a way that
        can have changed this run's figure. They can only take capacity
        away: a throughput run that met the SLO all the same measured what
        the point does; a mean reply time is stretched by any of it."""
        if not result.interference["disturbed"]:
            return False
        return self.objective.kind == "latency" or not result.meets_slo


def knee_outcome(knee, start_rate: float, max_rate: float) -> TrialOutcome:
    """A knee search's figure and details: the peak's served rate, or the
    failing probe's served rate when the search stopped early (an upper
    bound), invalid when the probe that decided measured something else."""
    peak = next((r for r in reversed(knee.probes) if r.meets_slo and r.inputs.rate == knee.peak_rate), None)
    failing = [r for r in knee.probes if not r.meets_slo
               and (knee.peak_rate is None or r.inputs.rate > knee.peak_rate)]
    decisive = min(failing, key=lambda r: (r.inputs.rate, -r.attempt)) if failing else None
    reasons: list[str] = []
    label = None
    if knee.lower_bound_only:
        reasons.append(f"the load generator limited the search ({knee.stop_reason})")
        label = "client-bound"
    elif decisive is not None and measured_something_else(decisive):
        reasons += decisive.invalid_reasons + list(decisive.interference["reasons"])
        label = decisive.verdict.label
    verdict = knee.limiting or (peak.verdict if peak is not None else None)
    details: dict[str, Any] = {
        "objective_kind": "peak",
        "knee": knee.to_dict(),
        "start_rate": start_rate, "max_rate": max_rate,
        "capped": knee.limiting is None and knee.peak_rate is not None and knee.peak_rate >= max_rate,
        "verdict": verdict.to_dict() if verdict is not None else None,
        "invalid_reasons": reasons,
    }
    if peak is not None:
        details.update(trial_summary(peak))
    if decisive is not None:
        details["limiting"] = trial_summary(decisive)
        # Kept as a failure at its rate (the peak is then conservative): the
        # probe did not meet the SLO with the pool the server had.
        details["limiting"]["invalid_reasons"] = list(decisive.invalid_reasons)
    value = float(knee.peak_reply_rate or 0.0)
    if knee.stopped_early and knee.served_bound is not None and not reasons:
        # What it served while failing at the incumbent's peak: at most
        # that, and below the incumbent, which is all the search needs.
        value = float(knee.served_bound)
        details["bound"] = "upper"
        details["stopped_early"] = knee.stop_reason
    return TrialOutcome(value, not reasons, label or (verdict.label if verdict is not None else "none"), details)


def knee_trial_uncertainty(knee, tolerance: float, bound: str | None, reference: dict[str, Any] | None,
                           remote: bool) -> TrialUncertainty:
    """The knee search's figure's uncertainty (trial/precision.py): a probe
    that measured something else (measured_something_else) closes no
    bracket, and reads the server's speed only when other programs were all
    it measured besides (the speed the server had then, their share taken);
    a client-bound search is a floor."""
    readings = readings_from_probes(knee.probes, counts=lambda r: not measured_something_else(r),
                                    reads_speed=reads_server_speed)
    if knee.lower_bound_only:
        bound = LOWER
    return knee_uncertainty(readings, knee.peak_rate, tolerance=tolerance, bound=bound, reference=reference,
                            notes=remote_notes(remote))


def measured_knee(target, server_cpus: list[int] | None, tolerance: float, search: Callable[[], Any]
                  ) -> tuple[Any, dict[str, Any]]:
    """`search()` (a knee search) between two readings of the CPU-speed
    reference on the server's cores, and its figure's uncertainty, as a
    session's trial journals it: bench --mode knee reports the same."""
    from advisor.tuner.measure.cpu_reference import ReferenceDrift, read_reference

    here = getattr(target, "on_this_machine", True)
    before = read_reference(server_cpus) if here else None
    knee = search()
    drift = ReferenceDrift(before, read_reference(server_cpus)).to_dict() if before is not None else None
    bound = "upper" if knee.stopped_early else None
    return knee, knee_trial_uncertainty(knee, tolerance, bound, drift, remote=not here).to_dict()


def reads_server_speed(result) -> bool:
    """A failed probe whose served rate is what the server could serve then
    (see knee_trial_uncertainty)."""
    from advisor.tuner.trial.verdict import CLOSED_BY_SERVER

    from advisor.tuner.trial.knee import served_share

    if result.verdict.label == "process churn" and served_share(result) < 0.5:
        # Overload collapse: prefork with MaxConnectionsPerChild 10 served 5
        # of 81.6 connections/s, forking more than it served; not its speed.
        return False
    return (result.verdict.label not in ("client-bound", CLOSED_BY_SERVER) and not result.client_failed
            and not getattr(result, "pending_restart", None) and "closed_by_server" not in result.verdict.evidence)


def remote_notes(remote: bool) -> list[str]:
    return ["a remote server: no CPU-speed reference on its cores, its drift is not counted"] if remote else []


def point_key(space: Space, point: Mapping[str, Value]) -> tuple:
    return tuple(point.get(name) for name in space.names)


SUMMARY_FIELDS = ("httpd_cpu_pct", "busy_workers", "idle_workers", "accept_queue", "httpd_processes", "time_wait",
                  "httperf_cpu_pct", "procs_running", "forks_per_s", "cpu_throttled_pct")


def metrics_summary(samples) -> dict[str, Any]:
    """Mean and maximum of the per-second metrics that the journal keeps (the
    samples themselves stay with bench)."""
    out: dict[str, Any] = {"samples": len(samples)}
    for name in SUMMARY_FIELDS:
        values = [float(v) for v in (getattr(s, name, None) for s in samples) if isinstance(v, (int, float))]
        if values:
            out[name] = {"mean": round(sum(values) / len(values), 2), "max": round(max(values), 2)}
    out["spawned"] = sum(getattr(s, "httpd_spawns", 0) or 0 for s in samples)
    out["exited"] = sum(getattr(s, "httpd_exits", 0) or 0 for s in samples)
    return out


def measured_something_else(result) -> bool:
    """A failed knee probe that says nothing about the point: the load
    generator set the pace, other programs took the cores, the server still
    ran limits of another config, or it closed connections httperf cannot
    reopen. Other reasons a probe is invalid (a pool still growing, the
    collector's share of a small pool) make its failure count where it
    happened: the peak is then a conservative figure, not a wrong one."""
    from advisor.tuner.trial.verdict import CLOSED_BY_SERVER

    return (result.verdict.label in ("client-bound", CLOSED_BY_SERVER)
            or bool(result.interference["disturbed"])
            or bool(getattr(result, "pending_restart", None))
            or "closed_by_server" in result.verdict.evidence)


def trial_summary(result) -> dict[str, Any]:
    """The httperf fields, the metrics' summary and the verdict of one run."""
    return {
        "rate": result.inputs.rate,
        "reply_rate": round(result.httperf.reply_rate, 2),
        "reply_time_ms": round(result.httperf.reply_time_ms, 3),
        "client_time": result.client_time.to_dict(),
        "error_pct": round(result.error_pct, 3),
        "slo_failures": result.slo_failures(),
        "httperf": result.httperf.to_dict(),
        "metrics": metrics_summary(result.samples),
        "run_verdict": result.verdict.to_dict(),
        "warmup": asdict(result.warmup) if getattr(result, "warmup", None) is not None else None,
        "wall_s": round(result.wall_s, 2),
    }


def plain(value: Any) -> Any:
    """JSON-ready: no NaN or infinity (the journal refuses them), lists for tuples."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return plain(value.item())
    return value
