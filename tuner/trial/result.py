"""A trial's inputs, its result and the figures derived from them.

`TrialInputs` says what one httperf run sends (and `with_rate`/`with_rtt`
derive the inputs of another rate or round trip); `WarmUp` is the
unmeasured load before its window; `TrialResult` holds what the run
measured and derives its errors, rates, validity, interference and SLO
verdict.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field, replace

from advisor.tuner.load import httperf
from advisor.tuner.load.roundtrips import (RTT_ADDED, RTT_NONE, ClientTime, client_time, lengthened_session_log,
                                           lengthened_think)
from advisor.tuner.measure.metrics import Sample
from advisor.tuner.measure.tls_probe import TlsTrial
from advisor.tuner.trial.poolcheck import PoolCheck
from advisor.tuner.trial.verdict import CLOSED_BY_SERVER, ClientLimit, Verdict, foreign_cpu

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
    # "h1": httperf, HTTP/1.1; "h2": h2load, HTTP/2 over TLS (the browser
    # workload only: advisor.tuner.trial.browser_load).
    protocol: str = "h1"
    h2_share: float = 0.0  # "mix": the share of visitors on HTTP/2

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
        if self.workload == "browser":
            from advisor.tuner.load.browser_pages import ASSETS_PER_PAGE

            return self.rate * calls * (1 + ASSETS_PER_PAGE)
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
    http2: dict | None = None
    """h2 and mix trials: mod_http2's sessions and streams as mod_status showed them (h2_status.summarize)."""
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
        return interference_of(self)

    @property
    def invalid_reasons(self) -> list[str]:
        """Why the trial does not measure what it claims; empty when it does."""
        return self.measurement_reasons() + self.short_capacity_reasons

    def measurement_reasons(self) -> list[str]:
        """Why the run did not measure the server at all (the client limited or
        failed, the server closed calls early, its metrics were lost)."""
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
        """Requests the workload asked for.

        A browser visit's pages bring their assets: counting pages alone (3 a
        visit against 15 requests) once read a trial that lost 40 % of its
        requests as 1,888 replies to 630 requests, every error hidden but
        h2load's own count."""
        shape = self.inputs.replayed()
        if shape is not None:
            return max(1, shape.requests_for(self.inputs.wsess[0]))
        if self.inputs.wsess and self.inputs.workload == "browser":
            from advisor.tuner.load.browser_pages import planned_requests

            visitors, pages, _think = self.inputs.wsess
            return max(1, planned_requests(visitors, pages, self.httperf.protocol, self.inputs.h2_share))
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
        return not self.measurement_reasons() and not self.slo_failures()

    def protocol_summary(self) -> dict[str, object]:
        """What the replies came over: the protocol asked and served, the
        connections, and the requests each carried (streams, under HTTP/2)."""
        h = self.httperf
        summary = {"asked": self.inputs.protocol, "served": h.protocol, "connections": h.connections,
                   "requests_per_connection": round(h.replies / h.connections, 2) if h.connections else None}
        if self.inputs.protocol == "mix":
            summary.update(h2_share=self.inputs.h2_share, parts=h.protocol_parts)
        return summary

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
            "protocol": self.protocol_summary(),
            "metrics_lost": self.metrics_lost,
            "client_failed": self.client_failed,
            "request_rate": h.request_rate,
            "connection_rate": h.connection_rate,
            "reply_time_ms": round(h.reply_time_ms, 2),
            "client_time": self.client_time.to_dict(),
            "errors": {"httperf": h.errors, "non_2xx_3xx": h.bad_status, "listen_overflows": self.listen_overflows,
                       "listen_drops": self.listen_drops, "total": self.errors, "pct": round(self.error_pct, 3),
                       "requests_planned": self.attempted},
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
            "http2": self.http2,
            "server_cpu_s": round(self.server_cpu_s, 4) if self.server_cpu_s is not None else None,
            "server_cpu_per_reply_ms": (round(self.server_cpu_per_reply_ms, 4)
                                        if self.server_cpu_per_reply_ms is not None else None),
            "started": self.started,
            "wall_s": round(self.wall_s, 2),
        }


def interference_of(result: "TrialResult") -> dict[str, object]:
    """How much other programs took from the server's and the client's cores."""
    cores = result.inputs.server_cpus
    foreign = [f for f in (foreign_cpu(s, cores) for s in result.samples) if f is not None]
    # The first reading of httperf's CPU spans its start-up; the last may
    # span its exit.
    client = [s.httperf_cpu_pct for s in result.samples[1:-1] if s.httperf_cpu_pct is not None]
    info: dict[str, object] = {
        "server_foreign_cpu_pct_mean": round(statistics.fmean(foreign), 1) if foreign else None,
        "server_foreign_cpu_pct_max": round(max(foreign), 1) if foreign else None,
        "httperf_cpu_pct_mean": round(statistics.fmean(client), 1) if client else None,
        "httperf_cpu_pct_min": round(min(client), 1) if client else None,
    }
    reasons = []
    # Under a CPU quota the server needs only part of its core: others
    # disturb it only when they eat into that part.
    headroom = quota_headroom_pct(result.inputs.server_cpu_quota_pct)
    if foreign and statistics.fmean(foreign) >= FOREIGN_MEAN_PCT + headroom:
        reasons.append(f"other programs used {statistics.fmean(foreign):.0f} % of the server's cores on average")
    elif foreign and max(foreign) >= FOREIGN_PEAK_PCT + headroom:
        reasons.append(f"other programs used {max(foreign):.0f} % of the server's cores in one sample")
    # A mix's figure is the less served of its two generators.
    tool = {"h2": "h2load", "mix": "httperf or h2load"}.get(result.inputs.protocol or "", "httperf")
    if client and statistics.fmean(client) < HTTPERF_STARVED_PCT:
        reasons.append(f"{tool} got only {statistics.fmean(client):.0f} % of its core on average")
    elif client and min(client) < HTTPERF_STARVED_PEAK_PCT:
        reasons.append(f"{tool} got only {min(client):.0f} % of its core in one sample")
    if result.client_cpu_pct:
        # Several clients: each one's mean over its run (no per-second series there).
        info["load_clients_cpu_pct"] = dict(result.client_cpu_pct)
        for name, share in result.client_cpu_pct.items():
            if share is not None and share < HTTPERF_STARVED_PCT:
                reasons.append(f"httperf on load client {name} got only {share:.0f} % of its core on average")
    info["disturbed"] = bool(reasons)
    info["reasons"] = reasons
    return info


def quota_headroom_pct(quota_pct: float | None) -> float:
    """The share of the server's core a CPU quota leaves to other programs (0 without one)."""
    return 100.0 - min(100.0, quota_pct or 100.0)


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
