"""Trials: one httperf run with metrics and a verdict; a stepped ramp; a knee search.

The method is Arlitt & Williamson's (2005, section 4): one factor at a time,
an open-loop rate generator, fine-grained metrics from several viewpoints,
and first proving that the load generator is not what limits the run.
"""

from __future__ import annotations

import math
import os
import signal
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

from advisor.errors import UsageError
from advisor.tuner import httperf
from advisor.tuner.metrics import MetricsCollector, Sample
from advisor.tuner.target import StagingTarget
from advisor.tuner.verdict import ClientLimit, Verdict, decide

# Arlitt & Williamson call a run valid only when the clients sustain the
# target: we allow 2 % slack for timer granularity.
ACHIEVED_RATE_SHARE = 0.98


@dataclass
class TrialInputs:
    workload: str
    uri: str
    rate: float  # connections (or sessions) per second
    duration_s: float = 3.0
    num_calls: int = 1
    burst_length: int = 1
    timeout_s: float = 2.0
    uri_list: str | None = None
    wsess: tuple[int, int, float] | None = None  # sessions, calls, think seconds
    server_cpus: list[int] | None = None
    client_cpus: list[int] | None = None
    directives: list[str] = field(default_factory=list)
    slo_errors_pct: float = 1.0
    slo_reply_ms: float = 100.0

    @property
    def num_conns(self) -> int:
        return max(1, int(round(self.rate * self.duration_s)))

    @property
    def target_request_rate(self) -> float:
        calls = self.wsess[1] if self.wsess else self.num_calls
        return self.rate * calls


@dataclass
class TrialResult:
    inputs: TrialInputs
    httperf: httperf.HttperfResult
    samples: list[Sample]
    client_limits: list[ClientLimit]
    verdict: Verdict
    listen_overflows: int
    listen_drops: int
    started: float
    wall_s: float

    @property
    def valid(self) -> bool:
        return self.verdict.label != "client-bound" and not self.client_limits

    @property
    def errors(self) -> int:
        """httperf's errors, non-2xx/3xx replies and the listen-queue drops it cannot see."""
        return self.httperf.error_total + self.httperf.bad_status + max(self.listen_overflows, self.listen_drops)

    @property
    def error_pct(self) -> float:
        if self.inputs.wsess:
            attempted = self.inputs.wsess[0] * self.inputs.wsess[1]
        else:
            attempted = self.inputs.num_conns * self.inputs.num_calls
        attempted = max(1, attempted)
        return 100.0 * self.errors / attempted

    def slo_failures(self) -> list[str]:
        failures = []
        if self.error_pct >= self.inputs.slo_errors_pct:
            failures.append(f"errors {self.error_pct:.2f} % >= {self.inputs.slo_errors_pct:g} %")
        if self.httperf.reply_time_ms >= self.inputs.slo_reply_ms:
            failures.append(f"reply time {self.httperf.reply_time_ms:.1f} ms >= {self.inputs.slo_reply_ms:g} ms")
        wanted = self.inputs.target_request_rate
        if wanted > 0 and self.httperf.reply_rate < 0.95 * wanted:
            failures.append(f"reply rate {self.httperf.reply_rate:.0f}/s < 95 % of {wanted:.0f}/s")
        return failures

    @property
    def meets_slo(self) -> bool:
        return self.valid and not self.slo_failures()

    def to_dict(self) -> dict[str, object]:
        h = self.httperf
        return {
            "inputs": asdict(self.inputs),
            "valid": self.valid,
            "meets_slo": self.meets_slo,
            "slo_failures": self.slo_failures(),
            "reply_rate": round(h.reply_rate, 1),
            "request_rate": h.request_rate,
            "connection_rate": h.connection_rate,
            "reply_time_ms": round(h.reply_time_ms, 2),
            "errors": {"httperf": h.errors, "non_2xx_3xx": h.bad_status, "listen_overflows": self.listen_overflows,
                       "listen_drops": self.listen_drops, "total": self.errors, "pct": round(self.error_pct, 3)},
            "client_limits": [asdict(c) for c in self.client_limits],
            "httperf": h.to_dict(),
            "metrics": [s.to_dict() for s in self.samples],
            "verdict": self.verdict.to_dict(),
            "started": self.started,
            "wall_s": round(self.wall_s, 2),
        }


def server_affinity(pid: int | None) -> list[int] | None:
    if pid is None:
        return None
    try:
        return sorted(os.sched_getaffinity(pid))
    except OSError:
        return None


def client_limits(inputs: TrialInputs, result: httperf.HttperfResult, samples: list[Sample],
                  server_cpus: list[int] | None) -> list[ClientLimit]:
    """The four ways the load generator can be the bottleneck."""
    limits: list[ClientLimit] = []
    all_cores = list(range(os.cpu_count() or 1))
    client = inputs.client_cpus or all_cores
    server = server_cpus or all_cores
    shared = sorted(set(client) & set(server))
    if shared:
        limits.append(ClientLimit("shares a core with the server", f"client and server share core(s) {shared}",
                                  {"client_cpus": inputs.client_cpus, "server_cpus": server_cpus}, kind="hard"))
    errors = result.errors
    fd_like = int(errors.get("fd-unavail", 0)) + int(errors.get("addrunavail", 0)) + int(errors.get("ftab-full", 0))
    cap_onset = next((s.t for s in samples if (s.httperf_fds or 0) >= 0.9 * httperf.FD_SETSIZE_CAP), None)
    if fd_like:
        limits.append(ClientLimit("fd-unavail/addrunavail", f"httperf ran out of sockets or ports ({fd_like} times)",
                                  {k: errors.get(k, 0) for k in ("fd-unavail", "addrunavail", "ftab-full")},
                                  onset_s=cap_onset if cap_onset is not None else (samples[-1].t if samples else None),
                                  kind="timed"))
    if result.max_concurrent_connections >= httperf.FD_SETSIZE_CAP:
        limits.append(ClientLimit("FD_SETSIZE cap", f"httperf held {result.max_concurrent_connections} connections, its select() limit",
                                  {"max_concurrent_connections": result.max_concurrent_connections, "cap": httperf.FD_SETSIZE_CAP},
                                  onset_s=cap_onset if cap_onset is not None else (samples[-1].t if samples else None),
                                  kind="timed"))
    if inputs.rate > 0 and not inputs.wsess:
        # Connections httperf tried to open, over the time it spent opening
        # them (the run's duration less the lifetime of the last ones).
        attempts = result.connections + fd_like
        lifetime = (result.connection_time_ms.get("avg", 0.0) or 0.0) / 1000.0
        span = max(1e-3, result.test_duration_s - lifetime)
        achieved = attempts / span
        if attempts < inputs.num_conns * ACHIEVED_RATE_SHARE or achieved < ACHIEVED_RATE_SHARE * inputs.rate:
            limits.append(ClientLimit("achieved connection rate", f"httperf opened {achieved:.0f} conn/s of {inputs.rate:g} requested",
                                      {"requested": inputs.rate, "achieved": round(achieved, 1),
                                       "share_pct": round(100 * achieved / inputs.rate, 1)},
                                      onset_s=cap_onset if fd_like else None, kind="timed" if fd_like else "untimed"))
    return limits


def run_trial(target: StagingTarget, inputs: TrialInputs, *, interval: float = 1.0,
              on_tick: Callable[[float, float], None] | None = None,
              registry: list | None = None) -> TrialResult:
    """One fixed-rate httperf run against `target`, with metrics and a verdict."""
    from urllib.parse import urlsplit

    parts = urlsplit(target.base_url)
    pid = target.server_pid()
    server_cpus = server_affinity(pid) if pid else inputs.server_cpus
    if server_cpus and len(server_cpus) == (os.cpu_count() or 1):
        server_cpus = None if inputs.server_cpus is None else server_cpus
    collector = MetricsCollector(interval=interval, server_pid=pid, port=parts.port or 80,
                                 status_url=target.status_url, max_samples=int(600 / interval))
    collector.prime()
    spec = httperf.HttperfSpec(host=parts.hostname or "127.0.0.1", port=parts.port or 80, uri=inputs.uri,
                               rate=inputs.rate, num_conns=inputs.num_conns, num_calls=inputs.num_calls,
                               burst_length=inputs.burst_length, timeout_s=inputs.timeout_s,
                               uri_list=inputs.uri_list, wsess=inputs.wsess, client_cpus=inputs.client_cpus)
    started = time.time()
    t0 = time.monotonic()
    collector.start()
    process = httperf.start(spec)
    if registry is not None:
        registry.append(process)
    collector.client_pid = process.pid
    # Bounded: the planned duration, httperf's own timeout, think times, slack.
    think = inputs.wsess[1] * inputs.wsess[2] if inputs.wsess else 0.0
    limit = inputs.duration_s + 2 * inputs.timeout_s + think + 10.0
    overran = False
    try:
        while process.poll() is None and time.monotonic() - t0 < limit:
            if on_tick:
                on_tick(time.monotonic() - t0, inputs.duration_s)
            time.sleep(0.1)
        if process.poll() is None:
            # httperf fell so far behind its schedule that the run would not
            # end in time: SIGINT makes it stop and print what it has.
            overran = True
            process.send_signal(signal.SIGINT)
        try:
            result = httperf.finish(process, timeout=10.0)
        except Exception:
            if not overran:
                raise
            # It ignored SIGINT too: what it did is unknown, and the run is
            # the client's failure, not a measurement of the server.
            result = httperf.HttperfResult(test_duration_s=time.monotonic() - t0,
                                           warnings=["httperf killed past the time bound"])
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        samples = collector.stop()
        if registry is not None and process in registry:
            registry.remove(process)
    overflows = sum(s.listen_overflows for s in samples)
    drops = sum(s.listen_drops for s in samples)
    limits = client_limits(inputs, result, samples, server_cpus)
    if overran:
        limits.append(ClientLimit("time bound", f"httperf was still opening connections after {limit:.0f} s",
                                  {"limit_s": round(limit, 1), "connections": result.connections,
                                   "planned": inputs.num_conns}, kind="untimed"))
    extra = {"target_request_rate": inputs.target_request_rate, "reply_rate": round(result.reply_rate, 1),
             "reply_time_ms": round(result.reply_time_ms, 2)}
    verdict = decide(samples, server_cpus=server_cpus, interval=interval, client_limits=limits, extra=extra)
    inputs.server_cpus = server_cpus
    return TrialResult(inputs=inputs, httperf=result, samples=samples, client_limits=limits, verdict=verdict,
                       listen_overflows=overflows, listen_drops=drops, started=started,
                       wall_s=time.monotonic() - t0)


def with_rate(inputs: TrialInputs, rate: float) -> TrialInputs:
    data = asdict(inputs)
    data["rate"] = rate
    data["directives"] = list(inputs.directives)
    if inputs.wsess:
        sessions = max(1, int(round(rate * inputs.duration_s)))
        data["wsess"] = (sessions, inputs.wsess[1], inputs.wsess[2])
    return TrialInputs(**data)


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
    peak_reply_rate: float | None
    lower_bound_only: bool  # True when the client, not the server, ended the search
    probes: list[TrialResult]
    limiting: Verdict | None  # verdict of the first failing probe above the peak
    stop_reason: str

    def to_dict(self) -> dict[str, object]:
        return {"peak_rate": self.peak_rate, "peak_reply_rate": self.peak_reply_rate,
                "lower_bound_only": self.lower_bound_only, "stop_reason": self.stop_reason,
                "limiting_verdict": self.limiting.to_dict() if self.limiting else None,
                "probes": [{"rate": p.inputs.rate, "reply_rate": round(p.httperf.reply_rate, 1),
                            "meets_slo": p.meets_slo, "valid": p.valid, "label": p.verdict.label,
                            "slo_failures": p.slo_failures()} for p in self.probes]}


def knee_search(target: StagingTarget, base: TrialInputs, *, start_rate: float, max_rate: float,
                min_rate: float = 1.0, tolerance: float = 0.1, max_probes: int = 14,
                on_trial: Callable[[TrialResult], None] | None = None, **kwargs) -> KneeResult:
    """Peak sustainable rate under the SLO: double until a probe fails, then bisect.

    Exponential-then-binary search needs O(log(peak)) probes where a linear
    ramp needs peak/step of them. A client-bound probe ends the search: the
    rates above it cannot be measured with this load generator, so the peak
    is reported as a lower bound.
    """
    if start_rate <= 0 or max_rate < start_rate:
        raise UsageError("the knee search needs 0 < --start-rate <= --max-rate")
    probes: list[TrialResult] = []
    good: TrialResult | None = None
    bad: TrialResult | None = None
    rate = start_rate
    reason = "probe budget spent"
    for _ in range(max_probes):
        result = run_trial(target, with_rate(base, rate), **kwargs)
        probes.append(result)
        if on_trial:
            on_trial(result)
        if result.meets_slo:
            good = result
        elif result.verdict.label == "client-bound":
            if good is None or result.inputs.rate > good.inputs.rate:
                return KneeResult(good.inputs.rate if good else None, good.httperf.reply_rate if good else None,
                                  True, probes, result.verdict, "client-bound probe: peak is at least the last passing rate")
        else:
            bad = result if bad is None or result.inputs.rate < bad.inputs.rate else bad
        lo = good.inputs.rate if good else None
        hi = bad.inputs.rate if bad else None
        if hi is None:
            if rate >= max_rate:
                reason = "max rate reached without failing"
                break
            rate = min(max_rate, rate * 2)
        elif lo is None:
            if rate <= min_rate:
                reason = "failed at the minimum rate"
                break
            rate = max(min_rate, rate / 2)
        else:
            if (hi - lo) / lo <= tolerance:
                reason = f"bracketed within {tolerance:.0%}"
                break
            rate = math.floor((lo + hi) / 2)
            if rate <= lo or rate >= hi:
                reason = "bracket cannot be split further"
                break
    return KneeResult(good.inputs.rate if good else None, good.httperf.reply_rate if good else None,
                      False, probes, bad.verdict if bad else None, reason)


def median(values: list[float]) -> float:
    return statistics.median(values)
