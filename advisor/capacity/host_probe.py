"""Measure the inputs of the memory sum on this host (psutil, /proc).

* httpd children: private (unshared) memory, which is what each additional
  child costs. USS from /proc/PID/smaps when we may read it, else RSS minus
  the shared pages (statm), which slightly overstates private memory.
* The httpd parent: its RSS, which holds the pages every child shares.
* Named services (`--reserve-process mysqld`): PSS where readable, so that
  shared libraries are not counted once per process; RSS otherwise.
* Socket buffers: the kernel's default receive + send buffer of a TCP socket.
* The document set: the bytes of the regular files under a directory.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field

from advisor.errors import UsageError

HTTPD_NAMES = ("apache2", "httpd", "httpd.worker", "httpd-prefork", "httpd.event")


@dataclass
class ProcessSample:
    pid: int
    private: int
    method: str
    threads: int


@dataclass
class HttpdSample:
    parent_pid: int
    parent_rss: int
    children: list[ProcessSample]
    other_masters: int = 0
    uptime: float = 0.0
    """Seconds since the parent started."""
    """How many other httpd instances run here (we measured the largest)."""

    @property
    def mpm_guess(self) -> tuple[str, int]:
        """('prefork', 1) for single-threaded children, else ('worker', threads).

        A threaded child runs ThreadsPerChild workers plus a listener and its
        main thread; event and worker look the same from outside.
        """
        threads = max((c.threads for c in self.children), default=1)
        if threads <= 1:
            return "prefork", 1
        return "worker", max(threads - 2, 1)

    @property
    def method(self) -> str:
        methods = sorted({c.method for c in self.children})
        return "/".join(methods)


def host_ram() -> int:
    import psutil

    return int(psutil.virtual_memory().total)


def _private_memory(proc) -> tuple[int, str]:
    import psutil

    try:
        return int(proc.memory_full_info().uss), "USS"
    except (psutil.AccessDenied, AttributeError):
        info = proc.memory_info()
        shared = getattr(info, "shared", 0)
        return int(info.rss - shared), "RSS - shared"


# Where distributions put the main file when httpd runs without -f.
SYSTEM_CONFIGS = ("/etc/apache2/apache2.conf", "/etc/httpd/conf/httpd.conf",
                  "/usr/local/apache2/conf/httpd.conf")


def serves_config(cmdline: list[str], main_file: str, server_root: str) -> bool:
    """Whether an httpd master started with `cmdline` reads this config.

    Named with -f (or -d for its ServerRoot), or started with neither when
    the config is the distribution's own main file.
    """
    main_file = os.path.realpath(main_file)
    server_root = os.path.realpath(server_root)
    named = False
    for flag, value in zip(cmdline, cmdline[1:]):
        if flag == "-f":
            named = True
            path = value if os.path.isabs(value) else os.path.join(server_root, value)
            if os.path.realpath(path) == main_file:
                return True
        elif flag == "-d":
            named = True
            if os.path.realpath(value) == server_root:
                return True
    return not named and main_file in SYSTEM_CONFIGS


def measure_httpd(main_file: str | None = None, server_root: str | None = None,
                  names: tuple[str, ...] = HTTPD_NAMES) -> HttpdSample | None:
    """The children of the running httpd that serves this config, or None.

    With no config given, the httpd with the most children. Other httpd
    instances on the host (a staging sandbox, another site) are not
    measured: their children say nothing about this config's.
    """
    import psutil

    procs = {}
    for proc in psutil.process_iter(["pid", "ppid", "name", "cmdline", "status"]):
        if proc.info["name"] in names and proc.info["status"] != psutil.STATUS_ZOMBIE:
            procs[proc.info["pid"]] = proc
    masters = [p for p in procs.values() if p.info["ppid"] not in procs]
    if main_file is not None:
        masters = [m for m in masters
                   if serves_config(m.info.get("cmdline") or [], main_file, server_root or "/")]
    if not masters:
        return None
    families = {m.info["pid"]: [p for p in procs.values() if p.info["ppid"] == m.info["pid"]] for m in masters}
    master_pid = max(families, key=lambda pid: len(families[pid]))
    children = []
    for proc in families[master_pid]:
        try:
            private, method = _private_memory(proc)
            children.append(ProcessSample(proc.pid, private, method, proc.num_threads()))
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue  # a child that exited while we looked
    if not children:
        return None
    try:
        parent_rss = int(procs[master_pid].memory_info().rss)
        uptime = max(time.time() - procs[master_pid].create_time(), 0.0)
    except psutil.NoSuchProcess:
        return None
    return HttpdSample(master_pid, parent_rss, children, len(masters) - 1, uptime)


@dataclass
class ServiceSample:
    name: str
    bytes: int
    processes: int
    methods: list[str] = field(default_factory=list)

    @property
    def method(self) -> str:
        return "/".join(sorted(set(self.methods)))


def measure_service(name: str) -> ServiceSample:
    """Memory held by every process called `name` (by process name or argv[0])."""
    import psutil

    total = 0
    count = 0
    methods = []
    for proc in psutil.process_iter(["name", "cmdline", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue  # exited, holds no memory, waits to be reaped
        cmdline = proc.info.get("cmdline") or []
        argv0 = os.path.basename(cmdline[0]) if cmdline else ""
        if proc.info["name"] != name and argv0 != name:
            continue
        try:
            try:
                total += int(proc.memory_full_info().pss)
                methods.append("PSS")
            except (psutil.AccessDenied, AttributeError):
                total += int(proc.memory_info().rss)
                methods.append("RSS")
            count += 1
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    if count == 0:
        raise UsageError(
            f"--reserve-process {name}: no running process has that name",
            hint="name a running service (see `ps -e -o comm`), or give --reserve SIZE",
        )
    return ServiceSample(name, total, count, methods)


def read_host_kernel() -> list:
    """[RAM bytes, default socket buffers, somaxconn] of the machine it runs on.
    Stdlib only: it is also sent to a remote host and run there."""
    def number(path, field):
        try:
            with open(path) as handle:
                return int(handle.read().split()[field])
        except (OSError, ValueError, IndexError):
            return None

    ram = 0
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                ram = int(line.split()[1]) * 1024
    rmem, wmem = number("/proc/sys/net/ipv4/tcp_rmem", 1), number("/proc/sys/net/ipv4/tcp_wmem", 1)
    buffers = rmem + wmem if rmem is not None and wmem is not None else None
    return [ram, buffers, number("/proc/sys/net/core/somaxconn", 0)]


def kernel_socket_buffers() -> tuple[int, str] | None:
    """Default receive + send buffer of one TCP socket (net.ipv4.tcp_rmem/wmem)."""
    buffers = read_host_kernel()[1]
    return (buffers, "kernel tcp_rmem + tcp_wmem defaults") if buffers is not None else None


def document_set_size(directory: str) -> tuple[int, int]:
    """(bytes, files) of the regular files under `directory`, links not followed."""
    if not os.path.isdir(directory):
        raise UsageError(f"--docroot {directory}: not a directory",
                         hint="give the DocumentRoot that holds the hot files, or --doc-set SIZE")
    total = 0
    files = 0
    errors: list[OSError] = []
    for root, _dirs, names in os.walk(directory, onerror=errors.append):
        for name in names:
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
                files += 1
    if errors and files == 0:
        raise UsageError(f"--docroot {directory}: {errors[0].strerror}",
                         hint="run as a user that can read it, or give --doc-set SIZE")
    return total, files
