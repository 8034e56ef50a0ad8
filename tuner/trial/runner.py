"""Trials: one httperf run with metrics and a verdict; a stepped ramp; a knee search.

The method is Arlitt & Williamson's (2004, section 4): one factor at a time,
an open-loop rate generator, fine-grained metrics from several viewpoints,
and first proving that the load generator is not what limits the run.
"""

from __future__ import annotations

import math
import os
import signal
import statistics
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Callable

from advisor.errors import UsageError
from advisor.tuner.load import httperf
from advisor.tuner.load.remote_clients import GroupRun
from advisor.tuner.load.roundtrips import (RTT_ADDED, RTT_NONE, ClientTime, client_time, lengthened_session_log,
                                           lengthened_think)
from advisor.tuner.measure.metrics import MetricsCollector, Sample
from advisor.tuner.measure.status import fetch_status
from advisor.tuner.measure.tls_probe import TlsTrial, cache_counters, calibrate, count_handshakes, probe
from advisor.tuner.staging.target import StagingTarget
from advisor.tuner.trial.poolcheck import POOL_LABELS, PoolCheck, check_pool
from advisor.tuner.trial.verdict import (CLOSED_BY_SERVER, EXPLAINED_LABELS, ClientLimit, ConfigFacts,
                                         ConnectionCap, Verdict, closed_by_server, decide, explain_miss, foreign_cpu,
                                         fpm_verdict, handshake_verdict)

# Arlitt & Williamson call a run valid only when the clients sustain the
# target: we allow 2 % slack for timer granularity.
ACHIEVED_RATE_SHARE = 0.98
# Longest wait for the server to finish the previous trial's work.
QUIET_TIMEOUT_S = 20.0
# httpd's parent adjusts its pool once a second: a process count unchanged
# for longer than that is the pool at rest.
POOL_STEADY_S = 1.2
# A trial was disturbed by other programs when they took this much of the
# server's cores (mean over the trial, or in any one sample), or when httperf,
# which busy-polls at ~100 % of its core, got less than HTTPERF_STARVED_PCT on
# average or HTTPERF_STARVED_PEAK_PCT in one sample. One second at 79 % costs a
# ten-second probe 2 % of its client time: stopping a session for it would be
# stopping it for noise (it happened on a quiet host, in a 256-worker trial).
FOREIGN_MEAN_PCT = 15.0
FOREIGN_PEAK_PCT = 35.0
HTTPERF_STARVED_PCT = 80.0
HTTPERF_STARVED_PEAK_PCT = 60.0
# Under a CPU quota that leaves at least this share of the server's cores
# idle, the metrics thread runs there instead of beside httperf.
COLLECTOR_ON_SERVER_HEADROOM_PCT = 40.0
# Warm-up: the pool is steady when its size has not moved for WARMUP_STEADY_S
# (over two of the parent's one-second maintenance cycles), after at least
# WARMUP_MIN_S of load (and one session's length), WARMUP_MAX_S at most.
WARMUP_MIN_S = POOL_STEADY_S
# Two of the parent's cycles, not one: under load that rises at once (each
# probe of a knee search) prefork's spawn rate falls back to one child a
# cycle whenever a cycle sees a few idle workers, and it can skip a cycle
# while the pool still has to grow. With 1.2 s the warm-up of the README's
# no-switch session of 2026-11-27 ended as "steady" after 2.1 s, and 7 of
# the start's 10 probes then measured a pool still growing (30 of 257 workers
# at 40 sessions/s, 166-205 at 220-320/s).
WARMUP_STEADY_S = 2.2
# ...unless mod_status shows at least MinSpareServers (MinSpareThreads) idle
# in two readings this far apart, while the count has not moved for
# POOL_STEADY_S: with that many idle the parent starts nobody, at any spawn
# rate, so the pool is what this load makes it. The README session's
# growing pools above had fewer idle than that (the parent was still adding).
WARMUP_SPARES_READS_S = 0.5
WARMUP_DRAIN_MAX_S = 10.0
WARMUP_MAX_S = 20.0
# A pool whose children keep retiring (MaxConnectionsPerChild far below the
# load) never stops changing: that churn is its steady state once the
# parent may spawn at full speed again (prefork holds back to one child a
# second for ten maintenance cycles after a graceful restart).
WARMUP_CHURN_EXITS = 10
WARMUP_CHURN_S = 11.0
# httpd at this share of its cores (or quota) for a second: CPU-bound, the pool is not what limits.
WARMUP_CPU_SHARE = 0.85
# Failures that CPU taken by other programs can cause, and so are worth a
# second attempt. Churn, keep-alive, logging, network, disk and memory name a
# cause of their own.
RETRY_LABELS = ("server CPU", "worker pool exhausted", "client-bound", "none")


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
    server_cpu_quota_pct: float | None = None  # set from the target: a cgroup CPU quota
    server_cpu_period_ms: float | None = None  # the quota's period (capacity's replay throttles by it)
    directives: list[str] = field(default_factory=list)
    slo_errors_pct: float = 1.0
    slo_reply_ms: float = 100.0
    # Unmeasured load at the trial's rate before the measured window: None
    # until the server's pool stops growing (WARMUP_MAX_S at most), 0 none,
    # else that many seconds.
    warmup_s: float | None = None
    # Sessions only: True, each call on a connection of its own; False, the
    # session keeps its connection; None, decided from the config in effect
    # (session_connections).
    connection_per_request: bool | None = None
    # Sessions from a prepared --wsesslog file (a replayed access log): its
    # sessions differ in calls and think times, so wsess's calls and think
    # are means, and the counts come from the file (advisor.tuner.load.replay).
    session_log: str | None = None
    # The clients' round trip (--rtt) and how it reaches the figures:
    # roundtrips.RTT_ADDED (counted and added; think times lengthened by
    # think_added_s), RTT_ON_LINK (netem delays the link) or RTT_NONE.
    rtt_ms: float = 0.0
    rtt_how: str = RTT_NONE
    think_added_s: float = 0.0
    # HTTPS targets: "session", httperf resumes the TLS session within each of
    # its sessions (one full handshake per visitor, as a browser); "never",
    # every connection a full handshake (--ssl-no-reuse, the worst case).
    tls_resume: str = "session"

    def replayed(self):
        """The prepared session file's shape, or None."""
        if not (self.session_log and self.wsess):
            return None
        from advisor.tuner.load.session_shape import session_shape

        return session_shape(self.session_log)

    @property
    def num_conns(self) -> int:
        return max(1, int(round(self.rate * self.duration_s)))

    @property
    def target_request_rate(self) -> float:
        shape = self.replayed()
        if shape is not None:
            return self.rate * shape.requests_for(self.wsess[0]) / max(1, self.wsess[0])
        calls = self.wsess[1] if self.wsess else self.num_calls
        return self.rate * calls


@dataclass
class WarmUp:
    """The unmeasured load before a trial's window, and the pool it left."""

    seconds: float
    children_before: int | None
    children_after: int | None
    steady: bool  # False: the warm-up hit its time bound with the pool still growing
    stopped_by: str = ""  # pool steady, spares idle, pool at its limit, server CPU full, fixed length, time bound
    drain_s: float = 0.0  # then waiting for the work it left queued


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
    quiet_wait_s: float = 0.0  # how long the server took to drain the previous trial
    quiet: bool = True  # False: it had not drained when this trial started
    attempt: int = 1  # >1: a repeat of a disturbed probe (knee search)
    warmup: WarmUp | None = None
    pool: PoolCheck | None = None
    pending_restart: list[str] = field(default_factory=list)  # limits the server did not take
    session_connections: str = ""  # sessions: "per request" or "persistent", and why
    metrics_lost: str = ""  # the server's metrics stopped mid-trial (a remote host's connection went away)
    client_failed: str = ""  # httperf died mid-run (a signal, no report): the client's failure
    client_cpu_pct: dict[str, float | None] = field(default_factory=dict)
    """Several load clients: each httperf's mean share of a core on its host."""
    tls: TlsTrial | None = None
    """HTTPS targets: the negotiated TLS, the handshakes the server counted, their CPU."""
    server_cpu_s: float | None = None
    """The server's CPU seconds from the window's start to httperf's end (None: not readable)."""

    @property
    def server_cpu_per_reply_ms(self) -> float | None:
        if self.server_cpu_s is None or self.httperf.replies <= 0:
            return None
        return 1000.0 * self.server_cpu_s / self.httperf.replies

    @property
    def interference(self) -> dict[str, object]:
        """How much other programs took from the server's and the client's cores."""
        cores = self.inputs.server_cpus
        foreign = [f for f in (foreign_cpu(s, cores) for s in self.samples) if f is not None]
        # The first reading of httperf's CPU spans its start-up; the last may
        # span its exit.
        client = [s.httperf_cpu_pct for s in self.samples[1:-1] if s.httperf_cpu_pct is not None]
        info: dict[str, object] = {
            "server_foreign_cpu_pct_mean": round(statistics.fmean(foreign), 1) if foreign else None,
            "server_foreign_cpu_pct_max": round(max(foreign), 1) if foreign else None,
            "httperf_cpu_pct_mean": round(statistics.fmean(client), 1) if client else None,
            "httperf_cpu_pct_min": round(min(client), 1) if client else None,
        }
        reasons = []
        # Under a CPU quota the server needs only part of its core: others
        # disturb it only when they eat into that part.
        headroom = quota_headroom_pct(self.inputs.server_cpu_quota_pct)
        if foreign and statistics.fmean(foreign) >= FOREIGN_MEAN_PCT + headroom:
            reasons.append(f"other programs used {statistics.fmean(foreign):.0f} % of the server's cores on average")
        elif foreign and max(foreign) >= FOREIGN_PEAK_PCT + headroom:
            reasons.append(f"other programs used {max(foreign):.0f} % of the server's cores in one sample")
        if client and statistics.fmean(client) < HTTPERF_STARVED_PCT:
            reasons.append(f"httperf got only {statistics.fmean(client):.0f} % of its core on average")
        elif client and min(client) < HTTPERF_STARVED_PEAK_PCT:
            reasons.append(f"httperf got only {min(client):.0f} % of its core in one sample")
        if self.client_cpu_pct:
            # Several clients: each one's mean over its run (no per-second series there).
            info["load_clients_cpu_pct"] = dict(self.client_cpu_pct)
            for name, share in self.client_cpu_pct.items():
                if share is not None and share < HTTPERF_STARVED_PCT:
                    reasons.append(f"httperf on load client {name} got only {share:.0f} % of its core on average")
        info["disturbed"] = bool(reasons)
        info["reasons"] = reasons
        return info

    @property
    def invalid_reasons(self) -> list[str]:
        """Why the trial does not measure what it claims; empty when it does."""
        return self._measurement_reasons() + self.short_capacity_reasons

    def _measurement_reasons(self) -> list[str]:
        reasons = []
        if self.verdict.label == "client-bound":
            # Client limits that began after the server saturated are its
            # consequence: they stay listed but do not invalidate the trial.
            reasons.append("client-bound: the load generator, not the server, limited the run")
        if self.verdict.label == CLOSED_BY_SERVER or "closed_by_server" in self.verdict.evidence:
            reasons.append("the server closed connections before httperf's calls on them were done")
        if self.metrics_lost:
            reasons.append(self.metrics_lost)
        if self.client_failed:
            reasons.append(f"{self.client_failed}: the load generator failed, the server was not measured")
        return reasons

    @property
    def short_capacity_reasons(self) -> list[str]:
        """Ways the server ran with less than the config claims (a pool still
        growing or short of its limit, start-up limits a reload kept). They
        make a failure at this rate doubtful, never a success: a server that
        met the SLO with less met it."""
        reasons = []
        if self.warmup is not None and not self.warmup.steady:
            reasons.append(f"the server's pool was still growing when the {self.warmup.seconds:.0f} s warm-up ended: "
                           "the window measured its growth")
        if self.pending_restart:
            reasons.append("the server still runs start-up limits a graceful restart does not change ("
                           + ", ".join(self.pending_restart) + "): restart it with the candidate in place")
        if self.pool is not None:
            reasons.extend(self.pool.reasons)
        return reasons

    @property
    def valid(self) -> bool:
        return not self.invalid_reasons

    @property
    def attempted(self) -> int:
        """Requests the workload asked for."""
        shape = self.inputs.replayed()
        if shape is not None:
            return max(1, shape.requests_for(self.inputs.wsess[0]))
        if self.inputs.wsess:
            return max(1, self.inputs.wsess[0] * self.inputs.wsess[1])
        return max(1, self.inputs.num_conns * self.inputs.num_calls)

    @property
    def errors(self) -> int:
        """Failed requests: httperf's errors or the calls that got no reply, whichever
        is more, plus non-2xx/3xx replies and the listen-queue drops httperf cannot see.

        httperf counts an error per connection, not per call: a connection
        reset with seven calls pending is one error and seven lost calls. In
        sessions httperf sends a call again on a new connection when the
        server closed the one it was on, yet still counts the connreset: a
        recovered reset is no lost call.
        """
        listen = max(self.listen_overflows, self.listen_drops)
        unanswered = max(0, self.attempted - self.httperf.replies)
        counted = self.httperf.error_total
        if self.inputs.wsess:
            counted -= int(self.httperf.errors.get("connreset", 0))
        # The kernel counts an overflow per SYN it dropped, and a client
        # retries its SYN: a request lost that way is already unanswered.
        # No more requests can fail than were sent.
        return min(self.attempted, max(unanswered, counted) + self.httperf.bad_status + listen)

    @property
    def error_pct(self) -> float:
        return 100.0 * self.errors / self.attempted

    @property
    def own_tail_s(self) -> float:
        """The seconds at the end of httperf's test time in which no request
        could start however fast the server was: the probe's own tail.

        httperf's test time runs from its first connection to its last
        reply. Plain connections are opened over num_conns / rate seconds;
        after the last one opens, the run lasts one more reply at least. The
        shortest connection httperf saw is that least reply (a 200 ms
        endpoint: 200 ms; a 1 KB file: a fraction of a millisecond), less the
        last connection's own slot of 1 / rate. A session workload ends with
        the last session's think times, (calls - 1) x think seconds, and its
        calls' own replies. What a server that falls behind adds (a queue,
        replies that come later than the shortest one) is not in it: that
        still stretches the test and lowers the rate.
        """
        h = self.httperf
        shortest_s = (h.connection_time_ms.get("min", 0.0) or 0.0) / 1000.0
        slot_s = 1.0 / self.inputs.rate if self.inputs.rate > 0 else 0.0
        if not self.inputs.wsess:
            return max(0.0, shortest_s - slot_s)
        sessions, calls, think = self.inputs.wsess
        shape = self.inputs.replayed()
        if shape is not None:
            return shape.tail_s(sessions, self.inputs.rate)
        think_tail = max(0, calls - 1) * think
        if getattr(self, "session_connections", "").startswith("per request"):
            call_s = shortest_s  # each call a connection of its own
        else:
            # One connection carries the session: its shortest lifetime is
            # the calls' replies plus the think times between them.
            call_s = max(0.0, shortest_s - think_tail) / max(1, calls)
        return think_tail + max(0.0, calls * call_s - slot_s)

    @property
    def served_rate(self) -> float:
        """Replies per second over the window the workload spread its requests on.

        httperf's own rate divides the replies by its whole test time, which
        ends with the probe's own tail (own_tail_s): a 3 s probe of a 200 ms
        endpoint reads about 7 % short of its offered rate at any load, and
        5 sessions/s of 5 calls for 10 s with every reply in 0.3 ms read
        24/s of 25/s. That tail is the workload's, not the server's, so it
        is taken off; a server that falls behind still stretches the test,
        and its rate drops.
        """
        window = self.load_window_s
        return self.httperf.replies / window if window > 0 else 0.0

    @property
    def load_window_s(self) -> float:
        """httperf's test time, less a session workload's think-time tail (see served_rate)."""
        h = self.httperf
        return h.test_duration_s - self.own_tail_s

    @property
    def client_time(self) -> ClientTime:
        """The reply time a visitor --rtt away perceives, in its measured and
        added parts (the measured reply time alone without --rtt). Over
        HTTPS the handshakes come from the trial's `tls` counts when it
        has them (absent: plain HTTP)."""
        h = self.httperf
        return client_time(self.inputs.rtt_ms, self.inputs.rtt_how, reply_ms=h.reply_time_ms, replies=h.replies,
                           connections=h.connections, requests=h.requests, connect_ms=h.connect_time_ms,
                           tls=getattr(self, "tls", None))

    @property
    def reply_time_for_slo_ms(self) -> float:
        """The mean reply time the SLO and the latency objective judge: the
        client-perceived one with --rtt, else httperf's."""
        return self.client_time.mean_ms if self.inputs.rtt_ms > 0 else self.httperf.reply_time_ms

    def slo_failures(self) -> list[str]:
        """What kept the probe from meeting the SLO; empty when it met it.

        Judged on counts: the requests the probe was to send against the
        replies that came back (the error share, a request without a reply
        counted as an error), their mean reply time against the SLO's, and
        whether the replies kept pace with the requests once the probe's own
        tail is left out. The service time alone never fails a probe.
        """
        failures = []
        if self.error_pct >= self.inputs.slo_errors_pct:
            failures.append(f"errors {self.error_pct:.2f} % >= {self.inputs.slo_errors_pct:g} % "
                            f"({self.httperf.replies} replies to {self.attempted} requests)")
        if self.inputs.rtt_ms > 0:
            perceived = self.client_time
            if perceived.mean_ms >= self.inputs.slo_reply_ms:
                failures.append(f"client-perceived reply time {perceived.parts_text()} >= "
                                f"{self.inputs.slo_reply_ms:g} ms")
        elif self.httperf.reply_time_ms >= self.inputs.slo_reply_ms:
            failures.append(f"reply time {self.httperf.reply_time_ms:.1f} ms >= {self.inputs.slo_reply_ms:g} ms")
        wanted = self.inputs.target_request_rate
        served = self.served_rate
        if wanted > 0 and served < 0.95 * wanted:
            tail = self.own_tail_s
            over = " less the sessions' think-time tail" if self.inputs.wsess else ""
            failures.append(f"reply rate {served:.0f}/s (over the test time{over} less the probe's own "
                            f"{tail * 1000:.0f} ms tail) < 95 % of {wanted:.0f}/s")
        return failures

    @property
    def meets_slo(self) -> bool:
        return not self._measurement_reasons() and not self.slo_failures()

    def to_dict(self) -> dict[str, object]:
        h = self.httperf
        return {
            "inputs": asdict(self.inputs),
            "valid": self.valid,
            "invalid_reasons": self.invalid_reasons,
            "meets_slo": self.meets_slo,
            "slo_failures": self.slo_failures(),
            "reply_rate": round(h.reply_rate, 1),
            "served_rate": round(self.served_rate, 1),
            "session_connections": self.session_connections,
            "metrics_lost": self.metrics_lost,
            "client_failed": self.client_failed,
            "request_rate": h.request_rate,
            "connection_rate": h.connection_rate,
            "reply_time_ms": round(h.reply_time_ms, 2),
            "client_time": self.client_time.to_dict(),
            "errors": {"httperf": h.errors, "non_2xx_3xx": h.bad_status, "listen_overflows": self.listen_overflows,
                       "listen_drops": self.listen_drops, "total": self.errors, "pct": round(self.error_pct, 3)},
            "client_limits": [asdict(c) for c in self.client_limits],
            "httperf": h.to_dict(),
            "metrics": [s.to_dict() for s in self.samples],
            "verdict": self.verdict.to_dict(),
            "interference": self.interference,
            "quiet_wait_s": round(self.quiet_wait_s, 2),
            "quiet": self.quiet,
            "attempt": self.attempt,
            "warmup": asdict(self.warmup) if self.warmup else None,
            "pool": self.pool.to_dict() if self.pool else None,
            "tls": self.tls.to_dict() if self.tls else None,
            "server_cpu_s": round(self.server_cpu_s, 4) if self.server_cpu_s is not None else None,
            "server_cpu_per_reply_ms": (round(self.server_cpu_per_reply_ms, 4)
                                        if self.server_cpu_per_reply_ms is not None else None),
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
                  server_cpus: list[int] | None, server_here: bool = True) -> list[ClientLimit]:
    """The four ways the load generator can be the bottleneck (`server_here`:
    the server runs on this machine, where it may share httperf's cores)."""
    limits: list[ClientLimit] = []
    all_cores = list(range(os.cpu_count() or 1))
    client = inputs.client_cpus or all_cores
    server = (server_cpus or all_cores) if server_here else []
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
        # them: the run's duration less the lifetime of the last connection.
        # httperf does not say which one was last; the longest lifetime is
        # used, so that one connection stalled at the end (by another program
        # on the machine, say) does not read as a client that fell behind.
        # A starved httperf shows in its own CPU (see `interference`).
        attempts = result.connections + fd_like
        lifetime = (result.connection_time_ms.get("max", 0.0) or 0.0) / 1000.0
        span = max(1e-3, result.test_duration_s - lifetime)
        achieved = attempts / span
        if attempts < inputs.num_conns * ACHIEVED_RATE_SHARE or achieved < ACHIEVED_RATE_SHARE * inputs.rate:
            limits.append(ClientLimit("achieved connection rate", f"httperf opened {achieved:.0f} conn/s of {inputs.rate:g} requested",
                                      {"requested": inputs.rate, "achieved": round(achieved, 1),
                                       "share_pct": round(100 * achieved / inputs.rate, 1)},
                                      onset_s=cap_onset if fd_like else None, kind="timed" if fd_like else "untimed"))
    return limits


# Per server pid: (children, when a child was last born, when this was
# seen), left by the previous trial's child watcher, so a pool already at
# rest is not watched for another maintenance cycle.
_POOL_SEEN: dict[int, tuple[int, float, float]] = {}


def _last_seen_pool(target: StagingTarget, pid: int | None) -> tuple[int, float] | None:
    """(children, when the count last grew) from whichever saw the pool
    last: the previous trial's watcher or the settling of the reload that
    applied this trial's config."""
    if not pid:
        return None
    watched = _POOL_SEEN.get(pid)
    settled = target.pool_settled[1:] if target.pool_settled and target.pool_settled[0] == pid else None
    if watched is None or (settled is not None and settled[2] > watched[2]):
        watched = settled
    return watched[:2] if watched is not None else None


def wait_quiet(target: StagingTarget, pid: int | None, port: int, timeout: float = QUIET_TIMEOUT_S,
               steady_s: float = POOL_STEADY_S) -> tuple[float, bool]:
    """Wait until the server has finished the previous trial's work.

    An overloaded trial leaves connections in the accept queue that httperf
    already gave up on; the server still accepts and answers each one, so a
    trial started at once would queue behind them and measure its
    predecessor. It can also leave the worker pool short (prefork with
    MaxConnectionsPerChild retires children faster than the parent, which
    spawns once a second, replaces them). Quiet means: nothing waiting for
    accept(), no worker busy but the one serving the status request, and the
    number of server processes not grown for one maintenance cycle.

    A pool that shrinks is at rest for this purpose: with no load, children
    only exit because the parent stops idle ones above MaxSpareServers (or
    MaxSpareThreads), one a second, and the next warm-up grows the pool to
    what its load needs. Waiting for that to end cost up to QUIET_TIMEOUT_S a
    probe after a large pool (81 prefork children took 25 s to shrink).
    """
    t0 = time.monotonic()
    children, since = target.child_count(pid), t0
    known = _last_seen_pool(target, pid)
    if known is not None and children is not None and known[0] >= children:
        since = known[1]  # not grown since it was last seen growing
    while time.monotonic() - t0 < timeout:
        queue = target.accept_queue(pid, port)
        busy_ok = True
        if target.status_url:
            busy_ok = _working(fetch_status(target.status_url, timeout=1.0)) == 0
        now = target.child_count(pid)
        if now is not None and children is not None and now > children:
            since = time.monotonic()
        children = now
        if not queue and busy_ok and time.monotonic() - since >= steady_s:
            return time.monotonic() - t0, True
        time.sleep(0.1)
    return time.monotonic() - t0, False


def _working(snap) -> int | None:
    """Workers busy with a request other than the status request itself:
    reading, sending, kept alive, logging, looking up a name. A C slot is a
    connection closing (a TLS connection can sit there a while) or an idle
    child being stopped: no work left. None: the status page did not answer."""
    if snap is None:
        return None
    return max(0, sum(snap.scoreboard.get(k, 0) for k in "RWKLD") - 1)


def url_port(parts) -> int:
    """A split URL's port, or its scheme's (443 for https)."""
    return parts.port or (443 if parts.scheme == "https" else 80)


def quota_headroom_pct(quota_pct: float | None) -> float:
    """The share of the server's core a CPU quota leaves to other programs (0 without one)."""
    return 100.0 - min(100.0, quota_pct or 100.0)


def run_trial(target: StagingTarget, inputs: TrialInputs, *, interval: float = 1.0,
              on_tick: Callable[[float, float], None] | None = None,
              registry: list | None = None, clients=None) -> TrialResult:
    """One fixed-rate httperf run against `target`, with metrics and a verdict.

    `clients` (advisor.tuner.load.remote_clients.LoadClients): several load
    generators sharing the load (httperf --client=I/N); None is this machine.
    """
    from urllib.parse import urlsplit

    parts = urlsplit(target.base_url)
    pid = target.server_pid()
    server_cpus = server_affinity(pid) if pid else inputs.server_cpus
    if server_cpus and len(server_cpus) == (os.cpu_count() or 1):
        server_cpus = None if inputs.server_cpus is None else server_cpus
    quiet_wait, quiet = wait_quiet(target, pid, url_port(parts))
    # This thread and the collector it starts (threads inherit the affinity of
    # the thread that makes them) stay off a server core httpd can fill. A
    # quota leaves part of the server's cores idle: there the collector takes
    # nothing from httpd, and nothing from httperf, whose core it would
    # otherwise share (reading 256 workers' /proc once a second is not free).
    own_affinity = os.sched_getaffinity(0)
    quota = target.cpu_quota()
    inputs.server_cpu_quota_pct = quota.pct if quota else None
    inputs.server_cpu_period_ms = quota.period_us / 1000.0 if quota else None
    if server_cpus and quota_headroom_pct(inputs.server_cpu_quota_pct) >= COLLECTOR_ON_SERVER_HEADROOM_PCT:
        os.sched_setaffinity(0, server_cpus)
    elif inputs.client_cpus:
        os.sched_setaffinity(0, inputs.client_cpus)
    try:
        return _run_pinned(target, inputs, pid, server_cpus, parts, interval, on_tick, registry, quiet_wait, quiet,
                           quota, clients)
    finally:
        os.sched_setaffinity(0, own_affinity)


def _start_load(target: StagingTarget, spec: httperf.HttperfSpec, clients):
    """httperf here (recorded beside the target), or one share on each load client."""
    if clients is not None and clients.several:
        return clients.start(spec)
    return httperf.start(spec, record=target.load_record)


def _load_result(process, timeout: float) -> httperf.HttperfResult:
    if isinstance(process, GroupRun):  # every client's report, merged
        return process.result(timeout)
    return httperf.finish(process, timeout=timeout)


def _run_pinned(target, inputs, pid, server_cpus, parts, interval, on_tick, registry,
                quiet_wait: float, quiet: bool, quota, clients=None) -> TrialResult:
    collector = target.metrics_collector(interval=interval, server_pid=pid, port=url_port(parts),
                                         status_url=target.status_url, max_samples=int(600 / interval),
                                         cpu_quota=quota)
    collector.prime()
    spec = httperf.HttperfSpec(host=parts.hostname or "127.0.0.1", port=url_port(parts), uri=inputs.uri,
                               rate=inputs.rate, num_conns=inputs.num_conns, num_calls=inputs.num_calls,
                               burst_length=inputs.burst_length, timeout_s=inputs.timeout_s,
                               uri_list=inputs.uri_list, wsess=inputs.wsess, client_cpus=inputs.client_cpus)
    connections = ""
    if inputs.wsess:
        if inputs.session_log:
            spec.session_log = inputs.session_log
        elif inputs.uri_list:
            from advisor.tuner.load.workload import session_log

            spec.session_log = session_log(inputs.uri_list, inputs.wsess[1])
        per_request, connections = session_connections(inputs, connection_cap(target))
        if per_request:
            spec.http_version = "1.0"
    tls_info = tls_cost = None
    if parts.scheme == "https":
        spec.ssl = True
        spec.ssl_no_reuse = inputs.tls_resume == "never"
        tls_info = probe(spec.host, spec.port, target.base_url)
        if target.on_this_machine:
            # Before the warm-up, which drains whatever the calibration left.
            tls_cost = calibrate(spec.host, spec.port, collector.httpd_cpu_seconds)
    warm = warm_up(target, inputs, spec, pid, collector, registry, server_cpus, url_port(parts), clients)
    tls_before = cache_counters(_status_fields(collector.status_now(timeout=1.0))) if tls_info else None
    cpu_before = collector.httpd_cpu_seconds()
    own_before = collector.status_connections() if tls_info else None
    started = time.time()
    t0 = time.monotonic()
    fpm_socket = target.fpm_status_socket()
    fpm_sampler = None
    if fpm_socket:
        from advisor.tuner.measure.fpm_status import FpmSampler

        fpm_sampler = FpmSampler(fpm_socket, interval=interval, max_samples=int(600 / interval))
        fpm_sampler.start()
    collector.start()
    process = _start_load(target, spec, clients)
    if registry is not None:
        registry.append(process)
    collector.client_pid = process.pid
    # Bounded: the planned duration, httperf's own timeout, think times, slack.
    think = inputs.wsess[1] * inputs.wsess[2] if inputs.wsess else 0.0
    if inputs.replayed() is not None:
        think = inputs.replayed().longest_s
    limit = inputs.duration_s + 2 * inputs.timeout_s + think + 10.0
    overran = False
    client_died = ""
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
            result = _load_result(process, timeout=10.0)
        except httperf.HttperfDied as exc:
            # The client's failure, not a measurement of the server: the
            # trial is invalid and the search may run it again.
            result = httperf.HttperfResult(test_duration_s=time.monotonic() - t0, warnings=[exc.message])
            client_died = exc.message
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
        if not isinstance(process, GroupRun):
            httperf.forget(target.load_record, process.pid)
        samples = collector.stop()
        fpm_samples = fpm_sampler.stop() if fpm_sampler is not None else []
        cpu_after = collector.httpd_cpu_seconds()
        own_after = getattr(collector, "final_status_connections", None) if tls_info else None
        pool = collector.pool_state()
        if pid and pool is not None:
            _POOL_SEEN[pid] = (*pool, time.monotonic())
        if registry is not None and process in registry:
            registry.remove(process)
    lost = ""
    if getattr(collector, "lost", False):  # only the remote collector streams over a connection
        seen = f"{samples[-1].t:.0f} s" if samples else "its start"
        lost = (f"the SSH connection to {collector.conn.spec} was lost mid-trial: the server's metrics stop "
                f"at {seen}, so the verdict would rest on part of the run")
    attribute_listen_overflows(samples)
    overflows = sum(s.listen_overflows for s in samples)
    drops = sum(s.listen_drops for s in samples)
    client_cpu: dict[str, float | None] = {}
    if isinstance(process, GroupRun):
        client_cpu = dict(zip(clients.names, process.cpu_pct))
    if isinstance(process, GroupRun) and len(process.results) > 1:
        # Each client against its own share: one at its FD_SETSIZE cap or
        # behind its rate makes the trial the clients' limit, whatever the sum.
        limits = []
        for name, part, own in zip(clients.names, process.shares, process.results):
            share_inputs = replace(inputs, rate=part.rate)
            for limit in client_limits(share_inputs, own, samples, server_cpus, server_here=target.on_this_machine):
                limit.detail = f"load client {name}: {limit.detail}"
                limit.values = {"client": name, **limit.values}
                limits.append(limit)
    else:
        limits = client_limits(inputs, result, samples, server_cpus, server_here=target.on_this_machine)
    if overran:
        limits.append(ClientLimit("time bound", f"httperf was still opening connections after {limit:.0f} s",
                                  {"limit_s": round(limit, 1), "connections": result.connections,
                                   "planned": inputs.num_conns}, kind="untimed"))
    extra = {"target_request_rate": inputs.target_request_rate, "reply_rate": round(result.reply_rate, 1),
             "reply_time_ms": round(result.reply_time_ms, 2)}
    verdict = decide(samples, server_cpus=server_cpus, interval=interval, client_limits=limits, extra=extra,
                     cpu_quota_pct=inputs.server_cpu_quota_pct)
    resets = int(result.errors.get("connreset", 0))
    if inputs.num_calls > 1 and not inputs.wsess and resets:
        verdict = closed_by_server(verdict, calls=inputs.num_calls, connections=result.connections,
                                   replies=result.replies, resets=resets, cap=connection_cap(target))
    if fpm_samples:
        verdict = fpm_verdict(verdict, fpm_samples, timeouts=int(result.errors.get("client-timo", 0)),
                              status_5xx=int(result.status.get("5xx", 0)), replies=result.replies)
    inputs.server_cpus = server_cpus
    claimed, compensated = target.pool_config(claimed=True), target.compensated()
    pool = check_pool(samples, claimed, compensated, verdict.label)
    if pool is not None and pool.not_grown and any(c.get("label") == "server CPU" for c in verdict.consequences):
        verdict, pool = cpu_kept_the_pool_small(verdict, pool, samples, claimed, compensated, server_cpus=server_cpus,
                                                interval=interval, limits=limits, extra=extra,
                                                cpu_quota_pct=inputs.server_cpu_quota_pct)
    trial = TrialResult(inputs=inputs, httperf=result, samples=samples, client_limits=limits, verdict=verdict,
                        listen_overflows=overflows, listen_drops=drops, started=started,
                        wall_s=time.monotonic() - t0, quiet_wait_s=quiet_wait, quiet=quiet, warmup=warm,
                        pool=pool, pending_restart=list(target.pending_restart), session_connections=connections,
                        metrics_lost=lost, client_failed=client_died, client_cpu_pct=client_cpu,
                        server_cpu_s=cpu_after - cpu_before if cpu_before is not None and cpu_after is not None
                        else None)
    if tls_info is not None:
        own = own_after - own_before if own_before is not None and own_after is not None else None
        trial.tls = _tls_trial(tls_info, tls_cost, inputs, tls_before,
                               cache_counters(_status_fields(getattr(collector, "final_status", None))),
                               cpu_before, cpu_after, result.replies, trial.load_window_s, own)
        trial.verdict = handshake_verdict(trial.verdict, trial.tls, tls_causes(target, trial.tls, inputs))
    if trial.verdict.label in EXPLAINED_LABELS and not trial._measurement_reasons():
        failures = trial.slo_failures()
        if failures:
            # Missed with nothing saturated: name what held it back, or say what was
            # not read; churn gets the lines that retire the children.
            trial.verdict = explain_miss(trial.verdict, samples, interval=interval, failures=failures,
                                         connections_per_s=result.connection_rate or inputs.rate,
                                         facts=config_facts(target), children_watched=bool(pid),
                                         cpu_quota_pct=inputs.server_cpu_quota_pct, server_cpus=server_cpus,
                                         client_time=trial.client_time if inputs.rtt_ms > 0 else None,
                                         slo_reply_ms=inputs.slo_reply_ms)
    return trial


def cpu_kept_the_pool_small(verdict: Verdict, pool: PoolCheck, samples: list[Sample], claimed, compensated: bool, *,
                            server_cpus: list[int] | None, interval: float, limits: list | None = None,
                            extra: dict[str, object] | None = None,
                            cpu_quota_pct: float | None = None) -> tuple[Verdict, PoolCheck]:
    """A full pool short of its limit while the server's CPU saturated too:
    the parent forks new children with the CPU that serves, so the pool could
    not grow, and more workers could not have served more. The CPU is the
    limit, and the probe measured the config (the README's session refused
    a dozen probes of a prefork pool of 2,868 that held 402-450 workers under
    a full quota). Otherwise the pool's verdict and its doubt stay."""
    cpu = decide(samples, server_cpus=server_cpus, interval=interval, client_limits=limits or [], extra=extra,
                 cpu_quota_pct=cpu_quota_pct, leave_out=POOL_LABELS)
    if cpu.label != "server CPU":
        return verdict, pool
    cpu.note = "; ".join(part for part in (cpu.note, (
        f"the pool held {pool.workers_seen_min}+ of its {pool.server_workers} workers, all busy, while the CPU was "
        f"full: forking more takes the same CPU, so the CPU, not the pool's size, limited the run "
        f"(first seen: {verdict.label})")) if part)
    again = check_pool(samples, claimed, compensated, cpu.label)
    return cpu, again if again is not None else pool


def _status_fields(snapshot) -> dict[str, str] | None:
    return snapshot.fields if snapshot is not None else None


def _tls_trial(info, cost, inputs: TrialInputs, before: dict[str, int] | None, after: dict[str, int] | None,
               cpu_before: float | None, cpu_after: float | None, replies: int, window_s: float,
               own_connections: int | None = None) -> TlsTrial:
    """The trial's TLS figures from the two readings of the server's counters,
    less the full handshakes of the collector's own status connections."""
    full = resumed = None
    counted_by = "not counted: mod_status shows no SSL session cache counters (SSLSessionCache none, or no access)"
    if before is not None and after is not None:
        full, resumed = count_handshakes(before, after, info.version)
        full = max(0, full - (own_connections or 0))
        counted_by = ("mod_status SSL session cache counters: resumed = CacheRetrieveHitCount, full from "
                      "CacheStoreCount" + (" (TLS 1.3: 2 tickets stored per full handshake, 1 per resumed)"
                                           if info.version == "TLSv1.3" else "")
                      + f", less the {own_connections or 0} of the metrics collector's status connections")
    server_cpu = cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
    return TlsTrial(version=info.version, key_type=info.key_type, cipher=info.cipher, resume=inputs.tls_resume,
                    full_handshakes=full, resumed_handshakes=resumed, window_s=max(0.0, window_s),
                    counted_by=counted_by, server_cpu_s=server_cpu, replies=replies, cost=cost)


def warm_up(target: StagingTarget, inputs: TrialInputs, spec: httperf.HttperfSpec, pid: int | None,
            collector: MetricsCollector, registry: list | None = None,
            server_cpus: list[int] | None = None, port: int | None = None, clients=None) -> WarmUp | None:
    """Load the server at the trial's rate, unmeasured, until its pool is what the load makes it.

    Right after a reload (or a quiet spell) prefork runs StartServers
    children and adds more once a second while work waits (after a graceful
    restart one a second for ten cycles); kept-alive sessions pile up
    meanwhile. A window that starts then measures the growth, not the
    configuration. After WARMUP_MIN_S and one session's length the warm-up
    ends at the first of: the number of children unchanged for WARMUP_STEADY_S
    (births and exits both: a pool whose children retire faster than the
    parent replaces them, MaxConnectionsPerChild 10 say, is not steady while
    it shrinks, and right after a reload the parent replaces only one a
    second for ten cycles); the count unchanged for POOL_STEADY_S while two
    status readings in a row showed MinSpareServers (MinSpareThreads) idle
    or more, when the parent starts nobody; the pool at its
    configured limit; httpd using its whole CPU (cores or quota) for a
    second, where more workers cannot serve more and a longer warm-up only
    piles up work. WARMUP_MAX_S bounds it (then `steady` is False); a fixed
    `warmup_s` runs that long. httperf is stopped with SIGINT, the work it
    left queued is served (`_drain`), and the measured run starts. The
    collector's status connection is used twice a second meanwhile (it stays
    open for the window, and its idle count shows the spares).
    """
    if inputs.warmup_s == 0:
        return None
    fixed = inputs.warmup_s
    bound = fixed if fixed is not None else WARMUP_MAX_S
    session_s = (inputs.wsess[1] - 1) * inputs.wsess[2] if inputs.wsess else 0.0
    if inputs.replayed() is not None:
        session_s = inputs.replayed().mean_s
    least = max(WARMUP_MIN_S, session_s + 1.0)
    count = max(1, int(math.ceil(inputs.rate * (bound + 1.0))))
    sized = httperf.HttperfSpec(**{**asdict(spec), "num_conns": count,
                                   "wsess": (count, spec.wsess[1], spec.wsess[2]) if spec.wsess else None})
    pool = target.pool_config(claimed=False)
    limit = None
    min_spare = pool.min_spare if pool is not None else None
    if pool is not None:
        limit = pool.workers if pool.mpm == "prefork" else math.ceil(pool.workers / max(1, pool.threads_per_child))
    cpu_full = WARMUP_CPU_SHARE * (inputs.server_cpu_quota_pct or 100.0 * max(1, len(server_cpus or [0])))
    before = target.child_count(pid)
    seen, last_change = before or 0, time.monotonic()
    retired = 0  # drops in the child count seen while loading: children that exited
    t0 = time.monotonic()
    next_status = t0 + WARMUP_SPARES_READS_S
    spares_reads = 0  # status readings in a row, since the pool last grew, with the spares idle
    cpu_mark = (t0, collector.httpd_cpu_seconds())
    full_since: float | None = None
    stopped = "time bound"
    process = _start_load(target, sized, clients)
    if registry is not None:
        registry.append(process)
    try:
        while process.poll() is None:
            now = time.monotonic()
            children = target.child_count(pid) or 0
            if children > seen:
                last_change = now
                spares_reads = 0
            retired += max(0, seen - children)
            seen = children
            if now - cpu_mark[0] >= 0.5:
                used = collector.httpd_cpu_seconds()
                pct = (100.0 * (used - cpu_mark[1]) / (now - cpu_mark[0])
                       if used is not None and cpu_mark[1] is not None else 0.0)
                full_since = (full_since or now) if pct >= cpu_full else None
                cpu_mark = (now, used)
            if fixed is not None:
                if now - t0 >= fixed:
                    stopped = "fixed length"
                    break
            elif now - t0 >= least:
                if now - last_change >= WARMUP_STEADY_S:
                    stopped = "pool steady"
                elif spares_reads >= 2 and now - last_change >= POOL_STEADY_S:
                    stopped = "spares idle"
                elif retired >= WARMUP_CHURN_EXITS and now - t0 >= WARMUP_CHURN_S:
                    stopped = "children retired throughout"
                elif limit is not None and children >= limit:
                    stopped = "pool at its limit"
                elif full_since is not None and now - full_since >= 1.0:
                    stopped = "server CPU full"
                if stopped != "time bound":
                    break
            if now - t0 >= bound:
                break
            if now >= next_status:
                snapshot = collector.status_now(timeout=0.5)
                spares_reads = spares_reads + 1 if (snapshot is not None and min_spare is not None
                                                    and snapshot.idle >= min_spare) else 0
                next_status = now + WARMUP_SPARES_READS_S
            time.sleep(0.1)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)  # stop opening connections; drop the ones in flight
            try:
                process.communicate(timeout=5.0)
            except Exception:
                process.kill()
                process.wait()
        else:
            process.communicate()
        if not isinstance(process, GroupRun):
            httperf.forget(target.load_record, process.pid)
        if registry is not None and process in registry:
            registry.remove(process)
    seconds = time.monotonic() - t0
    drained = _drain(target, collector, port)
    return WarmUp(seconds=round(seconds, 2), children_before=before, children_after=target.child_count(pid),
                  steady=stopped != "time bound", stopped_by=stopped, drain_s=round(drained, 2))


def _drain(target: StagingTarget, collector: MetricsCollector, port: int | None,
           timeout: float = WARMUP_DRAIN_MAX_S) -> float:
    """Wait for the work the warm-up left queued to be served; the pool it grew stays.

    A warm-up above the server's capacity leaves its accept queue full of
    connections httperf has dropped: a window started at once would spend
    its first seconds on them (and httperf, unable to connect, would look
    client-bound). Nothing waiting for accept() and no worker busy but the
    collector's own request is drained; prefork retires at most one spare
    child a second meanwhile.
    """
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        working = _working(collector.status_now(timeout=0.5))
        if not target.accept_queue(collector.server_pid, port) and not working:
            break
        time.sleep(0.1)
    return time.monotonic() - t0


def _config_in_effect(target: StagingTarget):
    """The target's config read with the config model, or None when it cannot be read."""
    from advisor.config.loader import load_config
    from advisor.errors import AdvisorError

    try:
        source = target.config_source()
        return load_config(*source) if source is not None else None
    except (AdvisorError, OSError):
        return None


def config_facts(target: StagingTarget) -> ConfigFacts:
    """The per-connection costs the config in effect sets at server scope
    (MaxConnectionsPerChild N > 0, HostnameLookups On or Double), with the
    file:line of each; `read` False when the config cannot be read."""
    cfg = _config_in_effect(target)
    if cfg is None:
        return ConfigFacts(read=False)
    facts = ConfigFacts()
    retire = cfg.server_value("MaxConnectionsPerChild") or cfg.server_value("MaxRequestsPerChild")
    try:
        count = int(retire.raw_args.strip()) if retire is not None else 0
    except ValueError:
        count = 0
    if count > 0:
        facts.max_connections_per_child = (count, f"{retire.file}:{retire.line}")
    lookups = cfg.server_value("HostnameLookups")
    value = lookups.raw_args.strip().strip('"') if lookups is not None else ""
    if value.lower() in ("on", "double"):
        facts.hostname_lookups = (value, f"{lookups.file}:{lookups.line}")
    return facts


def connection_cap(target: StagingTarget) -> ConnectionCap | None:
    """What the server's configuration lets one connection carry, if it caps it.

    Read with the config model: KeepAlive Off, else MaxKeepAliveRequests N
    (N > 0), at server scope, with the file and line that set it. None when
    the config cannot be read: the verdict then says nothing about it.
    """
    cfg = _config_in_effect(target)
    if cfg is None:
        return None
    keepalive = cfg.server_value("KeepAlive")
    if keepalive is not None and keepalive.raw_args.strip().lower() == "off":
        return ConnectionCap(f"KeepAlive {keepalive.raw_args.strip()}", keepalive.file, keepalive.line, 1)
    limit = cfg.server_value("MaxKeepAliveRequests")
    try:
        count = int(limit.raw_args.strip()) if limit is not None else 0
    except ValueError:
        return None
    if count > 0:
        return ConnectionCap(f"MaxKeepAliveRequests {count}", limit.file, limit.line, count + 1)
    return None


def tls_causes(target: StagingTarget, tls: TlsTrial | None, inputs: TrialInputs | None = None) -> list[str]:
    """What makes an HTTPS trial's handshakes: config lines (file:line) and the workload.

    KeepAlive Off or a small MaxKeepAliveRequests close connections that a
    visitor then reopens, each with a handshake; a KeepAliveTimeout no longer
    than the sessions' think time closes them between a visitor's calls;
    SSLSessionCache none (or none set) makes every reconnect a full
    handshake. Read with the config model, at server scope; empty when the
    config cannot be read.
    """
    from advisor.config.loader import load_config
    from advisor.errors import AdvisorError

    causes: list[str] = []
    if inputs is not None and not inputs.wsess and inputs.num_calls == 1:
        causes.append("the workload: one request per connection, each a new visitor (--num-calls 1, no sessions)")
    if inputs is not None and inputs.tls_resume == "never":
        causes.append("the workload: --tls-resume never (every connection a full handshake)")
    try:
        source = target.config_source()
        cfg = load_config(*source) if source is not None else None
    except (AdvisorError, OSError):
        cfg = None
    if cfg is None:
        return causes

    def at(directive) -> str:
        return f"{directive.file}:{directive.line}: {directive.name} {directive.raw_args.strip()}"

    keepalive = cfg.server_value("KeepAlive")
    if keepalive is not None and keepalive.raw_args.strip().lower() == "off":
        causes.append(at(keepalive))
    limit = cfg.server_value("MaxKeepAliveRequests")
    try:
        if limit is not None and 0 < int(limit.raw_args.strip()) < 100:
            causes.append(at(limit))
    except ValueError:
        pass
    timeout = cfg.server_value("KeepAliveTimeout")
    think = inputs.wsess[2] if inputs is not None and inputs.wsess else None
    try:
        if timeout is not None and think is not None and float(timeout.raw_args.strip().split()[0]) <= think:
            causes.append(at(timeout) + f" (no longer than the sessions' {think:g} s think time)")
    except (ValueError, IndexError):
        pass
    cache = cfg.server_value("SSLSessionCache")
    if cache is None or cache.raw_args.strip().lower() in ("none", "nonenotnull"):
        causes.append(at(cache) if cache is not None else "no SSLSessionCache: no session can be resumed")
    return causes


def cap_after(directives: list[str], cap: ConnectionCap | None) -> ConnectionCap | None:
    """The connection cap once `directives` ("KeepAlive Off", "MaxKeepAliveRequests 3")
    are applied at server scope over a config whose own cap is `cap`.

    For a caller that knows the candidate's directives before they reach the
    server (the tune session); a trial reads the config itself.
    """
    keepalive_off = cap is not None and cap.requests_per_connection == 1 and cap.directive.lower().startswith("keepalive ")
    limit = cap if cap is not None and not keepalive_off else None
    off = cap if keepalive_off else None
    for text in directives:
        name, _, value = text.strip().partition(" ")
        value = value.strip().strip('"')
        if name.lower() == "keepalive":
            off = ConnectionCap(f"KeepAlive {value}", None, None, 1) if value.lower() == "off" else None
        elif name.lower() == "maxkeepaliverequests":
            try:
                count = int(value)
            except ValueError:
                continue
            limit = ConnectionCap(f"MaxKeepAliveRequests {count}", None, None, count + 1) if count > 0 else None
    return off or limit


def session_connections(inputs: TrialInputs, cap: ConnectionCap | None) -> tuple[bool, str]:
    """Whether each call of a session gets a connection of its own, and why.

    A browser that gets "Connection: close" opens a new connection for its
    next request. httperf 0.9.0 over HTTP/1.1 does not: after the think
    time it writes the next call on the closed connection, reads a reset,
    then sends the call again on a new one (every call is answered, but
    each costs a dead write, a reset and an extra connect, and shows as a
    connreset). So when the server closes after every request (KeepAlive
    Off, or a cap of one request) the sessions speak HTTP/1.0, after which
    httperf closes each connection at its reply: the same sessions, calls
    and think times, one connection per request. A cap above one that a
    session outgrows (MaxKeepAliveRequests M, M + 1 < calls) keeps HTTP/1.1:
    the connection carries M + 1 calls as in a browser, and the one
    reconnect after it is httperf's recovered reset, not an error.
    `inputs.connection_per_request` overrides the decision.
    """
    if not inputs.wsess:
        return False, ""
    calls = inputs.wsess[1]
    if inputs.connection_per_request is not None:
        chosen = inputs.connection_per_request
        return chosen, ("per request" if chosen else "persistent") + " (as asked)"
    if cap is not None and cap.requests_per_connection == 1 and calls > 1:
        return True, f"per request ({cap.directive}: the server closes after every reply)"
    if cap is not None and cap.requests_per_connection < calls:
        return False, (f"persistent, reconnecting after {cap.requests_per_connection} calls "
                       f"({cap.directive})")
    return False, "persistent"


def attribute_listen_overflows(samples: list[Sample]) -> None:
    """Keep only the listen-queue overflows that can be the server's own.

    ListenOverflows and ListenDrops count every listener in the network
    namespace, and on a shared host other programs' servers overflow too.
    Ours overflows only when its accept queue is full, so overflows in an
    interval that began and ended with its queue empty are someone else's:
    they move to `other_listen_overflows` and count neither as errors nor
    as queueing.
    """
    previous_queue = 0
    for sample in samples:
        queue = sample.accept_queue or 0
        if queue == 0 and previous_queue == 0:
            sample.other_listen_overflows = max(sample.listen_overflows, sample.listen_drops)
            sample.listen_overflows = sample.listen_drops = 0
        previous_queue = queue


def with_rate(inputs: TrialInputs, rate: float) -> TrialInputs:
    data = asdict(inputs)
    data["rate"] = rate
    data["directives"] = list(inputs.directives)
    if inputs.wsess:
        sessions = max(1, int(round(rate * inputs.duration_s)))
        data["wsess"] = (sessions, inputs.wsess[1], inputs.wsess[2])
    return TrialInputs(**data)


def with_rtt(inputs: TrialInputs, rtt_ms: float, how: str) -> TrialInputs:
    """`inputs` for clients `rtt_ms` away. Added (RTT_ADDED): each think time
    of a session workload lengthened by the round trip, the idle time such a
    visitor leaves its kept-alive connection (a replayed log's session file
    copied with its think times lengthened); on a delaying link
    (RTT_ON_LINK) the link does it. Call it once, on the base inputs."""
    if rtt_ms <= 0:
        return replace(inputs, rtt_ms=0.0, rtt_how=RTT_NONE, think_added_s=0.0)
    changed = replace(inputs, rtt_ms=float(rtt_ms), rtt_how=how, directives=list(inputs.directives))
    if how == RTT_ADDED and inputs.wsess and not inputs.think_added_s:
        sessions, calls, think = inputs.wsess
        changed.wsess = (sessions, calls, lengthened_think(think, rtt_ms))
        changed.think_added_s = rtt_ms / 1000.0
        if inputs.session_log:
            changed.session_log = lengthened_session_log(inputs.session_log, rtt_ms)
    return changed


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
        for attempt in range(1, retries + 2):
            result = run_trial(target, with_rate(base, rate), **kwargs)
            result.attempt = attempt
            probes.append(result)
            if on_trial:
                on_trial(result)
            if result.meets_slo or len(probes) >= max_probes or not worth_another_attempt(result, retry_short_pool):
                break
        if result.meets_slo:
            good = result if good is None or rate > good.inputs.rate else good
        elif result.verdict.label == CLOSED_BY_SERVER:
            # Every rate fails the same way: the workload, not the load, is wrong for this config.
            return KneeResult(good.inputs.rate if good else None, good.served_rate if good else None,
                              False, probes, result.verdict,
                              "the server closes connections before httperf's calls are done (see the verdict)")
        elif misses_at_any_rate(result):
            # A lower rate pays the same round trips a reply: no probe can pass.
            return KneeResult(good.inputs.rate if good else None, good.served_rate if good else None,
                              False, probes, result.verdict,
                              "the round trips alone take the SLO's reply time, at any rate (see the verdict)")
        elif result.verdict.label == "client-bound":
            if good is None or result.inputs.rate > good.inputs.rate:
                return KneeResult(good.inputs.rate if good else None, good.served_rate if good else None,
                                  True, probes, result.verdict, "client-bound probe: peak is at least the last passing rate")
        else:
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
    return KneeResult(good.inputs.rate if good else None, good.served_rate if good else None,
                      False, probes, _limiting(probes, bad, good), reason)


def median(values: list[float]) -> float:
    return statistics.median(values)
