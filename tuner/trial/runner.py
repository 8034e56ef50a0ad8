"""A trial: one httperf run against the server with metrics and a verdict.

The method is Arlitt & Williamson's (2004, section 4): one factor at a time,
an open-loop rate generator, fine-grained metrics from several viewpoints,
and first proving that the load generator is not what limits the run.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, replace
from typing import Callable

from advisor.tuner.load import httperf
from advisor.tuner.load.remote_clients import GroupRun
from advisor.tuner.measure.metrics import MetricsCollector, Sample
from advisor.tuner.measure.tls_probe import TlsTrial, cache_counters, calibrate, count_handshakes, probe
from advisor.tuner.staging.target import StagingTarget
from advisor.tuner.trial.connection_facts import (config_facts, config_in_effect, connection_cap, session_connections,
                                                  session_tickets_on, tls_causes)
from advisor.tuner.trial.load_process import LoadSpec, load_result, start_load
from advisor.tuner.trial.poolcheck import POOL_LABELS, PoolCheck, check_pool
from advisor.tuner.trial.quiet_wait import remember_pool, wait_quiet
from advisor.tuner.trial.result import TrialInputs, TrialResult, quota_headroom_pct
from advisor.tuner.trial.verdict import (EXPLAINED_LABELS, ClientLimit, Verdict, closed_by_server, decide,
                                         explain_miss, fpm_verdict, handshake_verdict)
from advisor.tuner.trial.h2_verdict import h2_limits_verdict, h2_sampler, h2_summary
from advisor.tuner.trial.warmup import warm_up

# Arlitt & Williamson call a run valid only when the clients sustain the
# target: we allow 2 % slack for timer granularity.
ACHIEVED_RATE_SHARE = 0.98
# Under a CPU quota that leaves at least this share of the server's cores
# idle, the metrics thread runs there instead of beside httperf.
COLLECTOR_ON_SERVER_HEADROOM_PCT = 40.0


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


def url_port(parts) -> int:
    """A split URL's port, or its scheme's (443 for https)."""
    return parts.port or (443 if parts.scheme == "https" else 80)


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


def _run_pinned(target, inputs, pid, server_cpus, parts, interval, on_tick, registry,
                quiet_wait: float, quiet: bool, quota, clients=None) -> TrialResult:
    collector = target.metrics_collector(interval=interval, server_pid=pid, port=url_port(parts),
                                         status_url=target.status_url, max_samples=int(600 / interval),
                                         cpu_quota=quota)
    collector.prime()
    spec, connections = _load_spec(target, inputs, parts)
    tls_info, tls_cost = _tls_before_warm_up(target, inputs, spec, parts, collector)
    warm = warm_up(target, inputs, spec, pid, collector, registry, server_cpus, url_port(parts), clients)
    tls_before = cache_counters(_status_fields(collector.status_now(timeout=1.0))) if tls_info else None
    cpu_before = collector.httpd_cpu_seconds()
    own_before = collector.status_connections() if tls_info else None
    started = time.time()
    t0 = time.monotonic()
    run = _measured_run(target, inputs, spec, pid, collector, interval, on_tick, registry, clients, t0, tls_info)
    samples, result = run.samples, run.result
    lost = _metrics_lost(collector, samples)
    attribute_listen_overflows(samples)
    overflows = sum(s.listen_overflows for s in samples)
    drops = sum(s.listen_drops for s in samples)
    client_cpu: dict[str, float | None] = {}
    if isinstance(run.process, GroupRun):
        client_cpu = dict(zip(clients.names, run.process.cpu_pct))
    limits = _run_client_limits(target, inputs, run, server_cpus, clients)
    extra = {"target_request_rate": inputs.target_request_rate, "reply_rate": round(result.reply_rate, 1),
             "reply_time_ms": round(result.reply_time_ms, 2)}
    verdict = _server_verdict(target, inputs, run, server_cpus, interval, limits, extra)
    inputs.server_cpus = server_cpus
    claimed, compensated = target.pool_config(claimed=True), target.compensated()
    pool = check_pool(samples, claimed, compensated, verdict.label)
    if pool is not None and pool.not_grown and any(c.get("label") == "server CPU" for c in verdict.consequences):
        verdict, pool = cpu_kept_the_pool_small(verdict, pool, samples, claimed, compensated, server_cpus=server_cpus,
                                                interval=interval, limits=limits, extra=extra,
                                                cpu_quota_pct=inputs.server_cpu_quota_pct)
    cpu_after = run.cpu_after
    trial = TrialResult(inputs=inputs, httperf=result, samples=samples, client_limits=limits, verdict=verdict,
                        listen_overflows=overflows, listen_drops=drops, started=started,
                        wall_s=time.monotonic() - t0, quiet_wait_s=quiet_wait, quiet=quiet, warmup=warm,
                        pool=pool, pending_restart=list(target.pending_restart), session_connections=connections,
                        metrics_lost=lost, client_failed=run.client_died, client_cpu_pct=client_cpu,
                        server_cpu_s=cpu_after - cpu_before if cpu_before is not None and cpu_after is not None
                        else None)
    if tls_info is not None:
        own_after = run.own_after
        own = own_after - own_before if own_before is not None and own_after is not None else None
        cfg = config_in_effect(target)  # read once for the tickets and the causes of handshakes
        trial.tls = _tls_trial(tls_info, tls_cost, inputs, tls_before,
                               cache_counters(_status_fields(getattr(collector, "final_status", None))),
                               cpu_before, cpu_after, result.replies, trial.load_window_s, own,
                               session_tickets_on(target, cfg))
        trial.verdict = handshake_verdict(trial.verdict, trial.tls, tls_causes(target, trial.tls, inputs, cfg))
    if run.http2 is not None:
        trial.http2 = run.http2
        trial.verdict = h2_limits_verdict(target, inputs, trial.verdict, run.http2, result.protocol)
    if trial.verdict.label in EXPLAINED_LABELS and not trial.measurement_reasons():
        _explain_a_miss(trial, target, pid, server_cpus, interval)
    return trial


def _load_spec(target: StagingTarget, inputs: TrialInputs, parts):
    """The measured window's httperf run (h2load's for an HTTP/2 trial), and
    how a session workload's calls take their connections ("" without
    sessions: see session_connections)."""
    if inputs.protocol == "h2":
        from advisor.tuner.trial.browser_load import h2_spec

        return h2_spec(inputs, target.base_url), "one connection a visitor, a page's requests as streams"
    if inputs.protocol == "mix":
        from advisor.tuner.staging.http2_setup import negotiated_protocol
        from advisor.tuner.trial.browser_load import h2_spec
        from advisor.tuner.trial.mixed_load import MixSpec

        h1, connections = _load_spec(target, replace(inputs, protocol="h1"), parts)
        if negotiated_protocol(parts.hostname or "127.0.0.1", url_port(parts)) != "h2":
            # A browser offered h2 by a server that does not speak it (prefork:
            # AH10034) falls back to HTTP/1.1: the whole mix is HTTP/1.1 visitors.
            return h1, f"{connections}; h2 not negotiated here, so the HTTP/2 share is served HTTP/1.1"
        return (MixSpec.split(h1, h2_spec(inputs, target.base_url), inputs.h2_share),
                f"{inputs.h2_share:.0%} of visitors on HTTP/2 (one connection each), the rest on HTTP/1.1")
    spec = httperf.HttperfSpec(host=parts.hostname or "127.0.0.1", port=url_port(parts), uri=inputs.uri,
                               rate=inputs.rate, num_conns=inputs.num_conns, num_calls=inputs.num_calls,
                               burst_length=inputs.burst_length, timeout_s=inputs.timeout_s,
                               uri_list=inputs.uri_list, wsess=inputs.wsess, client_cpus=inputs.client_cpus)
    connections = ""
    if inputs.wsess and inputs.workload == "browser":
        from advisor.tuner.load.browser_pages import HTTPERF_SESSION_CONNECTIONS
        from advisor.tuner.trial.browser_load import browser_session_log

        spec.session_log = inputs.session_log or browser_session_log(inputs)
        spec.max_connections, spec.max_piped_calls = HTTPERF_SESSION_CONNECTIONS, 1
        return spec, f"up to {HTTPERF_SESSION_CONNECTIONS} connections a visitor, a page's assets as a burst"
    if inputs.wsess:
        if inputs.session_log:
            spec.session_log = inputs.session_log
        elif inputs.uri_list:
            from advisor.tuner.load.workload import session_log

            spec.session_log = session_log(inputs.uri_list, inputs.wsess[1])
        per_request, connections = session_connections(inputs, connection_cap(target))
        if per_request:
            spec.http_version = "1.0"
    return spec, connections


def _tls_before_warm_up(target: StagingTarget, inputs: TrialInputs, spec: LoadSpec, parts,
                        collector: MetricsCollector):
    """HTTPS targets: `spec` set to speak TLS, and (the TLS the server
    negotiates, the measured cost of its handshakes on this machine);
    (None, None) over plain HTTP."""
    tls_info = tls_cost = None
    if parts.scheme == "https":
        h1 = spec if isinstance(spec, httperf.HttperfSpec) else getattr(spec, "h1", None)
        if h1 is not None:
            h1.ssl = True
            h1.ssl_no_reuse = inputs.tls_resume == "never"
        host, port = parts.hostname or "127.0.0.1", url_port(parts)
        tls_info = probe(host, port, target.base_url)
        if target.on_this_machine:
            # Before the warm-up, which drains whatever the calibration left.
            tls_cost = calibrate(host, port, collector.httpd_cpu_seconds)
    return tls_info, tls_cost


@dataclass
class MeasuredRun:
    """The measured window's load, and what was read from the server once it ended."""

    process: object  # httperf's Popen, or the GroupRun of several load clients
    result: httperf.HttperfResult
    overran: bool  # httperf was still running at the time bound and was stopped
    client_died: str  # httperf's own failure mid-run ("" when it did not fail)
    time_bound_s: float  # how long the load was let run
    samples: list[Sample]
    fpm_samples: list
    http2: dict | None  # mod_http2's state through the window (h2 and mix trials)
    cpu_after: float | None  # httpd's CPU seconds at the end
    own_after: int | None  # the collector's own status connections (HTTPS only)


def _measured_run(target: StagingTarget, inputs: TrialInputs, spec: LoadSpec, pid: int | None,
                  collector: MetricsCollector, interval: float, on_tick: Callable[[float, float], None] | None,
                  registry: list | None, clients, t0: float, tls_info) -> MeasuredRun:
    """Run the measured window's load with the collector (and php-fpm's
    sampler) watching, then stop them and note the pool they saw."""
    fpm_socket = target.fpm_status_socket()
    fpm_sampler = None
    if fpm_socket:
        from advisor.tuner.measure.fpm_status import FpmSampler

        fpm_sampler = FpmSampler(fpm_socket, interval=interval, max_samples=int(600 / interval))
        fpm_sampler.start()
    h2_watch = h2_sampler(target, inputs, interval)
    collector.start()
    process = start_load(target, spec, clients)
    if registry is not None:
        registry.append(process)
    # A mix runs httperf and h2load: either one may be starved of its core.
    collector.client_pids = list(getattr(process, "pids", [process.pid]))
    # Bounded: the planned duration, httperf's own timeout, think times, slack.
    think = inputs.wsess[1] * inputs.wsess[2] if inputs.wsess else 0.0
    if inputs.replayed() is not None:
        think = inputs.replayed().longest_s
    limit = inputs.duration_s + 2 * inputs.timeout_s + think + 10.0
    try:
        result, overran, client_died = _await_load(process, inputs, t0, limit, on_tick)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if not isinstance(process, GroupRun):
            httperf.forget(target.load_record, process.pid)
        samples = collector.stop()
        fpm_samples = fpm_sampler.stop() if fpm_sampler is not None else []
        http2 = h2_summary(h2_watch)
        cpu_after = collector.httpd_cpu_seconds()
        own_after = getattr(collector, "final_status_connections", None) if tls_info else None
        pool = collector.pool_state()
        if pid and pool is not None:
            remember_pool(pid, pool)
        if registry is not None and process in registry:
            registry.remove(process)
    return MeasuredRun(process=process, result=result, overran=overran, client_died=client_died,
                       time_bound_s=limit, samples=samples, fpm_samples=fpm_samples, http2=http2, cpu_after=cpu_after,
                       own_after=own_after)


def _await_load(process, inputs: TrialInputs, t0: float, limit: float,
                on_tick: Callable[[float, float], None] | None) -> tuple[httperf.HttperfResult, bool, str]:
    """Wait for the load to end, at most `limit` seconds from `t0`, and read
    its report: (the report, whether it was stopped at the bound, the
    client's failure or "")."""
    overran = False
    client_died = ""
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
        result = load_result(process, timeout=10.0)
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
    return result, overran, client_died


def _metrics_lost(collector, samples: list[Sample]) -> str:
    """Why the server's metrics stopped mid-trial, or "" when they did not."""
    lost = ""
    if getattr(collector, "lost", False):  # only the remote collector streams over a connection
        seen = f"{samples[-1].t:.0f} s" if samples else "its start"
        lost = (f"the SSH connection to {collector.conn.spec} was lost mid-trial: the server's metrics stop "
                f"at {seen}, so the verdict would rest on part of the run")
    return lost


def _run_client_limits(target: StagingTarget, inputs: TrialInputs, run: MeasuredRun, server_cpus: list[int] | None,
                       clients) -> list[ClientLimit]:
    """The ways the load clients limited the measured run (client_limits,
    for each client against its share), and the time bound if it was hit."""
    process, result, samples = run.process, run.result, run.samples
    if isinstance(process, GroupRun) and len(process.results) > 1:
        # Each client against its own share: one at its FD_SETSIZE cap or
        # behind its rate makes the trial the clients' limit, whatever the sum.
        limits = []
        for name, part, own in zip(clients.names, process.shares, process.results):
            share_inputs = replace(inputs, rate=part.rate)
            for found in client_limits(share_inputs, own, samples, server_cpus, server_here=target.on_this_machine):
                found.detail = f"load client {name}: {found.detail}"
                found.values = {"client": name, **found.values}
                limits.append(found)
    else:
        limits = client_limits(inputs, result, samples, server_cpus, server_here=target.on_this_machine)
    if run.overran:
        # The bound has a name of its own: a loop over the clients' limits
        # once reused it, and a run of several clients that both overran and
        # met a client limit then formatted a ClientLimit as seconds.
        limit = run.time_bound_s
        limits.append(ClientLimit("time bound", f"httperf was still opening connections after {limit:.0f} s",
                                  {"limit_s": round(limit, 1), "connections": result.connections,
                                   "planned": inputs.num_conns}, kind="untimed"))
    return limits


def _server_verdict(target: StagingTarget, inputs: TrialInputs, run: MeasuredRun, server_cpus: list[int] | None,
                    interval: float, limits: list[ClientLimit], extra: dict[str, object]) -> Verdict:
    """The bottleneck the samples show, then connections the server closed
    under several calls, then a php-fpm pool behind it."""
    samples, result = run.samples, run.result
    verdict = decide(samples, server_cpus=server_cpus, interval=interval, client_limits=limits, extra=extra,
                     cpu_quota_pct=inputs.server_cpu_quota_pct)
    resets = int(result.errors.get("connreset", 0))
    if inputs.num_calls > 1 and not inputs.wsess and resets:
        verdict = closed_by_server(verdict, calls=inputs.num_calls, connections=result.connections,
                                   replies=result.replies, resets=resets, cap=connection_cap(target))
    if run.fpm_samples:
        verdict = fpm_verdict(verdict, run.fpm_samples, timeouts=int(result.errors.get("client-timo", 0)),
                              status_5xx=int(result.status.get("5xx", 0)), replies=result.replies)
    return verdict


def _explain_a_miss(trial: TrialResult, target: StagingTarget, pid: int | None, server_cpus: list[int] | None,
                    interval: float) -> None:
    """A trial that measured the server and found nothing saturated: its
    verdict names what missed the SLO, if it did."""
    inputs, result = trial.inputs, trial.httperf
    failures = trial.slo_failures()
    if failures:
        # Missed with nothing saturated: name what held it back, or say what was
        # not read; churn gets the lines that retire the children.
        trial.verdict = explain_miss(trial.verdict, trial.samples, interval=interval, failures=failures,
                                     connections_per_s=result.connection_rate or inputs.rate,
                                     facts=config_facts(target), children_watched=bool(pid),
                                     cpu_quota_pct=inputs.server_cpu_quota_pct, server_cpus=server_cpus,
                                     client_time=trial.client_time if inputs.rtt_ms > 0 else None,
                                     slo_reply_ms=inputs.slo_reply_ms)


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
               own_connections: int | None = None, tickets_on: str | None = None) -> TlsTrial:
    """The trial's TLS figures from the two readings of the server's counters,
    less the full handshakes of the collector's own status connections.
    `tickets_on`: where the server's session tickets are on; then nothing is
    counted (resumptions by ticket leave the cache counters)."""
    full = resumed = None
    counted_by = "not counted: mod_status shows no SSL session cache counters (SSLSessionCache none, or no access)"
    if tickets_on is not None:
        counted_by = (f"not counted: {tickets_on}: resumptions by ticket leave mod_ssl's cache counters (with TLS "
                      "1.3 each still stores a session, as if half a full handshake), so they cannot tell full "
                      "from resumed handshakes; SSLSessionTickets off (lint S521) makes them count")
    elif before is not None and after is not None:
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
