"""`apache-advisor bench`: closed-loop httperf trials against a staging server.

Only Typer is imported at module level: the tuner (requests, psutil,
matplotlib) loads when one of these commands runs, not at CLI start-up.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import dataclass
from typing import Any, Optional

import typer

from advisor.commands.bench_compare import OneLineUsageCommand, parse_request
from advisor.commands.bench_protocol import H2_SHARE_HELP, PROTOCOL_HELP, check_protocol, check_target_speaks_h2
from advisor.commands.logworkload import (ANONYMIZE_HELP, DYNAMIC_HELP, LOG_FORMAT_HELP, SESSION_GAP_HELP,
                                          SPEEDUP_HELP, LogOptions, LogWorkload)
from advisor.commands.options import fail
from advisor.commands.staging import WORKDIR_HELP
from advisor.commands.targets import (BecomeOption, BecomeUserOption, ClientHostOption, ConfigOption, HostOption,
                                      IdentityOption, ManagedOption,
                                      ReloadCmdOption, RemoteOptions, SshOptionOption, TargetOptions, TestCmdOption,
                                      RttOption, UrlOption, WanDelayOption, WanJitterOption, WanLossOption, WanOptions,
                                      WanRateOption)
from advisor.errors import AdvisorError, UsageError


@dataclass(frozen=True)
class BenchOptions:
    """Everything `bench` was asked, as given."""

    workload_name: str
    mode: str
    rate: float
    rates: str | None
    start_rate: float
    max_rate: float
    tolerance: float
    max_probes: int
    retries: int
    duration: float
    warmup: float | None
    timeout: float
    num_calls: int
    burst_length: int
    think: float | None
    cgi_n: int
    sleep_ms: int
    slo_ms: float
    slo_errors: float
    directives: list[str]
    rtt: float | None
    server_cpus: str | None
    client_cpus: str | None
    interval: float | None
    output_format: str
    plot: str | None
    allow_hosts: list[str] | None
    """None when --allow-host is not given: then only a --host target is checked."""
    httperf_bin: str | None
    tls_resume: str
    target: TargetOptions
    remote: RemoteOptions
    wan: WanOptions
    log: LogOptions
    compare: Any = None
    """The advisor.commands.bench_compare.CompareRequest of --compare/--compare-quota, or None."""
    protocol: str = "h1"
    """h1 (httperf), h2 (h2load) or mix: advisor.commands.bench_protocol."""
    h2_share: float | None = None


@dataclass(frozen=True)
class BenchPlan:
    """What the trials run against and with, resolved from the options before
    any load is sent."""

    target: Any
    """An advisor.tuner.staging.target.StagingTarget."""
    load_clients: list
    wan: Any
    """The checked advisor.tuner.staging.wan.WanSpec, or None."""
    rtt_ms: float
    client_cpus: list[int] | None
    work: Any
    """The advisor.tuner.load.workload.Workload the trials request."""
    base: Any
    """The advisor.tuner.trial.result.TrialInputs every trial starts from."""
    interval: float
    log: LogWorkload | None
    rate: float
    start_rate: float


def bench(
    workload_name: str = typer.Option("1k", "--workload", "-w", help="1k, 1m, almeida, browser (visits: --num-calls pages and their assets, --think seconds between pages; --protocol h1 or h2), cgi, slow, mixed (computes --cgi-n, then sleeps --sleep-ms, in the worker under mod_lua), mixed-cgi (the same as a CGI), php (the same in php-fpm: staging up --php-fpm), url (the path of --url) or log:PATH (sessions replayed from an access log; PATH may be a glob of rotated logs)."),
    mode: str = typer.Option("fixed", "--mode", help="fixed (one rate), ramp (stepped rates) or knee (peak under the SLO)."),
    rate: float = typer.Option(100.0, "--rate", help="Fixed mode: connections (or sessions) per second."),
    rates: Optional[str] = typer.Option(None, "--rates", help="Ramp mode: comma-separated rates, e.g. 500,1000,1500."),
    start_rate: float = typer.Option(250.0, "--start-rate", help="Knee mode: first probe rate."),
    max_rate: float = typer.Option(20000.0, "--max-rate", help="Knee mode: highest rate to try."),
    tolerance: float = typer.Option(0.1, "--tolerance", help="Knee mode: stop when the bracket is this narrow (0.1 = 10 %)."),
    max_probes: int = typer.Option(12, "--max-probes", help="Knee mode: at most this many probes."),
    retries: int = typer.Option(1, "--retries", help="Knee mode: run a failed probe again (this many times) when other programs took the server's or httperf's core during it."),
    duration: float = typer.Option(3.0, "--duration", help="Seconds of load per trial."),
    warmup: Optional[float] = typer.Option(None, "--warmup", help="Seconds of unmeasured load at the trial's rate before each trial (default: until the server's pool stops growing, 20 s at most; 0: none)."),
    timeout: float = typer.Option(2.0, "--timeout", help="httperf's per-request timeout, seconds."),
    num_calls: int = typer.Option(1, "--num-calls", help="Requests per connection (persistent connections)."),
    burst_length: int = typer.Option(1, "--burst-length", help="Requests pipelined per burst."),
    think: Optional[float] = typer.Option(None, "--think", help="Sessions: seconds a client idles between calls on its connection."),
    cgi_n: int = typer.Option(100000, "--cgi-n", help="cgi, mixed, mixed-cgi and php workloads: numbers summed per request."),
    sleep_ms: int = typer.Option(1000, "--sleep-ms", help="slow, mixed, mixed-cgi and php workloads: milliseconds asleep per request."),
    slo_ms: float = typer.Option(100.0, "--slo-ms", help="SLO: mean reply time below this."),
    slo_errors: float = typer.Option(1.0, "--slo-errors", help="SLO: errors below this percentage."),
    directives: Optional[list[str]] = typer.Option(None, "--set", help="A directive for the managed include, e.g. 'KeepAlive Off' (repeat)."),
    server_cpus: Optional[str] = typer.Option(None, "--server-cpus", help="Cores httpd runs on (existing server: re-pinned with taskset)."),
    client_cpus: Optional[str] = typer.Option(None, "--client-cpus", help="Cores httperf runs on (default: the cores the server does not use)."),
    interval: Optional[float] = typer.Option(None, "--interval", help="Metric sampling interval, seconds (default: 1, or less for short trials)."),
    output_format: str = typer.Option("table", "--format", help="table or json (one JSON document per trial, one per line)."),
    plot: Optional[str] = typer.Option(None, "--plot", help="Write PNG plots into this directory."),
    workdir: Optional[str] = typer.Option(None, "--workdir", help=WORKDIR_HELP),
    config: ConfigOption = None,
    reload_cmd: ReloadCmdOption = "apachectl graceful",
    test_cmd: TestCmdOption = None,
    url: UrlOption = None,
    managed: ManagedOption = None,
    host: HostOption = None,
    ssh_option: SshOptionOption = None,
    identity: IdentityOption = None,
    become: BecomeOption = False,
    become_user: BecomeUserOption = None,
    allow_host: Optional[list[str]] = typer.Option(None, "--allow-host", help="A host off loopback that may be loaded (repeat); --host needs it."),
    client_host: ClientHostOption = None,
    wan_delay: WanDelayOption = None,
    wan_jitter: WanJitterOption = None,
    wan_loss: WanLossOption = None,
    wan_rate: WanRateOption = None,
    rtt: RttOption = None,
    httperf_bin: Optional[str] = typer.Option(None, "--httperf", help="The httperf binary."),
    tls: bool = typer.Option(False, "--tls", help="Load over HTTPS (httperf --ssl): the sandbox must be up with --tls; an existing server's URL becomes https. An https --url does the same."),
    protocol: str = typer.Option("h1", "--protocol", help=PROTOCOL_HELP),
    h2_share: Optional[float] = typer.Option(None, "--h2-share", help=H2_SHARE_HELP),
    tls_resume: str = typer.Option("session", "--tls-resume", help="HTTPS: session (a visitor's first connection makes a full handshake, its later ones resume, as a browser; httperf resumes within its sessions) or never (every connection a full handshake: the worst case)."),
    log_format: Optional[str] = typer.Option(None, "--log-format", help=LOG_FORMAT_HELP),
    session_gap: float = typer.Option(30.0, "--session-gap", help=SESSION_GAP_HELP),
    dynamic: str = typer.Option("static", "--dynamic", help=DYNAMIC_HELP),
    anonymize: bool = typer.Option(False, "--anonymize", help=ANONYMIZE_HELP),
    speedup: Optional[float] = typer.Option(None, "--speedup", help=SPEEDUP_HELP + " Sets --rate (fixed) or --start-rate (knee)."),
    compare: Optional[tuple[str, str]] = typer.Option(None, "--compare", help="Is B faster than A? Each of A and B is a drop-in include file, directives ('KeepAlive Off; MaxRequestWorkers 150') or '-' (the config as it is); their peaks are measured in interleaved rounds of a random order (docs/bench.md)."),
    compare_quota: Optional[tuple[float, float]] = typer.Option(None, "--compare-quota", help="Sandbox only: the two sides' CPU quotas, % of one core (with --compare or alone)."),
    precision: float = typer.Option(0.05, "--precision", help="--compare: stop once the 95 % CI of B/A is within this (0.05 = ±5 %)."),
    max_rounds: int = typer.Option(15, "--max-rounds", help="--compare: at most this many rounds (3 or more)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="--compare: the seed of the rounds' order (default: drawn, and printed)."),
    fail_if_slower: bool = typer.Option(False, "--fail-if-slower", help="--compare: exit 1 when B is slower than A beyond the noise."),
) -> None:
    """Closed-loop httperf trials with per-second metrics and a bottleneck verdict."""
    try:
        options = BenchOptions(
            workload_name=workload_name, mode=mode, rate=rate, rates=rates, start_rate=start_rate, max_rate=max_rate,
            tolerance=tolerance, max_probes=max_probes, retries=retries, duration=duration, warmup=warmup,
            timeout=timeout, num_calls=num_calls, burst_length=burst_length, think=think, cgi_n=cgi_n,
            sleep_ms=sleep_ms, slo_ms=slo_ms, slo_errors=slo_errors, directives=list(directives or []),
            rtt=rtt, server_cpus=server_cpus, client_cpus=client_cpus, interval=interval, output_format=output_format,
            plot=plot, allow_hosts=allow_host, httperf_bin=httperf_bin, tls_resume=tls_resume, protocol=protocol, h2_share=h2_share,
            target=TargetOptions(workdir=workdir, config=config, url=url, reload_cmd=reload_cmd, test_cmd=test_cmd,
                                 managed=managed, tls=tls),
            remote=RemoteOptions(host=host, ssh_options=ssh_option, identity=identity, client_hosts=client_host, become=become, become_user=become_user),
            wan=WanOptions(delay=wan_delay, jitter=wan_jitter, loss=wan_loss, rate=wan_rate),
            log=LogOptions(log_format=log_format, session_gap=session_gap, dynamic=dynamic, anonymize=anonymize, speedup=speedup),
            compare=parse_request(compare, compare_quota, precision=precision, max_rounds=max_rounds, seed=seed, fail_if_slower=fail_if_slower),
        )
        _bench(options)
    except AdvisorError as error:
        fail(error)


def _bench(options: BenchOptions) -> None:
    """Check the options, resolve the target and the load, run the trials and report them."""
    from advisor.tuner.load import httperf

    _check_options(options)
    check_protocol(options.protocol, options.workload_name, options.h2_share)
    log, rate, start_rate = _log_workload(options)
    httperf.find_httperf(options.httperf_bin)
    if options.httperf_bin:
        os.environ["PATH"] = os.path.dirname(os.path.abspath(options.httperf_bin)) + os.pathsep + os.environ.get("PATH", "")
    plan = _plan(options, log, rate, start_rate)
    if options.compare is None:
        _run_and_report(options, plan, _trials)
    else:
        from advisor.commands.bench_compare import compare_plan, compare_trials

        _run_and_report(options, compare_plan(options.compare, plan), compare_trials)


def _check_options(options: BenchOptions) -> None:
    if options.mode not in ("fixed", "ramp", "knee"):
        raise UsageError(f"unknown --mode {options.mode!r}", hint="choose fixed, ramp or knee")
    if options.output_format not in ("table", "json"):
        raise UsageError(f"unknown --format {options.output_format!r}", hint="choose table or json")
    if options.duration <= 0 or options.duration > 600:
        raise UsageError("--duration must be between 0 and 600 seconds")
    if options.warmup is not None and not 0 <= options.warmup <= 120:
        raise UsageError("--warmup must be between 0 and 120 seconds", hint="leave it out to warm up until the pool is steady")
    if options.num_calls < 1 or options.burst_length < 1 or options.burst_length > options.num_calls:
        raise UsageError("need 1 <= --burst-length <= --num-calls")
    if options.tls_resume not in ("session", "never"):
        raise UsageError(f"unknown --tls-resume {options.tls_resume!r}", hint="choose session or never")
    if options.compare is not None:
        from advisor.commands.bench_compare import check_options

        check_options(options.compare, options.mode, options.rates, options.plot)


def _log_workload(options: BenchOptions) -> tuple[LogWorkload | None, float, float]:
    """A log:PATH workload's replay (None for another workload), and the rate
    and knee start rate (--speedup sets them from the log)."""
    from advisor.commands.logworkload import is_log_workload, prepare as prepare_log, refuse_shape_options

    rate, start_rate = options.rate, options.start_rate
    log = None
    if is_log_workload(options.workload_name):
        # Derived before any server is touched: a bad log changes nothing.
        refuse_shape_options(options.think, options.num_calls, options.burst_length)
        log = prepare_log(options.workload_name, options.log, options.target)
        if options.log.speedup is not None:
            rate = start_rate = log.rate_for(options.log.speedup)
    elif options.log.speedup is not None:
        raise UsageError("--speedup scales a log's session rate", hint="use it with --workload log:PATH")
    return log, rate, start_rate


def _plan(options: BenchOptions, log: LogWorkload | None, rate: float, start_rate: float) -> BenchPlan:
    """The target resolved and pinned, the workload installed, the inputs of
    every trial."""
    from advisor.commands.targets import check_rtt_option, parse_load_clients, place_processes, resolve_target
    from advisor.tuner.trial.result import TrialInputs

    load_clients = parse_load_clients(options.remote)
    wan = options.wan.spec()
    rtt_ms = check_rtt_option(options.rtt, wan)
    # Without --host, --ssh-option and --identity are the load clients' alone.
    resolved = resolve_target(options.target, options.remote if options.remote.host else None,
                              allow_hosts=options.allow_hosts)
    target, work_dir = resolved.target, resolved.work_dir
    actual_server, client = place_processes(target, options.server_cpus, options.client_cpus)
    lines = list(options.directives)
    if options.compare is not None:
        from advisor.commands.bench_compare import all_lines

        lines += all_lines(options.compare)
    if lines:
        # Before any load or change: a --set (or a compared side's line) that
        # a later line of the config overrides would be measured under the wrong name.
        _refuse_overridden(target, lines)
    check_target_speaks_h2(target.base_url, options.protocol)
    work, wsess = _workload(options, log, work_dir)
    base = TrialInputs(
        workload=work.name, uri=work.uri, rate=rate, duration_s=options.duration,
        num_calls=options.num_calls, burst_length=options.burst_length, timeout_s=options.timeout,
        uri_list=work.uri_list, wsess=wsess, server_cpus=actual_server, client_cpus=client,
        directives=list(options.directives), slo_errors_pct=options.slo_errors, slo_reply_ms=options.slo_ms,
        warmup_s=options.warmup, session_log=log.replay.session_log if log is not None else None,
        tls_resume=options.tls_resume, protocol=options.protocol,
        h2_share=check_protocol(options.protocol, options.workload_name, options.h2_share))
    interval = options.interval or (1.0 if options.duration >= 10 else max(0.25, options.duration / 6))
    return BenchPlan(target, load_clients, wan, rtt_ms, client, work, base, interval, log, rate, start_rate)


def _refuse_overridden(target, directives: list[str]) -> None:
    """Refuse a --set that a later line of the config overrides (the target's
    connection closed first)."""
    from advisor.tuner.staging.overrides import refuse_overridden

    try:
        refuse_overridden(target, directives)
    except AdvisorError:
        conn = getattr(target, "conn", None)
        if conn is not None:
            conn.close()
        raise


def _workload(options: BenchOptions, log: LogWorkload | None, work_dir) -> tuple[Any, tuple | None]:
    """The workload the trials request, and its sessions (httperf's --wsess:
    sessions, calls, think time), None for plain connections."""
    from advisor.tuner.load import workload

    path = None
    if options.workload_name == "url":
        from urllib.parse import urlsplit

        if not options.target.url:
            raise UsageError("--workload url needs --url")
        parts = urlsplit(options.target.url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
    wsess = None
    if log is not None:
        log.install(work_dir)
        work = workload.Workload(log.name, "/", description="sessions replayed from an access log")
        wsess = (1, log.replay.mean_calls, log.replay.mean_think_s)
    else:
        work = workload.make_workload(options.workload_name, work_dir, cgi_n=options.cgi_n,
                                      sleep_ms=options.sleep_ms, uri=path)
    if options.think is not None:
        wsess = (1, options.num_calls, options.think)
    elif work.name == "browser":
        from advisor.tuner.load.browser_pages import DEFAULT_THINK_S

        wsess = (1, options.num_calls, DEFAULT_THINK_S)
    return work, wsess


def _run_and_report(options: BenchOptions, plan: BenchPlan, run_trials) -> None:
    """The trials run on the managed config (restored whatever happens), each
    reported as it ends; then the plots."""
    from advisor.commands.targets import open_load_clients, set_link_for_run, wan_link
    from advisor.tuner.staging import wan as wan_qdiscs
    from advisor.tuner.staging.managed_config import ManagedConfig

    target, log = plan.target, plan.log
    report = _Reporter(options.output_format, options.plot)
    running: list = []
    previous = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum, frame):  # turn SIGTERM into an exception so `with` restores
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    trials = []
    steps = _parse_rates(options.rates) if options.mode == "ramp" else []
    peak = {"fixed": plan.rate, "ramp": max(steps, default=0.0)}.get(options.mode, options.max_rate)
    if options.compare is not None:
        peak = options.max_rate  # each side's knee search may climb to it
    link = wan_link(plan.wan, target)
    clients = open_load_clients(plan.load_clients, target, options.remote)
    here = plan.client_cpus if clients is None or any(c.local for c in plan.load_clients) else None
    try:
        rtt_how, link_lines = set_link_for_run(link, plan.wan, plan.rtt_ms)
        for line in link_lines:
            report.info(line)
        base = _with_rtt(plan, rtt_how, report)
        if log is not None:
            for line in log.summary_lines():
                report.info(line)
        report.info("load: " + _load_line(plan, here, peak, clients, options.num_calls))
        with ManagedConfig(target) as managed_config:
            if managed_config.stray_load:
                report.note("ended httperf left running by an interrupted run (pid "
                            + ", ".join(str(p) for p in managed_config.stray_load) + ") before anything else")
            if managed_config.recovered is not None:
                report.note(f"restored the original managed include left by an interrupted run (pid {managed_config.recovered.pid})")
            kwargs = dict(interval=plan.interval, registry=running, on_tick=report.tick, clients=clients)
            trials = run_trials(options, plan, base, steps, report, kwargs, managed_config)
    except KeyboardInterrupt:
        for process in running:
            if process.poll() is None:
                process.kill()
        report.stop()
        sys.stderr.write("apache-advisor: interrupted; the original configuration was restored\n")
        raise typer.Exit(code=130)
    finally:
        signal.signal(signal.SIGTERM, previous)
        report.stop()
        if clients is not None:
            clients.close()
        if link is not None:
            wan_qdiscs.clear(link)
    report.plots(trials)


def _with_rtt(plan: BenchPlan, rtt_how: str, report: _Reporter):
    """The trials' inputs with the round trip the link adds (or the load
    generator does), and a note when the server cannot see it."""
    from advisor.tuner.load.roundtrips import RTT_ADDED
    from advisor.tuner.trial.result import with_rtt

    base = with_rtt(plan.base, plan.rtt_ms, rtt_how)
    if plan.rtt_ms and base.rtt_how == RTT_ADDED and not base.wsess and base.num_calls > 1:
        report.note(f"rtt: the {base.num_calls} calls of a connection follow each other at once, so the "
                    "server does not see the idle round trip between them (give --think 0 for sessions "
                    "that show it)")
    return base


def _load_line(plan: BenchPlan, here, peak: float, clients, num_calls: int) -> str:
    """What load the trials offer, from where (after "load: ")."""
    from advisor.tuner.staging.target import offered_load_text

    wsess = plan.base.wsess
    return offered_load_text(plan.target.base_url + plan.work.uri, here, peak,
                             "sessions/s" if wsess else "connections/s",
                             wsess[1] if wsess else num_calls,
                             generators=clients.describe() if clients else None)


def _trials(options: BenchOptions, plan: BenchPlan, base, steps: list[float], report: _Reporter, kwargs: dict,
            managed_config) -> list:
    """The trials of --mode: one at --rate, a ramp over --rates, or the knee search."""
    from advisor.tuner.trial.knee import knee_search, ramp
    from advisor.tuner.trial.result import with_rate
    from advisor.tuner.trial.runner import run_trial

    if base.directives:
        managed_config.apply(base.directives)
    if options.mode == "fixed":
        report.start(1, options.duration)
        trials = [run_trial(plan.target, with_rate(base, plan.rate), **kwargs)]
        report.trial(trials[0])
    elif options.mode == "ramp":
        report.start(len(steps), options.duration)
        trials = ramp(plan.target, base, steps, on_trial=report.trial, **kwargs)
    else:
        report.start(options.max_probes, options.duration)
        from advisor.tuner.trial.objective import measured_knee

        knee, uncertainty = measured_knee(plan.target, base.server_cpus, options.tolerance, lambda: knee_search(
            plan.target, base, start_rate=plan.start_rate, max_rate=options.max_rate, tolerance=options.tolerance,
            max_probes=options.max_probes, retries=options.retries, on_trial=report.trial, **kwargs))
        trials = knee.probes
        report.knee(knee, uncertainty)
        log = plan.log
        if log is not None and knee.peak_rate is not None and log.session_rate > 0:
            report.info(f"peak {knee.peak_rate:g} sessions/s: {knee.peak_rate / log.session_rate:.3g} x "
                        "the log's own session rate (--speedup)")
    return trials


def protocol_line(served: dict) -> str:
    """What the replies came over, and for a mix each protocol's part."""
    text = (f"protocol {served['served']}: {served['connections']} connections, "
            f"{served['requests_per_connection']} requests a connection")
    for name, part in (served.get("parts") or {}).items():
        text += (f"; {name}: {part['connections']} connections, {part['replies']} replies, "
                 f"{part['reply_time_ms']} ms a reply")
    return text


def tls_line(tls) -> str:
    """One line of a trial's TLS figures (advisor.tuner.measure.tls_probe.TlsTrial)."""
    def number(value, unit="", digits=0):
        return "?" if value is None else f"{value:.{digits}f}{unit}"

    cost = tls.cost
    parts = [f"TLS {tls.version or '?'} {tls.key_type or '?'}, resume {tls.resume}",
             f"handshakes/s full {number(tls.full_per_s)} resumed {number(tls.resumed_per_s)} "
             f"({number(tls.full_handshakes)} + {number(tls.resumed_handshakes)}, counted by the server)",
             f"server CPU per reply {number(tls.cpu_per_reply_ms, ' ms', 3)}",
             f"per handshake full {number(cost.full_ms if cost else None, ' ms', 3)} "
             f"resumed {number(cost.resumed_ms if cost else None, ' ms', 3)}"]
    if tls.handshake_share is not None:
        parts.append(f"{100 * tls.handshake_share:.0f} % of the server's CPU in handshakes")
    return "; ".join(parts)


def _parse_rates(text: str | None) -> list[float]:
    if not text:
        raise UsageError("ramp mode needs --rates", hint="for example --rates 500,1000,1500")
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"bad --rates {text!r}", hint="comma-separated numbers") from None
    if not values or any(v <= 0 for v in values):
        raise UsageError("--rates must be positive numbers")
    return values


class _Reporter:
    """Formats results; decides nothing."""

    def __init__(self, output_format: str, plot_dir: str | None):
        self.json = output_format == "json"
        self.plot_dir = plot_dir
        self.progress = None
        self.task = None
        self.done = 0
        self.console = None
        if not self.json:
            from rich.console import Console

            self.console = Console()

    def start(self, total: int, duration: float) -> None:
        if self.console is None or not self.console.is_terminal:
            return
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                                 console=self.console, transient=True)
        self.progress.start()
        self.task = self.progress.add_task("trial 1", total=duration)

    def tick(self, elapsed: float, duration: float) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=min(elapsed, duration),
                                 description=f"trial {self.done + 1}: {elapsed:4.1f}/{duration:g} s")

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def info(self, text: str) -> None:
        if self.json:
            sys.stderr.write(f"apache-advisor: {text}\n")
        else:
            self.console.print(text, markup=False, highlight=False)

    def note(self, text: str) -> None:
        if self.json:
            sys.stderr.write(f"apache-advisor: {text}\n")
        else:
            self.console.print(f"[yellow]{text}[/yellow]")

    def trial(self, result) -> None:
        self.done += 1
        if self.json:
            document = {"kind": "trial"}
            document.update(result.to_dict())
            print(json.dumps(document), flush=True)
            return
        from rich.table import Table

        table = Table(title=f"{result.inputs.workload} at {result.inputs.rate:g}/s", show_header=True)
        columns = ["target req/s", "conn/s", "req/s", "replies/s", "reply ms", "errors %", "valid", "SLO", "verdict"]
        perceived = result.client_time if result.inputs.rtt_ms else None
        if perceived is not None:
            columns.insert(5, f"client ms (RTT {result.inputs.rtt_ms:g})")
        for column in columns:
            table.add_column(column)
        cells = [f"{result.inputs.target_request_rate:g}", f"{result.httperf.connection_rate:.0f}",
                 f"{result.httperf.request_rate:.0f}", f"{result.httperf.reply_rate:.0f}",
                 f"{result.httperf.reply_time_ms:.1f}", f"{result.error_pct:.2f}",
                 "yes" if result.valid else "NO", "met" if result.meets_slo else "missed", result.verdict.label]
        if perceived is not None:
            cells.insert(5, f"{perceived.mean_ms:.1f}")
        table.add_row(*cells)
        if self.progress is not None:
            self.progress.console.print(table)
        else:
            self.console.print(table)
        if perceived is not None:
            self.console.print(f"  client-perceived reply time: {perceived.parts_text()}", markup=False,
                               highlight=False)
            if result.inputs.think_added_s:
                think = result.inputs.wsess[2] if result.inputs.wsess else 0.0
                self.console.print(f"  think time as the server saw it: {think:g} s "
                                   f"({result.inputs.think_added_s * 1000:g} ms of it added for the round trip)",
                                   markup=False, highlight=False)
        evidence = ", ".join(f"{k}={v}" for k, v in result.verdict.evidence.items())
        self.console.print(f"  verdict [bold]{result.verdict.label}[/bold]: {evidence}")
        if result.verdict.note:
            self.console.print(f"  {result.verdict.note}")
        if result.tls is not None:
            self.console.print("  " + tls_line(result.tls), markup=False, highlight=False)
        if result.inputs.workload == "browser":
            self.console.print("  " + protocol_line(result.protocol_summary()), markup=False, highlight=False)
        if result.http2 is not None:
            from advisor.tuner.measure.h2_status import summary_line

            self.console.print("  " + summary_line(result.http2), markup=False, highlight=False)
        for failure in result.slo_failures():
            self.console.print(f"  SLO: {failure}")
        for reason in result.invalid_reasons:
            self.console.print(f"  [red]invalid[/red]: {reason}")
        if result.warmup is not None:
            warm = result.warmup
            self.console.print(f"  warm-up {warm.seconds:.1f} s at the trial's rate: server children "
                               f"{warm.children_before} -> {warm.children_after}" + ("" if warm.steady else ", still growing"))
        interference = result.interference
        if interference["disturbed"]:
            again = f" (attempt {result.attempt})" if result.attempt > 1 else ""
            self.console.print(f"  [yellow]disturbed{again}: {'; '.join(interference['reasons'])}[/yellow]")
        if not result.quiet:
            self.console.print(f"  [yellow]the server was still busy with earlier work after {result.quiet_wait_s:.0f} s[/yellow]")

    def knee(self, knee, uncertainty: dict | None = None) -> None:
        if self.json:
            document = {"kind": "knee"}
            document.update(knee.to_dict(), uncertainty=uncertainty)
            print(json.dumps(document), flush=True)
            return
        if knee.peak_rate is None:
            self.console.print(f"[red]no probe met the SLO[/red] ({knee.stop_reason})")
        else:
            from advisor.tuner.trial.precision import figure_text

            bound = "at least " if knee.lower_bound_only else ""
            served = figure_text(knee.peak_reply_rate, "replies/s", uncertainty)  # ± its measured uncertainty
            self.console.print(f"[bold]peak sustainable rate: {bound}{knee.peak_rate:g}/s[/bold] "
                               f"({served}; {knee.stop_reason})")
        if knee.limiting is not None:
            self.console.print(f"limited by [bold]{knee.limiting.label}[/bold]")

    def plots(self, trials) -> None:
        if not self.plot_dir or not trials:
            return
        from pathlib import Path

        from advisor.tuner.trial import bench_plots

        directory = Path(self.plot_dir)
        directory.mkdir(parents=True, exist_ok=True)
        written = [bench_plots.rates_plot(trials, directory / "rates.png")]
        for index, trial in enumerate(trials, 1):
            written.append(bench_plots.timeline_plot(trial, directory / f"trial-{index:02d}-timeline.png"))
        if not self.json:
            self.console.print(f"plots: {', '.join(str(p) for p in written)}")
        else:
            sys.stderr.write(f"apache-advisor: plots written to {directory}\n")


def register(app: typer.Typer) -> None:
    app.command("bench", cls=OneLineUsageCommand)(bench)


def main() -> None:
    """Run these commands alone (`python -m advisor.commands.bench`), with the CLI's error contract."""
    app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
    register(app)
    try:
        app()
    except AdvisorError as error:
        sys.stderr.write(f"apache-advisor: {error.render()}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
