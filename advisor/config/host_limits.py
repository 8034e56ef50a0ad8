"""The memory and CPUs a process may really use: its cgroup's limits.

In a container or a systemd slice the machine's RAM (psutil, /proc/meminfo)
is not what httpd may use: the kernel's OOM killer ends processes once the
cgroup's `memory.max` (v2) or `memory.limit_in_bytes` (v1) is reached, and a
CPU quota (`cpu.max`, `cpu.cfs_quota_us`) or a cpuset leaves fewer cores
than `os.cpu_count()` reports. A limit set on a parent group applies to
every group below it, so the path from the process's own group up to the
hierarchy's root is walked and the tightest limit wins.

A missing group or file is no limit (the group may be named from the host
while the container sees only its own part of the tree). A limit file that
exists but cannot be read, or holds something other than a number, stops
the command: sizing for the whole machine when a tighter limit may hold is
the mistake this module exists to prevent, and `--ram SIZE` is the way out.

The environment variable APACHE_ADVISOR_CGROUP_ROOT names another mount
point of the cgroup hierarchies than /sys/fs/cgroup (a container's
filesystem mounted elsewhere, a copy of one for a bug report).

Standard library only; nothing here imports psutil.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from advisor.errors import ConfigError

CGROUP_ROOT_ENV = "APACHE_ADVISOR_CGROUP_ROOT"
DEFAULT_CGROUP_ROOT = "/sys/fs/cgroup"
# cgroup v1 writes "no limit" as LONG_MAX rounded down to a page
# (9223372036854771712); anything this large is no limit.
V1_UNLIMITED = 1 << 62
LIMIT_HINT = "fix the cgroup's file, or give --ram SIZE"


@dataclass
class Limit:
    """One figure the sizing uses and where it was read."""

    resource: str
    """'memory' (bytes) or 'cpu' (CPUs, possibly fractional)."""
    value: float
    origin: str
    """'cgroup v2', 'cgroup v1', 'cpuset' or 'host'."""
    file: str
    """The file the figure was read from ('' for the host's own total)."""
    whose: str
    """The process whose cgroup was read: httpd's parent or this tool."""

    def describe(self) -> str:
        if self.origin == "host":
            return f"this host ({self.file or 'psutil'}); no tighter cgroup limit for {self.whose}"
        return f"{self.origin} limit of {self.whose}: {self.file}"


def cgroup_root() -> str:
    return os.environ.get(CGROUP_ROOT_ENV) or DEFAULT_CGROUP_ROOT


def _membership(pid: int) -> list[tuple[str, str]]:
    """(controllers, path) per hierarchy of `pid` from /proc/PID/cgroup;
    controllers '' is the v2 unified hierarchy."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="ascii", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            found.append((parts[1], parts[2].rstrip("/")))
    return found


def _v2_mounts(root: str) -> list[str]:
    """Where the unified hierarchy is mounted: the root itself (pure v2) or
    root/unified (systemd's hybrid layout)."""
    return [mount for mount in (root, os.path.join(root, "unified"))
            if os.path.exists(os.path.join(mount, "cgroup.controllers"))]


def _v1_mount(root: str, controller: str) -> str | None:
    for name in (controller, f"{controller},cpuacct", f"cpuacct,{controller}"):
        mount = os.path.join(root, name)
        if os.path.isdir(mount):
            return mount
    return None


def _groups(pid: int, controller: str) -> list[tuple[str, str, str]]:
    """(version, mount, path inside it) of each hierarchy that may hold
    `controller`'s files for `pid`."""
    root = cgroup_root()
    groups = []
    for controllers, path in _membership(pid):
        if controllers == "":
            groups.extend(("cgroup v2", mount, path) for mount in _v2_mounts(root))
        elif controller in controllers.split(","):
            mount = _v1_mount(root, controller)
            if mount is not None:
                groups.append(("cgroup v1", mount, path))
    return groups


def _upward(mount: str, path: str):
    """The group's directory, then each parent's, up to the mount point."""
    while True:
        yield mount + path
        if not path:
            return
        path = path.rsplit("/", 1)[0]


def _read(path: str) -> str | None:
    """A cgroup file's text; None when it does not exist. Unreadable: one line, exit 2."""
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or "not ASCII text"
        raise ConfigError(f"cannot read this cgroup limit: {reason}", path, None, LIMIT_HINT) from None


def _number(text: str, path: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"cgroup limit {text[:40]!r} is not a number", path, None, LIMIT_HINT) from None
    if value < 0 and value != -1:
        raise ConfigError(f"cgroup limit {value} is negative", path, None, LIMIT_HINT)
    return value


def memory_limit(pid: int, whose: str) -> Limit | None:
    """The tightest cgroup memory limit over `pid`'s groups and their parents."""
    best: Limit | None = None
    for version, mount, path in _groups(pid, "memory"):
        name = "memory.max" if version == "cgroup v2" else "memory.limit_in_bytes"
        for directory in _upward(mount, path):
            file = os.path.join(directory, name)
            text = _read(file)
            if text is None or text == "max":
                continue
            value = _number(text, file)
            if value < 0 or value >= V1_UNLIMITED:
                continue
            if best is None or value < best.value:
                best = Limit("memory", value, version, file, whose)
    return best


def _cpu_quota(pid: int, whose: str) -> Limit | None:
    best: Limit | None = None
    for version, mount, path in _groups(pid, "cpu"):
        for directory in _upward(mount, path):
            if version == "cgroup v2":
                file = os.path.join(directory, "cpu.max")
                text = _read(file)
                if text is None:
                    continue
                words = text.split()
                if not words or words[0] == "max":
                    continue
                if len(words) != 2:
                    raise ConfigError(f"cpu.max {text[:40]!r} is not 'QUOTA PERIOD'", file, None,
                                      "fix the cgroup's file")
                quota, period = _number(words[0], file), _number(words[1], file)
            else:
                file = os.path.join(directory, "cpu.cfs_quota_us")
                text = _read(file)
                if text is None:
                    continue
                quota = _number(text, file)
                if quota < 0:
                    continue
                period_text = _read(os.path.join(directory, "cpu.cfs_period_us"))
                period = _number(period_text, file) if period_text is not None else 100_000
            if quota <= 0 or period <= 0:
                continue
            cpus = quota / period
            if best is None or cpus < best.value:
                best = Limit("cpu", cpus, version, file, whose)
    return best


def parse_cpu_list(text: str, path: str) -> int:
    """How many CPUs a cpuset list such as '0-3,6' names."""
    count = 0
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise ConfigError(f"cpuset {text[:40]!r} is not a CPU list", path, None,
                              "fix the cgroup's file") from None
        count += max(0, last - first + 1)
    return count


def _cpuset(pid: int, whose: str) -> Limit | None:
    for version, mount, path in _groups(pid, "cpuset"):
        name = "cpuset.cpus.effective" if version == "cgroup v2" else "cpuset.effective_cpus"
        for candidate in (name, "cpuset.cpus"):
            file = os.path.join(mount + path, candidate)
            text = _read(file)
            if text:
                count = parse_cpu_list(text, file)
                if count > 0:
                    return Limit("cpu", float(count), f"{version} cpuset", file, whose)
    return None


def cpu_limit(pid: int, whose: str, host_cpus: int | None = None) -> Limit:
    """The CPUs `pid` may use: the host's count, its cpuset's and its quota's, the least."""
    host = host_cpus if host_cpus is not None else (os.cpu_count() or 1)
    best = Limit("cpu", float(host), "host", "os.cpu_count()", whose)
    for found in (_cpuset(pid, whose), _cpu_quota(pid, whose)):
        if found is not None and found.value < best.value:
            best = found
    return best


def effective_memory(host_total: int, pid: int, whose: str) -> Limit:
    """min(host memory, the cgroup limit of `pid`), with where it came from."""
    limit = memory_limit(pid, whose)
    if limit is not None and limit.value < host_total:
        return limit
    return Limit("memory", host_total, "host", "/proc/meminfo", whose)
