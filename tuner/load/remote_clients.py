"""Several load generators as one: this machine and hosts reached over SSH.

`--client-host HOST` (repeatable; `local` is this machine) names them. Each
runs its own httperf with its share of the load (`share`: rate, connections
or sessions divided, `--client=I/N`), and their reports merge into one
(`merge`): rates, counts and errors per kind summed, times weighted by what
they time.

The start is the tool's, not the clocks': each client runs a small Python
wrapper that prints `ready` and waits for a line on its stdin; once every
client is ready the tool writes `go` to all of them in one pass, and the
wrapper starts httperf. Any later line, or the end of stdin (the tool or
the connection died), interrupts httperf (SIGINT: it prints what it has),
then kills it after a grace period, so no client loads the server after
the run that started it is gone.
"""

from __future__ import annotations

import hashlib
import math
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from advisor.errors import AdvisorError, UsageError
from advisor.tuner.load.httperf import HttperfResult, HttperfSpec
from advisor.tuner.transport.ssh import HostSpec, SshConnection

LOCAL = "local"
STOP_GRACE_S = 3

# argv[1:] is the command. Python rather than sh: a command that sh starts in
# the background ignores SIGINT for good, and SIGINT is how httperf is asked
# to stop and report. The clients need python3 anyway (the metrics sampler).
# Its last line is httperf's CPU time and its run time (wait4's rusage of the
# child): httperf busy-polls, so a share of a core well under 100 % means
# other programs on that client took its core.
CPU_LINE = "apache-advisor-client-cpu"
WRAPPER = f"""
import os, resource, signal, subprocess, sys, threading, time
print("ready", flush=True)
if not sys.stdin.readline():
    sys.exit(0)
began = time.monotonic()
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT)
def watch():
    sys.stdin.readline()
    try:
        child.send_signal(signal.SIGINT)
        child.wait(timeout={STOP_GRACE_S})
    except subprocess.TimeoutExpired:
        child.kill()
    except OSError:
        pass
threading.Thread(target=watch, daemon=True).start()
code = child.wait()
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print("{CPU_LINE} %.3f %.3f" % (used.ru_utime + used.ru_stime, time.monotonic() - began), flush=True)
sys.exit(code)
"""


def client_cpu_pct(text: str) -> float | None:
    """httperf's mean share of one core on its client, from the wrapper's last line."""
    for line in reversed(text.strip().splitlines()):
        parts = line.split()
        if len(parts) == 3 and parts[0] == CPU_LINE:
            try:
                cpu_s, wall_s = float(parts[1]), float(parts[2])
            except ValueError:
                return None
            return round(100.0 * cpu_s / wall_s, 1) if wall_s > 0 else None
    return None


@dataclass(frozen=True)
class LoadClient:
    """One load generator: this machine (`spec` None) or a host over SSH."""

    name: str
    spec: HostSpec | None = None

    @property
    def local(self) -> bool:
        return self.spec is None


def parse_clients(values: list[str] | None) -> list[LoadClient]:
    """`--client-host` values; none means this machine alone."""
    clients: list[LoadClient] = []
    for value in values or [LOCAL]:
        try:
            client = LoadClient(LOCAL) if value.strip() == LOCAL else LoadClient(value.strip(), HostSpec.parse(value))
        except UsageError as exc:  # the parser speaks of --host; here it is a load generator
            raise UsageError(exc.message.replace("--host", "--client-host"), hint=exc.hint) from None
        if client in clients:
            raise UsageError(f"--client-host {value} is named twice", hint="name each load generator once")
        clients.append(client)
    return clients


def share(spec: HttperfSpec, index: int, count: int) -> HttperfSpec:
    """Client `index` of `count`: its part of the rate and of the connections
    (or sessions), so that the parts add up to `spec` exactly."""
    if count == 1:
        return spec

    def part(total: int) -> int:  # the first `total % count` clients take one more
        return total // count + (1 if index < total % count else 0)

    wsess = (part(spec.wsess[0]), spec.wsess[1], spec.wsess[2]) if spec.wsess else None
    return replace(spec, rate=spec.rate / count, num_conns=part(spec.num_conns), wsess=wsess,
                   client=(index, count))


def merge(results: list[HttperfResult], names: list[str] | None = None) -> HttperfResult:
    """One report for several httperf runs that loaded the server together.

    Counts, rates, errors per kind and reply classes add up; reply and
    connection times are weighted by replies and connections; the longest
    connection is the longest of any. The duration is the one at which the
    summed replies give the summed reply rates (the runs start together, so
    it is close to each run's own). httperf's CPU figures stay per client.
    """
    if len(results) == 1:
        return results[0]
    names = names or [str(i) for i in range(len(results))]
    merged = HttperfResult(command=" ; ".join(r.command for r in results))
    for field in ("connections", "requests", "replies", "max_concurrent_connections"):
        setattr(merged, field, sum(getattr(r, field) for r in results))
    merged.connection_rate = sum(r.connection_rate for r in results)
    merged.request_rate = sum(r.request_rate for r in results)
    reply_rate = sum(r.reply_rate for r in results)
    longest = max(r.test_duration_s for r in results)
    merged.test_duration_s = merged.replies / reply_rate if reply_rate > 0 else longest
    merged.max_connect_burst = max((r.max_connect_burst or 0 for r in results), default=None)
    by_replies = [r.replies for r in results]
    by_connections = [r.connections for r in results]
    merged.reply_response_ms = _weighted([r.reply_response_ms for r in results], by_replies)
    merged.reply_transfer_ms = _weighted([r.reply_transfer_ms for r in results], by_replies)
    merged.connect_time_ms = _weighted_optional([r.connect_time_ms for r in results], by_connections)
    merged.connection_length_replies = _weighted_optional([r.connection_length_replies for r in results],
                                                          by_connections)
    merged.request_size_b = _weighted_optional([r.request_size_b for r in results], [r.requests for r in results])
    times = [r.connection_time_ms for r in results if r.connection_time_ms]
    if times:
        merged.connection_time_ms = {
            "min": min(t.get("min", math.inf) for t in times), "max": max(t.get("max", 0.0) for t in times),
            "avg": _weighted([r.connection_time_ms.get("avg", 0.0) for r in results if r.connection_time_ms],
                             [r.connections for r in results if r.connection_time_ms])}
    sizes = {key for r in results for key in r.reply_size_b}
    merged.reply_size_b = {key: _weighted([r.reply_size_b.get(key, 0.0) for r in results], by_replies)
                           for key in sorted(sizes)}
    merged.status = _summed([r.status for r in results])
    merged.errors = _summed([r.errors for r in results])
    merged.net_io_bps = sum(r.net_io_bps or 0.0 for r in results)
    merged.net_io_kbps = sum(r.net_io_kbps or 0.0 for r in results)
    if any(r.session for r in results):
        merged.session = {key: sum(float(r.session.get(key, 0.0)) for r in results)
                          for key in ("completed", "total", "rate_avg") if any(key in r.session for r in results)}
    merged.reply_rate_samples = {}
    merged.warnings = [f"{name}: {w}" for name, r in zip(names, results) for w in r.warnings]
    merged.unparsed = [f"{name}: {u}" for name, r in zip(names, results) for u in r.unparsed]
    return merged


def _weighted(values: list[float], weights: list[int]) -> float:
    total = sum(weights)
    return sum(v * w for v, w in zip(values, weights)) / total if total else 0.0


def _weighted_optional(values: list[float | None], weights: list[int]) -> float | None:
    pairs = [(v, w) for v, w in zip(values, weights) if v is not None]
    return _weighted([v for v, _ in pairs], [w for _, w in pairs]) if pairs else None


def _summed(dicts: list[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for entry in dicts:
        for key, value in entry.items():
            total[key] = total.get(key, 0) + int(value)
    return total


class ClientGroup:
    """Start one command per client together; collect what each printed.

    `connections` maps a remote client's name to its SshConnection.
    """

    def __init__(self, clients: list[LoadClient], connections: dict[str, SshConnection]):
        self.clients = clients
        self.connections = connections
        self.processes: list[subprocess.Popen] = []
        self.go_at: float | None = None  # time.monotonic() when `go` went out
        # What each client printed after `ready`. Read by threads: communicate()
        # would close stdin, which the wrapper takes as "stop".
        self._output: list[list[str]] = []
        self._readers: list[threading.Thread] = []

    def _argv(self, client: LoadClient, command: list[str]) -> list[str]:
        if client.local:
            return [sys.executable, "-c", WRAPPER, *command]
        return self.connections[client.name].argv(["python3", "-c", WRAPPER, *command])

    def start(self, commands: list[list[str]], ready_timeout: float = 30.0) -> None:
        """Launch every client's wrapper, wait for all of them to be ready, then go."""
        if len(commands) != len(self.clients):
            raise ValueError("one command per client")
        for client, command in zip(self.clients, commands):
            self.processes.append(subprocess.Popen(self._argv(client, command), stdin=subprocess.PIPE,
                                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                                   start_new_session=True))
        deadline = time.monotonic() + ready_timeout
        try:
            for client, process in zip(self.clients, self.processes):
                line = _read_line(process, deadline)
                if line != "ready":
                    raise AdvisorError(f"load client {client.name} did not start: "
                                       f"{line or _stderr_tail(process) or 'no answer'}",
                                       hint="check that it is reachable over ssh and has python3 and httperf")
        except BaseException:
            self.stop(grace=0.0)
            raise
        for process in self.processes:
            chunks: list[str] = []
            self._output.append(chunks)
            for stream in (process.stdout, process.stderr):
                reader = threading.Thread(target=_drain, args=(stream, chunks), daemon=True)
                reader.start()
                self._readers.append(reader)
        for process in self.processes:  # one pass: the clients start within a round trip of each other
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        self.go_at = time.monotonic()

    def interrupt(self) -> None:
        """SIGINT every client's command (it reports what it has so far)."""
        for process in self.processes:
            try:
                if process.stdin and not process.stdin.closed:
                    process.stdin.write("stop\n")
                    process.stdin.flush()
            except (BrokenPipeError, OSError):
                pass

    def finish(self, timeout: float) -> list[str]:
        """Each client's output (stdout and stderr of its command), in order."""
        deadline = time.monotonic() + timeout
        for client, process in zip(self.clients, self.processes):
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.stop(grace=0.0)
                raise AdvisorError(f"load client {client.name} did not finish within {timeout:.0f} s",
                                   hint="lower the rate or --duration") from None
        for reader in self._readers:
            reader.join(timeout=max(0.1, deadline - time.monotonic()))
        return ["".join(chunks) for chunks in self._output]

    def stop(self, grace: float = STOP_GRACE_S + 2) -> None:
        """End every client: closing stdin interrupts the command, then the wrapper goes."""
        for process in self.processes:
            try:
                if process.stdin and not process.stdin.closed:
                    process.stdin.close()
            except OSError:
                pass
        deadline = time.monotonic() + grace
        for process in self.processes:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


def _read_line(process: subprocess.Popen, deadline: float) -> str | None:
    """One line of the process's stdout, or None by the deadline or at its end."""
    assert process.stdout is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], max(0.0, min(0.5, deadline - time.monotonic())))
        if ready:
            line = process.stdout.readline()
            return line.strip() if line else None
    return None


def _drain(stream, chunks: list[str]) -> None:
    for line in stream:
        chunks.append(line)


def _stderr_tail(process: subprocess.Popen) -> str:
    if process.poll() is None or process.stderr is None:
        return ""
    lines = [line.strip() for line in process.stderr.read().splitlines() if line.strip()]
    return lines[-1] if lines else ""



class LoadClients:
    """The load generators a run uses (`--client-host`), their SSH connections open.

    `start(spec)` launches one share of `spec` on each and returns a
    GroupRun, which the trial drives as it drives a local httperf process.
    """

    def __init__(self, clients: list[LoadClient], ssh_options: list[str] | None = None,
                 identity: str | None = None):
        self.clients = clients
        self.connections: dict[str, SshConnection] = {}
        try:
            for client in self.clients:
                if not client.local:
                    assert client.spec is not None
                    conn = SshConnection(client.spec, options=ssh_options or [], identity=identity)
                    conn.connect()
                    self.connections[client.name] = conn
        except BaseException:
            self.close()
            raise

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.clients]

    @property
    def several(self) -> bool:
        """More than this machine alone: the trial goes through a ClientGroup."""
        return len(self.clients) > 1 or not self.clients[0].local

    def describe(self) -> str:
        if not self.several:
            return "httperf on this host"
        each = f", each 1/{len(self.clients)} of the load" if len(self.clients) > 1 else ""
        return "httperf on " + ", ".join("this host" if c.local else c.name for c in self.clients) + each

    def start(self, spec: HttperfSpec) -> "GroupRun":
        return GroupRun(self, spec)

    def close(self) -> None:
        for conn in self.connections.values():
            conn.close()
        self.connections = {}


class GroupRun:
    """One trial's load from every client at once, in the shape of a Popen.

    poll() is None while any client still runs; send_signal(SIGINT) asks each
    to report what it has; result() merges their reports, and `results`
    keeps each one for the per-client validity checks.
    """

    pid = None  # no single local process: httperf's own CPU is not watched, nothing is recorded

    def __init__(self, clients: LoadClients, spec: HttperfSpec):
        self.clients = clients
        count = len(clients.clients)
        self.shares = [share(spec, i, count) for i in range(count)]
        commands = []
        for client, part in zip(clients.clients, self.shares):
            if not client.local:
                # Its own cores and its own httperf: this machine's pinning and path mean nothing there.
                part = self._files_there(clients.connections[client.name],
                                         replace(part, client_cpus=None, binary="httperf"))
            commands.append(part.argv())
        self.group = ClientGroup(clients.clients, clients.connections)
        self.group.start(commands)
        self.results: list[HttperfResult] = []
        self.cpu_pct: list[float | None] = []
        """Each client's httperf: its mean share of a core over its run."""

    @staticmethod
    def _files_there(conn: SshConnection, part: HttperfSpec) -> HttperfSpec:
        """The session log or URI list copied to the client host (under /tmp, named by content)."""
        moved = {}
        for name in ("session_log", "uri_list"):
            local = getattr(part, name)
            if not local:
                continue
            data = Path(local).read_bytes()
            remote = f"/tmp/apache-advisor-load-{hashlib.sha1(data).hexdigest()[:16]}{Path(local).suffix}"
            conn.write_file(remote, data.decode("utf-8", "surrogateescape"))
            moved[name] = remote
        return replace(part, **moved) if moved else part

    def poll(self) -> int | None:
        codes = [p.poll() for p in self.group.processes]
        return None if any(code is None for code in codes) else max(codes)

    def send_signal(self, _signal: int) -> None:
        self.group.interrupt()

    def kill(self) -> None:
        self.group.stop(grace=0.0)

    def wait(self, timeout: float | None = None) -> int | None:
        for process in self.group.processes:
            process.wait(timeout=timeout)
        return self.poll()

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        return "\n".join(self.group.finish(timeout or 60.0)), ""

    def result(self, timeout: float) -> HttperfResult:
        from advisor.tuner.load.httperf import parse, ran

        outputs = self.group.finish(timeout)
        self.results = []
        self.cpu_pct = [client_cpu_pct(text) for text in outputs]
        for client, text in zip(self.clients.clients, outputs):
            parsed = parse(text)
            if not ran(parsed):
                lines = text.strip().splitlines()
                raise AdvisorError(f"httperf failed on load client {client.name}: "
                                   f"{lines[-1] if lines else 'no output'}",
                                   hint="check that httperf is installed there and reaches the target")
            self.results.append(parsed)
        return merge(self.results, self.clients.names)
