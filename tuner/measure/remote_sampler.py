"""Server metrics of a remote staging host, streamed over the SSH connection.

The sampler is a small Python program made, when it is sent, from the
source of the local collector's own /proc readers (advisor.tuner.measure.metrics:
`proc_snapshot` and what it calls, the tc readers, `ChildWatcher`) plus a
loop: so the host reads exactly the figures this machine would read for a
local server. It needs only python3 there. It prints one JSON line with the
links' capacities, then one raw snapshot per interval; this side turns each
pair of snapshots into a `Sample` with the local collector's own arithmetic
(`MetricsCollector._sample`) and adds mod_status, read over HTTP as for a
local server. The httpd tree's CPU is summed from /proc there (no psutil):
per-thread schedstat run time plus what each process has reaped.

The sampler stops when its stdin closes (this side's stop), when its stdout
breaks (the connection went away), or after `max_seconds`.
"""

from __future__ import annotations

import inspect
import json
import queue
import subprocess
import threading
import time

from advisor.errors import AdvisorError
from advisor.tuner.measure import cgroup, metrics
from advisor.tuner.transport.ssh import SshConnection

# Sent verbatim: each of these uses only the standard library and the others.
SHIPPED = (metrics._read, metrics.read_cpu_ticks, metrics.read_kv, metrics.read_tcp_ext, metrics.read_net_dev,
           metrics.process_sched, metrics.process_runtime, metrics.read_listener, metrics.read_time_wait, metrics.read_disk_ticks,
           metrics.read_loadavg, metrics.proc_snapshot, metrics._in_netns, metrics.link_capacities,
           metrics.qdisc_stats, metrics.ChildWatcher, cgroup.read_throttling)

LOOP = r'''
CLK = os.sysconf("SC_CLK_TCK")


def httpd_cpu(pid):
    """CPU seconds of the tree under pid (reaped children included), and its size."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as handle:
                    table[int(entry)] = handle.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
    if pid not in table:
        return None
    children = {}
    for child, fields in table.items():
        children.setdefault(int(fields[1]), []).append(child)
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, []))
    total = 0.0
    for member in tree:
        fields = table[member]
        total += (int(fields[13]) + int(fields[14])) / CLK  # cutime + cstime: reaped children
        own = process_runtime(member)
        total += own if own is not None else (int(fields[11]) + int(fields[12])) / CLK
    return [total, len(tree)]


def emit(record):
    try:
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        os._exit(0)  # the connection is gone


def watch_stdin():
    sys.stdin.read()  # returns at EOF: the other side stopped us or went away
    os._exit(0)


def main():
    opts = json.loads(sys.argv[1])
    pid, port = opts["pid"], opts["port"]
    net_dir = "/proc/%d/net" % pid if pid else "/proc/self/net"
    threading.Thread(target=watch_stdin, daemon=True).start()
    capacity, shaped = link_capacities(pid, list(read_net_dev(net_dir)))
    watcher = None
    if pid and os.path.exists("/proc/%d" % pid):
        watcher = ChildWatcher(pid)
        watcher.start()
    emit({"header": {"capacity": capacity, "shaped": shaped, "pid": pid}})
    deadline = time.monotonic() + opts["max_seconds"]
    due = time.monotonic()
    while time.monotonic() < deadline:
        snap = proc_snapshot(net_dir, port)
        children = None
        if watcher is not None:
            with watcher._lock:
                children = [watcher.births, watcher.exits, len(watcher.live),
                            time.monotonic() - watcher.last_birth]
        quota = opts.get("quota_path")
        snap.update(httpd=httpd_cpu(pid) if pid else None, children=children,
                    throttling=read_throttling(quota) if quota else None,
                    qdisc={iface: qdisc_stats(pid, iface) for iface in shaped})
        emit({"snapshot": snap})
        due += opts["interval"]
        time.sleep(max(0.0, due - time.monotonic()))


main()
'''


def sampler_source() -> str:
    """The whole program sent to the host."""
    parts = ["from __future__ import annotations",
             "import json, os, re, subprocess, sys, threading, time",
             f"_RATE = re.compile({metrics._RATE.pattern!r}, re.I)",
             f"_QSTATS = re.compile({metrics._QSTATS.pattern!r}, re.S)"]
    parts += [inspect.getsource(item) for item in SHIPPED]
    return "\n\n".join(parts) + "\n" + LOOP


class RemoteMetricsCollector(metrics.MetricsCollector):
    """MetricsCollector whose kernel figures come from the sampler on the host.

    `lost` is set when the stream ended before stop(): the connection went
    away mid-trial, and the samples stop there.
    """

    def __init__(self, conn: SshConnection, *, remote_pid: int | None, interval: float = 1.0,
                 port: int | None = None, status_url: str | None = None, max_samples: int = 3600,
                 cpu_quota=None):
        # The quota's cgroup is a path on the host: the sampler reads its
        # throttling there, never this machine's collector.
        super().__init__(interval=interval, server_pid=None, port=port, status_url=status_url,
                         max_samples=max_samples)
        self.quota_path = cpu_quota.path if cpu_quota is not None else None
        self.conn = conn
        self.remote_pid = remote_pid
        self.lost = False
        self._process: subprocess.Popen | None = None
        self._lines: queue.Queue = queue.Queue()
        self._latest: dict | None = None
        self._latest_at = 0.0

    def prime(self) -> None:
        import requests

        self._session = requests.Session()
        if self.status_url:
            self._status(timeout=2.0)
        opts = {"pid": self.remote_pid, "port": self.port, "interval": self.interval,
                "max_seconds": self.max_samples * self.interval + 30, "quota_path": self.quota_path}
        self._process = subprocess.Popen(
            self.conn.argv(["python3", "-u", "-c", sampler_source(), json.dumps(opts)]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read_stream, name="apache-advisor-remote-metrics", daemon=True).start()
        header = self._next(timeout=self.conn.connect_timeout_s + 20)
        if header is None or "header" not in header:
            self.stop()
            raise AdvisorError(f"the metrics sampler did not start on {self.conn.spec}: {self._stderr()}",
                               hint="check that python3 runs there and /proc is readable")
        self.capacity = header["header"]["capacity"]
        self._shaped = header["header"]["shaped"]

    def _read_stream(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            try:
                self._lines.put(json.loads(line))
            except ValueError:
                continue
        self._lines.put(None)  # end of stream

    def _next(self, timeout: float) -> dict | None:
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def _stderr(self) -> str:
        if self._process is None or self._process.poll() is None or self._process.stderr is None:
            return "no answer"
        text = self._process.stderr.read().strip()
        return text.splitlines()[-1] if text else f"exit status {self._process.returncode}"

    def run(self) -> None:
        if self._process is None:
            self.prime()
        previous = None
        first_time = None
        while not self._stop_event.is_set() and len(self.samples) < self.max_samples:
            record = self._next(timeout=self.interval * 3 + 10)
            if record is None:
                self.lost = not self._stop_event.is_set()
                return
            snap = record.get("snapshot")
            if snap is None:
                continue
            self._latest, self._latest_at = snap, time.monotonic()
            if previous is not None:
                self.samples.append(self._sample(previous, snap, snap["time"] - first_time))
            else:
                first_time = snap["time"]
            previous = snap

    def httpd_cpu_seconds(self) -> float | None:
        if not self.is_alive():
            self._take_pending()  # the warm-up asks before start(): the newest snapshot streamed so far
        httpd = self._latest.get("httpd") if self._latest else None
        return httpd[0] if httpd else None

    def _take_pending(self) -> None:
        while True:
            try:
                record = self._lines.get_nowait()
            except queue.Empty:
                return
            if record is None:
                self._lines.put(None)  # the end of the stream stays for run() to see
                return
            if record.get("snapshot") is not None:
                self._latest, self._latest_at = record["snapshot"], time.monotonic()

    def pool_state(self) -> tuple[int, float] | None:
        children = self._latest.get("children") if self._latest else None
        if not children:
            return None
        return children[2], self._latest_at - children[3]

    def stop(self) -> list[metrics.Sample]:
        self._stop_event.set()
        if self._process is not None:
            try:
                if self._process.stdin:
                    self._process.stdin.close()  # the sampler exits at EOF
            except OSError:
                pass
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=5)
        if self.is_alive():
            self.join(timeout=10)
        # The status once the load is over, on the connection the window kept
        # open (a new one would be a TLS handshake of its own): the trial's
        # closing reading of mod_ssl's cache counters.
        self.final_status = self._status(timeout=1.0) if self._session is not None else None
        self.final_status_connections = self.status_connections()
        if self._session is not None:
            self._session.close()
        return self.samples
