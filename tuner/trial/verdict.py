"""Which resource limited a trial: the USE method over the per-second samples.

For every resource we ask, second by second, whether it was saturated (its
utilisation at the top, or work queueing for it). The bottleneck is the
resource that saturated *first*: Arlitt & Williamson (2004, section 4.4.2)
saw the server CPU at 100 % during 1 MB transfers only because the network
had saturated before it, so a later saturation is reported as a consequence.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from advisor.tuner.load.roundtrips import RTT_ADDED, ClientTime
from advisor.tuner.measure.metrics import Sample

LABELS = (
    "server CPU", "network", "disk", "worker pool exhausted", "keep-alive holding workers",
    "logging", "process churn", "name lookups", "memory/swap", "client-bound", "connections closed by server",
    "php-fpm pool exhausted", "h2 workers exhausted", "h2 streams per session capped", "none",
)
FPM_EXHAUSTED = "php-fpm pool exhausted"
CLOSED_BY_SERVER = "connections closed by server"

# Thresholds: a resource counts as saturated in a second when it crosses these.
CPU_BUSY_PCT = 90.0
OWN_CPU_PCT = 60.0
# Under a CPU quota (staging up --cpu-quota) the core is never full: the
# server is saturated when it uses this share of its quota.
QUOTA_USED_SHARE = 0.85
# Or when its cgroup ran out of quota in nearly every period: each throttled
# period used the whole quota, so this share of periods throttled is at
# least this share of the quota used, whoever in the cgroup used it (a CGI
# child's CPU reaches httpd's tree only when it is reaped). A server under
# its capacity forks in bursts and is throttled in about half the periods.
QUOTA_THROTTLED_PCT = 90.0
NETWORK_UTIL_PCT = 85.0
DISK_UTIL_PCT = 90.0
SWAP_PAGES_PER_S = 10.0
MEM_AVAILABLE_PCT = 5.0
KEEPALIVE_SHARE = 0.5
LOGGING_SHARE = 0.3
# Process churn: children retired (and replaced) at this rate over the trial.
CHURN_EXITS_PER_S = 5.0
CHURN_MIN_EXITS = 10
# A resource is a candidate only if it was saturated in this share of samples.
MIN_SATURATED_SHARE = 0.3
# A probe that missed its SLO with nothing saturated: children retired faster
# than this (one fork, and with prefork one worker short until the parent's
# next once-a-second check, each) are named as what held it back. One a
# second is what trimming to MaxSpareServers alone can retire, so it does not
# count (a CI run named churn at exactly 1.0/s).
CHURN_CAUSE_PER_S = 1.0
# A full pool whose httpd used less than this share of its CPU limit was
# waiting, not working: its workers were held by something per connection.
HELD_POOL_CPU_SHARE = 0.3
# The verdicts of a missed probe that explain_miss gives their cause.
EXPLAINED_LABELS = ("none", "process churn", "worker pool exhausted")

# When two resources saturate in the same second, the one that causes the
# other wins: forking costs CPU, a full link makes CPU spin, with the CPU at
# 100 % more workers would not help, and a slow reply keeps a persistent
# connection's worker waiting in K for the client's next request.
TIE_ORDER = ("network", "disk", "memory/swap", "logging", "process churn",
             "server CPU", "keep-alive holding workers", "worker pool exhausted")


@dataclass
class ClientLimit:
    """One reason the load generator, not the server, may have limited the run."""

    check: str
    detail: str
    values: dict[str, object]
    onset_s: float | None = None  # when it began, if the series shows it
    # "hard": the run is invalid whatever the server did (shared core);
    # "timed": the client limit began at onset_s, and a server resource that
    #          saturated no later explains it (connections pile up unanswered);
    # "untimed": no time is known; any server saturation explains it.
    kind: str = "hard"


@dataclass
class ConnectionCap:
    """How many requests the configuration lets one connection carry, and the line that says so."""

    directive: str  # as written: "KeepAlive Off", "MaxKeepAliveRequests 3"
    file: str | None
    line: int | None
    # KeepAlive Off: 1. MaxKeepAliveRequests N (N > 0): N + 1, since httpd
    # 2.4 counts only the requests after the first (measured: N = 1 gives
    # 2 replies per connection, N = 3 gives 4).
    requests_per_connection: int

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file and self.line else (self.file or "the configuration")


@dataclass
class ConfigFacts:
    """Lines of the config in effect that put a cost on every connection, a
    cost the per-second samples need not show saturating: each with the
    file:line that sets it. `read` is False when the config could not be read."""

    max_connections_per_child: tuple[int, str] | None = None  # (N > 0, "file:line")
    hostname_lookups: tuple[str, str] | None = None  # ("On" or "Double", "file:line")
    read: bool = True


@dataclass
class Verdict:
    label: str
    evidence: dict[str, object]
    onset_s: float | None = None
    consequences: list[dict[str, object]] = field(default_factory=list)
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"label": self.label, "evidence": self.evidence, "onset_s": self.onset_s,
                "consequences": self.consequences, "note": self.note}


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 1) if values else None


def server_busy(sample: Sample, cores: list[int] | None) -> float:
    """How busy the server's cores were, in %.

    /proc/stat charges a core's time one clock tick at a time, and misses
    work done in bursts shorter than a tick on an otherwise idle, tickless
    core: under a bursty load it can read half of what httpd's own exact
    run time (schedstat) shows. A server core is at least as busy as httpd
    and interrupts kept it, so that is the floor.
    """
    keys = [str(c) for c in cores] if cores else list(sample.cpu)
    values = [sample.cpu[k].busy for k in keys if k in sample.cpu]
    ticks = statistics.fmean(values) if values else 0.0
    if not cores or sample.httpd_cpu_pct is None:
        return ticks
    return max(ticks, server_own_share(sample, cores))


def server_own_share(s: Sample, cores: list[int] | None) -> float:
    """httpd's CPU (CGI children included) plus interrupt work, per server core, in %."""
    if s.httpd_cpu_pct is None:
        return 100.0  # no process view: trust the cores
    keys = [str(c) for c in cores] if cores else list(s.cpu)
    n = max(1, len(keys))
    irq = statistics.fmean([s.cpu[k].softirq + s.cpu[k].irq for k in keys if k in s.cpu] or [0.0])
    # httpd's own time and softirq overlap a little (softirq run in its
    # context): a share of a core stops at 100 %.
    return min(100.0, s.httpd_cpu_pct / n + irq)


def churn_summary(samples: list[Sample], interval: float) -> dict[str, object]:
    """Children of the httpd parent born and retired over the whole trial.

    Cumulative, because the parent reaps and replaces children in bursts
    (prefork: once a second), so one sample says little on its own.
    """
    births = sum(s.httpd_spawns for s in samples)
    exits = sum(s.httpd_exits for s in samples)
    span = max(interval, samples[-1].t if samples else interval)
    return {"children_spawned": births, "children_retired": exits,
            "spawned_per_s": round(births / span, 1), "retired_per_s": round(exits / span, 1),
            "httpd_processes_max": max((s.httpd_processes for s in samples), default=0)}


def is_churning(summary: dict[str, object]) -> bool:
    """Children retired at CHURN_EXITS_PER_S or more.

    Births are not required to keep pace: the parent's spawn rate ramps up
    (prefork: 1, 2, 4 ... 32 a second), which is why churn starves the pool.
    A pool trimmed to MaxSpareServers loses at most one child a second, far
    below the threshold.
    """
    exits = int(summary["children_retired"])  # type: ignore[arg-type]
    return exits >= CHURN_MIN_EXITS and float(summary["retired_per_s"]) >= CHURN_EXITS_PER_S  # type: ignore[arg-type]


def foreign_cpu(s: Sample, cores: list[int] | None) -> float | None:
    """Busy time on the server's cores that neither httpd nor interrupts used, in %.

    That is other programs on the machine taking the server's core: they
    lower the capacity a trial sees without being part of the configuration.
    """
    if s.httpd_cpu_pct is None or not s.cpu:
        return None
    keys = [str(c) for c in cores] if cores else list(s.cpu)
    present = [k for k in keys if k in s.cpu]
    if not present:
        return None
    busy = statistics.fmean([s.cpu[k].busy for k in present])
    irq = statistics.fmean([s.cpu[k].softirq + s.cpu[k].irq for k in present])
    return max(0.0, busy - irq - s.httpd_cpu_pct / len(present))


def _queueing(s: Sample) -> bool:
    return bool((s.accept_queue or 0) > 0 or s.listen_overflows > 0 or s.listen_drops > 0)


def _busy_excluding_self(s: Sample) -> int:
    # The collector's own status request is being served while it is counted.
    return max(0, (s.busy_workers or 0) - 1)


def saturation_tests(server_cpus: list[int] | None, interval: float, churning: bool = False,
                     cpu_quota_pct: float | None = None):
    """Per-resource predicates over one sample.

    `churning` is the trial-level finding that children were retired and
    replaced at a high rate (see churn_summary).
    """

    def cpu(s: Sample) -> bool:
        # The cores must be full *and* mostly with the server's own work: on a
        # shared machine another process can fill the core, and then the
        # server is starved, not saturated.
        if cpu_quota_pct and s.httpd_cpu_pct is not None and s.httpd_cpu_pct >= QUOTA_USED_SHARE * cpu_quota_pct:
            return True
        if cpu_quota_pct and s.cpu_throttled_pct is not None and s.cpu_throttled_pct >= QUOTA_THROTTLED_PCT:
            return True
        return server_busy(s, server_cpus) >= CPU_BUSY_PCT and server_own_share(s, server_cpus) >= OWN_CPU_PCT

    def network(s: Sample) -> bool:
        if any(u >= NETWORK_UTIL_PCT for u in s.net_util_pct.values()):
            return True
        return any(d > 0 for d in s.qdisc_drops_per_s.values()) or any(b > 64 * 1024 for b in s.qdisc_backlog.values())

    def disk(s: Sample) -> bool:
        return any(u >= DISK_UTIL_PCT for u in s.disk_util_pct.values())

    def memory(s: Sample) -> bool:
        return s.swap_in_per_s + s.swap_out_per_s >= SWAP_PAGES_PER_S or s.mem_available_pct <= MEM_AVAILABLE_PCT

    def keepalive(s: Sample) -> bool:
        busy = _busy_excluding_self(s)
        return bool(s.status_ok and (s.idle_workers or 0) == 0 and busy > 0
                    and s.scoreboard.get("K", 0) >= KEEPALIVE_SHARE * busy)

    def logging(s: Sample) -> bool:
        busy = _busy_excluding_self(s)
        return bool(s.status_ok and (s.idle_workers or 0) == 0 and busy > 0
                    and s.scoreboard.get("L", 0) >= LOGGING_SHARE * busy)

    def churn(s: Sample) -> bool:
        # Children retired and replaced while work queues or the CPU is full:
        # the pool keeps losing the workers it needs. A retirement shows in
        # the counters only when the parent reaps it, after the queue has
        # formed, so the seconds of queueing count from the start.
        return churning and (_queueing(s) or cpu(s))

    def workers(s: Sample) -> bool:
        no_idle = (s.status_ok and (s.idle_workers or 0) == 0) or not s.status_ok
        return no_idle and _queueing(s)

    return {
        "server CPU": cpu, "network": network, "disk": disk, "memory/swap": memory,
        "keep-alive holding workers": keepalive, "logging": logging,
        "process churn": churn, "worker pool exhausted": workers,
    }


def _onset(flags: list[bool]) -> int | None:
    """First index where the condition holds, and holds again next time if there is a next time."""
    for i, flag in enumerate(flags):
        if flag and (i + 1 >= len(flags) or flags[i + 1]):
            return i
    return None


def evidence_for(label: str, samples: list[Sample], server_cpus: list[int] | None, flags: list[bool],
                 interval: float = 1.0, cpu_quota_pct: float | None = None) -> dict[str, object]:
    hit = [s for s, f in zip(samples, flags) if f] or samples
    ev: dict[str, object] = {"saturated_samples": f"{sum(flags)}/{len(flags)}"}
    if label == "server CPU":
        ev["server_cpu_busy_pct_mean"] = _mean([server_busy(s, server_cpus) for s in hit])
        ev["server_cores"] = server_cpus or "all"
        for part in ("user", "system", "softirq"):
            ev[f"server_cpu_{part}_pct_mean"] = _mean([statistics.fmean(
                [getattr(s.cpu[k], part) for k in ([str(c) for c in server_cpus] if server_cpus else s.cpu) if k in s.cpu] or [0.0])
                for s in hit])
        ev["httpd_cpu_pct_mean"] = _mean([s.httpd_cpu_pct for s in hit if s.httpd_cpu_pct is not None])
        ev["server_own_share_pct_mean"] = _mean([server_own_share(s, server_cpus) for s in hit])
        ev["run_queue_max"] = max(s.procs_running for s in hit)
        if cpu_quota_pct:
            ev["cpu_quota_pct"] = cpu_quota_pct
            ev["quota_used_pct_mean"] = _mean([100.0 * (s.httpd_cpu_pct or 0.0) / cpu_quota_pct for s in hit])
            ev["cpu_throttled_pct_mean"] = _mean([s.cpu_throttled_pct for s in hit if s.cpu_throttled_pct is not None])
    elif label == "network":
        ev["link_util_pct_max"] = {i: max(s.net_util_pct.get(i, 0.0) for s in samples)
                                   for s0 in samples[:1] for i in s0.net_util_pct} or None
        tx = {}
        for s in hit:
            for iface, rates in s.net_bps.items():
                tx.setdefault(iface, []).append(max(rates["rx"], rates["tx"]) / 1e6)
        ev["mbit_per_s_mean"] = {i: _mean(v) for i, v in tx.items() if max(v) > 0.1}
        ev["qdisc_drops_per_s_max"] = {i: max(s.qdisc_drops_per_s.get(i, 0.0) for s in samples) for i in hit[0].qdisc_drops_per_s} or None
        ev["qdisc_backlog_bytes_max"] = {i: max(s.qdisc_backlog.get(i, 0) for s in samples) for i in hit[0].qdisc_backlog} or None
        ev["server_cpu_busy_pct_mean"] = _mean([server_busy(s, server_cpus) for s in hit])
    elif label == "disk":
        ev["disk_util_pct_max"] = {d: max(s.disk_util_pct.get(d, 0.0) for s in samples) for d in hit[0].disk_util_pct}
    elif label == "memory/swap":
        ev["swap_pages_per_s_max"] = max(s.swap_in_per_s + s.swap_out_per_s for s in samples)
        ev["mem_available_pct_min"] = min(s.mem_available_pct for s in samples)
    else:  # worker-related labels
        ok = [s for s in hit if s.status_ok]
        ev["idle_workers_mean"] = _mean([s.idle_workers or 0 for s in ok])
        ev["busy_workers_mean"] = _mean([_busy_excluding_self(s) for s in ok])
        if ok:
            mix: dict[str, float] = {}
            for s in ok:
                for key, count in s.scoreboard.items():
                    mix[key] = mix.get(key, 0) + count
            ev["scoreboard_mean"] = {k: round(v / len(ok), 1) for k, v in sorted(mix.items()) if k != "."}
        ev["status_unreachable_samples"] = sum(1 for s in hit if not s.status_ok)
        ev["accept_queue_max"] = max((s.accept_queue or 0) for s in samples)
        ev["listen_overflows"] = sum(s.listen_overflows for s in samples)
        ev["listen_drops"] = sum(s.listen_drops for s in samples)
        ev["server_cpu_busy_pct_mean"] = _mean([server_busy(s, server_cpus) for s in hit])
        ev["httpd_cpu_pct_mean"] = _mean([s.httpd_cpu_pct for s in hit if s.httpd_cpu_pct is not None])
        if label == "process churn":
            ev.update(churn_summary(samples, interval))
            ev["system_forks_per_s_mean"] = _mean([s.forks_per_s for s in samples])
    return ev


def decide(samples: list[Sample], *, server_cpus: list[int] | None, interval: float,
           client_limits: list[ClientLimit], extra: dict[str, object] | None = None,
           cpu_quota_pct: float | None = None, leave_out: tuple[str, ...] = ()) -> Verdict:
    """The bottleneck of one trial, with the numbers that show it; the
    resources in `leave_out` are not candidates (see cpu_kept_the_pool_small)."""
    tests = saturation_tests(server_cpus, interval, churning=bool(samples) and is_churning(churn_summary(samples, interval)),
                             cpu_quota_pct=cpu_quota_pct)
    tests = {label: test for label, test in tests.items() if label not in leave_out}
    flags = {label: [test(s) for s in samples] for label, test in tests.items()}
    need = max(1, math.ceil(MIN_SATURATED_SHARE * len(samples)))
    onsets = {label: _onset(f) for label, f in flags.items() if sum(f) >= need}
    onsets = {label: i for label, i in onsets.items() if i is not None}
    ranked = sorted(onsets, key=lambda label: (onsets[label], TIE_ORDER.index(label)))
    server_label = ranked[0] if ranked else None

    def t_of(index: int | None) -> float | None:
        return samples[index].t if index is not None and index < len(samples) else None

    if client_limits:
        server_t = t_of(onsets[server_label]) if server_label is not None else None

        def explained(limit: ClientLimit) -> bool:
            if server_t is None or limit.kind == "hard":
                return False
            if limit.kind == "untimed":
                return True
            # A tie goes to the server: connections pile up at the client
            # because the server stopped answering them in that same second.
            return limit.onset_s is None or server_t <= limit.onset_s

        unexplained = [c for c in client_limits if not explained(c)]
        if unexplained:
            evidence: dict[str, object] = {c.check: c.values for c in unexplained}
            evidence.update(extra or {})
            onset = min((c.onset_s for c in unexplained if c.onset_s is not None), default=0.0)
            return Verdict("client-bound", evidence, onset_s=onset,
                           note="; ".join(c.detail for c in unexplained) + ": the run measures the load generator, not the server")
    if server_label is None:
        evidence = {"server_cpu_busy_pct_max": max((server_busy(s, server_cpus) for s in samples), default=None),
                    "httpd_cpu_pct_max": max((s.httpd_cpu_pct or 0.0 for s in samples), default=None),
                    "accept_queue_max": max(((s.accept_queue or 0) for s in samples), default=None),
                    "listen_overflows": sum(s.listen_overflows for s in samples)}
        evidence.update(extra or {})
        return Verdict("none", evidence, note="no resource saturated: the server is under capacity at this load")
    evidence = evidence_for(server_label, samples, server_cpus, flags[server_label], interval, cpu_quota_pct)
    evidence.update(extra or {})
    consequences = [{"label": label, "onset_s": t_of(onsets[label])} for label in ranked[1:]]
    note = ""
    if client_limits:
        note = "client limits (" + ", ".join(c.check for c in client_limits) + ") followed the server's saturation"
    return Verdict(server_label, evidence, onset_s=t_of(onsets[server_label]), consequences=consequences, note=note)


def closed_by_server(verdict: Verdict, *, calls: int, connections: int, replies: int, resets: int,
                     cap: ConnectionCap | None) -> Verdict:
    """Name the cause when the server closed connections that httperf meant to reuse.

    httperf 0.9.0 sends `--num-calls` requests on one connection and does not
    open another when the server closes it: every call after the close
    fails as connreset. With KeepAlive Off (or MaxKeepAliveRequests below
    the calls) those errors measure the load generator's workload, not the
    server. Found only when the configuration caps the connection below the
    calls and httperf saw resets with no more replies per connection than
    the cap allows. A server that saturated keeps its label; the cause is
    added to its note.
    """
    if cap is None or calls <= cap.requests_per_connection or resets <= 0 or connections <= 0:
        return verdict
    per_connection = replies / connections
    if per_connection > cap.requests_per_connection + 0.01:
        return verdict
    served = cap.requests_per_connection
    unanswered = max(0, connections * calls - replies)
    note = (f"{cap.where}: {cap.directive} makes the server close each connection after {served} "
            f"request{'s' if served > 1 else ''}, but httperf sends {calls} calls per connection and does not "
            f"reconnect: {resets} connections were reset with calls pending and {unanswered} calls got no reply. "
            f"These errors are httperf's, not the server's; for a fair comparison use --num-calls {served}, "
            f"or sessions (--think SECONDS), which open a new connection when the server closes one")
    evidence = {"config": f"{cap.where}: {cap.directive}", "calls_per_connection": calls,
                "replies_per_connection": round(per_connection, 2), "requests_per_connection_allowed": served,
                "connreset": resets, "calls_unanswered": unanswered}
    if verdict.label != "none":
        joined = f"{verdict.note}; {note}" if verdict.note else note
        return Verdict(verdict.label, {**verdict.evidence, "closed_by_server": evidence}, verdict.onset_s,
                       verdict.consequences, joined)
    return Verdict(CLOSED_BY_SERVER, {**evidence, **{k: v for k, v in verdict.evidence.items() if k not in evidence}},
                   note=note)


# A server whose CPU goes at least this share to TLS handshakes is told so.
TLS_HANDSHAKE_SHARE = 0.3


def handshake_verdict(verdict: Verdict, tls, causes: list[str]) -> Verdict:
    """Say how much of the server's CPU went to TLS handshakes, and which lines make them.

    `tls` is the trial's advisor.tuner.measure.tls_probe.TlsTrial: the
    handshakes the server counted, and the share of its CPU they took at the
    cost measured on the server before the trial. Every HTTPS verdict carries
    the figures in its evidence; a server-CPU verdict whose CPU went at least
    TLS_HANDSHAKE_SHARE to handshakes says so in its note, with `causes`
    (the config lines and workload traits that make the handshakes).
    """
    share = tls.handshake_share
    evidence = {
        "tls_version": tls.version, "tls_key_type": tls.key_type,
        "full_handshakes_per_s": round(tls.full_per_s, 1) if tls.full_per_s is not None else None,
        "resumed_handshakes_per_s": round(tls.resumed_per_s, 1) if tls.resumed_per_s is not None else None,
        "handshake_cpu_pct": round(100.0 * share, 1) if share is not None else None,
        "server_cpu_per_reply_ms": round(tls.cpu_per_reply_ms, 3) if tls.cpu_per_reply_ms is not None else None,
    }
    if causes:
        evidence["handshake_causes"] = list(causes)
    note = verdict.note
    if verdict.label == "server CPU" and share is not None and share >= TLS_HANDSHAKE_SHARE:
        # The note rounds the evidence's figures, not the raw ones: rounded
        # twice, 161.46/s would read 161 here and 162 from the JSON's 161.5.
        rate = evidence["full_handshakes_per_s"] or 0.0
        said = (f"server CPU: {evidence['handshake_cpu_pct']:.0f} % in TLS handshakes, "
                f"{rate:.0f} full handshakes/s")
        if tls.resumed_per_s:
            said += f" and {evidence['resumed_handshakes_per_s']:.0f} resumed/s"
        said += f" ({tls.version}, {tls.key_type or 'unknown key'})"
        if causes:
            said += "; caused by " + "; ".join(causes)
        note = f"{said}; {note}" if note else said
    return Verdict(verdict.label, {**verdict.evidence, "tls": evidence}, verdict.onset_s, verdict.consequences, note)


def explain_miss(verdict: Verdict, samples: list[Sample], *, interval: float, failures: list[str],
                 connections_per_s: float, facts: ConfigFacts | None, children_watched: bool = True,
                 cpu_quota_pct: float | None = None, server_cpus: list[int] | None = None,
                 client_time: ClientTime | None = None, slo_reply_ms: float | None = None) -> Verdict:
    """A probe that missed its SLO while no resource saturated ("none"): what held it back.
    (A "process churn" verdict of a missed probe gets the config lines that cause it; so
    does a "worker pool exhausted" one whose httpd idled, see _held_pool.)

    Two costs the USE method misses, because they hold each request back
    without filling a resource for 30 % of the samples: children retired
    every MaxConnectionsPerChild connections (a fork each, and a prefork
    pool one worker short until the parent's next once-a-second check), and
    HostnameLookups, which makes each connection wait on a reverse lookup
    of the client's address. Either, when the config sets it and the trial
    shows it, relabels the verdict ("process churn", "name lookups") with
    its figure and line. Otherwise the nearest limit is named with its
    figure, or the miss is "unexplained" with the readings the trial lacked.
    The result's evidence["miss_cause"] holds the sentence and figures.

    Before either, the round trips: with --rtt added, a probe whose added
    round trips alone reach the SLO's reply time (`client_time`,
    `slo_reply_ms`) misses it at any rate and on any server, and no server
    cost is to blame (HostnameLookups On was named for such a miss: KeepAlive
    Off over TLS at 50 ms costs three round trips a reply, 150 ms).
    """
    if verdict.label not in EXPLAINED_LABELS or not failures:
        return verdict
    if verdict.label == "none" and client_time is not None and slo_reply_ms \
            and client_time.how == RTT_ADDED and client_time.added_ms >= slo_reply_ms:
        return _round_trips_miss(verdict, client_time, slo_reply_ms, failures)
    status = [s for s in samples if s.status_ok]
    churn = churn_summary(samples, interval) if samples and children_watched else None
    lookups_busy = _mean([s.scoreboard.get("D", 0) for s in status]) if status else None
    if verdict.label == "worker pool exhausted":
        return _held_pool(verdict, samples, facts, connections_per_s, churn, lookups_busy, failures,
                          cpu_quota_pct, server_cpus)
    if verdict.label == "process churn":
        # Saturated churn names itself; the lines that cause it are added.
        causes = _config_causes(facts, connections_per_s, churn, lookups_busy, always_churn=True)
        if not causes:
            return verdict
        cause = {"cause": "process churn", "summary": "; ".join(text for _, text, _ in causes),
                 "causes": _cause_rows(causes),
                 "slo_failures": list(failures)}
        joined = "; ".join(text for _, text, _ in causes)
        return Verdict(verdict.label, {**verdict.evidence, "config": causes[0][2]["config"], "miss_cause": cause},
                       verdict.onset_s, verdict.consequences, f"{verdict.note}; {joined}" if verdict.note else joined)
    causes = _config_causes(facts, connections_per_s, churn, lookups_busy)
    if causes:
        label = causes[0][0]
        cause = {"cause": label, "summary": "; ".join(text for _, text, _ in causes),
                 "causes": _cause_rows(causes),
                 "slo_failures": list(failures)}
        return Verdict(label, {**verdict.evidence, **causes[0][2], "miss_cause": cause}, verdict.onset_s,
                       verdict.consequences,
                       f"missed the SLO ({'; '.join(failures)}) with no resource saturated: "
                       + "; ".join(text for _, text, _ in causes))
    nearest, lacked = _nearest_limit(samples, status, churn, cpu_quota_pct, server_cpus)
    if facts is None or not facts.read:
        lacked.append("the config in effect (MaxConnectionsPerChild, HostnameLookups)")
    if nearest is not None:
        summary = f"nearest limit: {nearest}"
    else:
        summary = "unexplained" + (f": the trial lacked {', '.join(lacked)}" if lacked else
                                   ": CPU, pool, accept queue, child churn and name lookups all read far from a limit")
    cause = {"cause": "nearest limit" if nearest else "unexplained", "summary": summary, "lacked": lacked,
             "slo_failures": list(failures)}
    note = f"missed the SLO ({'; '.join(failures)}) with no resource saturated: {summary}"
    return Verdict("none", {**verdict.evidence, "miss_cause": cause}, verdict.onset_s, verdict.consequences, note)


def _round_trips_miss(verdict: Verdict, client_time: ClientTime, slo_reply_ms: float,
                      failures: list[str]) -> Verdict:
    """The miss of a probe whose round trips alone take the SLO's reply time."""
    rt = client_time.round_trips
    per = max(1, client_time.replies)
    setup = rt.connection_setup / per if rt is not None else None
    summary = (f"round trips: {client_time.added_ms:.0f} ms a reply of round trips alone at "
               f"{client_time.rtt_ms:g} ms each"
               + (f" ({setup:.2g} to set up a connection, {rt.requests / per:.2g} for the request)"
                  if rt is not None else "")
               + f", at or over the SLO's {slo_reply_ms:g} ms at any rate: fewer connections a reply "
                 "(KeepAlive On, TLS session resumption) is what would meet it")
    figures = {"round_trip_ms_per_reply": round(client_time.added_ms, 1), "rtt_ms": client_time.rtt_ms,
               "connection_setup_round_trips_per_reply": round(setup, 3) if setup is not None else None,
               "slo_reply_ms": slo_reply_ms}
    cause = {"cause": "round trips", "summary": summary, "slo_failures": list(failures), **figures}
    note = f"missed the SLO ({'; '.join(failures)}) with no resource saturated: {summary}"
    return Verdict("none", {**verdict.evidence, "miss_cause": cause}, verdict.onset_s, verdict.consequences, note)


def _cpu_limit_pct(cpu_quota_pct: float | None, server_cpus: list[int] | None) -> float:
    """httpd's CPU limit in % of a core: its quota, or its cores."""
    return cpu_quota_pct or 100.0 * max(1, len(server_cpus or [0]))


def _cause_rows(causes: list[tuple[str, str, dict[str, object]]]) -> list[dict[str, object]]:
    return [{"label": lab, "text": text, **figures} for lab, text, figures in causes]


def _held_pool(verdict: Verdict, samples: list[Sample], facts: ConfigFacts | None, connections_per_s: float,
               churn: dict[str, object] | None, lookups_busy: float | None, failures: list[str],
               cpu_quota_pct: float | None, server_cpus: list[int] | None) -> Verdict:
    """A pool exhausted while httpd's CPU idled: the workers waited, per
    connection, on what the config makes them wait for. The label stays (the
    pool is what ran out, and the tuner's pool check reads it); the lines
    that held the workers are added, as for churn. On this host prefork at
    half a core, KeepAlive Off, MaxConnectionsPerChild 100 and HostnameLookups
    On at 1,200 connections/s ran out of workers in 2 of 4 runs at 2-3 % CPU,
    children retired at 3.5/s (below the saturated-churn threshold), the
    status page unreachable and the accept queue full."""
    cpu = [s.httpd_cpu_pct for s in samples if s.httpd_cpu_pct is not None]
    if not cpu:
        return verdict
    limit = _cpu_limit_pct(cpu_quota_pct, server_cpus)
    used = statistics.fmean(cpu)
    share = used / limit
    if share >= HELD_POOL_CPU_SHARE:
        return verdict
    causes = _config_causes(facts, connections_per_s, churn, lookups_busy)
    if not causes:
        return verdict
    joined = "; ".join(text for _, text, _ in causes)
    held = (f"workers held while httpd used {used:.1f} % of a core ({100 * share:.0f} % of its "
            f"{limit:g} %): {joined}")
    cause = {"cause": "held pool", "summary": held, "httpd_cpu_share_pct": round(100 * share, 1),
             "causes": _cause_rows(causes),
             "slo_failures": list(failures)}
    return Verdict(verdict.label, {**verdict.evidence, "miss_cause": cause}, verdict.onset_s, verdict.consequences,
                   f"{verdict.note}; {held}" if verdict.note else held)


def _nearest_limit(samples: list[Sample], status: list[Sample], churn: dict[str, object] | None,
                   cpu_quota_pct: float | None, server_cpus: list[int] | None) -> tuple[str | None, list[str]]:
    """The resource closest to its limit in a trial where none saturated, as
    words with its figure (None when none came near), and the readings the
    trial did not have."""
    lacked = []
    cpu = [s.httpd_cpu_pct for s in samples if s.httpd_cpu_pct is not None]
    if not cpu:
        lacked.append("httpd's CPU")
    if not status:
        lacked.append("mod_status (busy and idle workers)")
    if churn is None:
        lacked.append("the children's births and exits")
    if not samples:
        return None, ["per-second samples"]
    if cpu:
        limit = _cpu_limit_pct(cpu_quota_pct, server_cpus)
        share = statistics.fmean(cpu) / limit
        if share >= 0.7:
            return f"server CPU at {100 * share:.0f} % of its {limit:g} % of a core on average", lacked
    if status:
        full = sum(1 for s in status if (s.idle_workers or 0) == 0)
        if full:
            return (f"worker pool: no idle worker in {full} of {len(status)} samples "
                    f"(up to {max(_busy_excluding_self(s) for s in status)} busy)"), lacked
    queued = max((s.accept_queue or 0) for s in samples)
    if queued:
        return f"accept queue up to {queued} connections waiting for a worker", lacked
    return None, lacked


def _config_causes(facts: ConfigFacts | None, connections_per_s: float, churn: dict[str, object] | None,
                   lookups_busy: float | None, always_churn: bool = False) -> list[tuple[str, str, dict[str, object]]]:
    """(label, sentence, figures) for each per-connection cost the config sets
    that the trial shows: child retirement, name lookups."""
    causes: list[tuple[str, str, dict[str, object]]] = []
    if facts is not None and facts.max_connections_per_child is not None:
        count, where = facts.max_connections_per_child
        expected = connections_per_s / count
        retired = float(churn["retired_per_s"]) if churn else None  # type: ignore[arg-type]
        if always_churn or (retired if retired is not None else expected) > CHURN_CAUSE_PER_S:
            seen = f"children retired at {retired:g}/s" if retired is not None else \
                f"children retire at about {expected:.1f}/s (not watched)"
            causes.append(("process churn",
                           f"{seen} ({where}: MaxConnectionsPerChild {count} retires a child every {count} "
                           f"connections, {connections_per_s:.0f} connections/s here)",
                           {"config": f"{where}: MaxConnectionsPerChild {count}",
                            "retired_per_s": retired, "expected_retired_per_s": round(expected, 1),
                            **({k: churn[k] for k in ("children_retired", "children_spawned", "spawned_per_s")}
                               if churn else {})}))
    if facts is not None and facts.hostname_lookups is not None:
        value, where = facts.hostname_lookups
        seen = (f", {lookups_busy:g} workers in a lookup on average" if lookups_busy else
                ", none caught in the lookup state by the scoreboard" if lookups_busy is not None else "")
        causes.append(("name lookups",
                       f"{where}: HostnameLookups {value} makes each connection wait on a reverse lookup of the "
                       f"client's address, {connections_per_s:.0f} lookups/s{seen}",
                       {"config": f"{where}: HostnameLookups {value}", "lookups_per_s": round(connections_per_s, 1),
                        "lookup_workers_mean": lookups_busy}))
    return causes


def fpm_verdict(verdict: Verdict, samples: list, *, timeouts: int, status_5xx: int, replies: int) -> Verdict:
    """The php-fpm pool behind httpd ran out (`staging up --php-fpm`).

    `samples` are the pool's status readings (advisor.tuner.measure.fpm_status.FpmStatus),
    one per interval. The pool counts as exhausted in a reading when no child
    is idle and requests wait in its listen queue; in MIN_SATURATED_SHARE of
    the readings or more, that is the bottleneck: httpd's workers only wait
    on it (a "worker pool exhausted" verdict is its consequence). The
    evidence carries the readings' figures and what the clients saw: their
    timeouts and the 5xx replies (502/503/504 from mod_proxy_fcgi). A client
    limit keeps its verdict: the run says nothing about the server then.
    """
    if not samples:
        return verdict
    flagged = [s for s in samples if s.exhausted]
    share = len(flagged) / len(samples)
    evidence = {
        "children": max(s.total for s in samples),
        "active_max": max(s.active for s in samples),
        "idle_min": min(s.idle for s in samples),
        "listen_queue_max": max(s.listen_queue for s in samples),
        "listen_queue_len": samples[-1].listen_queue_len,
        "max_listen_queue": samples[-1].max_listen_queue,
        "exhausted_share": round(share, 2),
        # Requests the pool took on per second while it was exhausted (its
        # throughput then): clients that gave up still had their request run,
        # so this can exceed the replies they saw.
        "accepted_per_s": (round((flagged[-1].accepted - flagged[0].accepted) / (flagged[-1].t - flagged[0].t), 2)
                           if len(flagged) >= 2 and flagged[-1].t > flagged[0].t else None),
        "readings": len(samples),
        "client_timeouts": timeouts,
        "status_5xx": status_5xx,
        "replies": replies,
    }
    merged = {**verdict.evidence, "php_fpm": evidence}
    if share < MIN_SATURATED_SHARE or verdict.label == "client-bound":
        return Verdict(verdict.label, merged, verdict.onset_s, verdict.consequences, verdict.note)
    consequences = list(verdict.consequences)
    if verdict.label != "none":
        consequences.insert(0, {"label": verdict.label, "onset_s": verdict.onset_s})
    note = (f"every php-fpm child busy (active {evidence['active_max']} of {evidence['children']}, idle "
            f"{evidence['idle_min']}) with up to {evidence['listen_queue_max']} requests in its listen queue in "
            f"{share:.0%} of the readings; clients saw {timeouts} timeouts and {status_5xx} 5xx replies")
    return Verdict(FPM_EXHAUSTED, merged, flagged[0].t, consequences, note)
