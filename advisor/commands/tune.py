"""`apache-advisor tune`: a guided Bayesian tuning session on a staging server.

The session itself (space, trials, journal, replicates, report data) is
advisor.tuner.session.loop; this module reads the options, asks for confirmation,
shows progress and writes the report. Only Typer is imported at module
level: scikit-optimize, numpy and matplotlib load when the command runs.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Optional

import typer

from advisor.commands.bench_protocol import H2_SHARE_HELP, PROTOCOL_HELP
from advisor.commands.logworkload import (ANONYMIZE_HELP, DYNAMIC_HELP, LOG_FORMAT_HELP, SESSION_GAP_HELP,
                                          SPEEDUP_HELP, LogOptions, LogWorkload)
from advisor.commands.options import fail
from advisor.commands.staging import WORKDIR_HELP
from advisor.commands.targets import (BecomeOption, BecomeUserOption, ClientHostOption, ConfigOption, HostOption,
                                      IdentityOption, ManagedOption,
                                      ReloadCmdOption, RemoteOptions, RestartCmdOption, SshOptionOption,
                                      TargetOptions, TestCmdOption,
                                      RttOption, UrlOption, WanDelayOption, WanJitterOption, WanLossOption, WanOptions,
                                      WanRateOption)
from advisor.errors import AdvisorError, UsageError

if TYPE_CHECKING:
    from advisor.tuner.session.loop import TuneSession
    from advisor.tuner.session.session_context import SessionSettings
    from advisor.tuner.trial.objective_spec import ObjectiveSpec, ProbeSettings
    from advisor.tuner.trial.session_workload import SessionWorkload


@dataclass(frozen=True)
class TuneOptions:
    """Everything `tune` was asked, as given."""

    budget: int
    max_time: float | None
    workload_name: str
    objective: str
    rate: float | None
    slo_ms: float
    slo_errors: float
    rtt: float | None
    space_file: str | None
    allow_mpm_switch: bool
    allow_hosts: list[str]
    seed: int
    search: str
    resume: bool
    dry_run: bool
    yes: bool
    report_dir: str
    output_format: str
    gain_replicates: int
    ablation_replicates: int | None
    lint_settings: str | None
    lint_profile: str | None
    fail_on: str | None
    ram: str | None
    duration: float
    warmup: float | None
    timeout: float
    start_rate: float | None
    max_rate: float
    max_probes: int
    first_probes: int
    tolerance: float
    retries: int
    num_calls: int | None
    think: float | None
    cgi_n: int
    sleep_ms: int
    server_cpus: str | None
    client_cpus: str | None
    httperf_bin: str | None
    tls_resume: str
    target: TargetOptions
    remote: RemoteOptions
    wan: WanOptions
    log: LogOptions
    protocol: str = "h1"
    h2_share: float | None = None


@dataclass(frozen=True)
class CheckedOptions:
    """What the options say once checked, before any server is touched."""

    load_clients: list
    wan: Any
    """The checked advisor.tuner.staging.wan.WanSpec, or None."""
    rtt_ms: float
    settings: SessionSettings
    log: LogWorkload | None
    spec: ObjectiveSpec
    probes: ProbeSettings


@dataclass(frozen=True)
class SessionSetup:
    """The session made on its target, what shows it, and the tool's own
    link (None: none) whose conditions the run sets."""

    target: Any
    session: TuneSession
    display: _Display
    link: Any


def tune(
    budget: int = typer.Option(15, "--budget", help="Trials (replicates of near-ties included)."),
    max_time: Optional[float] = typer.Option(None, "--max-time", help="Start no trial after this many seconds; the gain replicates and the report follow."),
    workload_name: str = typer.Option("almeida-sessions", "--workload", "-w", help="almeida-sessions (default: 5-request sessions with think time over Almeida's file set), bench's 1k, 1m, almeida, cgi, slow, url, or log:PATH (sessions replayed from an access log)."),
    objective: str = typer.Option("peak", "--objective", help="peak (highest rate under the SLO), throughput (at --rate, bounded by --slo-ms) or latency (mean reply time at --rate)."),
    rate: Optional[float] = typer.Option(None, "--rate", help="throughput/latency: the offered rate (sessions or connections per second)."),
    slo_ms: float = typer.Option(100.0, "--slo-ms", help="SLO: mean reply time below this (ms)."),
    slo_errors: float = typer.Option(1.0, "--slo-errors", help="SLO: errors below this percentage."),
    space_file: Optional[str] = typer.Option(None, "--space", help="A TOML file that narrows or fixes dimensions ([KeepAlive] value = \"On\"; [MaxRequestWorkers] low/high)."),
    allow_mpm_switch: bool = typer.Option(False, "--allow-mpm-switch", help="Let the MPM itself be a dimension."),
    allow_host: Optional[List[str]] = typer.Option(None, "--allow-host", help="A host off loopback that may be tuned (repeat); others are refused."),
    seed: int = typer.Option(0, "--seed", help="Seed of the search's design and surrogate."),
    search: str = typer.Option("bayesian", "--search", help="bayesian (skopt's GP) or random (the baseline)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the session whose journal is in --report."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and stop; the server is not touched."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Start without asking (required when stdin is not a terminal)."),
    report_dir: str = typer.Option("tune-report", "--report", help="The session's directory: journal, report.md, recommended.conf, report.json, plots."),
    output_format: str = typer.Option("text", "--format", help="text, or json (the report's JSON on stdout, progress on stderr)."),
    gain_replicates: int = typer.Option(5, "--gain-replicates", help="Interleaved runs each of the start and the winner for the gain (0: none)."),
    ablation_replicates: Optional[int] = typer.Option(None, "--ablation-replicates", help="Rounds of the winner against the winner less each change, one at a time (default: --gain-replicates; 0: none, the report shows modelled effects only)."),
    lint_settings: Optional[str] = typer.Option(None, "--lint-settings", help="The lint settings file the recommendation is judged by (default: the nearest .apache-advisor.toml or pyproject.toml, as lint finds it)."),
    lint_profile: Optional[str] = typer.Option(None, "--profile", help="lint's profile for judging the recommendation: performance, security or all."),
    fail_on: Optional[str] = typer.Option(None, "--fail-on", help="lint's --fail-on: a change that brings a finding this severe is kept only with a measured gain, and then with a suppression comment that gives it (default: the settings file's, else warning)."),
    ram: Optional[str] = typer.Option(None, "--ram", help="RAM of the host the config is for (512M, 8G...); default: this host's."),
    duration: float = typer.Option(3.0, "--duration", help="Seconds of measured load per probe."),
    warmup: Optional[float] = typer.Option(None, "--warmup", help="Seconds of unmeasured load before each probe (default: until the pool is steady; 0: none)."),
    timeout: float = typer.Option(2.0, "--timeout", help="httperf's per-request timeout, seconds."),
    start_rate: Optional[float] = typer.Option(None, "--start-rate", help="peak: where the first knee search starts (default 10 for sessions, 250 otherwise)."),
    max_rate: float = typer.Option(20000.0, "--max-rate", help="peak: the highest rate to try."),
    max_probes: int = typer.Option(4, "--max-probes", help="peak: probes per knee search after the first."),
    first_probes: int = typer.Option(10, "--first-probes", help="peak: probes of the first knee search (from --start-rate)."),
    tolerance: float = typer.Option(0.1, "--tolerance", help="peak: stop a knee search when its bracket is this narrow."),
    retries: int = typer.Option(1, "--retries", help="Run a failed probe again when other programs took the server's or httperf's core."),
    num_calls: Optional[int] = typer.Option(None, "--num-calls", help="Requests per session (almeida-sessions: 5) or per connection."),
    think: Optional[float] = typer.Option(None, "--think", help="Seconds between a session's requests (almeida-sessions: 0.2); makes bench's workloads sessions."),
    cgi_n: int = typer.Option(100000, "--cgi-n", help="cgi workload: random numbers summed per request."),
    sleep_ms: int = typer.Option(1000, "--sleep-ms", help="slow workload: milliseconds per request."),
    server_cpus: Optional[str] = typer.Option(None, "--server-cpus", help="Cores httpd runs on (existing server: re-pinned with taskset)."),
    client_cpus: Optional[str] = typer.Option(None, "--client-cpus", help="Cores httperf runs on (default: the cores the server does not use)."),
    workdir: Optional[str] = typer.Option(None, "--workdir", help=WORKDIR_HELP),
    config: ConfigOption = None,
    reload_cmd: ReloadCmdOption = "apachectl graceful",
    restart_cmd: RestartCmdOption = None,
    test_cmd: TestCmdOption = None,
    url: UrlOption = None,
    managed: ManagedOption = None,
    host: HostOption = None,
    ssh_option: SshOptionOption = None,
    identity: IdentityOption = None,
    become: BecomeOption = False,
    become_user: BecomeUserOption = None,
    client_host: ClientHostOption = None,
    wan_delay: WanDelayOption = None,
    wan_jitter: WanJitterOption = None,
    wan_loss: WanLossOption = None,
    wan_rate: WanRateOption = None,
    rtt: RttOption = None,
    httperf_bin: Optional[str] = typer.Option(None, "--httperf", help="The httperf binary."),
    tls: bool = typer.Option(False, "--tls", help="Load over HTTPS (httperf --ssl): the sandbox must be up with --tls; an existing server's URL becomes https. An https --url does the same."),
    tls_resume: str = typer.Option("session", "--tls-resume", help="HTTPS: session (one full handshake per visitor, resumed for its later connections, as a browser) or never (every connection a full handshake: the worst case)."),
    protocol: str = typer.Option("h1", "--protocol", help=PROTOCOL_HELP + " h2 and mix need --workload browser; the MPM switch then leaves prefork out."),
    h2_share: Optional[float] = typer.Option(None, "--h2-share", help=H2_SHARE_HELP),
    log_format: Optional[str] = typer.Option(None, "--log-format", help=LOG_FORMAT_HELP),
    session_gap: float = typer.Option(30.0, "--session-gap", help=SESSION_GAP_HELP),
    dynamic: str = typer.Option("static", "--dynamic", help=DYNAMIC_HELP),
    anonymize: bool = typer.Option(False, "--anonymize", help=ANONYMIZE_HELP),
    speedup: Optional[float] = typer.Option(None, "--speedup", help=SPEEDUP_HELP + " Sets --start-rate (peak) or --rate (throughput, latency)."),
) -> None:
    """Tune a staging server: Bayesian search over its directives, then the recommended include and its measured gain."""
    options = TuneOptions(
        budget=budget, max_time=max_time, workload_name=workload_name, objective=objective, rate=rate,
        slo_ms=slo_ms, slo_errors=slo_errors, rtt=rtt, space_file=space_file, allow_mpm_switch=allow_mpm_switch,
        allow_hosts=list(allow_host or []), seed=seed, search=search, resume=resume, dry_run=dry_run, yes=yes,
        report_dir=report_dir, output_format=output_format, gain_replicates=gain_replicates, ram=ram,
        ablation_replicates=ablation_replicates, lint_settings=lint_settings, lint_profile=lint_profile,
        fail_on=fail_on,
        duration=duration, warmup=warmup, timeout=timeout, start_rate=start_rate, max_rate=max_rate,
        max_probes=max_probes, first_probes=first_probes, tolerance=tolerance, retries=retries,
        num_calls=num_calls, think=think, cgi_n=cgi_n, sleep_ms=sleep_ms, server_cpus=server_cpus,
        client_cpus=client_cpus, httperf_bin=httperf_bin, tls_resume=tls_resume, protocol=protocol, h2_share=h2_share,
        target=TargetOptions(workdir=workdir, config=config, url=url, reload_cmd=reload_cmd, test_cmd=test_cmd,
                             managed=managed, tls=tls, restart_cmd=restart_cmd),
        remote=RemoteOptions(host=host, ssh_options=ssh_option, identity=identity, client_hosts=client_host,
                             become=become, become_user=become_user),
        wan=WanOptions(delay=wan_delay, jitter=wan_jitter, loss=wan_loss, rate=wan_rate),
        log=LogOptions(log_format=log_format, session_gap=session_gap, dynamic=dynamic, anonymize=anonymize,
                       speedup=speedup),
    )
    try:
        _tune(options)
    except AdvisorError as error:
        fail(error)


def _lint_policy(options: TuneOptions):
    """The admin's lint settings, found and checked as `lint` does, before
    any server is touched."""
    from advisor.lint.settings import find_config_file
    from advisor.tuner.search.space_lint import LintPolicy

    if options.lint_settings is not None and not os.path.isfile(options.lint_settings):
        raise UsageError("no such --lint-settings file", file=options.lint_settings,
                         hint="give the .apache-advisor.toml (or pyproject.toml) your lint runs with")
    policy = LintPolicy(options.lint_settings or find_config_file(), options.lint_profile, options.fail_on)
    policy.resolved()  # a bad --profile, --fail-on or settings file is one line here
    return policy


def _tune(options: TuneOptions) -> None:
    """Check everything that needs no server, set the session up on the
    target, then print its plan (--dry-run) or run it and write the report."""
    checked = _check_without_server(options)
    setup = _set_up(options, checked)
    if options.dry_run:
        plan = setup.session.prepare()
        setup.display.plan(plan)
        return
    outcome = _run(options, checked, setup)
    if outcome is None:
        return
    _write(outcome, checked.settings.session_dir, setup.display)
    if not outcome.normal_stop:
        sys.stderr.write(f"apache-advisor: the session stopped early: {outcome.search.stop_reason}"
                         f" ({outcome.search.advice})\n")
        raise typer.Exit(code=1)


def _check_without_server(options: TuneOptions) -> CheckedOptions:
    """The options checked and made into the session's settings before any
    server is touched: bad input changes nothing."""
    from advisor.commands.targets import check_rtt_option, parse_load_clients
    from advisor.tuner.load import httperf

    if options.output_format not in ("text", "json"):
        raise UsageError(f"unknown --format {options.output_format!r}", hint="choose text or json")
    # Everything that needs no server first: bad input changes nothing.
    load_clients = parse_load_clients(options.remote)
    wan = options.wan.spec()
    rtt_ms = check_rtt_option(options.rtt, wan)
    settings = _session_settings(options)
    log, rate, start_rate = _log_workload(options)
    spec, probes = _objective_and_probes(options, log, rate, start_rate, rtt_ms)
    if options.space_file and not os.path.isfile(options.space_file):
        raise UsageError("no such --space file", file=options.space_file, hint="give the path of a TOML file")
    httperf.find_httperf(options.httperf_bin)
    if options.httperf_bin:
        os.environ["PATH"] = os.path.dirname(os.path.abspath(options.httperf_bin)) + os.pathsep + os.environ.get("PATH", "")
    if not (options.yes or options.dry_run) and not sys.stdin.isatty():
        raise UsageError("stdin is not a terminal, so nobody can confirm the plan",
                         hint="pass --yes to start without asking, or --dry-run to see the plan")

    if options.allow_mpm_switch and options.target.existing and not options.target.restart_cmd:
        from advisor.tuner.staging.existing_server import mpm_switch_needs_restart

        raise mpm_switch_needs_restart()
    return CheckedOptions(load_clients, wan, rtt_ms, settings, log, spec, probes)


def _session_settings(options: TuneOptions) -> SessionSettings:
    from pathlib import Path

    from advisor.tuner.session.session_context import SessionSettings

    ram_bytes = None
    if options.ram is not None:
        from advisor.capacity.sizing import parse_size

        ram_bytes = parse_size(options.ram, "--ram")
        if ram_bytes <= 0:
            raise UsageError("--ram must be more than 0")
    settings = SessionSettings(session_dir=Path(options.report_dir), budget=options.budget,
                               max_time_s=options.max_time, seed=options.seed, search=options.search,
                               resume=options.resume, gain_replicates=options.gain_replicates,
                               space_file=options.space_file, allow_mpm_switch=options.allow_mpm_switch,
                               ram_bytes=ram_bytes, ablation_replicates=options.ablation_replicates,
                               lint_policy=_lint_policy(options))
    settings.check()
    _check_replicates(settings)
    return settings


def _check_replicates(settings: SessionSettings) -> None:
    """Refuse gain runs or ablation rounds too few for the ratio's interval:
    one run a side has no spread to estimate the noise from, so no interval
    at all (0 asks for none and stays allowed)."""
    from advisor.tuner.stats.ratio import MIN_RUNS

    for option, value, what in (("--gain-replicates", settings.gain_replicates, "the gain's"),
                                ("--ablation-replicates", settings.ablation_replicates, "the ablations'")):
        if value is not None and 0 < value < MIN_RUNS:
            raise UsageError(f"{option} {value}: {what} interval needs at least {MIN_RUNS} runs of each side "
                             "(one run a side has no spread to measure the noise by)",
                             hint=f"give {option} {MIN_RUNS} or more, or 0 for none")


def _log_workload(options: TuneOptions) -> tuple[LogWorkload | None, float | None, float | None]:
    """A log:PATH workload's replay (None for another workload), and the
    rate and first start rate (--speedup sets them from the log)."""
    from advisor.commands.logworkload import is_log_workload, prepare as prepare_log, refuse_shape_options

    rate, start_rate = options.rate, options.start_rate
    log = None
    if is_log_workload(options.workload_name):
        # Derived before any server is touched: a bad log changes nothing.
        refuse_shape_options(options.think, options.num_calls)
        log = prepare_log(options.workload_name, options.log, options.target)
        if options.log.speedup is not None:
            start_rate = log.rate_for(options.log.speedup)
            if options.objective != "peak" and rate is None:
                rate = start_rate
    elif options.log.speedup is not None:
        raise UsageError("--speedup scales a log's session rate", hint="use it with --workload log:PATH")
    return log, rate, start_rate


def _objective_and_probes(options: TuneOptions, log: LogWorkload | None, rate: float | None,
                          start_rate: float | None, rtt_ms: float) -> tuple[ObjectiveSpec, ProbeSettings]:
    """What a trial measures, and how its probes run (checked)."""
    from advisor.tuner.trial.objective_spec import ObjectiveSpec, ProbeSettings
    from advisor.tuner.trial.session_workload import DEFAULT_WORKLOAD

    from advisor.commands.bench_protocol import check_protocol

    share = check_protocol(options.protocol, options.workload_name, options.h2_share)
    spec = ObjectiveSpec(options.objective, rate, options.slo_ms, options.slo_errors, rtt_ms=rtt_ms,
                         protocol=options.protocol, h2_share=share)
    sessions = (options.workload_name in (DEFAULT_WORKLOAD, "browser") or options.think is not None
                or log is not None)
    probes = ProbeSettings(duration_s=options.duration, warmup_s=options.warmup, timeout_s=options.timeout,
                           start_rate=start_rate or (10.0 if sessions else 250.0), max_rate=options.max_rate,
                           max_probes=options.max_probes, first_max_probes=options.first_probes,
                           tolerance=options.tolerance, retries=options.retries, tls_resume=options.tls_resume)
    probes.check()
    return spec, probes


def _set_up(options: TuneOptions, checked: CheckedOptions) -> SessionSetup:
    """The target resolved, the workload in place, the load clients open,
    the session made (nothing run yet)."""
    from dataclasses import replace

    from advisor.commands.bench_protocol import check_target_speaks_h2
    from advisor.commands.targets import open_load_clients, resolve_target, wan_link
    from advisor.tuner.load.roundtrips import RTT_ADDED, RTT_ON_LINK
    from advisor.tuner.session.loop import TuneSession

    resolved = resolve_target(options.target, options.remote, allow_hosts=options.allow_hosts)
    target = resolved.target
    check_target_speaks_h2(target.base_url, checked.spec.protocol)
    path = _url_path(options)
    display = _Display(options.output_format == "json")
    work = _session_workload(options, checked.log, resolved.work_dir, path, display)
    link = wan_link(checked.wan, target)
    spec = checked.spec
    if checked.rtt_ms:
        # The plan's guess (netem on the tool's link, else added); the run confirms it.
        spec = replace(spec, rtt_how=RTT_ON_LINK if link is not None else RTT_ADDED)
    settings, load_clients = checked.settings, checked.load_clients
    settings.clients = open_load_clients(load_clients, target, options.remote)
    settings.client_here = not load_clients or any(c.local for c in load_clients)
    session = TuneSession(target, resolved.work_dir, work, spec, checked.probes, settings, display)
    display.session = session
    return SessionSetup(target, session, display, link)


def _url_path(options: TuneOptions) -> str | None:
    """--workload url: the path (and query) of --url; else None."""
    path = None
    if options.workload_name == "url":
        from urllib.parse import urlsplit

        if not options.target.url:
            raise UsageError("--workload url needs --url")
        parts = urlsplit(options.target.url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
    return path


def _session_workload(options: TuneOptions, log: LogWorkload | None, work_dir, path: str | None,
                      display: _Display) -> SessionWorkload:
    """The workload each trial sends: the log's sessions (its files
    installed), else the named one."""
    from advisor.tuner.trial.session_workload import SessionWorkload, make_session_workload

    if log is not None:
        log.install(work_dir)
        work = SessionWorkload(log.name, "/", None, log.replay.mean_calls, log.replay.mean_think_s,
                               "sessions replayed from an access log", session_log=log.replay.session_log)
        for line in log.summary_lines():
            display.note(line)
    else:
        work = make_session_workload(options.workload_name, work_dir, calls=options.num_calls,
                                     think_s=options.think, uri=path, cgi_n=options.cgi_n, sleep_ms=options.sleep_ms)
    return work


def _run(options: TuneOptions, checked: CheckedOptions, setup: SessionSetup):
    """The session run once the plan is confirmed, the link and the load
    clients put back whatever happens; its outcome, or None when the plan
    was declined."""
    from dataclasses import replace

    from advisor.commands.targets import place_processes, set_link_for_run
    from advisor.tuner.staging import wan as wan_qdiscs

    settings, session, display, link = checked.settings, setup.session, setup.display, setup.link
    settings.server_cpus, settings.client_cpus = place_processes(setup.target, options.server_cpus,
                                                                 options.client_cpus)
    try:
        rtt_how, link_lines = set_link_for_run(link, checked.wan, checked.rtt_ms)
        for line in link_lines:
            display.note(line)
        session.objective = replace(session.objective, rtt_how=rtt_how)
        with session.open():
            plan = session.prepare()
            display.plan(plan)
            if not options.yes and not typer.confirm("Start the session?", default=True):
                display.note("nothing was changed")
                return None
            display.start(plan)
            outcome = session.run()
            display.stop()
    except KeyboardInterrupt:
        display.stop()
        restored = ("the original configuration was restored" if session.restore_error is None else
                    f"the original managed include was written back, but the reload failed: {session.restore_error.render()}")
        sys.stderr.write(f"apache-advisor: interrupted; {restored}; the journal keeps every completed trial "
                         f"(continue with --resume --report {options.report_dir})\n")
        raise typer.Exit(code=130)
    finally:
        display.stop()
        if settings.clients is not None:
            settings.clients.close()
        if link is not None:
            wan_qdiscs.clear(link)
    return outcome


def _write(outcome, directory, display: "_Display") -> None:
    from advisor.output.tune_files import JSON_NAME, render_json, write_report
    from advisor.tuner.session.report_plots import write_plots

    report = outcome.report
    plots = write_plots(report, directory)
    written = write_report(report, directory, plots)
    if display.json:
        names = {name: os.path.relpath(path, directory) for name, path in plots.items()}
        sys.stdout.write(render_json(report, names))
        display.note(f"report written to {directory} ({JSON_NAME} holds this JSON)")
        return
    display.summary(report, written, plots)


class _Display:
    """Formats what the session tells (advisor.tuner.session.loop.SessionEvents); decides nothing."""

    def __init__(self, as_json: bool) -> None:
        from rich.console import Console

        self.json = as_json
        self.session = None
        # Human lines go to stderr when stdout carries JSON.
        self.console = Console(stderr=as_json, highlight=False)
        self.live = not as_json and self.console.is_terminal
        self.console.soft_wrap = not self.live  # a log keeps one line per event
        self.progress = None
        self.task = None
        self.trial_text = ""
        self.last_started = 0

    # ---- what the session tells ------------------------------------------------

    def note(self, text: str) -> None:
        self._print(f"[yellow]{text}[/yellow]" if self.live else text)

    def plan(self, plan) -> None:
        if self.json and plan is not None and self._plan_only():
            print(json.dumps(plan.to_dict(), indent=2))
            return
        self._print("[bold]Tuning plan[/bold]" if self.live else "Tuning plan")
        for line in plan.lines():
            self._print("  " + line, markup=False)

    def _plan_only(self) -> bool:
        return self.session is not None and self.session.managed is None

    def start(self, plan) -> None:
        if not self.live:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("{task.fields[best]}"),
                                 TextColumn("{task.fields[left]}"), console=self.console)
        self.progress.start()
        self.task = self.progress.add_task("starting", total=plan.budget, completed=plan.resumed, best="",
                                           left=f"~{_minutes(plan.estimate_s)} left")

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def trial_started(self, number: int, total: int, point, origin: str) -> None:
        again = " again" if number == self.last_started else ""
        self.last_started = number
        text = f"trial {number} of {total}{again} ({origin or 'trial'}): {self._point(point)}"
        self.trial_text = text[:90]
        if self.progress is not None:
            self.progress.update(self.task, description=self.trial_text)
        else:
            self._print(text, markup=False)

    def probe(self, result) -> None:
        h = result.httperf
        met = "met" if result.meets_slo else "missed"
        client = f" (client {result.client_time.mean_ms:.1f} ms)" if result.inputs.rtt_ms else ""
        # The served rate: httperf's own includes the probe's tail (the last replies' service time).
        line = (f"    probe at {result.inputs.rate:g}/s: {result.served_rate:.1f} replies/s, {h.reply_time_ms:.1f} ms{client}, "
                f"errors {result.error_pct:.2f} %, SLO {met}, {result.verdict.label}")
        cause = result.verdict.evidence.get("miss_cause")
        if isinstance(cause, dict) and cause.get("summary"):
            line += f" ({cause['summary']})"
        if result.invalid_reasons:
            line += f" (invalid: {result.invalid_reasons[0]})"
        if self.progress is not None:
            self.progress.update(self.task, description=f"{self.trial_text} | probe at {result.inputs.rate:g}/s: "
                                                        f"{result.served_rate:.0f} replies/s, SLO {met}")
        else:
            self._print(line, markup=False)

    def trial_done(self, obs, best: float | None, eta_s: float | None) -> None:
        from advisor.tuner.trial.precision import figure_text

        unit = self._unit()
        if obs.objective is not None:  # with its measured uncertainty, "at least"/"at most" for a bound
            value = figure_text(obs.objective, unit, (obs.details or {}).get("uncertainty"))
        elif obs.valid:
            value = "no value"
        else:
            value = "failed" if obs.verdict == "config refused" else "invalid"
        why = ""
        if not obs.valid:
            reasons = obs.details.get("invalid_reasons") or [obs.details.get("error", "")]
            why = f": {reasons[0]}" if reasons and reasons[0] else ""
        best_text = f"; best {best:,.1f}" if best is not None else ""
        left = f"; about {_minutes(eta_s)} left" if eta_s is not None else ""
        line = f"trial {obs.trial}: {value} ({obs.verdict}{why}){best_text}{left}"
        if self.progress is not None:
            self.progress.console.print(f"{line}  [dim]{self._point(obs.point)}[/dim]", highlight=False)
            self.progress.update(self.task, completed=obs.trial, left=f"~{_minutes(eta_s)} left" if eta_s else "",
                                 best=f"best {best:,.1f} {unit}" if best is not None else "")
        else:
            self._print(line, markup=False)

    def replicate_done(self, index: int, total: int, role: str, outcome) -> None:
        self._run_line("gain replicate", index, total, role, outcome)

    def ablation_done(self, index: int, total: int, role: str, outcome) -> None:
        self._run_line("ablation run", index, total, role, outcome)

    def _run_line(self, kind: str, index: int, total: int, role: str, outcome) -> None:
        from advisor.tuner.trial.precision import figure_text

        value = (figure_text(outcome.objective, self._unit(), (outcome.details or {}).get("uncertainty"))
                 if outcome.valid else f"invalid ({outcome.verdict})")
        line = f"{kind} {index} of {total} ({role}): {value}"
        if self.progress is not None:
            self.progress.console.print(line, highlight=False)
        else:
            self._print(line, markup=False)

    # ---- the end -----------------------------------------------------------------

    def summary(self, report, written, plots) -> None:
        from advisor.output.tune_files import gain_sentence

        self._print(f"session: {report.facts.stop_reason}, {len(report.trials)} trials in "
                    f"{report.facts.elapsed_s:.0f} s", markup=False)
        changes = report.recommendation.changes
        if report.no_response is not None:
            self._print(f"recommended: nothing: {report.no_response.sentence}", markup=False)
        else:
            self._print(f"recommended: {len(changes)} change(s): "
                        + (", ".join(c.line for c in changes) or "keep the config in use"),
                        markup=False)
        self._print(f"gain over the start: {gain_sentence(report.gain)}", markup=False)
        self._print(f"bottleneck: {report.verdict_line}", markup=False)
        for note in report.notes:
            self._print(f"note: {note}", markup=False)
        files = [str(p) for p in written.values()] + [str(p) for p in plots.values()]
        self._print("report: " + ", ".join(files), markup=False)

    # ---- helpers -----------------------------------------------------------------

    def _unit(self) -> str:
        return self.session.objective.unit.split(" ")[0] if self.session is not None else ""

    def _point(self, point) -> str:
        from advisor.tuner.session.session_context import point_text

        space = getattr(self.session, "space", None)
        return point_text(space, point) if space is not None else ""

    def _print(self, text: str, markup: bool = True) -> None:
        self.console.print(text, markup=markup, highlight=False)
        if not self.live:
            self.console.file.flush()  # a log or a pipe sees each line when it happens


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


def register(app: typer.Typer) -> None:
    app.command("tune")(tune)

