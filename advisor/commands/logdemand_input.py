"""`--log PATH` for capacity and lint: an access log read into its per-second demand.

The reading is the log replay's (advisor.tuner.load.accesslog: any
LogFormat, gzipped and rotated sets, streaming) in its lean `timings`
pass; the sums are advisor.capacity.logdemand's. Bad input ends here, as one
line and exit 2: no file, an empty log, a format no line matches, a format
without the time, times that go back, no hold time and no --service-time.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.errors import UsageError

LOG_HELP = "Access log to read the site's demand from (rotated and gzipped files welcome; a glob reads a rotated set oldest first); repeat for several files of one server."
LOG_FORMAT_HELP = "--log: the log's LogFormat string, or common/combined (default: the CustomLog's format in the config that writes that file)."
# More unreadable lines than this share of the log is an error, not a warning.
MOST_LINES_BAD = 0.5
SAMPLE_LINES = 50


@dataclass
class LogInput:
    demand: object  # advisor.capacity.logdemand.LogDemand
    series: object  # advisor.capacity.logdemand.SecondSeries
    format_text: str
    format_source: str
    fixed_hold: float | None


def log_paths(given: list[str]) -> list[str]:
    """Every --log as files, rotated sets oldest first."""
    from advisor.tuner.load.accesslog import expand_paths, rotation_key

    paths: list[str] = []
    for spec in given:
        paths.extend(expand_paths(spec))
    # access.log.2.gz, access.log.1, access.log: one server's files in time order.
    return sorted(dict.fromkeys(paths), key=rotation_key)


def resolve_log_format(paths: list[str], given: str | None, cfg) -> tuple[str, str]:
    from advisor.tuner.load.accesslog import BUILTIN_FORMATS, format_from_config
    from advisor.tuner.load.replay import resolve_format

    if given:
        return BUILTIN_FORMATS.get(given, given), "--log-format"
    if cfg is not None:
        found = format_from_config(cfg, paths)
        if found is not None:
            return found[0], f"the CustomLog's format ({found[1]})"
    return resolve_format(paths, None, None)


def keepalive_values(cfg) -> tuple[bool, float]:
    """KeepAlive (on or off) and KeepAliveTimeout in seconds, at server scope
    as the config writes them; httpd's defaults (On, 5 s) where it does not."""
    keep = cfg.server_value("KeepAlive") if cfg is not None else None
    timeout_directive = cfg.server_value("KeepAliveTimeout") if cfg is not None else None
    timeout = 5.0
    if timeout_directive is not None:
        text = timeout_directive.arg(0).lower()
        try:
            timeout = float(text[:-2]) / 1000 if text.endswith("ms") else float(text)
        except ValueError:
            timeout = 5.0
    return not (keep is not None and keep.arg(0).lower() == "off"), timeout


def keepalive_setting(cfg, mpm: str, log_format) -> tuple[float | None, str]:
    """(seconds an idle connection holds a worker, or None; what the figures count)."""
    if mpm == "event":
        return None, "event MPM: idle keep-alive connections wait in the listener and hold no worker"
    keepalive, timeout = keepalive_values(cfg)
    if not keepalive:
        return None, "KeepAlive Off: a connection closes after its request, no idle holds"
    if log_format.has_keepalive:
        return timeout, (f"counted: each new connection (%k = 0) holds a {mpm} worker KeepAliveTimeout "
                         f"{timeout:g} s after its requests (the gaps between its requests are not counted)")
    extra = " (%X is logged: see the share of responses that left the connection open)" \
        if log_format.has_connstatus else ""
    return None, (f"not counted: the log has no %k, so the busy workers count requests only; under {mpm} "
                  f"each idle keep-alive connection also holds a worker up to {timeout:g} s: add %k to the "
                  f"LogFormat to count them{extra}")


def h2_keepalive_setting(cfg, mpm: str, log_format) -> tuple[float | None, str]:
    """For HTTP/2 requests: (seconds a new connection's idle time holds an MPM
    worker, or None; what the figures count). mod_http2 logs %k >= 1 and %X
    '-' for a stream, so only its stream number tells a new connection."""
    from advisor.capacity.protocol_mix import h2_holds_idle_worker, holder

    version = cfg.apache_version if cfg is not None else (2, 4, 999)
    _keepalive, timeout = keepalive_values(cfg)
    if not h2_holds_idle_worker(mpm, version):
        return None, "HTTP/2: an idle connection goes back to event's listener and holds no worker"
    kept = holder(mpm, plural=False)
    if log_format.h2_stream_field:
        return timeout, (f"HTTP/2 counted: each new connection (stream 1 of %{{{log_format.h2_stream_field}}}e) "
                         f"keeps its {kept} KeepAliveTimeout {timeout:g} s after its requests")
    return None, (f"HTTP/2 not counted: under {mpm} an idle HTTP/2 connection keeps its {kept} up to "
                  f"KeepAliveTimeout {timeout:g} s; add %{{H2_STREAM_ID}}e to the LogFormat to count them")


def _first_lines_match(paths: list[str], log_format) -> None:
    """Fail at once on a log that no early line of which reads with the format
    (before asking for what the format lacks, and before reading it all)."""
    from advisor.tuner.load.accesslog import open_log

    for path in paths:
        sample: list[str] = []
        try:
            with open_log(path) as handle:
                for line in handle:
                    if line.strip():
                        sample.append(line)
                    if len(sample) >= SAMPLE_LINES:
                        break
        except (EOFError, OSError, ValueError):
            continue
        if not sample:
            continue
        if not any(log_format.pattern.match(line) for line in sample):
            raise UsageError(f"none of the first {len(sample)} lines reads with the log format {log_format.text!r}",
                             file=path, line=1,
                             hint="give the format with --log-format, or the config whose CustomLog writes the log")
        return


def read_log_demand(given_paths: list[str], given_format: str | None, cfg, mpm: str,
                    service_time: float | None, *,
                    no_hold_hint: str = "give --service-time SECONDS (the mean time a request holds a worker), "
                                        "or log %D") -> LogInput:
    from advisor.capacity.logdemand import DemandAccumulator, LogOrderError, LogSpanError
    from advisor.tuner.load.accesslog import LogFormat, LogReader

    paths = log_paths(given_paths)
    text, source = resolve_log_format(paths, given_format, cfg)
    log_format = LogFormat.compile(text, need=("time",))
    _first_lines_match(paths, log_format)
    fixed_hold = None
    if log_format.hold_field is None:
        if service_time is None:
            raise UsageError(f"the log format {text!r} has no %D or %T: how long each request held its "
                             f"worker is unknown", file=paths[0], hint=no_hold_hint)
        fixed_hold = service_time
        hold_source = f"--service-time {service_time:g} s (the log has no %D or %T)"
    else:
        hold_source = "%D" if log_format.hold_field == "D" else "%T"
    timeout, how = keepalive_setting(cfg, mpm, log_format)
    h2_timeout, h2_how = h2_keepalive_setting(cfg, mpm, log_format)
    reader = LogReader(paths, log_format)
    accumulator = DemandAccumulator(fixed_hold=fixed_hold, keepalive_timeout=timeout, h2_keepalive_timeout=h2_timeout)
    add = accumulator.add
    try:
        for number, when, hold, keep, status, h2, h2_first in reader.timings():
            add(when, hold, keep, status, h2, h2_first)
    except LogOrderError as error:
        raise UsageError(str(error), file=reader.current_path, line=number,
                         hint="give one server's log, its rotated files oldest first") from None
    except LogSpanError as error:
        raise UsageError(str(error), file=reader.current_path, line=number,
                         hint="give the files of the busy days, not all of them") from None
    stats = reader.stats
    if stats.lines == 0:
        raise UsageError("the log is empty", file=paths[0], hint="give a log with requests in it")
    if accumulator.requests == 0 or stats.skipped > MOST_LINES_BAD * stats.lines:
        first = stats.reasons[0] if stats.reasons else f"{paths[0]}:1: does not match the log format"
        file, line, why = (first.split(":", 2) + ["", ""])[:3]
        raise UsageError(f"{stats.skipped} of {stats.lines} lines do not read with the log format {text!r} "
                         f"({why.strip()})", file=file, line=int(line) if line.isdigit() else None,
                         hint="give the format with --log-format, or the config whose CustomLog writes the log")
    if accumulator.h2_requests:
        how += "; " + h2_how
    demand, series = accumulator.finish(
        stats.files, stats.lines, stats.skipped, list(stats.reasons), hold_source=hold_source, keepalive_how=how,
        protocol_source={"H": "%H", "r": "%r (the request line's protocol)"}.get(log_format.protocol_field or ""),
        counts_h1_connections=log_format.has_keepalive, counts_h2_connections=bool(log_format.h2_stream_field))
    return LogInput(demand, series, text, source, fixed_hold)
