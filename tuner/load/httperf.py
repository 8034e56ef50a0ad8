"""Run httperf and parse every line of its report into typed fields.

httperf 0.9.0 (Debian) prints one summary; each line is matched by a pattern
below. A line no pattern knows is kept in `unparsed`, so a new httperf version
shows up in the output instead of silently losing data.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from advisor.errors import AdvisorError

# httperf 0.9.0 uses select(): it can hold at most FD_SETSIZE (1024) sockets,
# minus stdio and a few of its own; Debian's build reports <=1020 at the cap.
FD_SETSIZE_CAP = 1020
HTTPERF_NOT_FOUND_HINT = "install httperf (apt-get install httperf) or pass --httperf PATH"


@dataclass
class HttperfResult:
    """Every number httperf reports, named and typed."""

    command: str = ""
    max_connect_burst: int | None = None
    connections: int = 0
    requests: int = 0
    replies: int = 0
    test_duration_s: float = 0.0
    connection_rate: float = 0.0  # conn/s
    connection_period_ms: float | None = None
    max_concurrent_connections: int = 0
    connection_time_ms: dict[str, float] = field(default_factory=dict)  # min avg max median stddev
    connect_time_ms: float | None = None
    connection_length_replies: float | None = None
    request_rate: float = 0.0  # req/s
    request_period_ms: float | None = None
    request_size_b: float | None = None
    reply_rate_samples: dict[str, float] = field(default_factory=dict)  # min avg max stddev samples
    reply_response_ms: float = 0.0
    reply_transfer_ms: float = 0.0
    reply_size_b: dict[str, float] = field(default_factory=dict)  # header content footer total
    status: dict[str, int] = field(default_factory=dict)  # 1xx..5xx
    cpu_user_s: float | None = None
    cpu_system_s: float | None = None
    cpu_pct: dict[str, float] = field(default_factory=dict)
    net_io_kbps: float | None = None
    net_io_bps: float | None = None
    errors: dict[str, int] = field(default_factory=dict)  # total client-timo ... other
    session: dict[str, float | str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)
    protocol: str = "http/1.1"  # what the replies came over (h2load's report says "h2"; a mix "mix")
    # A mix's parts by protocol: connections, replies, reply time (advisor.tuner.trial.mixed_load).
    protocol_parts: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def reply_rate(self) -> float:
        """Replies per second over the whole run.

        httperf prints reply-rate samples only every 5 s, so short runs report
        0 samples; replies / duration is defined for every run.
        """
        return self.replies / self.test_duration_s if self.test_duration_s > 0 else 0.0

    @property
    def reply_time_ms(self) -> float:
        return self.reply_response_ms + self.reply_transfer_ms

    @property
    def error_total(self) -> int:
        return int(self.errors.get("total", 0))

    @property
    def bad_status(self) -> int:
        return int(self.status.get("4xx", 0)) + int(self.status.get("5xx", 0))

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data.update(reply_rate=self.reply_rate, reply_time_ms=self.reply_time_ms)
        return data


_NUM = r"([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"


def _pairs(text: str) -> dict[str, float]:
    """`min 0.1 avg 0.3 max 0.9` -> {'min': 0.1, ...}."""
    return {key: float(value) for key, value in re.findall(r"([A-Za-z][\w-]*)\s+" + _NUM, text)}


def parse(text: str) -> HttperfResult:
    result = HttperfResult()
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if not _parse_line(line, result):
            result.unparsed.append(line)
    return result


def _parse_line(line: str, r: HttperfResult) -> bool:  # noqa: C901 - one branch per report line
    if line.startswith("httperf --"):
        r.command = line
    elif line.startswith("httperf: warning") or line.startswith("httperf: "):
        r.warnings.append(line)
    elif m := re.match(r"Maximum connect burst length:\s*(\d+)", line):
        r.max_connect_burst = int(m.group(1))
    elif m := re.match(r"Total: connections (\d+) requests (\d+) replies (\d+) test-duration " + _NUM + " s", line):
        r.connections, r.requests, r.replies = int(m.group(1)), int(m.group(2)), int(m.group(3))
        r.test_duration_s = float(m.group(4))
    elif m := re.match(r"Connection rate: " + _NUM + r" conn/s \(" + _NUM + r" ms/conn, <=(\d+) concurrent connections\)", line):
        r.connection_rate, r.connection_period_ms = float(m.group(1)), float(m.group(2))
        r.max_concurrent_connections = int(m.group(3))
    elif m := re.match(r"Connection time \[ms\]: connect " + _NUM + "$", line):
        r.connect_time_ms = float(m.group(1))
    elif line.startswith("Connection time [ms]:"):
        r.connection_time_ms = _pairs(line.split(":", 1)[1])
    elif m := re.match(r"Connection length \[replies/conn\]: " + _NUM, line):
        r.connection_length_replies = float(m.group(1))
    elif m := re.match(r"Request rate: " + _NUM + r" req/s \(" + _NUM + r" ms/req\)", line):
        r.request_rate, r.request_period_ms = float(m.group(1)), float(m.group(2))
    elif m := re.match(r"Request size \[B\]: " + _NUM, line):
        r.request_size_b = float(m.group(1))
    elif m := re.match(r"Reply rate \[replies/s\]: (.*)\((\d+) samples\)", line):
        r.reply_rate_samples = _pairs(m.group(1))
        r.reply_rate_samples["samples"] = float(m.group(2))
    elif m := re.match(r"Reply time \[ms\]: response " + _NUM + " transfer " + _NUM, line):
        r.reply_response_ms, r.reply_transfer_ms = float(m.group(1)), float(m.group(2))
    elif m := re.match(r"Reply size \[B\]: (.*)\(total " + _NUM + r"\)", line):
        r.reply_size_b = _pairs(m.group(1))
        r.reply_size_b["total"] = float(m.group(2))
    elif line.startswith("Reply status:"):
        r.status = {key: int(value) for key, value in re.findall(r"(\dxx)=(\d+)", line)}
    elif m := re.match(r"CPU time \[s\]: user " + _NUM + " system " + _NUM + r" \((.*)\)", line):
        r.cpu_user_s, r.cpu_system_s = float(m.group(1)), float(m.group(2))
        r.cpu_pct = {k: float(v) for k, v in re.findall(r"(\w+) " + _NUM + "%", m.group(3))}
    elif m := re.match(r"Net I/O: " + _NUM + r" KB/s \(" + _NUM + r"\*10\^(\d+) bps\)", line):
        r.net_io_kbps = float(m.group(1))
        r.net_io_bps = float(m.group(2)) * 10 ** int(m.group(3))
    elif line.startswith("Errors:"):
        r.errors.update({k: int(float(v)) for k, v in _pairs(line.split(":", 1)[1]).items()})
    elif m := re.match(r"Session rate \[sess/s\]: (.*)\((\d+)/(\d+)\)", line):
        r.session.update({f"rate_{k}": v for k, v in _pairs(m.group(1)).items()})
        r.session["completed"], r.session["total"] = float(m.group(2)), float(m.group(3))
    elif m := re.match(r"Session: avg " + _NUM + " connections/session", line):
        r.session["connections_per_session"] = float(m.group(1))
    elif m := re.match(r"Session lifetime \[s\]: " + _NUM, line):
        r.session["lifetime_s"] = float(m.group(1))
    elif m := re.match(r"Session failtime \[s\]: " + _NUM, line):
        r.session["failtime_s"] = float(m.group(1))
    elif line.startswith("Session length histogram:"):
        r.session["length_histogram"] = line.split(":", 1)[1].strip()
    else:
        return False
    return True


@dataclass
class HttperfSpec:
    """One httperf invocation."""

    host: str
    port: int
    uri: str = "/"
    rate: float = 0.0  # connections (or sessions) per second; 0 = one at a time
    num_conns: int = 100
    num_calls: int = 1
    burst_length: int = 1
    timeout_s: float = 2.0
    uri_list: str | None = None  # --wlog file
    wsess: tuple[int, int, float] | None = None  # sessions, calls, think time
    client_cpus: list[int] | None = None
    binary: str | None = None
    # With wsess: a --wsesslog file (workload.session_log) that gives each
    # call its URI; the session count and think time still come from wsess.
    session_log: str | None = None
    # "1.0": httperf closes each connection after its reply (session.c does
    # so for HTTP/1.0, as a pre-1.1 browser would), so every call of a
    # session opens its own connection; None: httperf's default, 1.1.
    http_version: str | None = None
    # (I, N): this httperf is client I of N load generators (--client=I/N,
    # which biases workload generators so the clients do not all ask alike).
    client: tuple[int, int] | None = None
    # HTTPS (--ssl). httperf 0.9.0 resumes TLS sessions only within one of
    # its sessions (--wsess, --wsesslog): the session's first connection makes
    # a full handshake and its later ones resume it, as a browser does for one
    # visitor; with --num-conns every connection is a visitor of its own, a
    # full handshake each. `ssl_no_reuse` (--ssl-no-reuse) makes every
    # connection of a session a full handshake too (measured, docs/bench.md).
    ssl: bool = False
    ssl_no_reuse: bool = False
    # Sessions only: how many connections a session may open, and how many
    # calls each may pipeline (the browser workload: six, and one).
    max_connections: int | None = None
    max_piped_calls: int | None = None

    def argv(self) -> list[str]:
        binary = self.binary or find_httperf()
        # No --hog: with it httperf 0.9.0 binds local ports itself, and once
        # every port is held in TIME_WAIT it spins on bind() forever, deaf to
        # SIGINT. Without it the kernel picks the port and may reuse loopback
        # TIME_WAIT ports (tcp_tw_reuse); its 28,000-port range is what --hog
        # was for on systems whose range was 1024-5000.
        args = [binary, f"--server={self.host}", f"--port={self.port}", f"--timeout={self.timeout_s:g}"]
        if self.rate > 0:
            args.append(f"--rate={self.rate:g}")
        if self.client:
            args.append(f"--client={self.client[0]}/{self.client[1]}")
        if self.http_version:
            args.append(f"--http-version={self.http_version}")
        if self.ssl:
            args.append("--ssl")
            if self.ssl_no_reuse:
                args.append("--ssl-no-reuse")
        if self.wsess and self.max_connections:
            args.append(f"--max-connections={self.max_connections}")
        if self.wsess and self.max_piped_calls:
            args.append(f"--max-piped-calls={self.max_piped_calls}")
        if self.wsess and self.session_log:
            sessions, _calls, think = self.wsess
            # man httperf: no --burst-length, --wsess or --wlog beside --wsesslog.
            args.append(f"--wsesslog={sessions},{think:g},{self.session_log}")
        elif self.wsess:
            sessions, calls, think = self.wsess
            args += [f"--wsess={sessions},{calls},{think:g}", f"--burst-length={self.burst_length}"]
            args.append(f"--uri={self.uri}")
        else:
            args += [f"--num-conns={self.num_conns}", f"--num-calls={self.num_calls}"]
            if self.burst_length > 1:
                args.append(f"--burst-length={self.burst_length}")
            if self.uri_list:
                args.append(f"--wlog=y,{self.uri_list}")
            else:
                args.append(f"--uri={self.uri}")
        if self.client_cpus:
            args = ["taskset", "-c", ",".join(map(str, self.client_cpus))] + args
        return args


def find_httperf(explicit: str | None = None) -> str:
    path = explicit or shutil.which("httperf")
    if not path or not shutil.which(path):
        raise AdvisorError(f"httperf not found: {explicit or 'httperf'}", hint=HTTPERF_NOT_FOUND_HINT)
    return path


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _death_signal_setter():
    """A function for Popen's preexec_fn: the child gets SIGKILL when its parent dies.

    Resolved before the fork, so that the child only makes one call. After
    it the child checks that its parent is still the one that forked it: a
    parent killed between fork and prctl would otherwise never signal it.
    The signal comes when the *thread* that forked exits, so start() must be
    called from a thread that lives as long as the run (bench calls it from
    its main thread). None where prctl is not available (not Linux).
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def set_death_signal() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return set_death_signal


def with_death_signal(argv: list[str]) -> tuple[list[str], Callable[[], None] | None]:
    """The command line and preexec_fn that give a load generator (httperf, h2load) its parent-death signal.

    util-linux's setpriv sets it in the child, which keeps it across the exec
    into httperf. A preexec_fn is the fallback where setpriv is missing: with
    one, Popen runs the interpreter's at-fork callbacks in this process, and
    an exception a signal handler raises inside them is printed and dropped
    ("Exception ignored in _releaseLock"). A SIGTERM that came as httperf
    started was lost that way, and the tune session it should have ended
    ran to its end and exited 0 (1 in 12 runs on a busy host).
    """
    setpriv = shutil.which("setpriv")
    if setpriv:
        return [setpriv, "--pdeathsig", "KILL", "--", *argv], None
    return argv, _death_signal_setter()


def start(spec: HttperfSpec, record: Path | None = None) -> subprocess.Popen:
    """Start httperf; the caller collects metrics while it runs and calls finish().

    httperf dies with the process that started it (a parent-death signal),
    and runs in a process group of its own, which `record` (if given) notes
    on disk until forget() removes it: if this process is killed in a way
    the signal does not cover, the next run ends the group (end_recorded)
    before it touches the server, so no trial is measured under a dead
    run's load.
    """
    argv, preexec = with_death_signal(spec.argv())
    try:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   start_new_session=True, preexec_fn=preexec)
    except FileNotFoundError as exc:
        raise AdvisorError(f"cannot run httperf: {exc.filename}", hint=HTTPERF_NOT_FOUND_HINT) from None
    if record is not None:
        record_load(record, process.pid)
    return process


# -- the record of running load generators ------------------------------------

def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of stat): with
    the pid, it names one process even after the pid is reused."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _read_record(record: Path) -> list[dict[str, int]]:
    try:
        entries = json.loads(record.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        return []  # a torn write by a killed run: nothing usable in it
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("pid"), int)]


def _write_record(record: Path, entries: list[dict[str, int]]) -> None:
    if not entries:
        record.unlink(missing_ok=True)
        return
    tmp = record.with_name(record.name + ".tmp")
    tmp.write_text(json.dumps(entries))
    os.replace(tmp, record)


def record_load(record: Path, pid: int) -> None:
    """Note a running load generator (its pid is also its process group)."""
    entries = [e for e in _read_record(record) if e["pid"] != pid]
    entries.append({"pid": pid, "pgid": pid, "start": _start_time(pid) or 0})
    _write_record(record, entries)


def forget(record: Path, pid: int) -> None:
    _write_record(record, [e for e in _read_record(record) if e["pid"] != pid])


def end_recorded(record: Path, timeout: float = 5.0) -> list[int]:
    """End the load generators a dead run left running; the pids it ended.

    Only a process whose start time matches the record is the one noted: a
    reused pid is left alone. The whole group goes, then we wait for it.
    """
    ended = []
    for entry in _read_record(record):
        pid = entry["pid"]
        started = _start_time(pid)
        if started is None or not entry.get("start") or started != entry["start"]:
            continue
        try:
            os.killpg(entry.get("pgid", pid), signal.SIGKILL)
        except ProcessLookupError:
            continue
        except PermissionError:
            os.kill(pid, signal.SIGKILL)
        ended.append(pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_running(pid) for pid in ended):
        time.sleep(0.02)
    record.unlink(missing_ok=True)
    return ended


def _running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def ran(result: HttperfResult) -> bool:
    """Whether httperf's output is a report of a run (not an error before any)."""
    return not (result.command == "" or result.test_duration_s == 0 and result.connections == 0)


class HttperfDied(AdvisorError):
    """httperf ended on a signal, or gave up its whole run at one failed TLS
    handshake, after it started the run and without its report: the client
    failed, which says nothing of the server."""


_TLS_ABORT = re.compile(r"failed to connect to SSL server \(err=-?\d+, reason=\d+\)")


def output_within(process: subprocess.Popen, timeout: float, tool: str, hint: str) -> str:
    """A load generator's whole output, waiting at most `timeout` seconds; killed past it."""
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AdvisorError(f"{tool} did not finish within {timeout:.0f} s", hint=hint) from None
    return out


def finish(process: subprocess.Popen, timeout: float) -> HttperfResult:
    out = output_within(process, timeout, "httperf", "lower the rate or --duration, or raise --timeout")
    result = parse(out)
    if not ran(result):
        code = process.returncode
        if code is not None and code < 0:
            # A signal ended it: a crash, not a refusal of its arguments or
            # of the target, which it reports and exits 1 on
            # (bench/tune_bench.py over TLS lost a whole run this way, with
            # nothing after the command line).
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            raise HttperfDied(f"httperf died of {name} before its report",
                              hint="a client failure: run the trial again")
        handshake = _TLS_ABORT.search(out)
        if handshake is not None:
            # httperf 0.9.0 ends the whole run (exit(-1)) when one TLS
            # handshake fails, where a browser would count one failed
            # connection; its message goes to stderr before the command
            # line its exit flushes (bench/tune_bench.py's worst-practice
            # grid lost its run this way at 80 sessions/s).
            raise HttperfDied(f"httperf ended its run at a failed TLS handshake ({handshake.group(0)}) "
                              "before its report",
                              hint="a client failure: run the trial again")
        raise AdvisorError(f"httperf failed: {out.strip().splitlines()[-1] if out.strip() else 'no output'}",
                           hint="check the target host and port")
    return result
