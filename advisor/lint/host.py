"""Facts about the host: RAM and the memory of one httpd child process.

Measuring needs psutil, which is imported here only when a measurement is
actually taken: a lint run of a config in a repository never pays for it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

HTTPD_NAMES = ("apache2", "httpd", "httpd-prefork", "httpd-worker", "httpd-event")


def is_system_config(main_file: str) -> bool:
    """A config under /etc is taken as this host's own: its RAM applies."""
    real = os.path.realpath(main_file)
    return real.startswith("/etc/")


@dataclass
class Measured:
    ram: int | None = None
    worker_memory: int | None = None
    workers_seen: int = 0


def measure_ram(main_file: str | None = None):
    """The RAM httpd may use, as an advisor.config.host_limits.Limit: the
    least of the machine's memory and the cgroup limit of the running httpd's
    parent (of this tool when none serves `main_file`); None if unmeasurable."""
    import psutil

    from advisor.config.host_limits import effective_memory

    try:
        total = int(psutil.virtual_memory().total)
    except (OSError, RuntimeError):
        return None
    pid = httpd_master(main_file) if main_file else None
    if pid is not None:
        return effective_memory(total, pid, f"httpd's parent (PID {pid})")
    return effective_memory(total, os.getpid(), f"this tool (PID {os.getpid()}; no running httpd serves the config)")


def httpd_master(main_file: str) -> int | None:
    """PID of the parent of the running httpd that serves `main_file`, or None."""
    import psutil

    processes = [p for p in psutil.process_iter(["name", "ppid", "pid", "cmdline"])
                 if (p.info.get("name") or "") in HTTPD_NAMES]
    pids = {p.info["pid"] for p in processes}
    masters = sorted(p.info["pid"] for p in processes
                     if p.info["ppid"] not in pids and _serves(p.info.get("cmdline") or [], main_file))
    return masters[0] if masters else None


DEFAULT_MAIN_FILES = ("/etc/apache2/apache2.conf", "/etc/httpd/conf/httpd.conf")


def _serves(cmdline: list[str], main_file: str) -> bool:
    """Whether an httpd started with `cmdline` reads `main_file`."""
    wanted = os.path.realpath(main_file)
    for position, word in enumerate(cmdline):
        if word == "-f" and position + 1 < len(cmdline):
            return os.path.realpath(cmdline[position + 1]) == wanted
        if word.startswith("-f") and len(word) > 2:
            return os.path.realpath(word[2:]) == wanted
    return wanted in {os.path.realpath(path) for path in DEFAULT_MAIN_FILES}


def measure_worker_memory(main_file: str) -> tuple[int | None, int]:
    """Mean private (unshared) memory of the children of the running httpd
    that serves `main_file`, and how many were measured. Like apache2buddy:
    children share code and pre-fork memory with their parent, so only what
    each one owns alone counts per worker. Other httpd instances on the host
    are left out: their modules and load are not this config's."""
    import psutil

    processes = []
    for process in psutil.process_iter(["name", "ppid", "pid", "cmdline"]):
        if (process.info.get("name") or "") in HTTPD_NAMES:
            processes.append(process)
    pids = {p.info["pid"] for p in processes}
    masters = {p.info["pid"] for p in processes
               if p.info["ppid"] not in pids and _serves(p.info.get("cmdline") or [], main_file)}
    sizes: list[int] = []
    for process in processes:
        if process.info["ppid"] not in masters:
            continue
        try:
            info = process.memory_full_info()
        except (psutil.AccessDenied, psutil.NoSuchProcess, OSError):
            continue
        private = getattr(info, "uss", None)
        if private is None:
            private = max(0, info.rss - getattr(info, "shared", 0))
        sizes.append(int(private))
    if not sizes:
        return None, 0
    return sum(sizes) // len(sizes), len(sizes)
