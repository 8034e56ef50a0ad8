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


def measure_ram() -> int | None:
    import psutil

    try:
        return int(psutil.virtual_memory().total)
    except (OSError, RuntimeError):
        return None


def measure_worker_memory() -> tuple[int | None, int]:
    """Mean private (unshared) memory of running httpd children, and how many
    were measured. Like apache2buddy: the parent and its children share code
    and pre-fork memory, so only what each child owns alone counts per worker."""
    import psutil

    parents: set[int] = set()
    candidates: list = []
    for process in psutil.process_iter(["name", "ppid", "pid"]):
        name = process.info.get("name") or ""
        if name in HTTPD_NAMES:
            candidates.append(process)
            parents.add(process.info["pid"])
    sizes: list[int] = []
    for process in candidates:
        if process.info["ppid"] not in parents:
            continue  # the parent itself
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
