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
    period_us: int = PERIOD_US

    @property
    def procs_file(self) -> Path:
        return Path(self.path) / "cgroup.procs"

    @property
    def accounting_dir(self) -> Path | None:
        """Where the kernel counts the group's CPU time: the group itself
        (v2's cpu.stat, v1 with cpu and cpuacct mounted together), or the
        group of the same name in v1's separate cpuacct hierarchy."""
        own = Path(self.path)
        if self.version == 2 or (own / "cpuacct.usage").exists():
            return own
        sibling = _v1_cpuacct_root()
        if sibling is not None and sibling != own.parent and (sibling / own.name / "cpuacct.usage").exists():
            return sibling / own.name
        return None

    def wrap(self, command: list[str]) -> list[str]:
        """Run `command` inside the cgroup (and its cpuacct twin, where v1
        mounts cpuacct apart): the shell moves itself in, then execs it."""
        acct = self.accounting_dir
        twin = str(acct / "cgroup.procs") if acct is not None and acct != Path(self.path) else ""
        return ["sh", "-c", 'echo $$ > "$0" && if [ -n "$1" ]; then echo $$ > "$1"; fi && shift && exec "$@"',
                str(self.procs_file), twin, *command]

    def usage_s(self) -> float | None:
        """CPU seconds every process of the group has used so far, exited ones
        included (a CGI that mod_cgid's daemon never waits for is counted
        nowhere else); None where the kernel does not count it."""
        acct = self.accounting_dir
        if acct is None:
            return None
        return read_usage(str(acct), self.version)

    def throttling(self) -> tuple[int, int] | None:
        """(periods, throttled periods) so far, from cpu.stat."""
        counts = read_throttling(self.path)
        return (counts[0], counts[1]) if counts else None

    def with_pct(self, pct: float) -> "CpuQuota":
        """The same group held to `pct` % of one core from now on (`bench
        --compare-quota` moves it between the two sides of a comparison);
        the processes stay where they are, only the kernel's limit changes."""
        if not 5 <= pct <= 100 * (os.cpu_count() or 1):
            raise UsageError(f"a CPU quota of {pct:g} % is out of range", hint="give a percentage of one core, 5 to 100")
        try:
            self._write_limit(int(self.period_us * pct / 100))
        except OSError as exc:
            raise AdvisorError(f"cannot change the CPU quota of {self.path}: {exc.strerror}",
                               hint="run as root, with the sandbox up") from None
        return CpuQuota(self.path, self.version, pct, self.period_us)

    def lift(self) -> None:
        """No limit any more, the group kept: a server being stopped gets
        the CPU to end its processes and the work queued on them (on a
        fifth of a core, stopping a server behind a full accept queue took
        14 s). Best effort: a group already gone needs nothing."""
        try:
            self._write_limit(None)
        except OSError:
            pass

    def _write_limit(self, quota_us: int | None) -> None:
        """The group's limit per period (None: none) in the kernel's own file."""
        if self.version == 2:
            (Path(self.path) / "cpu.max").write_text(f"{'max' if quota_us is None else quota_us} {self.period_us}")
        else:
            (Path(self.path) / "cpu.cfs_quota_us").write_text("-1" if quota_us is None else str(quota_us))

    def remove(self, timeout: float = 5.0) -> None:
        """Delete the cgroup (and its cpuacct twin) once its processes are gone."""
        acct = self.accounting_dir
        if acct is not None and acct != Path(self.path):
            try:
                os.rmdir(acct)
            except OSError:
                pass  # a process lingers; the empty group is harmless
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


def find_quota(pid):
    """The tightest CPU quota on the cgroups of process `pid`, as
    [cgroup path, version, % of one core, period in µs]; None without one.

    Standard library only, and no other name of this module: the remote
    metrics sampler ships it to a staging host, where the quota was set by
    the host's admin (systemd's CPUQuota=, a container) rather than by us.
    """
    try:
        with open("/proc/%d/cgroup" % pid) as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    roots = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            roots.append(("/sys/fs/cgroup", parts[2], 2))
        elif "cpu" in parts[1].split(","):
            for mount in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuacct,cpu"):
                if os.path.exists(mount + "/cpu.cfs_quota_us"):
                    roots.append((mount, parts[2], 1))
                    break
    best = None
    for mount, relative, version in roots:
        relative = relative.rstrip("/")
        while True:
            path = mount + relative
            try:
                if version == 2:
                    with open(path + "/cpu.max") as handle:
                        quota, period = handle.read().split()[:2]
                else:
                    with open(path + "/cpu.cfs_quota_us") as handle:
                        quota = handle.read().strip()
                    with open(path + "/cpu.cfs_period_us") as handle:
                        period = handle.read().strip()
                if quota not in ("max", "-1") and int(period) > 0:
                    pct = 100.0 * int(quota) / int(period)
                    if best is None or pct < best[2]:
                        best = [path, version, pct, int(period)]
            except (OSError, ValueError):
                pass
            if not relative:
                break
            relative = relative.rsplit("/", 1)[0]
    return best


def read_throttling(path):
    """(periods, throttled periods) so far from the cgroup at `path`; shipped to hosts as find_quota is."""
    try:
        with open(path + "/cpu.stat") as handle:
            values = dict(line.split()[:2] for line in handle.read().splitlines() if len(line.split()) >= 2)
        return [int(values["nr_periods"]), int(values["nr_throttled"])]
    except (OSError, KeyError, ValueError):
        return None


def read_usage(path, version):
    """CPU seconds used so far by the cgroup at `path` (v2 cpu.stat's usage_usec,
    v1 cpuacct.usage), or None."""
    try:
        if version == 2:
            with open(path + "/cpu.stat") as handle:
                values = dict(line.split()[:2] for line in handle.read().splitlines() if len(line.split()) >= 2)
            return int(values["usage_usec"]) / 1e6
        with open(path + "/cpuacct.usage") as handle:
            return int(handle.read().strip()) / 1e9
    except (OSError, KeyError, ValueError):
        return None


def _v1_cpuacct_root() -> Path | None:
    for candidate in (CGROUP_ROOT / "cpuacct", CGROUP_ROOT / "cpu,cpuacct", CGROUP_ROOT / "cpuacct,cpu"):
        if (candidate / "cpuacct.usage").exists():
            return candidate
    return None


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
            acct = _v1_cpuacct_root()
            if acct is not None and acct != root:
                try:  # where the group's CPU time is counted (CpuQuota.usage_s)
                    (acct / name).mkdir(exist_ok=True)
                except OSError:
                    pass
            return CpuQuota(str(path), 1, pct)
    except PermissionError:
        raise AdvisorError("cannot create a cgroup for --cpu-quota: permission denied",
                           hint="run as root, or leave out --cpu-quota") from None
    except OSError as exc:
        raise AdvisorError(f"cannot set up a cgroup for --cpu-quota: {exc.strerror}",
                           hint="leave out --cpu-quota on this machine") from None
    raise AdvisorError("this machine has no cgroup CPU controller for --cpu-quota",
                       hint="leave out --cpu-quota, or mount the cpu controller (cgroup v1 or v2)")
