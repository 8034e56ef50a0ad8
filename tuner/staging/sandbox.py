"""The staging sandbox: a private httpd from the system's binary on 127.0.0.1.

Its work directory (advisor.tuner.staging.sandbox_layout) holds the
generated config (advisor.tuner.staging.sandbox_config), the managed
include trials change, the workload files, logs and staging.json.

The server is started under `taskset` so that every child inherits the
server's cores, optionally inside a network namespace (`ip netns exec`)
that a test created, to put a rate-limited link between client and server,
and optionally in a cgroup with a CPU quota (advisor.tuner.measure.cgroup).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.errors import AdvisorError, UsageError
from advisor.tuner.load import workload
from advisor.tuner.measure.status import fetch_status, wait_healthy
from advisor.tuner.staging.http2_setup import h2_status
from advisor.tuner.staging.httpd_binary import config_test_error, find_httpd, find_modules_dir
from advisor.tuner.staging.sandbox_config import (
    MPM_LINE,
    MPMS,
    http2_config_lines,
    site_tuning,
    tls_config_lines,
    user_group_lines,
    write_httpd_conf,
    write_mpm_switch,
)
from advisor.tuner.staging.sandbox_layout import SandboxLayout, SandboxState, default_work_dir
from advisor.tuner.staging.sandbox_processes import launch_server, stop_server

if TYPE_CHECKING:
    from advisor.tuner.measure.cgroup import CpuQuota
    from advisor.tuner.staging.phpfpm import FpmState

MANAGED_HEADER = "# Managed by apache-advisor: trials write tuned directives here.\n"
STOCK_MANAGED = MANAGED_HEADER + "# Empty means the stock configuration.\n"
INSTRUMENT_HEADER = ("# Written by apache-advisor after each change of the managed include: one more\n"
                     "# prefork worker for the metrics collector's kept-alive status connection.\n")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def cpu_list(cpus: list[int] | None) -> str | None:
    return ",".join(str(c) for c in cpus) if cpus else None


def parse_cpus(text: str | None) -> list[int] | None:
    """`0`, `0,1` or `0-1` -> [0, 1]; None stays None."""
    if text is None or text == "":
        return None
    cpus: list[int] = []
    try:
        for part in text.split(","):
            if "-" in part:
                lo, hi = part.split("-", 1)
                cpus.extend(range(int(lo), int(hi) + 1))
            else:
                cpus.append(int(part))
    except ValueError:
        raise UsageError(f"bad CPU list {text!r}", hint="write it like 0 or 0,1 or 0-1") from None
    available = os.cpu_count() or 1
    bad = [c for c in cpus if c < 0 or c >= available]
    if bad:
        raise UsageError(f"CPU {bad[0]} does not exist on this machine", hint=f"use 0-{available - 1}")
    return sorted(set(cpus))


@dataclass
class StopResult:
    """What `Sandbox.down` found and did."""

    was_running: bool  # a server, or processes of one, were there to stop
    # Processes that outlived httpd's own stop and that down ended itself,
    # as "pid N (name): SIGTERM|SIGKILL".
    stragglers: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.was_running


class Sandbox(SandboxLayout):
    """A private httpd in `work_dir`. Methods raise AdvisorError on bad input."""

    def __init__(self, work_dir: Path | str | None = None, binary: str | None = None):
        super().__init__(Path(work_dir) if work_dir else default_work_dir())
        self._binary = binary

    # -- up / down -----------------------------------------------------------
    def up(
        self,
        *,
        source_config: str | None = None,
        mpm: str | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        server_cpus: list[int] | None = None,
        netns: str | None = None,
        status_allow: list[str] | None = None,
        extended_status: bool = False,
        cpu_quota_pct: float | None = None,
        isolated: bool = False,
        tls: bool = False,
        tls_key: str | None = None,
        h2: bool = False,
        php_fpm_children: int | None = None,
        timeout: float = 15.0,
        _link=None,
    ) -> SandboxState:
        if self.running_pid():
            raise UsageError(
                f"a sandbox is already running in {self.work_dir}",
                hint="run `apache-advisor staging down` first, or pass another --workdir",
            )
        binary = find_httpd(self._binary)
        modules_dir = find_modules_dir(binary)
        # --h2 refused (without TLS, without mod_http2) before anything is made.
        protocols, http2_text = http2_config_lines(h2, tls or tls_key is not None, modules_dir)
        if isolated:
            return self._up_isolated(source_config=source_config, mpm=mpm, port=port, server_cpus=server_cpus,
                                     netns=netns, status_allow=status_allow, extended_status=extended_status,
                                     cpu_quota_pct=cpu_quota_pct, tls=tls, tls_key=tls_key, h2=h2,
                                     php_fpm_children=php_fpm_children, timeout=timeout)
        mpm, site = site_tuning(source_config, mpm)
        if not port:
            port = free_port(host) if netns is None else 8080
        tls_key, tls_text = tls_config_lines(self, tls, tls_key, modules_dir, host, port)
        user_group, fpm, fpm_text = self._make_work_dir(modules_dir, php_fpm_children)
        write_httpd_conf(self, host=host, port=port, mpm=mpm, modules_dir=modules_dir, user_group=user_group,
                         extended_status=extended_status, status_allow=status_allow, tls_text=tls_text,
                         http2_text=http2_text, fpm_text=fpm_text, site=site, source_config=source_config)
        self.managed_path.write_text(STOCK_MANAGED)
        self.write_instrument(mpm)
        self.validate()
        pid, quota = self._start(binary, server_cpus, netns, cpu_quota_pct, fpm, timeout)
        state = SandboxState(
            work_dir=str(self.work_dir), binary=binary, config=str(self.config_path),
            managed=str(self.managed_path), host=host, port=port, mpm=mpm, pid=pid,
            server_cpus=server_cpus, netns=netns, source_config=source_config,
            site_directives=site, started_at=time.time(),
            cpu_quota_pct=cpu_quota_pct, cgroup=quota.path if quota else None,
            cgroup_version=quota.version if quota else None,
            isolated=_link.to_dict() if _link is not None else None,
            tls_key=tls_key, protocols=protocols,
            php_fpm=fpm.to_dict() if fpm is not None else None,
        )
        self.save_state(state)
        wait_healthy(state.base_url + "/index.html", timeout=timeout)
        return state

    def _up_isolated(self, *, source_config: str | None, mpm: str | None, port: int,
                     server_cpus: list[int] | None, netns: str | None, status_allow: list[str] | None,
                     extended_status: bool, cpu_quota_pct: float | None, tls: bool, tls_key: str | None,
                     h2: bool, php_fpm_children: int | None, timeout: float) -> SandboxState:
        """`up --isolated`: the server in a namespace of its own behind a link made for it."""
        from advisor.tuner.staging import isolated as isolation

        if netns is not None:
            raise UsageError("--isolated makes its own namespace", hint="give --isolated or --netns, not both")
        link = isolation.create(str(self.work_dir.resolve()))
        try:
            return self.up(source_config=source_config, mpm=mpm, port=port or 8080, host=link.server_addr,
                           server_cpus=server_cpus, netns=link.netns,
                           status_allow=list(status_allow or ["127.0.0.1", "::1"]) + [link.client_addr],
                           extended_status=extended_status, cpu_quota_pct=cpu_quota_pct, tls=tls,
                           tls_key=tls_key, h2=h2, php_fpm_children=php_fpm_children, timeout=timeout,
                           _link=link)
        except BaseException:
            isolation.destroy(link)
            raise

    def _make_work_dir(self, modules_dir: str,
                       php_fpm_children: int | None) -> tuple[str, FpmState | None, str]:
        """The work directory's folders and workload files, the worker user's
        lines, and `up --php-fpm`'s pool config (FpmState or None) with its
        httpd.conf lines."""
        for sub in ("conf", "logs", "run", "docroot", "cgi-bin"):
            (self.work_dir / sub).mkdir(parents=True, exist_ok=True)
        workload.write_docroot(self.work_dir / "docroot", self.work_dir / "cgi-bin")
        user_group = user_group_lines(self.work_dir)
        fpm = None
        fpm_text = "# no php-fpm (staging up --php-fpm hands *.php to a pool)"
        if php_fpm_children is not None:
            from advisor.tuner.staging import phpfpm

            owner = dict(line.split(None, 1) for line in user_group.splitlines() if not line.startswith("#"))
            fpm = phpfpm.write_config(self.work_dir, php_fpm_children, owner.get("User"), owner.get("Group"),
                                      free_port("127.0.0.1"))
            fpm_text = phpfpm.httpd_lines(modules_dir, fpm)
        return user_group, fpm, fpm_text

    def _start(self, binary: str, server_cpus: list[int] | None, netns: str | None,
               cpu_quota_pct: float | None, fpm: FpmState | None,
               timeout: float) -> tuple[int, CpuQuota | None]:
        """Start php-fpm (if any) and httpd under their cores, namespace and
        CPU quota: the new parent's pid and the quota (CpuQuota or None).
        On failure the quota and php-fpm go again."""
        command = self.command_prefix(server_cpus, netns) + [binary, "-f", str(self.config_path), "-k", "start"]
        quota = None
        if cpu_quota_pct is not None:
            from advisor.tuner.measure import cgroup

            quota = cgroup.create(self.cgroup_name(), cpu_quota_pct)
            command = quota.wrap(command)
        if fpm is not None:
            from advisor.tuner.staging import phpfpm

            phpfpm.start(fpm, self.command_prefix(server_cpus, netns), timeout=timeout)
        try:
            pid = launch_server(self, command, timeout)
        except BaseException:
            if quota is not None:
                quota.remove(timeout=1.0)
            if fpm is not None:
                phpfpm.stop(fpm)
            raise
        return pid, quota

    def cgroup_name(self) -> str:
        import hashlib

        digest = hashlib.sha1(str(self.work_dir.resolve()).encode()).hexdigest()[:12]
        return f"apache-advisor-{digest}"

    def cpu_quota(self):
        """The sandbox's CPU quota (advisor.tuner.measure.cgroup.CpuQuota) or None."""
        state = self.load_state()
        if state is None or not state.cgroup or state.cpu_quota_pct is None:
            return None
        from advisor.tuner.measure.cgroup import CpuQuota

        return CpuQuota(state.cgroup, state.cgroup_version or 1, state.cpu_quota_pct)

    @staticmethod
    def command_prefix(server_cpus: list[int] | None, netns: str | None) -> list[str]:
        prefix: list[str] = []
        if netns:
            prefix += ["ip", "netns", "exec", netns]
        if server_cpus:
            prefix += ["taskset", "-c", cpu_list(server_cpus) or "0"]
        return prefix

    def write_instrument(self, mpm: str | None = None) -> list[str]:
        """Give back the worker the metrics collector's status connection holds.

        The collector keeps one kept-alive connection to mod_status so that it
        can read the scoreboard when every worker is taken; on prefork that
        connection holds a worker, a quarter of a pool of 4. The instrument
        include (read after the managed one) adds that worker, so the load
        meets the pool the configuration claims (advisor.tuner.staging.poolconfig). Written
        whenever the managed include changes; returns its directives.
        """
        from advisor.tuner.staging.poolconfig import compensation, read_pool

        if f'"{self.instrument_path}"' not in _read_or_empty(self.config_path):
            return []  # a sandbox made before the include existed
        if mpm is None:
            state = self.load_state()
            mpm = state.mpm if state else None
        self.instrument_path.write_text(INSTRUMENT_HEADER)  # read the config without the old compensation
        lines = compensation(read_pool(self.config_path, mpm, skip=self.instrument_path))
        self.instrument_path.write_text(INSTRUMENT_HEADER + "".join(f"{line}\n" for line in lines))
        return lines

    def restart(self, timeout: float = 15.0) -> None:
        """Stop and start again: the limits a graceful restart keeps (ServerLimit,
        ThreadLimit) take effect. Same cores, namespace and cgroup as before."""
        state = self._require_state()
        self.validate()
        quota = self.cpu_quota()
        stop_server(self, self.running_pid(), state, quota, self._binary, timeout=timeout, grace=2.0)
        command = self.command_prefix(state.server_cpus, state.netns) + [state.binary, "-f", state.config, "-k", "start"]
        if quota is not None:
            command = quota.wrap(command)
        state.pid = launch_server(self, command, timeout)
        state.started_at = time.time()
        state.mpm = self.configured_mpm() or state.mpm  # an MPM switch takes effect here
        self.save_state(state)
        wait_healthy(state.base_url + "/index.html", timeout=timeout)

    # -- the MPM switch (tune --allow-mpm-switch) -------------------------------
    # httpd.conf's MPM and CGI lines are rewritten for another MPM, and the
    # site's MPM-only directives put under <IfModule>, so that the config
    # reads under all three; the session journals both files' text first
    # and puts it back at the end (ManagedConfig).

    def mpm_switch_files(self) -> list[Path]:
        return [self.config_path, self.conf_dir / "site.conf"]

    def configured_mpm(self) -> str | None:
        found = MPM_LINE.search(_read_or_empty(self.config_path))
        return found.group(1) if found else None

    def check_mpm_modules(self) -> None:
        """Every MPM's module, and the CGI module each needs, is installed."""
        binary = find_httpd(self._binary)
        modules_dir = find_modules_dir(binary)
        for name in [f"mod_mpm_{mpm}.so" for mpm in MPMS] + ["mod_cgi.so", "mod_cgid.so"]:
            if not os.path.isfile(os.path.join(modules_dir, name)):
                raise UsageError(f"{name} is not in {modules_dir}: the sandbox cannot switch to every MPM",
                                 file=str(self.config_path),
                                 hint="install it (Debian's apache2-bin ships all three MPMs), or leave out "
                                      "--allow-mpm-switch")

    def switch_mpm(self, mpm: str) -> None:
        if mpm not in MPMS:
            raise UsageError(f"unknown MPM {mpm!r}", hint="choose prefork, worker or event")
        modules_dir = find_modules_dir(find_httpd(self._binary))
        write_mpm_switch(self, mpm, modules_dir)

    def validate(self) -> None:
        """`httpd -t -f conf`: a refused config becomes a file:line error."""
        binary = find_httpd(self._binary)
        result = subprocess.run([binary, "-t", "-f", str(self.config_path)],
                                capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            raise config_test_error(result.stderr + result.stdout, str(self.config_path))

    def reload(self, timeout: float = 15.0) -> None:
        """Graceful restart: the parent re-reads the config, workers finish."""
        state = self._require_state()
        result = subprocess.run([state.binary, "-f", state.config, "-k", "graceful"],
                                capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise config_test_error(result.stderr + result.stdout, state.config)

    def down(self, timeout: float = 15.0, grace: float = 2.0) -> StopResult:
        """Stop the sandbox and return only when every process of it is gone.

        httpd's own stop ends its children; what it misses (a process that
        ignores SIGTERM, a CGI's child in a session of its own, workers left
        by a parent killed with -9) gets `grace` seconds to go, then SIGTERM,
        then SIGKILL, and is named in the result.
        """
        state = self.load_state()
        pid = self.running_pid()
        quota = self.cpu_quota()
        if quota is not None:
            quota.lift()
        stragglers = stop_server(self, pid, state, quota, self._binary, timeout=timeout, grace=grace)
        if state is not None and state.php_fpm:
            from advisor.tuner.staging import phpfpm

            stragglers += phpfpm.stop(phpfpm.FpmState(**state.php_fpm))
        if quota is not None:
            quota.remove(timeout=1.0)
        if state is not None and state.isolated:
            from advisor.tuner.staging import isolated as isolation

            isolation.destroy(isolation.IsolatedLink(**state.isolated))
        self.state_path.unlink(missing_ok=True)
        return StopResult(was_running=pid is not None or bool(stragglers), stragglers=stragglers)

    def status(self) -> dict[str, object]:
        state = self.load_state()
        pid = self.running_pid()
        info: dict[str, object] = {"work_dir": str(self.work_dir), "running": pid is not None, "pid": pid}
        if state is None:
            return info
        info.update(url=state.base_url, tls_key=state.tls_key, mpm=state.mpm, server_cpus=state.server_cpus, cpu_quota_pct=state.cpu_quota_pct,
                    config=state.config, managed=state.managed, netns=state.netns,
                    source_config=state.source_config, protocols=state.protocols,
                    h2=h2_status(state.h2_offered, state.mpm, state.host, state.port, running=pid is not None))
        if pid is not None:
            status = fetch_status(state.status_url, timeout=2.0)
            if status is not None:
                info["busy_workers"] = status.busy
                info["idle_workers"] = status.idle
                info["generation"] = status.generation
        return info

    def _require_state(self) -> SandboxState:
        state = self.load_state()
        if state is None or self.running_pid() is None:
            raise AdvisorError(f"no staging sandbox is running in {self.work_dir}",
                               hint="start one with `apache-advisor staging up`")
        return state


def _read_or_empty(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
