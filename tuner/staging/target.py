"""Staging targets: where a trial applies a candidate config and sends load.

`StagingTarget` is the interface: a handful of primitives (read/write the
managed include, validate, reload, health-check, find the server's processes).
`ManagedConfig` builds the safe workflow on top of any target: journal first,
write, validate, reload, health-check, roll back on failure, restore at the end.
Two local targets live here (the sandbox and an existing server on this host);
the remote one (advisor.tuner.staging.remote_target) implements the primitives over SSH.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import subprocess
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from advisor.errors import AdvisorError, ConfigError, UsageError
from advisor.tuner.load import httperf
from advisor.tuner.measure.status import fetch_status, wait_healthy
from advisor.tuner.staging.sandbox import INSTRUMENT_HEADER, MANAGED_HEADER, Sandbox, config_test_error, find_httpd

# How long a server that accepts connections but answers none in time (still
# serving the last trial's backlog) may take before it counts as gone: as
# long as the runner waits for a server to drain (runner.QUIET_TIMEOUT_S).
BUSY_SERVER_WAIT_S = 20.0
# A server whose accept queue keeps shrinking is working through it, however
# long that takes (thousands of queued TLS handshakes on half a core took
# longer than BUSY_SERVER_WAIT_S after a worst-practice trial); it is waited
# for while it drains, up to this bound.
DRAINING_SERVER_MAX_S = 180.0
# How far apart the two looks at the accept queue are that tell a draining
# server from a stuck one (longer than a remote target's cached reading).
QUEUE_LOOK_APART_S = 1.0


# -- the interface -----------------------------------------------------------

@dataclass(frozen=True)
class HostKernel:
    """What sizes a worker pool on the server's host."""

    ram_bytes: int
    socket_buffer_bytes: int | None
    """net.ipv4.tcp_rmem + tcp_wmem defaults: one connection's kernel buffers."""
    somaxconn: int | None
    where: str
    """Whose figures: "this host's", "root@10.0.0.2's"."""


class StagingTarget(ABC):
    """One staging server. Implementations talk to it; ManagedConfig keeps it safe."""

    kind: str = "abstract"
    # Start-up-only limits the last change could not apply (no full restart
    # available): "ServerLimit 256 -> 4". Set by ManagedConfig; trials on a
    # server in that state are invalid.
    pending_restart: list[str] = []
    # (server pid, children, monotonic time the count last changed, when this
    # was seen) once ManagedConfig last let a reload settle: the next trial's
    # quiet wait need not watch the same pool hold still a second time.
    pool_settled: tuple[int | None, int, float, float] | None = None

    @property
    @abstractmethod
    def base_url(self) -> str: ...

    @property
    @abstractmethod
    def status_url(self) -> str | None: ...

    @property
    @abstractmethod
    def managed_path(self) -> Path:
        """The include file the tool owns (the journal lives beside it)."""

    @abstractmethod
    def read_managed(self) -> str | None: ...

    @abstractmethod
    def write_managed(self, text: str | None) -> None:
        """Write atomically; None removes the file (it did not exist before)."""

    @abstractmethod
    def validate(self) -> None:
        """Config test; raise ConfigError on refusal."""

    @abstractmethod
    def reload(self) -> None:
        """Graceful reload; raise AdvisorError on refusal."""

    @abstractmethod
    def server_pid(self) -> int | None:
        """The parent httpd process, for process metrics and its network namespace."""

    def health_url(self) -> str:
        return self.base_url + "/"

    def metrics_collector(self, **settings):
        """The collector of a trial's server metrics (advisor.tuner.measure.metrics.MetricsCollector's
        settings: interval, server_pid, port, status_url, max_samples, cpu_quota)."""
        from advisor.tuner.measure.metrics import MetricsCollector

        return MetricsCollector(**settings)

    def server_children(self) -> set[int]:
        """The pids of the parent httpd's children (a reload replaces them)."""
        import psutil

        pid = self.server_pid()
        try:
            return {c.pid for c in psutil.Process(pid).children()} if pid else set()
        except psutil.Error:
            return set()

    @property
    def config_file(self) -> Path | None:
        """The httpd.conf the server reads, if known: the verdict quotes its lines."""
        return None

    @property
    def state_base(self) -> Path:
        """A file on this machine beside which the journal, the lock and the load
        record live: the managed include itself, or a stand-in for a remote one."""
        return self.managed_path

    @property
    def load_record(self) -> Path:
        """Beside the managed include: the load generators running against this target."""
        return self.state_base.with_name(self.state_base.name + ".load")

    def cpu_quota(self):
        """A CPU quota the server runs under (advisor.tuner.measure.cgroup.CpuQuota), if any."""
        return None

    def fpm_status_socket(self) -> str | None:
        """The status socket of a php-fpm pool behind the server (`staging up --php-fpm`), if any."""
        return None

    def config_source(self):
        """(path, LoadOptions) with which the config model reads the server's
        config as it reads it; None when the config is not known."""
        from advisor.config.load_options import LoadOptions

        path = self.config_file
        return None if path is None else (str(path), LoadOptions(apache_version="2.4"))

    def where(self, path: str) -> str:
        """How errors name a file of the server's config (a remote target prefixes its host)."""
        return path

    def host_kernel(self) -> "HostKernel":
        """RAM and socket settings of the server's host: this machine here."""
        from advisor.capacity.host_probe import read_host_kernel

        ram, buffers, somaxconn = read_host_kernel()
        return HostKernel(ram, buffers, somaxconn, "this host's")

    on_this_machine = True
    """False for a server on another host: it cannot share httperf's cores."""

    def child_count(self, pid: int | None) -> int | None:
        """How many processes the parent httpd `pid` has now (the warm-up and the
        quiet check watch the pool grow and settle)."""
        from advisor.tuner.measure.metrics import read_child_count

        return read_child_count(pid)

    def accept_queue(self, pid: int | None, port: int | None) -> int | None:
        """Connections waiting for accept() on the server's listener."""
        from advisor.tuner.measure.metrics import read_listener

        return read_listener(f"/proc/{pid}/net" if pid else "/proc/self/net", port)

    @property
    def mpm(self) -> str | None:
        return None  # read from the config

    def can_restart(self) -> bool:
        return False

    def restart(self) -> None:
        """Full stop and start, for limits a graceful restart keeps."""
        raise AdvisorError(f"the staging server at {self.base_url} cannot be restarted by the tool")

    def instrument(self) -> list[str]:
        """Re-derive the measuring instruments' share of the config after a change (see pool.compensation)."""
        return []

    # -- the MPM switch (tune --allow-mpm-switch) ------------------------------
    # A switch edits config files besides the managed include (the line that
    # loads the MPM); ManagedConfig keeps their original text in its journal,
    # writes it back at the end and restarts the server in full, since a
    # graceful restart cannot change the MPM.

    @property
    def can_switch_mpm(self) -> bool:
        return False

    def check_mpm_switch(self, cfg) -> None:
        """Before anything changes: raise UsageError when this server cannot run
        the other MPMs (`cfg`: the config model of what it reads)."""
        raise UsageError("--allow-mpm-switch needs a target that can load another MPM and restart in full",
                         hint="tune the sandbox, or an existing server with --restart-cmd")

    def configured_mpm(self) -> str | None:
        """The MPM the config files load now (what a restart would run)."""
        return None

    def running_mpm(self) -> str | None:
        """The MPM the server says it runs (mod_status's ServerMPM), None when it does not say."""
        if not self.status_url:
            return None
        snap = fetch_status(self.status_url, timeout=2.0)
        mpm = snap.fields.get("ServerMPM") if snap is not None else None
        return mpm.lower() if mpm else None

    def mpm_files(self) -> dict[str, str | None]:
        """The files a switch edits, with their text now (kept in the journal)."""
        return {}

    def switch_mpm(self, mpm: str) -> None:
        """Make the config load `mpm` (the next full restart runs it)."""
        raise AdvisorError(f"the staging server at {self.base_url} cannot switch its MPM")

    def write_config_file(self, path: str, text: str | None) -> None:
        """Put a file the switch edited back as it was (in place: a symlink stays one)."""
        raise AdvisorError(f"cannot write {path} on the staging server at {self.base_url}")

    def read_config_file(self, path: str) -> str | None:
        return _read_or_none(Path(path))

    def pool_config(self, claimed: bool = True):
        """The worker pool (advisor.tuner.staging.poolconfig.PoolConfig): what the config claims,
        or (claimed=False) what the server runs, instruments' share included."""
        from advisor.tuner.staging.poolconfig import read_pool

        path = self.config_file
        return read_pool(path, self.mpm) if path is not None else None

    def compensated(self) -> bool:
        """True when the server runs one more worker for the collector's connection."""
        return False

    def check_alive(self, busy_wait_s: float = BUSY_SERVER_WAIT_S) -> None:
        """A one-line error unless the server answers. A handshake that times
        out on a connection the server accepted is a server still working
        through the last trial's backlog, not a dead one: it gets `busy_wait_s`,
        and `busy_wait_s` more each time that runs out while its accept queue
        is still shrinking, up to DRAINING_SERVER_MAX_S (a refused connection
        fails at once)."""
        started = time.monotonic()
        deadline = started + busy_wait_s
        if self.base_url.lower().startswith("https:"):
            # A plain-HTTP port behind an https URL fails here in one line, not as a TLS error mid-trial.
            from urllib.parse import urlsplit

            from advisor.tuner.measure.tls_probe import TlsProbeTimeout, probe

            parts = urlsplit(self.base_url)
            port = parts.port or 443
            while True:
                try:
                    self.tls_info = probe(parts.hostname or "127.0.0.1", port, self.base_url)
                    break
                except TlsProbeTimeout:
                    if time.monotonic() < deadline:
                        continue
                    if time.monotonic() - started < DRAINING_SERVER_MAX_S and self._queue_shrinks(port):
                        deadline = time.monotonic() + busy_wait_s
                        continue
                    raise
        wait_healthy(self.health_url(), timeout=3.0, busy_timeout=deadline - time.monotonic())

    def _queue_shrinks(self, port: int) -> bool:
        """Whether the server's accept queue is shorter a moment later: it is
        accepting (read only once a wait has run out, never on the way of an
        answering server)."""
        pid = self.server_pid()
        before = self.accept_queue(pid, port)
        if not before:
            return False
        time.sleep(QUEUE_LOOK_APART_S)
        after = self.accept_queue(pid, port)
        return after is not None and after < before

    # What check_alive's TLS connection negotiated (advisor.tuner.measure.tls_probe.TlsInfo); None over HTTP.
    tls_info = None

    def describe(self) -> dict[str, object]:
        info: dict[str, object] = {"kind": self.kind, "url": self.base_url, "managed": str(self.managed_path)}
        if self.tls_info is not None:
            info["tls"] = {"version": self.tls_info.version, "key_type": self.tls_info.key_type,
                           "cipher": self.tls_info.cipher}
        return info

    def wait_reloaded(self, before: int | None, timeout: float = 10.0) -> None:
        """After a graceful reload: wait for a new config generation, then health."""
        deadline = time.monotonic() + timeout
        if before is not None and self.status_url:
            while time.monotonic() < deadline:
                snap = fetch_status(self.status_url, timeout=1.0)
                if snap and snap.generation is not None and snap.generation > before:
                    break
                time.sleep(0.05)
            else:
                raise AdvisorError(f"the server at {self.base_url} did not take the new configuration",
                                   hint="its error log says why")
        wait_healthy(self.health_url(), timeout=max(1.0, deadline - time.monotonic()))

    def generation(self) -> int | None:
        if not self.status_url:
            return None
        snap = fetch_status(self.status_url, timeout=2.0)
        return snap.generation if snap else None


class SandboxTarget(StagingTarget):
    """The sandbox that `staging up` started."""

    kind = "sandbox"

    def __init__(self, sandbox: Sandbox):
        state = sandbox.load_state()
        if state is None or sandbox.running_pid() is None:
            raise AdvisorError(f"no staging sandbox is running in {sandbox.work_dir}",
                               hint="start one with `apache-advisor staging up`")
        self.sandbox = sandbox
        self.state = state

    @property
    def base_url(self) -> str:
        return self.state.base_url

    @property
    def status_url(self) -> str | None:
        return self.state.status_url

    @property
    def managed_path(self) -> Path:
        return Path(self.state.managed)

    def health_url(self) -> str:
        return self.base_url + "/index.html"

    @property
    def config_file(self) -> Path | None:
        return Path(self.state.config)

    def read_managed(self) -> str | None:
        return _read_or_none(self.managed_path)

    def write_managed(self, text: str | None) -> None:
        _atomic_write(self.managed_path, text)

    def validate(self) -> None:
        self.sandbox.validate()

    def reload(self) -> None:
        self.sandbox.reload()

    def server_pid(self) -> int | None:
        return self.sandbox.running_pid()

    def cpu_quota(self):
        return self.sandbox.cpu_quota()

    def fpm_status_socket(self) -> str | None:
        return (self.state.php_fpm or {}).get("status_socket")

    @property
    def mpm(self) -> str | None:
        # The config's, not staging.json's: an MPM switch edits the config first.
        return self.sandbox.configured_mpm() or self.state.mpm

    def can_restart(self) -> bool:
        return True

    def restart(self) -> None:
        self.sandbox.restart()
        self.state = self.sandbox.load_state() or self.state

    def instrument(self) -> list[str]:
        return self.sandbox.write_instrument(self.mpm)

    def pool_config(self, claimed: bool = True):
        from advisor.tuner.staging.poolconfig import read_pool

        skip = self.sandbox.instrument_path if claimed else None
        return read_pool(self.config_file, self.mpm, skip=skip)

    # The MPM switch: the sandbox's own httpd.conf and site.conf (sandbox.py).

    @property
    def can_switch_mpm(self) -> bool:
        return True

    def check_mpm_switch(self, cfg) -> None:
        self.sandbox.check_mpm_modules()

    def configured_mpm(self) -> str | None:
        return self.sandbox.configured_mpm()

    def mpm_files(self) -> dict[str, str | None]:
        return {str(path): _read_or_none(path) for path in self.sandbox.mpm_switch_files()}

    def switch_mpm(self, mpm: str) -> None:
        self.sandbox.switch_mpm(mpm)

    def write_config_file(self, path: str, text: str | None) -> None:
        if path not in {str(p) for p in self.sandbox.mpm_switch_files()}:
            raise AdvisorError(f"{path} is not a file of the sandbox's MPM switch", file=path)
        _atomic_write(Path(path), text)

    def compensated(self) -> bool:
        try:
            text = self.sandbox.instrument_path.read_text()
        except OSError:
            return False
        return bool(text[len(INSTRUMENT_HEADER):].strip()) and f'"{self.sandbox.instrument_path}"' in \
            self.sandbox.config_path.read_text()

    def describe(self) -> dict[str, object]:
        info = super().describe()
        info.update(work_dir=str(self.sandbox.work_dir), mpm=self.mpm,
                    server_cpus=self.state.server_cpus, netns=self.state.netns,
                    cpu_quota_pct=self.state.cpu_quota_pct)
        return info


class ExistingServerTarget(StagingTarget):
    """A staging httpd the admin runs (here or on another host), named by its URL."""

    def _set_url(self, url: str, status_url: str | None) -> None:
        self._base, self._path = split_url(url)
        self._status = status_url or f"{self._base}/server-status?auto"

    @property
    def base_url(self) -> str:
        return self._base

    @property
    def status_url(self) -> str | None:
        return self._status

    def health_url(self) -> str:
        return self._base + self._path

    def use_https(self) -> None:
        """--tls over an http:// URL: the same host and port, spoken to in TLS."""
        status = self._status
        if status and status.lower().startswith("http:"):
            status = "https:" + status[5:]
        self._set_url("https:" + (self._base + self._path)[5:], status)

    # -- restart and the MPM switch ----------------------------------------------
    # The switch edits the one line that loads the MPM, where the admin wrote
    # it (on Debian, mods-enabled/mpm_prefork.load), in place: a symlink stays
    # a symlink, and the restore writes the file's original text back.

    restart_cmd: str | None = None
    _mpm_line: tuple[str, int] | None = None
    """(file, line) of the LoadModule that loads the MPM, once check_mpm_switch found it."""

    def can_restart(self) -> bool:
        return bool(self.restart_cmd)

    @property
    def can_switch_mpm(self) -> bool:
        return bool(self.restart_cmd)

    def restart(self) -> None:
        if not self.restart_cmd:
            super().restart()
        result = self._run_command(self.restart_cmd)
        if result.returncode != 0:
            said = " ".join((result.stderr or result.stdout).split()[-12:])
            raise AdvisorError(f"restart command refused: {said or f'exit {result.returncode}'}",
                               file=self._where(self._config_path()), hint=f"check --restart-cmd ({self.restart_cmd})")
        wait_healthy(self.health_url(), timeout=20.0)
        self._pin_again()

    pin_cpus: list[int] | None = None
    """Cores --server-cpus pinned the server to: a restarted server is pinned again."""

    def _pin_again(self) -> None:
        pid = self.server_pid() if self.pin_cpus and self.on_this_machine else None
        if pid is not None and self.pin_cpus:
            pin_tree(pid, self.pin_cpus)

    def check_mpm_switch(self, cfg) -> None:
        import posixpath

        from advisor.tuner.search.space import MPMS, loaded_mpm_line

        if not self.restart_cmd:
            raise mpm_switch_needs_restart()
        node = loaded_mpm_line(cfg)
        if node is None or len(node.args) < 2:
            raise UsageError(f"no LoadModule line of the config loads the {cfg.mpm} MPM", file=cfg.main_file,
                             hint="load the MPM with LoadModule (an MPM built into httpd cannot be switched)")
        module = node.args[1] if posixpath.isabs(node.args[1]) else posixpath.join(cfg.server_root, node.args[1])
        directory = posixpath.dirname(module)
        for mpm in MPMS:
            name = f"mod_mpm_{mpm}.so"
            if not self._file_exists(posixpath.join(directory, name)):
                raise UsageError(f"{name} is not in {directory}: the {mpm} MPM cannot be loaded",
                                 file=self._where(node.file), line=node.line,
                                 hint="install it (Debian's apache2-bin ships all three MPMs), or leave out "
                                      "--allow-mpm-switch")
        self._mpm_line = (node.file, node.line)

    def configured_mpm(self) -> str | None:
        if self._mpm_line is None:
            return None
        import re

        file, number = self._mpm_line
        lines = (self.read_config_file(file) or "").splitlines()
        found = re.search(r"\bmpm_(\w+)_module\b", lines[number - 1]) if 0 < number <= len(lines) else None
        return found.group(1).lower() if found else None

    def mpm_files(self) -> dict[str, str | None]:
        if self._mpm_line is None:
            return {}
        return {self._mpm_line[0]: self.read_config_file(self._mpm_line[0])}

    def switch_mpm(self, mpm: str) -> None:
        import re

        if self._mpm_line is None:
            raise AdvisorError("the MPM switch was not checked (check_mpm_switch) before the first switch")
        file, number = self._mpm_line
        text = self.read_config_file(file) or ""
        lines = text.splitlines(keepends=True)
        if not 0 < number <= len(lines) or not re.search(r"\bmpm_\w+_module\b", lines[number - 1]):
            raise AdvisorError(f"line {number} no longer loads an MPM", file=self._where(file),
                               hint="the file changed during the session; restore it and run tune again")
        line = re.sub(r"\bmpm_\w+_module\b", f"mpm_{mpm}_module", lines[number - 1])
        lines[number - 1] = re.sub(r"\bmod_mpm_\w+?\.so\b", f"mod_mpm_{mpm}.so", line)
        self.write_config_file(file, "".join(lines))

    def _config_path(self) -> str:
        return str(getattr(self, "config", ""))

    def _where(self, path: str) -> str:
        return path

    def _file_exists(self, path: str) -> bool:
        return os.path.isfile(path)

    def _run_command(self, command: str) -> subprocess.CompletedProcess:
        return _run(shlex.split(command))


class LocalServerTarget(ExistingServerTarget):
    """An existing staging httpd on this host, driven by its own config and reload command."""

    kind = "local"

    def __init__(self, config: str, url: str, reload_cmd: str = "apachectl graceful",
                 managed: str | None = None, test_cmd: str | None = None, status_url: str | None = None,
                 restart_cmd: str | None = None):
        if not os.path.isfile(config):
            raise ConfigError("config file not found", file=config, hint="pass the config the staging server reads")
        self.config = os.path.abspath(config)
        self.url = url.rstrip("/")
        self.reload_cmd = reload_cmd
        self.restart_cmd = restart_cmd
        self.test_cmd = test_cmd
        self._managed = Path(managed) if managed else Path(self.config).parent / "apache-advisor-managed.conf"
        self._set_url(url, status_url)
        text = Path(self.config).read_text(errors="replace")
        if str(self._managed) not in text:
            raise ConfigError(
                f"the config does not include the managed file {self._managed}",
                file=self.config,
                hint=f"add `IncludeOptional {self._managed}` as its last line; the tool writes only that file",
            )

    @property
    def managed_path(self) -> Path:
        return self._managed

    @property
    def config_file(self) -> Path | None:
        return Path(self.config)

    def read_managed(self) -> str | None:
        return _read_or_none(self._managed)

    def write_managed(self, text: str | None) -> None:
        _atomic_write(self._managed, text)

    def validate(self) -> None:
        command = shlex.split(self.test_cmd) if self.test_cmd else [find_httpd(), "-t", "-f", self.config]
        result = _run(command)
        if result.returncode != 0:
            raise config_test_error(result.stderr + result.stdout, self.config)

    def reload(self) -> None:
        result = _run(shlex.split(self.reload_cmd))
        if result.returncode != 0:
            raise AdvisorError(f"reload command refused: {' '.join(result.stdout.split()[-12:]) or result.stderr.strip()[-200:]}",
                               file=self.config, hint=f"check --reload-cmd ({self.reload_cmd})")

    def server_pid(self) -> int | None:
        import psutil

        fallback = None
        for proc in psutil.process_iter(["pid", "ppid", "name", "cmdline"]):
            name = proc.info["name"] or ""
            if name not in ("apache2", "httpd"):
                continue
            try:
                parent_name = psutil.Process(proc.info["ppid"]).name()
            except psutil.Error:
                parent_name = ""
            if parent_name in ("apache2", "httpd"):
                continue
            if self.config in (proc.info["cmdline"] or []):
                return proc.info["pid"]
            fallback = fallback or proc.info["pid"]
        return fallback

    def describe(self) -> dict[str, object]:
        info = super().describe()
        info.update(config=self.config, reload_cmd=self.reload_cmd)
        if self.restart_cmd:
            info["restart_cmd"] = self.restart_cmd
        return info

    def write_config_file(self, path: str, text: str | None) -> None:
        if text is None:
            Path(path).unlink(missing_ok=True)
            return
        with open(path, "w") as handle:  # in place, through a symlink
            handle.write(text)


def pin_tree(pid: int, cpus: list[int]) -> None:
    """Pin a server on this machine: the parent (future children) and every current child."""
    import psutil

    try:
        parent = psutil.Process(pid)
        for process in [parent, *parent.children(recursive=True)]:
            try:
                process.cpu_affinity(cpus)
            except psutil.Error:
                continue
    except psutil.Error as exc:
        raise AdvisorError(f"cannot pin the server to cores {cpus}: {exc}") from None


def mpm_switch_needs_restart() -> UsageError:
    return UsageError("--allow-mpm-switch on an existing server needs --restart-cmd: a graceful reload "
                      "cannot change the MPM",
                      hint="give the command that stops and starts the server (--restart-cmd "
                           "'systemctl restart apache2'), or leave out --allow-mpm-switch")


def offered_load_text(url: object, client_cpus: list[int] | None, peak_rate: float, unit: str,
                      calls: int, generators: str | None = None) -> str:
    """One line for the admin before any load: the target, the load generators
    and the highest rate any trial may offer (all of them together)."""
    cores = ""
    if client_cpus:
        listed = ",".join(map(str, client_cpus))
        cores = f" (here on cores {listed})" if generators else f" on cores {listed}"
    requests = f" ({peak_rate * calls:,.6g} requests/s)" if calls > 1 else ""
    return f"{generators or 'httperf on this host'}{cores} -> {url}, at most {peak_rate:,.6g} {unit}{requests}"


def split_url(url: str) -> tuple[str, str]:
    """`http://host:port/path` -> ("http://host:port", "/path"); UsageError when it is no such URL."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"bad --url {url!r}", hint="write it like http://127.0.0.1:8080/")
    return f"{parts.scheme}://{parts.netloc}", parts.path or "/"


def _run(command: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise UsageError(f"command not found: {command[0]}", hint="check --reload-cmd / --test-cmd") from None
    except subprocess.TimeoutExpired:
        raise AdvisorError(f"command timed out: {' '.join(command)}") from None


def _read_or_none(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def _atomic_write(path: Path, text: str | None) -> None:
    if text is None:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


# -- the safe workflow -------------------------------------------------------

@dataclass
class Journal:
    """On disk before the first change: what to put back, even after kill -9."""

    managed: str
    original: str | None
    target: dict[str, object]
    pid: int
    started: float
    applied: list[str] = field(default_factory=list)
    files: dict[str, str | None] = field(default_factory=dict)
    """Other config files a trial edited (the line that loads the MPM), with
    their original text: written back before the managed include."""


def render_managed(directives: list[str]) -> str:
    body = "".join(f"{line}\n" for line in directives)
    return f"{MANAGED_HEADER}# Candidate written {time.strftime('%Y-%m-%d %H:%M:%S')}\n{body}"


class ManagedConfig:
    """Apply candidate configs to a target with journal, rollback and restore.

    Use as a context manager: entering takes a lock (one tool run per target)
    and first restores whatever a previous, killed run left behind; leaving
    restores the original, whatever happened in between.
    """

    def __init__(self, target: StagingTarget):
        self.target = target
        self.journal_path = target.state_base.with_name(target.state_base.name + ".journal")
        self.lock_path = target.state_base.with_name(target.state_base.name + ".lock")
        self._lock_fd: int | None = None
        self.recovered: Journal | None = None
        # ServerLimit/ThreadLimit the server was started with, as far as we know.
        self._running_limits: dict[str, int] = {}
        self.stray_load: list[int] = []  # load generators of a dead run, ended on entry
        self._running_mpm: str | None = None  # the MPM the server was started with, once a switch is possible
        self._mpm_unknown = False  # a dead run's switch is being undone: restart whatever the files say
        self._in_effect: tuple[tuple[str, ...], str] | None = None
        """The lines this run last applied and the managed text it wrote for them, once the
        server was reloaded with it (None: not known)."""
        self.reused = 0  # applies that found their text already in effect, and kept the warm pool

    def __enter__(self) -> "ManagedConfig":
        self.acquire()
        try:
            # A dead run's load first: a restore, or a trial, under a
            # stranger's load would measure that load.
            self.stray_load = httperf.end_recorded(self.target.load_record)
            self._running_limits = self._config_limits()  # what the server was started with, we assume
            self._running_mpm = self.target.configured_mpm()
            self.recovered = self.recover()
        except BaseException:
            self.release()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            self.restore()
        finally:
            self.release()

    def acquire(self) -> None:
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UsageError(f"another apache-advisor run is using {self.target.managed_path}",
                             hint="wait for it to finish") from None
        self._lock_fd = fd

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing drops the flock; a killed process drops it too
            self._lock_fd = None

    def read_journal(self) -> Journal | None:
        try:
            return Journal(**json.loads(self.journal_path.read_text()))
        except FileNotFoundError:
            return None
        except (ValueError, TypeError) as exc:
            raise AdvisorError(f"unreadable journal: {exc}", file=str(self.journal_path),
                               hint="restore the managed file by hand, then delete the journal") from None

    def _write_journal(self, journal: Journal) -> None:
        tmp = self.journal_path.with_name(self.journal_path.name + ".tmp")
        tmp.write_text(json.dumps(journal.__dict__, indent=2))
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, self.journal_path)

    def recover(self) -> Journal | None:
        """A journal left by a run that died: put its original back first."""
        journal = self.read_journal()
        if journal is None:
            return None
        self._mpm_unknown = bool(journal.files)
        self._restore_from(journal)
        return journal

    def apply(self, directives: list[str], mpm: str | None = None) -> None:
        """Write a candidate; on any failure roll back to the previous managed file.

        `mpm`: the MPM the candidate needs (tune --allow-mpm-switch). When it
        is not the one running, the target's config is switched to it (the
        files it edits are journalled first) and the server restarted in full.
        """
        previous = self.target.read_managed()
        journal = self.read_journal()
        if journal is None:
            journal = Journal(managed=str(self.target.managed_path), original=previous,
                              target=self.target.describe(), pid=os.getpid(), started=time.time())
        journal.applied = list(directives)
        current = self.target.configured_mpm()
        if self._running_mpm is None:
            self._running_mpm = current  # the switch became possible after entry (an existing server's check)
        switching = mpm is not None and mpm != current
        lines = tuple(directives)
        if not switching and self._in_effect is not None and self._in_effect == (lines, previous):
            # The server already runs these lines (a replicate right after a
            # run of the same point): a reload would only throw away the pool
            # the last run warmed, and the next warm-up would grow it again.
            self.reused += 1
            return
        before: dict[str, str | None] = {}
        if switching:
            before = self.target.mpm_files()
            for path, text in before.items():
                journal.files.setdefault(path, text)
        self._write_journal(journal)
        try:
            if switching:
                self.target.switch_mpm(mpm)
            text = render_managed(directives)
            self._change(text, validate=True)
            self._in_effect = (lines, text)
            running = self.target.running_mpm() if switching else None
            if running is not None and running != mpm:
                raise AdvisorError(f"the server at {self.target.base_url} runs the {running} MPM after a "
                                   f"restart into {mpm}", hint="check that the restart stops and starts it in full")
        except BaseException:
            for path, text in before.items():
                self.target.write_config_file(path, text)
            self._change(previous, validate=False)
            raise

    def restore(self) -> None:
        """Put the original back at the end of a run. The server is reloaded
        and answers with it before this returns; the pool is not watched
        settling, since no trial of this run follows (the next run's first
        apply, or its quiet wait, waits for it)."""
        journal = self.read_journal()
        if journal is not None:
            self._restore_from(journal, settle=False)

    def _restore_from(self, journal: Journal, settle: bool = True) -> None:
        # The files first, so nothing is lost; the journal goes only after the
        # reload was tried, so a run killed in between restores again next time.
        try:
            for path, text in journal.files.items():
                self.target.write_config_file(path, text)
            self._change(journal.original, validate=False, settle=settle)
        finally:
            if self.target.read_managed() == journal.original and all(
                    self.target.read_config_file(path) == text for path, text in journal.files.items()):
                self.journal_path.unlink(missing_ok=True)

    def _config_limits(self) -> dict[str, int]:
        pool = self.target.pool_config(claimed=False)
        return pool.restart_limits if pool is not None else {}

    def _change(self, text: str | None, validate: bool, settle: bool = True) -> None:
        """Write the managed include (None: remove it) and the instruments' share
        of the config that goes with it, then make the server run it."""
        self._in_effect = None  # apply() sets it once the server runs a candidate
        self.target.write_managed(text)
        self.target.instrument()
        if validate:
            self.target.validate()
        self._reload(settle)

    def _reload(self, settle: bool = True) -> None:
        """Graceful restart, or a full one when a start-up-only limit changed.

        httpd keeps ServerLimit and ThreadLimit across a graceful restart
        (AH00179): a trial would measure the old limit under the new name.
        A target that cannot restart keeps the change in `pending_restart`,
        which makes its trials invalid.
        """
        from advisor.tuner.staging.poolconfig import RESTART_ONLY

        wanted = self._config_limits()
        changed = [f"{name} {self._running_limits[name]} -> {wanted[name]}" for name in RESTART_ONLY
                   if name in wanted and name in self._running_limits and wanted[name] != self._running_limits[name]]
        # Another MPM loads only on a full restart. Unknown (a dead run's
        # switch, restored on entry): restart all the same.
        configured = self.target.configured_mpm()
        new_mpm = self._mpm_unknown or (configured is not None and self._running_mpm is not None
                                        and configured != self._running_mpm)
        if (changed or new_mpm) and self.target.can_restart():
            self._mpm_unknown = True  # a restart that fails leaves the server in no known state
            self.target.restart()
            self._running_limits = dict(wanted)
            self._running_mpm = configured
            self._mpm_unknown = False
            self.target.pending_restart = []
            if settle:
                self._settle(set())
            return
        self.target.pending_restart = changed
        before = self.target.generation()
        old_children = self._children() if settle else set()
        self.target.reload()
        self.target.wait_reloaded(before)
        if settle:
            self._settle(old_children)

    def _children(self) -> set[int]:
        return self.target.server_children()

    def _settle(self, old_children: set[int], timeout: float = 8.0, steady_s: float = 1.2) -> None:
        """Let the restart finish before a trial measures.

        Right after a graceful restart the old generation's children still
        finish their connections, and the new generation is not all there
        yet: prefork starts StartServers children only after a one-second
        pause. A probe started then measures the restart, not the config. We
        wait for the old processes to exit and for the number of children to
        hold still across one of the parent's one-second maintenance cycles.
        (The scoreboard is no guide: slots beyond a lowered limit keep their
        `G` mark with no process behind them.)
        """
        deadline = time.monotonic() + timeout
        while old_children & self._children() and time.monotonic() < deadline:
            time.sleep(0.05)
        count, since = len(self._children()), time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - since < steady_s:
            time.sleep(0.1)
            now = len(self._children())
            if now != count:
                count, since = now, time.monotonic()
        self.target.pool_settled = (self.target.server_pid(), count, since, time.monotonic())
