"""Run h2load (Debian's nghttp2-client) and read its report.

httperf speaks HTTP/1.1 only; h2load speaks HTTP/2 over TLS (ALPN h2) and
HTTP/1.1 (--h1). A visitor is one h2load client: one connection, opened at
`rate` a second, that runs the timing script (one visit) with its requests
as concurrent streams. Each report line is matched by a pattern below; a
line none knows is kept in `unparsed`, as httperf.py does, so that a new
h2load shows up instead of losing data quietly.
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from advisor.errors import AdvisorError
from advisor.tuner.load import httperf

H2LOAD_NOT_FOUND_HINT = "install h2load (apt-get install nghttp2-client) or pass --h2load PATH"
_UNITS_S = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
_SIZE = {"B": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3}


@dataclass
class H2loadReport:
    """Every figure h2load prints, named and typed (times in ms)."""

    application_protocol: str | None = None  # "h2", "http/1.1"; None before any connection
    tls_protocol: str | None = None
    cipher: str | None = None
    finished_s: float = 0.0
    request_rate: float = 0.0
    requests: dict[str, int] = field(default_factory=dict)  # total started done succeeded failed errored timeout
    status: dict[str, int] = field(default_factory=dict)  # 2xx 3xx 4xx 5xx
    traffic_bytes: dict[str, int] = field(default_factory=dict)  # total headers data
    times_ms: dict[str, dict[str, float]] = field(default_factory=dict)  # request, connect, first_byte
    unparsed: list[str] = field(default_factory=list)

    @property
    def succeeded(self) -> int:
        return self.requests.get("succeeded", 0)

    @property
    def failed(self) -> int:
        return self.requests.get("failed", 0) + self.requests.get("timeout", 0)


def _seconds(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    if not match:
        raise ValueError(text)
    return float(match.group(1)) * _UNITS_S[match.group(2)]


_COUNTS = re.compile(r"(\d+) (\w+)")
_TIME_ROWS = {"time for request": "request", "time for connect": "connect", "time to 1st byte": "first_byte"}


def parse(text: str) -> H2loadReport:
    report = H2loadReport()
    for raw in text.splitlines():
        line = raw.strip()
        if not line or _known_noise(line):
            continue
        if not _parse_line(line, report):
            report.unparsed.append(line)
    return report


def _known_noise(line: str) -> bool:
    return (line.startswith(("starting benchmark", "spawning thread", "progress:", "Server Temp Key:"))
            or line.startswith("min") and "max" in line)


def _parse_line(line: str, r: H2loadReport) -> bool:
    key, _, rest = line.partition(":")
    key, rest = key.strip(), rest.strip()
    if key == "Application protocol":
        r.application_protocol = rest
    elif key == "TLS Protocol":
        r.tls_protocol = rest
    elif key == "Cipher":
        r.cipher = rest
    elif line.startswith("finished in"):
        match = re.match(r"finished in ([\d.]+(?:us|ms|s)), ([\d.]+) req/s", line)
        if not match:
            return False
        r.finished_s, r.request_rate = _seconds(match.group(1)), float(match.group(2))
    elif key == "requests":
        r.requests = {name: int(count) for count, name in _COUNTS.findall(rest)}
    elif key == "status codes":
        r.status = {name: int(count) for count, name in _COUNTS.findall(rest)}
    elif key == "traffic":
        r.traffic_bytes = {name: int(count) for count, name in re.findall(r"\((\d+)\) (\w+)", rest)}
    elif key in _TIME_ROWS:
        values = rest.split()
        r.times_ms[_TIME_ROWS[key]] = {name: 1000 * _seconds(value) for name, value
                                       in zip(("min", "max", "mean", "sd"), values[:4])}
    elif key == "req/s":
        return True  # per-client rates: the run's own rate is on the "finished in" line
    else:
        return False
    return True


@dataclass(frozen=True)
class H2loadSpec:
    """One h2load run: `visitors` clients, `rate` of them started a second, each running `script`."""

    script: str  # --timing-script-file: one visit, offsets in ms
    visitors: int
    rate: float  # visitors (connections) started a second
    streams: int = 100  # concurrent streams a connection may carry (a browser's limit is the server's)
    http1: bool = False  # --h1: the same visits over HTTP/1.1, one connection, no pipelining
    log_file: str | None = None  # per-request start, status and duration
    client_cpus: list[int] | None = None
    binary: str | None = None
    inactivity_timeout_s: float = 10.0

    def argv(self) -> list[str]:
        binary = self.binary or find_h2load()
        args = [binary, f"--timing-script-file={self.script}", f"--clients={self.visitors}",
                *rate_arguments(self.rate), "--threads=1",
                f"--max-concurrent-streams={1 if self.http1 else self.streams}",
                f"--connection-inactivity-timeout={max(1, round(1000 * self.inactivity_timeout_s))}ms"]
        if self.http1:
            args.append("--h1")
        if self.log_file:
            args.append(f"--log-file={self.log_file}")
        if self.client_cpus:
            args = ["taskset", "-c", ",".join(map(str, self.client_cpus))] + args
        return args


def rate_arguments(rate: float) -> list[str]:
    """h2load starts a whole number of connections every period of whole
    milliseconds: the shortest period (at most 100 ms, so that arrivals stay
    spread) whose count comes within 1 % of the rate, else the closest; one
    connection a period below ten a second."""
    if not rate > 0:
        raise ValueError(f"h2load needs a positive rate, not {rate!r}")
    if rate < 10:
        return ["--rate=1", f"--rate-period={round(1000 / rate)}ms"]
    best: tuple[float, int, int] | None = None
    for period_ms in range(1, 101):
        count = max(1, round(rate * period_ms / 1000))
        error = abs(count * 1000 / period_ms - rate) / rate
        if best is None or error < best[0] - 1e-12:
            best = (error, count, period_ms)
        if error <= 0.01:
            break
    assert best is not None
    _error, count, period_ms = best
    return [f"--rate={count}", f"--rate-period={period_ms}ms"]


def find_h2load(explicit: str | None = None) -> str:
    path = explicit or shutil.which("h2load")
    if not path or not shutil.which(path):
        raise AdvisorError(f"h2load not found: {explicit or 'h2load'}", hint=H2LOAD_NOT_FOUND_HINT)
    return path


@dataclass(frozen=True)
class RequestLog:
    """h2load's --log-file: one row a request (start in µs since the epoch, status, duration in µs)."""

    starts_us: list[int]
    statuses: list[int]
    durations_us: list[int]

    @classmethod
    def read(cls, path: str | Path) -> "RequestLog":
        starts, statuses, durations = [], [], []
        for line in Path(path).read_text().splitlines():
            parts = line.split("\t")
            if len(parts) >= 3:
                starts.append(int(parts[0]))
                statuses.append(int(parts[1]))
                durations.append(int(parts[2]))
        return cls(starts, statuses, durations)

    def mean_ms(self) -> float | None:
        done = [d for d, s in zip(self.durations_us, self.statuses) if s > 0]
        return statistics.fmean(done) / 1000 if done else None


def _fresh_log(spec: H2loadSpec) -> None:
    """h2load appends to its --log-file: without this, every run of a session
    after the first read the earlier runs' rows too (an overloaded probe's
    400 ms replies in each later probe's mean)."""
    if spec.log_file:
        Path(spec.log_file).unlink(missing_ok=True)


def start(spec: H2loadSpec, record: Path | None = None) -> subprocess.Popen:
    """Start h2load as httperf is started: it dies with this process, in a process group of its own
    that `record` notes, so that a later run ends it if this one was killed."""
    _fresh_log(spec)
    argv, preexec = httperf.with_death_signal(spec.argv())
    try:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   start_new_session=True, preexec_fn=preexec, stdin=subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise AdvisorError(f"cannot run h2load: {exc.filename}", hint=H2LOAD_NOT_FOUND_HINT) from None
    if record is not None:
        httperf.record_load(record, process.pid)
    return process


def finish(process: subprocess.Popen, timeout: float) -> H2loadReport:
    out = httperf.output_within(process, timeout, "h2load", "lower the rate or the number of visitors")
    report = parse(out)
    if not report.requests:
        last = out.strip().splitlines()[-1:] or ["no output"]
        raise AdvisorError(f"h2load failed: {last[0]}", hint="check the target's URL, port and TLS")
    return report


def as_httperf(report: H2loadReport, spec: H2loadSpec, log: RequestLog | None) -> httperf.HttperfResult:
    """The report in httperf's terms, so that a trial reads both load generators alike.

    A visitor is a session of one connection. h2load does not say which
    visitor a failed request belonged to, so `completed` counts every failure
    against a visit of its own: a lower bound of the visits that completed.
    The reply time is the mean over the request log (request sent to reply
    read), else h2load's mean time for a request.
    """
    failures = report.requests.get("errored", 0) + report.requests.get("timeout", 0)
    answered = sum(report.status.values())
    # The log is this run's only when it holds as many rows as the run
    # finished requests; else h2load's own mean speaks for it.
    own_log = log is not None and len(log.statuses) == report.requests.get("done", len(log.statuses))
    mean_ms = log.mean_ms() if own_log else None
    if mean_ms is None:
        mean_ms = report.times_ms.get("request", {}).get("mean", 0.0)
    duration = report.finished_s
    result = httperf.HttperfResult(
        command=" ".join(spec.argv()), connections=spec.visitors, requests=report.requests.get("started", 0),
        replies=answered, test_duration_s=duration,
        connection_rate=spec.visitors / duration if duration > 0 else 0.0,
        request_rate=report.request_rate, reply_response_ms=mean_ms, reply_transfer_ms=0.0,
        status={key: int(value) for key, value in report.status.items()},
        errors={"total": failures, "client-timo": report.requests.get("timeout", 0),
                "other": report.requests.get("errored", 0)},
        session={"total": float(spec.visitors), "completed": float(max(0, spec.visitors - failures)),
                 "connections_per_session": 1.0},
        unparsed=list(report.unparsed), protocol=report.application_protocol or "none")
    if report.times_ms.get("connect"):
        result.connect_time_ms = report.times_ms["connect"].get("mean")
    return result


def run(spec: H2loadSpec, timeout: float) -> H2loadReport:
    """Run h2load to its end and read its report; a run that never connected is an error."""
    _fresh_log(spec)
    try:
        done = subprocess.run(spec.argv(), capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise AdvisorError(f"cannot run h2load: {exc.filename}", hint=H2LOAD_NOT_FOUND_HINT) from None
    except subprocess.TimeoutExpired:
        raise AdvisorError(f"h2load did not finish within {timeout:.0f} s",
                           hint="lower the rate or the number of visitors") from None
    report = parse(done.stdout)
    if done.returncode != 0 or not report.requests:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise AdvisorError(f"h2load failed: {last[0]}", hint="check the target's URL, port and TLS")
    return report
