"""Per-second server metrics while a trial runs (Arlitt's "multiple viewpoints").

A background thread samples the kernel's counters (/proc), the httpd process
tree (psutil) and mod_status `?auto` once per interval and turns counters into
rates over that interval. Network counters are read through /proc/<httpd>/net,
so a server inside a network namespace is measured in its own namespace.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field

from advisor.tuner.measure.status import SCOREBOARD_KEYS, StatusSnapshot, parse_status, staging_verify


@dataclass
class CpuShare:
    user: float
    system: float
    softirq: float
    irq: float
    iowait: float
    busy: float  # 100 - idle - iowait


@dataclass
class Sample:
    t: float  # seconds since the collector started
    cpu: dict[str, CpuShare] = field(default_factory=dict)  # "0", "1", ...
    procs_running: int = 0
    procs_blocked: int = 0
    loadavg1: float = 0.0
    forks_per_s: float = 0.0
    mem_available_pct: float = 100.0
    swap_in_per_s: float = 0.0  # pages
    swap_out_per_s: float = 0.0
    disk_util_pct: dict[str, float] = field(default_factory=dict)
    net_bps: dict[str, dict[str, float]] = field(default_factory=dict)  # iface -> rx/tx bits/s
    net_util_pct: dict[str, float] = field(default_factory=dict)  # iface -> max(rx, tx) / capacity
    qdisc_backlog: dict[str, int] = field(default_factory=dict)  # iface -> bytes queued
    qdisc_drops_per_s: dict[str, float] = field(default_factory=dict)
    listen_overflows: int = 0  # during this interval, put down to the server's listener
    listen_drops: int = 0
    # The kernel counts overflows for the whole network namespace. Those of a
    # second in which the server's own accept queue stood empty belong to some
    # other listener on this host, and are kept apart (see trial/runner.py).
    other_listen_overflows: int = 0
    accept_queue: int | None = None  # connections waiting for accept() on the server port
    time_wait: int = 0
    httpd_cpu_pct: float | None = None  # all httpd processes, 100 = one core
    cpu_throttled_pct: float | None = None  # share of quota periods in which httpd was throttled
    httpd_processes: int = 0
    httpd_spawns: int = 0  # direct children of the httpd parent born this interval
    httpd_exits: int = 0  # ... and gone this interval (retired or crashed workers)
    httperf_cpu_pct: float | None = None
    httperf_fds: int | None = None
    status_ok: bool = False
    busy_workers: int | None = None
    idle_workers: int | None = None
    scoreboard: dict[str, int] = field(default_factory=dict)
    # The scoreboard as printed, one character per slot (trailing open slots
    # dropped): where a G sits tells whether it holds a place of the pool.
    scoreboard_raw: str = ""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def read_cpu_ticks() -> tuple[dict[str, list[int]], dict[str, int]]:
    cores: dict[str, list[int]] = {}
    extra: dict[str, int] = {}
    for line in _read("/proc/stat").splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0].startswith("cpu") and parts[0] != "cpu":
            cores[parts[0][3:]] = [int(v) for v in parts[1:9]]
        elif parts[0] in ("processes", "procs_running", "procs_blocked"):
            extra[parts[0]] = int(parts[1])
    return cores, extra


def cpu_shares(before: dict[str, list[int]], after: dict[str, list[int]]) -> dict[str, CpuShare]:
    shares: dict[str, CpuShare] = {}
    for core, now in after.items():
        then = before.get(core)
        if then is None:
            continue
        delta = [b - a for a, b in zip(then, now)]
        total = sum(delta) or 1
        user, nice, system, idle, iowait, irq, softirq, steal = delta
        pct = lambda v: round(100.0 * v / total, 1)  # noqa: E731
        shares[core] = CpuShare(user=pct(user + nice), system=pct(system), softirq=pct(softirq),
                                irq=pct(irq), iowait=pct(iowait), busy=pct(total - idle - iowait))
    return shares


def read_kv(path: str) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in _read(path).splitlines():
        parts = line.replace(":", " ").split()
        if len(parts) >= 2 and parts[1].lstrip("-").isdigit():
            values[parts[0]] = int(parts[1])
    return values


def read_tcp_ext(net_dir: str) -> dict[str, int]:
    """TcpExt counters of /proc/<pid>/net/netstat (header line, value line)."""
    lines = _read(f"{net_dir}/netstat").splitlines()
    for header, values in zip(lines[::2], lines[1::2]):
        if header.startswith("TcpExt:"):
            return {k: int(v) for k, v in zip(header.split()[1:], values.split()[1:])}
    return {}


def read_net_dev(net_dir: str) -> dict[str, tuple[int, int]]:
    counters: dict[str, tuple[int, int]] = {}
    for line in _read(f"{net_dir}/dev").splitlines()[2:]:
        name, _, rest = line.partition(":")
        fields = rest.split()
        if len(fields) >= 9:
            counters[name.strip()] = (int(fields[0]), int(fields[8]))
    return counters


def process_sched(pid: int) -> tuple[float, float] | None:
    """(CPU seconds a live process has used, seconds its threads waited on a
    run queue for a core), summed over its threads from schedstat."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    ran = waited = 0
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as handle:
                fields = handle.read().split()
            ran, waited = ran + int(fields[0]), waited + int(fields[1])
        except (OSError, ValueError, IndexError):
            continue  # the thread ended between listing and reading
    return ran / 1e9, waited / 1e9


CLIENT_IDLE_SHARE = 0.1
"""Below this share of a sample spent running or waiting to run, the load
generator was idle (h2load between a few visitors' requests): it asked the
core for too little to say whether it got it."""


def process_runtime(pid: int) -> float | None:
    """CPU seconds a live process has used, to the nanosecond.

    /proc/<pid>/stat counts whole clock ticks per process: forty prefork
    children that each ran 3 ms in a sample all read 0. The scheduler's
    own per-thread total (schedstat, first field) has no such truncation.
    """
    sched = process_sched(pid)
    return sched[0] if sched is not None else None


def read_child_count(pid: int | None) -> int | None:
    """How many direct children process `pid` has now (the remote target ships this too)."""
    if not pid:
        return None
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as handle:
            return len(handle.read().split())
    except OSError:
        return None


def read_listener(net_dir: str, port: int | None) -> int | None:
    """Connections waiting in the accept queue of the listener on `port`.

    The kernel lists listening sockets before all others in /proc/net/tcp, so
    reading stops at the first socket that is not listening: with tens of
    thousands of TIME_WAIT sockets a full read costs ~60 ms per sample.
    """
    if port is None:
        return None
    queue = None
    for name in ("tcp", "tcp6"):
        try:
            handle = open(f"{net_dir}/{name}")
        except OSError:
            continue
        with handle:
            next(handle, None)  # header
            for line in handle:
                fields = line.split()
                if len(fields) < 5:
                    continue
                if fields[3] != "0A":
                    break
                if int(fields[1].rsplit(":", 1)[1], 16) == port:
                    # "tx_queue:rx_queue"; for a listener rx_queue is the
                    # number of connections waiting for accept().
                    queue = (queue or 0) + int(fields[4].split(":")[1], 16)
    return queue


def read_time_wait(net_dir: str) -> int:
    """TIME_WAIT sockets of the namespace, from sockstat (no socket walk)."""
    for line in _read(f"{net_dir}/sockstat").splitlines():
        if line.startswith("TCP:"):
            parts = line.split()
            if "tw" in parts:
                return int(parts[parts.index("tw") + 1])
    return 0


def read_disk_ticks() -> dict[str, int]:
    whole = {d for d in os.listdir("/sys/block") if not d.startswith(("loop", "ram", "zram"))} if os.path.isdir("/sys/block") else set()
    ticks: dict[str, int] = {}
    for line in _read("/proc/diskstats").splitlines():
        fields = line.split()
        if len(fields) >= 13 and fields[2] in whole:
            ticks[fields[2]] = int(fields[12])  # ms spent doing I/O
    return ticks


def read_loadavg() -> float | None:
    try:
        return float(_read("/proc/loadavg").split()[0])
    except (IndexError, ValueError):
        return None


def httpd_share(a: dict, b: dict, quota=None) -> float:
    """httpd's CPU between two snapshots, in % of one core, as a figure it can have used.

    From the kernel's count for the quota's cgroup where it has one
    (`group_cpu`), else from the tree walks, dated by the walks (`httpd_time`).
    Under a CPU quota (a cgroup holding the httpd tree) the kernel lets the
    tree use at most the quota over any span, plus the one period that can
    straddle its start: a reading above that is the walk's error (children
    reaped between the two walks, a walk's own length), never the server's
    use, and is held to the bound.
    """
    dt = max(1e-3, b.get("httpd_time", b["time"]) - a.get("httpd_time", a["time"]))
    pct = 100.0 * max(0.0, b["httpd"][0] - a["httpd"][0]) / dt
    group_a, group_b = a.get("group_cpu"), b.get("group_cpu")
    if group_a and group_b and group_a[1] is not None and group_b[1] is not None:
        # The kernel's own count for the cgroup that holds the tree: exact,
        # and it keeps the CPU of children nobody waited for (mod_cgid's
        # CGIs), which a walk of the live tree loses when they exit.
        dt = max(1e-3, group_b[0] - group_a[0])
        pct = 100.0 * max(0.0, group_b[1] - group_a[1]) / dt
    if quota is not None and getattr(quota, "pct", None):
        period_s = getattr(quota, "period_us", 10_000) / 1e6
        pct = min(pct, quota.pct * (1.0 + period_s / dt))
    return round(pct, 1)


def proc_snapshot(net_dir: str, port: int | None) -> dict[str, object]:
    """The kernel's counters at one instant, as `_sample` turns pairs of them into rates.

    Self-contained on purpose (standard library and the readers above only):
    the remote sampler (advisor.tuner.measure.remote_sampler) sends this function's
    source to the staging host, so both sides read the same figures.
    """
    cores, extra = read_cpu_ticks()
    return {
        "time": time.monotonic(), "cores": cores, "extra": extra,
        "vm": read_kv("/proc/vmstat"), "mem": read_kv("/proc/meminfo"), "loadavg": read_loadavg(),
        "disk": read_disk_ticks(), "net": read_net_dev(net_dir), "tcpext": read_tcp_ext(net_dir),
        "tw": read_time_wait(net_dir), "queue": read_listener(net_dir, port),
    }


_RATE = re.compile(r"\brate (\d+(?:\.\d+)?)([KMG]?)bit", re.I)
_QSTATS = re.compile(r"dropped (\d+).*?backlog (\d+)b", re.S)


def _in_netns(pid: int | None) -> list[str]:
    if pid is None:
        return []
    try:
        if os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net"):
            return ["nsenter", "-t", str(pid), "-n"]
    except OSError:
        pass
    return []


def link_capacities(pid: int | None, interfaces: list[str]) -> tuple[dict[str, float], list[str]]:
    """Bits/s per interface (a tc shaper's rate if there is one, else the link
    speed), and the interfaces that have a shaper."""
    prefix = _in_netns(pid)
    capacity: dict[str, float] = {}
    shaped: list[str] = []
    for iface in interfaces:
        if iface == "lo":
            continue  # loopback has no line rate; its cost shows up as CPU
        try:
            out = subprocess.run(prefix + ["tc", "qdisc", "show", "dev", iface], capture_output=True,
                                 text=True, timeout=5).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        match = _RATE.search(out)
        if match:
            scale = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[match.group(2).upper()]
            capacity[iface] = float(match.group(1)) * scale
            shaped.append(iface)
            continue
        speed = subprocess.run(prefix + ["cat", f"/sys/class/net/{iface}/speed"], capture_output=True,
                               text=True, timeout=5).stdout.strip() if prefix else _read(f"/sys/class/net/{iface}/speed").strip()
        if speed.lstrip("-").isdigit() and int(speed) > 0:
            capacity[iface] = int(speed) * 1e6
    return capacity, shaped


def qdisc_stats(pid: int | None, iface: str) -> tuple[int, int] | None:
    """(dropped packets, backlog bytes) of the root qdisc of a shaped interface."""
    try:
        out = subprocess.run(_in_netns(pid) + ["tc", "-s", "qdisc", "show", "dev", iface],
                             capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _QSTATS.search(out)
    return (int(match.group(1)), int(match.group(2))) if match else None


class ChildWatcher(threading.Thread):
    """Counts births and exits of the httpd parent's direct children.

    A prefork child with MaxConnectionsPerChild 10 can live 20 ms: a
    once-a-second look at the process list misses most of them, so this
    thread reads /proc/<pid>/task/<pid>/children (about 20 us) every few
    milliseconds and keeps cumulative counts the collector turns into rates.
    CGI processes are grandchildren and do not count.
    """

    def __init__(self, pid: int, period: float = 0.004):
        super().__init__(name="apache-advisor-children", daemon=True)
        self.path = f"/proc/{pid}/task/{pid}/children"
        self.period = period
        self.births = 0
        self.exits = 0
        self.live: set[int] = set()
        self._stop_event = threading.Event()
        self._lock = threading.Lock()
        self.live = self._read() or set()
        # When a child was last born: the pool at rest between trials is one
        # that stopped growing (the parent stopping idle children is no work).
        self.last_birth = time.monotonic()

    def _read(self) -> set[int] | None:
        try:
            with open(self.path) as handle:
                return {int(p) for p in handle.read().split()}
        except (OSError, ValueError):
            return None

    def run(self) -> None:
        while not self._stop_event.wait(self.period):
            current = self._read()
            if current is None:
                return  # the parent is gone
            with self._lock:
                if current - self.live:
                    self.last_birth = time.monotonic()
                self.births += len(current - self.live)
                self.exits += len(self.live - current)
                self.live = current

    def counts(self) -> tuple[int, int]:
        with self._lock:
            return self.births, self.exits

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout=2)


class MetricsCollector(threading.Thread):
    """Samples every `interval` seconds until stop(); at most `max_samples`."""

    def __init__(self, *, interval: float = 1.0, server_pid: int | None = None, port: int | None = None,
                 status_url: str | None = None, max_samples: int = 3600, cpu_quota=None):
        super().__init__(name="apache-advisor-metrics", daemon=True)
        self.interval = interval
        self.server_pid = server_pid
        self.port = port
        self.status_url = status_url
        self.max_samples = max_samples
        self.client_pids: list[int] = []
        """The load generators to watch: httperf or h2load, or both in a protocol mix."""
        self.cpu_quota = cpu_quota  # advisor.tuner.measure.cgroup.CpuQuota or None
        self.samples: list[Sample] = []
        self.capacity: dict[str, float] = {}
        self._stop_event = threading.Event()
        self._net_dir = f"/proc/{server_pid}/net" if server_pid else "/proc/self/net"
        self._session = None
        self._status_connects = 0
        self._status_conn_closed = True  # no connection yet: the first read opens one
        self._watcher: ChildWatcher | None = None
        self._shaped: list[str] = []
        self._client_cpu: dict[int, tuple[float, float, float]] = {}

    # The collector keeps one persistent connection to mod_status, opened
    # before the load starts: when every worker is busy or holding a
    # keep-alive connection, a new connection for the status page would wait
    # in the same accept queue as the load. On prefork/worker that connection
    # occupies one worker slot, which the verdict subtracts.
    def prime(self) -> None:
        import requests

        self._session = requests.Session()
        if self.status_url:
            self._status(timeout=2.0)
        self.capacity, self._shaped = link_capacities(self.server_pid, list(read_net_dev(self._net_dir)))

    def _status(self, timeout: float) -> StatusSnapshot | None:
        import requests

        if not self.status_url or self._session is None:
            return None
        if self._status_conn_closed:
            self._status_connects += 1  # this read opens a new connection
        self._status_conn_closed = True  # until a reply says the connection stays
        try:
            # verify per request: a session's own setting loses to $REQUESTS_CA_BUNDLE.
            response = self._session.get(self.status_url, timeout=timeout, verify=staging_verify(self.status_url))
        except requests.RequestException:
            self._session.close()  # the connection is gone; retry on a new one next time
            return None
        self._status_conn_closed = "close" in response.headers.get("Connection", "").lower()
        return parse_status(response.text) if response.status_code == 200 else None

    def httpd_cpu_seconds(self) -> float | None:
        """CPU seconds the httpd tree has used so far (reaped children included;
        every child, from the kernel's count for its cgroup, under a quota)."""
        usage = getattr(self.cpu_quota, "usage_s", None)
        counted = usage() if usage is not None else None
        if counted is not None:
            return counted
        found = self._httpd_cpu()
        return found[0] if found else None

    def status_connections(self) -> int:
        """Connections the status reader has opened so far.

        Over HTTPS each is a full handshake that the server counts with the
        load's: a trial takes them off. A server that closes after every
        reply (KeepAlive Off) makes one per read. Counted from the replies'
        `Connection: close` and failed reads; a kept-alive connection that
        the server timed out between reads (KeepAliveTimeout below the
        sampling interval) is not seen.
        """
        return self._status_connects

    def status_now(self, timeout: float = 1.0) -> StatusSnapshot | None:
        """One status read outside the sampling loop (keeps the connection open)."""
        return self._status(timeout)

    def pool_state(self) -> tuple[int, float] | None:
        """(live children, monotonic time of the last birth), if watched."""
        if self._watcher is None:
            return None
        with self._watcher._lock:
            return len(self._watcher.live), self._watcher.last_birth

    def stop(self) -> list[Sample]:
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout=10)
        if self._watcher is not None:
            self._watcher.stop()
        # The status once the load is over, on the connection the window kept
        # open (a new one would be a TLS handshake of its own): the trial's
        # closing reading of mod_ssl's cache counters.
        self.final_status = self._status(timeout=1.0) if self._session is not None else None
        self.final_status_connections = self.status_connections()
        if self._session is not None:
            # On prefork an open keep-alive connection holds a worker: let it go.
            self._session.close()
        return self.samples

    def run(self) -> None:
        if self._session is None:
            self.prime()
        if self.server_pid and self._watcher is None:
            self._watcher = ChildWatcher(self.server_pid)
            self._watcher.start()
        start = time.monotonic()
        previous = self._snapshot()
        while not self._stop_event.wait(self.interval) and len(self.samples) < self.max_samples:
            current = self._snapshot()
            self.samples.append(self._sample(previous, current, time.monotonic() - start))
            previous = current

    def _snapshot(self) -> dict[str, object]:
        snap = proc_snapshot(self._net_dir, self.port)
        # Walking a large httpd tree (thousands of worker threads) takes a
        # good part of a second: its CPU total is dated by when it was read,
        # not by the kernel counters above, or a slow walk after a quick one
        # charges one interval's CPU to a shorter one.
        before = time.monotonic()
        httpd = self._httpd_cpu()
        snap["httpd_time"] = (before + time.monotonic()) / 2.0
        usage = getattr(self.cpu_quota, "usage_s", None)
        if usage is not None:
            snap["group_cpu"] = (time.monotonic(), usage())
        snap.update(httpd=httpd, children=self._watcher.counts() if self._watcher else None,
                    throttling=self.cpu_quota.throttling() if self.cpu_quota else None,
                    qdisc={i: qdisc_stats(self.server_pid, i) for i in self._shaped})
        return snap

    def _httpd_cpu(self) -> tuple[float, int] | None:
        """Total CPU seconds of the httpd tree (dead children included) and its process count."""
        import psutil

        if not self.server_pid:
            return None
        try:
            parent = psutil.Process(self.server_pid)
            processes = [parent, *parent.children(recursive=True)]
        except psutil.Error:
            return None
        total = 0.0
        for process in processes:
            try:
                # children_* hold every child this process has reaped, so
                # short-lived workers and CGI processes are not lost.
                times = process.cpu_times()
                total += times.children_user + times.children_system
                own = process_runtime(process.pid)
                total += own if own is not None else times.user + times.system
            except psutil.Error:
                continue
        return total, len(processes)

    def _sample(self, a: dict, b: dict, t: float) -> Sample:
        dt = max(1e-3, b["time"] - a["time"])
        sample = Sample(t=round(t, 2))
        sample.cpu = cpu_shares(a["cores"], b["cores"])
        sample.procs_running = b["extra"].get("procs_running", 0)
        sample.procs_blocked = b["extra"].get("procs_blocked", 0)
        sample.forks_per_s = round((b["extra"].get("processes", 0) - a["extra"].get("processes", 0)) / dt, 1)
        if b.get("loadavg") is not None:
            sample.loadavg1 = b["loadavg"]
        mem = b["mem"]
        if mem.get("MemTotal"):
            sample.mem_available_pct = round(100.0 * mem.get("MemAvailable", 0) / mem["MemTotal"], 1)
        sample.swap_in_per_s = (b["vm"].get("pswpin", 0) - a["vm"].get("pswpin", 0)) / dt
        sample.swap_out_per_s = (b["vm"].get("pswpout", 0) - a["vm"].get("pswpout", 0)) / dt
        for disk, ticks in b["disk"].items():
            if disk in a["disk"]:
                sample.disk_util_pct[disk] = round(min(100.0, (ticks - a["disk"][disk]) / (dt * 10.0)), 1)
        for iface, (rx, tx) in b["net"].items():
            if iface not in a["net"]:
                continue
            rx_bps = (rx - a["net"][iface][0]) * 8 / dt
            tx_bps = (tx - a["net"][iface][1]) * 8 / dt
            sample.net_bps[iface] = {"rx": round(rx_bps), "tx": round(tx_bps)}
            if iface in self.capacity:
                sample.net_util_pct[iface] = round(100.0 * max(rx_bps, tx_bps) / self.capacity[iface], 1)
        for iface, stats in b["qdisc"].items():
            before = a["qdisc"].get(iface)
            if stats and before:
                sample.qdisc_backlog[iface] = stats[1]
                sample.qdisc_drops_per_s[iface] = round((stats[0] - before[0]) / dt, 1)
        sample.listen_overflows = b["tcpext"].get("ListenOverflows", 0) - a["tcpext"].get("ListenOverflows", 0)
        sample.listen_drops = b["tcpext"].get("ListenDrops", 0) - a["tcpext"].get("ListenDrops", 0)
        sample.accept_queue, sample.time_wait = b["queue"], b["tw"]
        if a["httpd"] and b["httpd"]:
            sample.httpd_cpu_pct = httpd_share(a, b, self.cpu_quota)
            sample.httpd_processes = b["httpd"][1]
        if a["throttling"] and b["throttling"]:
            periods = b["throttling"][0] - a["throttling"][0]
            throttled = b["throttling"][1] - a["throttling"][1]
            sample.cpu_throttled_pct = round(100.0 * throttled / periods, 1) if periods > 0 else 0.0
        if a["children"] and b["children"]:
            sample.httpd_spawns = b["children"][0] - a["children"][0]
            sample.httpd_exits = b["children"][1] - a["children"][1]
        sample.httperf_cpu_pct, sample.httperf_fds = self._client()
        status = self._status(timeout=max(0.2, self.interval * 0.6))
        if status is not None:
            sample.status_ok = True
            sample.busy_workers, sample.idle_workers = status.busy, status.idle
            sample.scoreboard = {k: v for k, v in status.scoreboard.items() if v}
            sample.scoreboard_raw = status.fields.get("Scoreboard", "").rstrip(".")
        return sample

    def _client(self) -> tuple[float | None, int | None]:
        """The least share of its wanted core that any load generator got
        (a mix's h2load can starve while its httperf does not), and the
        first generator's (httperf's) open descriptors."""
        shares, fds = [], None
        for index, pid in enumerate(self.client_pids):
            share, open_fds = self._client_share(pid)
            if share is not None:
                shares.append(share)
            if index == 0:
                fds = open_fds
        return (min(shares) if shares else None), fds

    def _client_share(self, pid: int) -> tuple[float | None, int | None]:
        import psutil

        try:
            process = psutil.Process(pid)
            if process.name() == "taskset":
                return None, None  # not yet exec'd into httperf
            usage = process.cpu_times()
            fds = process.num_fds()
        except psutil.Error:
            return None, None
        # The share of the time it wanted a core that it got: httperf
        # busy-polls, so for it that is its share of the wall time; h2load
        # sleeps between requests, and its share of the wall time says how
        # busy the load was, not whether other programs took its core.
        sched = process_sched(pid)
        now = time.monotonic()
        ran, waited = sched if sched is not None else (usage.user + usage.system, 0.0)
        pct = None
        if pid in self._client_cpu:
            then, ran_before, waited_before = self._client_cpu[pid]
            wanted = (ran - ran_before) + (waited - waited_before)
            if wanted >= CLIENT_IDLE_SHARE * max(1e-3, now - then):
                pct = round(100.0 * (ran - ran_before) / wanted, 1)
        self._client_cpu[pid] = (now, ran, waited)
        return pct, fds


SCOREBOARD_LABELS = SCOREBOARD_KEYS
