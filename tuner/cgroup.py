"""A CPU quota for the sandbox httpd, through a cgroup of its own (v2 or v1).

Arlitt & Williamson (2004, section 4.4.2) made sure their clients were faster
than the server, so that the server, not the load generator, ran out first.
On a two-core machine httperf and httpd get one core each, and a prefork httpd
that closes every connection is about as fast on its core as httperf is on
its own: the peak then measures httperf. A quota (say half a core) makes the
server the slower side again, and keeps its capacity the same while other
programs use less than the rest of its core.

The period is 10 ms rather than the kernel's default 100 ms, so throttling
adds a few milliseconds to a reply instead of tens.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import AdvisorError, UsageError

PERIOD_US = 10_000
CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass
class CpuQuota:
    """One cgroup holding the httpd tree, limited to `pct` % of one core."""

    path: str
    version: int  # 1 or 2
    pct: float

    @property
    def procs_file(self) -> Path:
        return Path(self.path) / "cgroup.procs"

    def wrap(self, command: list[str]) -> list[str]:
        """Run `command` inside the cgroup: the shell moves itself in, then execs it."""
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.procs_file), *command]

    def throttling(self) -> tuple[int, int] | None:
        """(periods, throttled periods) so far, from cpu.stat."""
        try:
            text = (Path(self.path) / "cpu.stat").read_text()
        except OSError:
            return None
        values = dict(line.split()[:2] for line in text.splitlines() if len(line.split()) >= 2)
        try:
            return int(values["nr_periods"]), int(values["nr_throttled"])
        except (KeyError, ValueError):
            return None

    def remove(self, timeout: float = 5.0) -> None:
        """Delete the cgroup once its processes are gone."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() >= deadline:
                    return  # a process lingers; the empty group is harmless
                time.sleep(0.05)


def _v2_root() -> Path | None:
    controllers = CGROUP_ROOT / "cgroup.controllers"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        return CGROUP_ROOT
    return None


def _v1_root() -> Path | None:
    for candidate in (CGROUP_ROOT / "cpu", CGROUP_ROOT / "cpu,cpuacct"):
        if (candidate / "cpu.cfs_quota_us").exists():
            return candidate
    return None


def create(name: str, pct: float) -> CpuQuota:
    """A new cgroup `name` whose processes may use `pct` % of one core."""
    if not 5 <= pct <= 100 * (os.cpu_count() or 1):
        raise UsageError(f"--cpu-quota {pct:g} is out of range", hint="give a percentage of one core, 5 to 100")
    quota_us = int(PERIOD_US * pct / 100)
    try:
        root = _v2_root()
        if root is not None:
            subtree = root / "cgroup.subtree_control"
            if "cpu" not in subtree.read_text().split():
                subtree.write_text("+cpu")
            path = root / name
            path.mkdir(exist_ok=True)
            (path / "cpu.max").write_text(f"{quota_us} {PERIOD_US}")
            return CpuQuota(str(path), 2, pct)
        root = _v1_root()
        if root is not None:
            path = root / name
            path.mkdir(exist_ok=True)
            (path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (path / "cpu.cfs_quota_us").write_text(str(quota_us))
            return CpuQuota(str(path), 1, pct)
    except PermissionError:
        raise AdvisorError("cannot create a cgroup for --cpu-quota: permission denied",
                           hint="run as root, or leave out --cpu-quota") from None
    except OSError as exc:
        raise AdvisorError(f"cannot set up a cgroup for --cpu-quota: {exc.strerror}",
                           hint="leave out --cpu-quota on this machine") from None
    raise AdvisorError("this machine has no cgroup CPU controller for --cpu-quota",
                       hint="leave out --cpu-quota, or mount the cpu controller (cgroup v1 or v2)")
