"""`apache-advisor capacity`: how many workers fit, and what happens at N req/s.

Gathers the inputs (config, measurements on this host, flags), hands them to
advisor.capacity.report, and prints the result. numpy, matplotlib and psutil
are imported inside the functions that need them, so registering this
command costs the CLI's start-up nothing.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, List, Optional

import typer

from advisor.commands.options import (AllowMissingIncludesOption, ApacheVersionOption, DefineOption,
                                 ModuleOption, ModulesFromOption, ServerRootOption)

from advisor.commands.capacity_memory import MemoryOptions, gather_memory, recommend_children
from advisor.commands.capacity_protocols import H2_SHARE_HELP, REQUESTS_PER_PAGE_HELP
from advisor.commands.logdemand_input import LOG_FORMAT_HELP, LOG_HELP
from advisor.errors import AdvisorError, ConfigError, UsageError

if TYPE_CHECKING:
    from advisor.capacity.fit_workerpool import PoolFit
    from advisor.capacity.logcapacity import LogCapacity
    from advisor.capacity.queueing_model import Arrivals, Service
    from advisor.capacity.report import CapacityReport
    from advisor.capacity.sizing import MemoryInputs, MpmSettings
    from advisor.capacity.workerpool_model import ServerModel
    from advisor.commands.logdemand_input import LogInput
    from advisor.config.model import Config

SERVICE_DISTRIBUTIONS = "exponential, deterministic, lognormal[:CV] or pareto[:ALPHA]"


@dataclass(frozen=True)
class CapacityOptions:
    """Everything `capacity` was asked, as given."""

    config: str
    rates: list[float]
    memory: MemoryOptions
    mpm: str | None
    service_time: float | None
    max_workers: int | None
    target_response: float | None
    arrivals: str | None
    burst: str | None
    service_dist: str
    service_samples: str | None
    fit_files: list[str]
    check_files: list[str]
    plot: str | None
    output_format: str
    defines: list[str]
    modules: list[str]
    modules_from: str | None
    apache_version: str | None
    server_root: str | None
    allow_missing_includes: bool
    log_paths: list[str] = field(default_factory=list)
    log_format: str | None = None
    h2_share: str | None = None
    """As typed: checked with the other flags (one line and exit 2 on a bad one)."""
    requests_per_page: str | None = None


@dataclass(frozen=True)
class QueueLaws:
    """The arrival process and the service-time law the flags name, and the
    times of --service-samples (empty without it)."""

    arrivals: Arrivals
    service: Service
    samples: list[float]


@dataclass(frozen=True)
class PoolSettings:
    """The worker pool the config runs, before and after --max-workers."""

    as_configured: MpmSettings
    settings: MpmSettings
    """As configured, or the --max-workers what-if."""
    threaded_threads_per_child: int
    threaded_thread_limit: int
    written_async_factor: float | None
    """AsyncRequestWorkerFactor as the config writes it (None: not written)."""


def _int_directive(cfg, *names: str) -> int | None:
    """The value httpd uses for a numeric server-scope directive (last one wins)."""
    found = cfg.server_directives(*names)
    if not found:
        return None
    directive = found[-1]
    text = directive.arg(0)
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{directive.name} takes a whole number, not {text!r}", directive.file,
                          directive.end_line, "write a positive integer") from None
    if value < 1:
        raise ConfigError(f"{directive.name} must be at least 1, not {value}", directive.file,
                          directive.end_line, "write a positive integer")
    return value


def _float_directive(cfg, name: str) -> float | None:
    directive = cfg.server_value(name)
    if directive is None:
        return None
    try:
        value = float(directive.arg(0))
    except ValueError:
        raise ConfigError(f"{directive.name} takes a number, not {directive.arg(0)!r}", directive.file,
                          directive.end_line, "write a number such as 2") from None
    if not (value >= 0 and math.isfinite(value)):
        raise ConfigError(f"{directive.name} must be a number >= 0", directive.file, directive.end_line)
    return value


def parse_burst(text: str):
    from advisor.capacity.queueing_model import Arrivals

    parts = [p.strip() for p in text.split(",")]
    try:
        r1, r2, factor = (float(p) for p in parts)
    except ValueError:
        raise UsageError(f"--burst {text!r}: expected three numbers r1,r2,l1factor",
                         hint="the paper's values are --burst 0.05,0.95,0.75") from None
    try:
        return Arrivals("mmpp", r1, r2, factor)
    except ValueError as error:
        raise UsageError(f"--burst {text!r}: {error}") from None


def parse_service(text: str):
    from advisor.capacity.queueing_model import Service

    kind, _, shape = text.partition(":")
    try:
        return Service(kind.strip().lower(), float(shape) if shape else None)
    except ValueError as error:
        raise UsageError(f"--service-dist {text!r}: {error}", hint=f"use {SERVICE_DISTRIBUTIONS}") from None


def read_service_samples(path: str) -> list[float]:
    """One service time in seconds per line (blank lines and # comments skipped)."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or "not UTF-8 text"
        raise AdvisorError(f"cannot read service-time samples: {reason}", path, None,
                           "one time in seconds per line") from None
    samples = []
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            raise AdvisorError(f"{text!r} is not a number", path, number, "one time in seconds per line") from None
        if not (value > 0 and math.isfinite(value)):
            raise AdvisorError("service times must be > 0", path, number)
        samples.append(value)
    if len(samples) < 2:
        raise AdvisorError("need at least two service-time samples", path, None)
    return samples


def _write_atomically(path: str, write) -> None:
    """Write through a temporary file in the same directory, so that a failure
    leaves no half-written file where the admin expects a plot."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"--plot {path}: directory {directory} does not exist")
    fd, temp = tempfile.mkstemp(prefix=".capacity-", suffix=".png", dir=directory)
    os.close(fd)
    try:
        write(temp)
        os.replace(temp, path)
    except OSError as error:
        raise UsageError(f"--plot {path}: {error.strerror}") from None
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def _listen_queue(cfg) -> int:
    """Connections the kernel queues beyond the workers: ListenBacklog (httpd's
    default 511), capped by net.core.somaxconn, plus the one more Linux admits."""
    from advisor.capacity.workerpool_model import DEFAULT_LISTEN_BACKLOG, LINUX_EXTRA_SLOT

    written = _int_directive(cfg, "ListenBacklog")
    backlog = written if written is not None else DEFAULT_LISTEN_BACKLOG
    cap = _somaxconn()
    if cap is not None:
        backlog = min(backlog, cap)
    return backlog + LINUX_EXTRA_SLOT


def _somaxconn() -> int | None:
    """This host's cap on listen queues (net.core.somaxconn), if readable."""
    try:
        with open("/proc/sys/net/core/somaxconn", encoding="ascii") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def _curve_points(plot: str | None, arrivals, service) -> int:
    if not plot:
        return 0
    exact = arrivals.kind == "poisson" or service.kind == "exponential"
    # Simulated curves cost a simulation per point: fewer points.
    return 40 if exact else 12


def register(app: typer.Typer) -> None:
    @app.command()
    def capacity(
        config: str = typer.Argument(..., help="Main config file, or a directory holding it."),
        rate: Optional[List[float]] = typer.Option(None, "--rate", help="Mean arrival rate (req/s) to predict at; repeat for several."),
        ram: Optional[str] = typer.Option(None, "--ram", help="Host RAM (512M, 2G, 1.5GiB...); default: this host's."),
        reserve: Optional[str] = typer.Option(None, "--reserve", help="Memory other services hold (SIZE)."),
        reserve_process: Optional[List[str]] = typer.Option(None, "--reserve-process", help="Measure the memory of running processes with this name; repeat for several."),
        os_reserve: Optional[str] = typer.Option(None, "--os-reserve", help="Memory for the OS and kernel; default 256M + 2 % of RAM."),
        worker_memory: Optional[str] = typer.Option(None, "--worker-memory", help="Private memory of one httpd child (SIZE); default: measured from the running httpd."),
        thread_memory: Optional[str] = typer.Option(None, "--thread-memory", help="Memory of one extra thread in a threaded child; default 256K."),
        connection_memory: Optional[str] = typer.Option(None, "--connection-memory", help="Memory per TCP connection; default: the kernel's socket buffer defaults."),
        docroot: Optional[str] = typer.Option(None, "--docroot", help="Directory whose files are the hot document set."),
        doc_set: Optional[str] = typer.Option(None, "--doc-set", help="Size of the hot document set."),
        measure: bool = typer.Option(True, "--measure/--no-measure", help="Measure running httpd children (off: use assumed sizes)."),
        fpm_config: Optional[List[str]] = typer.Option(None, "--fpm-config", help="php-fpm.conf, a pool file or a pool.d directory the config hands PHP to (default for a config under /etc: /etc/php/*/fpm/pool.d, /etc/php-fpm.d); repeat for several."),
        fpm_memory: Optional[str] = typer.Option(None, "--fpm-memory", help="Memory of one php-fpm child (SIZE); default: mean PSS of the pool's running children, else 48M."),
        mpm: Optional[str] = typer.Option(None, "--mpm", help="prefork, worker or event, when the config loads no MPM (a static build)."),
        service_time: Optional[float] = typer.Option(None, "--service-time", help="Mean service time in seconds (what-if; overrides a fit)."),
        max_workers: Optional[int] = typer.Option(None, "--max-workers", help="What-if MaxRequestWorkers for the current pool."),
        target_response: Optional[float] = typer.Option(None, "--target-response", help="Worst-case response time to allow (s): caps the recommendation at target / service time."),
        arrivals: Optional[str] = typer.Option(None, "--arrivals", help="poisson or mmpp (bursty, the paper's model); default mmpp, or poisson with --fit (httperf's load is not bursty)."),
        burst: Optional[str] = typer.Option(None, "--burst", help="MMPP r1,r2,l1factor; default 0.05,0.95,0.75 (Andersson et al.)."),
        service_dist: str = typer.Option("exponential", "--service-dist", help=f"Service time law: {SERVICE_DISTRIBUTIONS}."),
        service_samples: Optional[str] = typer.Option(None, "--service-samples", help="File of observed service times (s), one per line: fits a lognormal."),
        fit: Optional[List[str]] = typer.Option(None, "--fit", help="bench JSON or CSV (rate,response_time,throughput) to fit service time and K; repeat for several."),
        check: Optional[List[str]] = typer.Option(None, "--check", help="bench JSON of trials to predict with the fitted model without fitting on them (e.g. the rates past the knee); repeat for several."),
        plot: Optional[str] = typer.Option(None, "--plot", help="Write response time and blocking vs rate to this PNG."),
        output_format: str = typer.Option("text", "--format", help="text or json."),
        log: Optional[List[str]] = typer.Option(None, "--log", help=LOG_HELP),
        log_format: Optional[str] = typer.Option(None, "--log-format", help=LOG_FORMAT_HELP),
        h2_share: Optional[str] = typer.Option(None, "--h2-share", help=H2_SHARE_HELP),
        requests_per_page: Optional[str] = typer.Option(None, "--requests-per-page", help=REQUESTS_PER_PAGE_HELP),
        define: DefineOption = None,
        module: ModuleOption = None,
        modules_from: ModulesFromOption = None,
        apache_version: ApacheVersionOption = None,
        server_root: ServerRootOption = None,
        allow_missing_includes: AllowMissingIncludesOption = False,
    ) -> None:
        """Size the worker pool from RAM and predict overload with the Apache queueing model."""
        run_capacity(CapacityOptions(
            config=config, rates=list(rate or []),
            memory=MemoryOptions(ram=ram, reserve=reserve, reserve_processes=list(reserve_process or []),
                                 os_reserve=os_reserve, worker_memory=worker_memory, thread_memory=thread_memory,
                                 connection_memory=connection_memory, docroot=docroot, doc_set=doc_set,
                                 measure=measure, fpm_config=list(fpm_config or []), fpm_memory=fpm_memory),
            mpm=mpm, service_time=service_time, max_workers=max_workers, target_response=target_response,
            arrivals=arrivals, burst=burst, service_dist=service_dist, service_samples=service_samples,
            fit_files=list(fit or []), check_files=list(check or []), plot=plot, output_format=output_format,
            defines=list(define or []), modules=list(module or []), modules_from=modules_from,
            apache_version=apache_version, server_root=server_root, allow_missing_includes=allow_missing_includes,
            log_paths=list(log or []), log_format=log_format, h2_share=h2_share, requests_per_page=requests_per_page,
        ))


def run_capacity(options: CapacityOptions) -> None:
    """The flags checked, the config read, the pool sized and its overload
    predicted, then the plot and the report written."""
    from advisor.capacity.queueing_model import SimulationOptions
    from advisor.capacity.report import CapacityRequest, build_report
    from advisor.commands.capacity_protocols import mix_settings, parse_protocol_flags

    laws = _check_flags(options)
    protocol_flags = parse_protocol_flags(options.h2_share, options.requests_per_page)
    cfg, running, notes = _read_config(options)
    pool = _pool_settings(cfg, running, options.max_workers)
    settings = pool.settings
    memory = gather_memory(cfg, running, settings.threads_per_child, options.memory, notes)
    fit_result = _fit_trials(options, cfg, memory, pool.as_configured, notes)
    x, source, pool_model = _mean_service_time(options, fit_result, laws.samples)
    log_input = None
    if options.log_paths:
        from advisor.commands.logdemand_input import read_log_demand

        log_input = read_log_demand(options.log_paths, options.log_format, cfg, running, options.service_time)
    if x is None and (options.rates or (options.plot and log_input is None)
                      or (options.target_response and log_input is None)):
        raise UsageError("predictions need a mean service time",
                         hint="give --service-time SECONDS or --fit FILE from `apache-advisor bench`")

    async_factor = pool.written_async_factor
    request = CapacityRequest(
        config_file=cfg.main_file,
        settings=settings,
        memory=memory,
        threaded_threads_per_child=pool.threaded_threads_per_child,
        threaded_thread_limit=pool.threaded_thread_limit,
        async_factor=settings.async_factor if running == "event" else (async_factor if async_factor is not None else 2.0),
        rates=list(options.rates),
        service_time=x,
        service_time_source=source,
        fit=fit_result,
        pool_model=pool_model,
        fit_max_request_workers=pool.as_configured.max_request_workers,
        target_response=options.target_response,
        arrivals=laws.arrivals,
        service=laws.service,
        # Interactive budget: a few hundred thousand simulated requests per
        # point; the confidence interval printed says how far to trust it.
        simulation=SimulationOptions(replications=6, arrivals_per_replication=20_000, min_horizon_cycles=8,
                                     max_arrivals_per_replication=60_000),
        curve_points=_curve_points(options.plot, laws.arrivals, laws.service),
        notes=notes,
        protocol_mix=mix_settings(cfg, running, settings, protocol_flags, log_input, notes, memory.thread.bytes),
    )
    report = build_report(request)
    recommend_children(report)
    if x is not None and options.rates:
        _predict_fpm_pools(report, memory, settings, options.rates, x)
    log_capacity = None
    if log_input is not None:
        from advisor.capacity.logcapacity import build_log_capacity

        log_capacity = build_log_capacity(
            log_input.demand, log_input.series, settings, report.recommended, _listen_queue(cfg),
            log_format=log_input.format_text, format_source=log_input.format_source,
            fixed_hold=log_input.fixed_hold, arrivals=laws.arrivals, target_response=options.target_response)
    _write_plot(options, report, log_capacity, log_input)
    _print_result(options, report, log_capacity)


def _check_flags(options: CapacityOptions) -> QueueLaws:
    """The flags checked, and the queueing laws they name."""
    from advisor.capacity.queueing_model import Arrivals, Service, fit_lognormal_cv
    from advisor.capacity.sizing import MPM_DEFAULTS

    # Check the flags before reading anything, so a typo fails fast.
    if options.output_format not in ("text", "json"):
        raise UsageError(f"--format {options.output_format!r}: use text or json")
    arrivals = options.arrivals
    if arrivals is None:
        # The log's busiest minute is already the peak: Poisson within it.
        arrivals = "poisson" if (options.fit_files or options.log_paths) and not options.burst else "mmpp"
    if arrivals not in ("poisson", "mmpp"):
        raise UsageError(f"--arrivals {arrivals!r}: use poisson or mmpp")
    if options.mpm is not None and options.mpm not in MPM_DEFAULTS:
        raise UsageError(f"--mpm {options.mpm!r}: use prefork, worker or event")
    for value in options.rates:
        if not (value > 0 and math.isfinite(value)):
            raise UsageError(f"--rate {value:g}: a rate must be a number > 0 (requests/s)")
    if options.service_time is not None and not (options.service_time > 0 and math.isfinite(options.service_time)):
        raise UsageError(f"--service-time {options.service_time:g}: must be > 0 seconds")
    if options.max_workers is not None and options.max_workers < 1:
        raise UsageError(f"--max-workers {options.max_workers}: must be at least 1")
    if options.target_response is not None and not (options.target_response > 0
                                                    and math.isfinite(options.target_response)):
        raise UsageError(f"--target-response {options.target_response:g}: must be > 0 seconds")
    if options.burst is not None and arrivals != "mmpp":
        raise UsageError("--burst describes MMPP arrivals: drop it or use --arrivals mmpp")
    if options.check_files and not options.fit_files:
        raise UsageError("--check compares trials with a fitted model: give --fit FILE too")
    if options.plot is not None and not options.plot.lower().endswith(".png"):
        raise UsageError(f"--plot {options.plot}: the plot is a PNG, name it FILE.png")
    arrival_model = parse_burst(options.burst) if options.burst else Arrivals(arrivals)
    service = parse_service(options.service_dist)
    samples: list[float] = []
    if options.service_samples is not None:
        if options.service_dist != "exponential":
            raise UsageError("give --service-dist or --service-samples, not both")
        samples = read_service_samples(options.service_samples)
        service = Service("lognormal", fit_lognormal_cv(samples))
    return QueueLaws(arrival_model, service, samples)


def _read_config(options: CapacityOptions) -> tuple[Config, str, list[str]]:
    """The config read; the MPM modelled; the notes so far."""
    from advisor.capacity.sizing import MPM_DEFAULTS
    from advisor.commands.options import load_options
    from advisor.config.loader import load_config

    cfg = load_config(options.config, load_options(options.defines, options.modules, options.modules_from,
                                                   options.apache_version, options.server_root,
                                                   options.allow_missing_includes, mpm=options.mpm))
    notes: list[str] = []
    running = options.mpm or cfg.mpm
    if running is None:
        running = "event"
        notes.append("the config loads no MPM; assumed event (httpd 2.4's usual default); say --mpm otherwise")
    elif running not in MPM_DEFAULTS:
        raise UsageError(f"the config runs MPM {running!r}; capacity models prefork, worker and event",
                         hint="pass --mpm to model one of them")
    elif options.mpm and cfg.mpm and options.mpm != cfg.mpm:
        notes.append(f"--mpm {options.mpm}: the config loads {cfg.mpm}; its directives are read as they stand")
    return cfg, running, notes


def _pool_settings(cfg: Config, running: str, max_workers: int | None) -> PoolSettings:
    """The pool the config runs once httpd has corrected it, and the
    --max-workers what-if."""
    from advisor.capacity.sizing import MPM_DEFAULTS, effective_mpm_settings

    written = _int_directive(cfg, "MaxRequestWorkers", "MaxClients")
    server_limit = _int_directive(cfg, "ServerLimit")
    threads = _int_directive(cfg, "ThreadsPerChild")
    thread_limit = _int_directive(cfg, "ThreadLimit")
    async_factor = _float_directive(cfg, "AsyncRequestWorkerFactor")
    as_configured = effective_mpm_settings(running, written, server_limit, threads, thread_limit, async_factor)
    settings = as_configured
    if max_workers is not None:
        settings = effective_mpm_settings(running, max_workers, server_limit, threads, thread_limit, async_factor)
        settings.notes.insert(0, f"what-if: --max-workers {max_workers} instead of {as_configured.max_request_workers}")

    threaded_tpc = settings.threads_per_child if running != "prefork" else MPM_DEFAULTS["event"]["ThreadsPerChild"]
    threaded_limit = settings.thread_limit if running != "prefork" else MPM_DEFAULTS["event"]["ThreadLimit"]
    return PoolSettings(as_configured, settings, threaded_tpc, threaded_limit, async_factor)


def _fit_trials(options: CapacityOptions, cfg: Config, memory: MemoryInputs, as_configured: MpmSettings,
                notes: list[str]) -> PoolFit | None:
    """With --fit: the worker-pool model fitted to bench's trials (and the
    --check trials predicted with it); else None."""
    from advisor.capacity.fit_inputs import read_measurements
    from advisor.capacity.fit_workerpool import fit_pool

    fit_result = None
    if options.fit_files:
        observations, skipped = read_measurements(options.fit_files)
        if len(observations) < 3:
            raise AdvisorError(f"--fit needs at least three valid trials, found {len(observations)}",
                               options.fit_files[0], None, "run bench at several rates, some past saturation")
        held_out: list = []
        if options.check_files:
            held_out, skipped_checks = read_measurements(options.check_files)
            skipped = skipped + skipped_checks
        backlog = _listen_queue(cfg)
        cpus = next((limit.value for limit in memory.limits if limit.resource == "cpu"),
                    float(os.cpu_count() or 1))
        fit_result = fit_pool(observations, as_configured.max_request_workers, cpus,
                              backlog, somaxconn=_somaxconn(), held_out=held_out)
        fit_result.skipped = skipped
        measured_pools = {row.workers for row in fit_result.comparisons}
        if options.max_workers is None and measured_pools and as_configured.max_request_workers not in measured_pools:
            notes.append(f"the trials ran with MaxRequestWorkers {', '.join(map(str, sorted(measured_pools)))}, "
                         f"the config has {as_configured.max_request_workers}: the predictions are for the config; "
                         f"--max-workers N predicts another pool")
    return fit_result


def _mean_service_time(options: CapacityOptions, fit_result: PoolFit | None,
                       samples: list[float]) -> tuple[float | None, str, ServerModel | None]:
    """The mean service time, where it comes from, and the fitted pool model
    (None without a fit, or when --service-time overrides it)."""
    x = options.service_time
    source = "--service-time"
    pool_model = None
    if x is None and fit_result is not None:
        # --service-time stays a what-if on the processor-sharing model.
        pool_model = fit_result.model
        x, source = fit_result.service_time, "fitted: time a worker is held"
    if x is None and options.service_samples is not None:
        x, source = sum(samples) / len(samples), "mean of --service-samples"
    return x, source, pool_model


def _predict_fpm_pools(report: CapacityReport, memory: MemoryInputs, settings: MpmSettings, rates: list[float],
                       x: float) -> None:
    """Each php-fpm pool's queue at each --rate, into the report."""
    from advisor.capacity.fpm_model import mmck

    # PHP holds a php-fpm child for the service time; each request waiting
    # for one holds an httpd worker, so httpd's pool bounds the queue too.
    for pool in memory.fpm_pools:
        capacity = max(pool["children"], min(settings.max_request_workers,
                                             pool["children"] + pool["listen_backlog"]))
        for rate in rates:
            report.fpm_predictions.append((pool["name"], mmck(rate, x, pool["children"], capacity)))


def _write_plot(options: CapacityOptions, report: CapacityReport, log_capacity: LogCapacity | None,
                log_input: LogInput | None) -> None:
    """--plot: the log's figure with --log, else response time and blocking
    against the rate."""
    if options.plot and log_capacity is not None:
        from advisor.capacity.logplot import draw_log

        _write_atomically(options.plot, lambda target: draw_log(log_capacity, log_input.series, target))
    elif options.plot:
        from advisor.capacity.plot import PlotSpec, draw

        subtitle = (f"{report.model.arrivals} arrivals, {report.model.service} service, "
                    f"mean service time {report.model.service_time * 1000:.3g} ms ({report.model.service_time_source})")
        spec = PlotSpec(report.curves, 1.0 / report.model.capacity,
                        list(options.rates or [r.rate for r in report.predictions]), subtitle,
                        fit_curves=report.fit_curves,
                        measured=getattr(report.fit, "comparisons", []),
                        held_out=getattr(report.fit, "held_out", []))
        _write_atomically(options.plot, lambda target: draw(spec, target))


def _print_result(options: CapacityOptions, report: CapacityReport, log_capacity: LogCapacity | None) -> None:
    """The report on stdout: text, or JSON (the log's section under "log")."""
    from advisor.capacity.render import render_text, to_json

    if options.output_format == "json":
        if log_capacity is None:
            sys.stdout.write(to_json(report) + "\n")
        else:
            import json

            from advisor.capacity.jsonable import to_jsonable

            whole = to_jsonable(report)
            whole["log"] = to_jsonable(log_capacity)
            sys.stdout.write(json.dumps(whole, indent=2, allow_nan=False) + "\n")
    else:
        from rich.console import Console

        console = Console(width=None if sys.stdout.isatty() else 130, highlight=False)
        render_text(report, console, demand_follows=log_capacity is not None)
        if log_capacity is not None:
            from advisor.capacity.logrender import render_log_text

            render_log_text(log_capacity, console)
        if options.plot:
            console.print(f"plot written to {options.plot}")
