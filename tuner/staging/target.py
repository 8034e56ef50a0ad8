"""Staging targets: where a trial applies a candidate config and sends load.

`StagingTarget` is the interface: a handful of primitives (read/write the
managed include, validate, reload, health-check, find the server's processes).
`ManagedConfig` (advisor.tuner.staging.managed_config) builds the safe
workflow on top of any target: journal first, write, validate, reload,
health-check, roll back on failure, restore at the end.
The sandbox's target lives here; an existing server on this host in
advisor.tuner.staging.existing_server; the remote one
(advisor.tuner.staging.remote_target) implements the primitives over SSH.
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import AdvisorError, UsageError
from advisor.tuner.measure.status import fetch_status, wait_healthy
from advisor.tuner.staging.sandbox import INSTRUMENT_HEADER, Sandbox

# How long a server that accepts connections but answers none in time (still
# serving the last trial's backlog) may take before it counts as gone: as
# long as the runner waits for a server to drain (quiet_wait.QUIET_TIMEOUT_S).
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
        return read_text_or_none(Path(path))

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
        return read_text_or_none(self.managed_path)

    def write_managed(self, text: str | None) -> None:
        write_text_atomically(self.managed_path, text)

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
        return {str(path): read_text_or_none(path) for path in self.sandbox.mpm_switch_files()}

    def switch_mpm(self, mpm: str) -> None:
        self.sandbox.switch_mpm(mpm)

    def write_config_file(self, path: str, text: str | None) -> None:
        if path not in {str(p) for p in self.sandbox.mpm_switch_files()}:
            raise AdvisorError(f"{path} is not a file of the sandbox's MPM switch", file=path)
        write_text_atomically(Path(path), text)

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


def offered_load_text(url: object, client_cpus: list[int] | None, peak_rate: float, unit: str,
                      calls: float, generators: str | None = None, tool: str = "httperf") -> str:
    """One line for the admin before any load: the target, the load generators
    and the highest rate any trial may offer (all of them together)."""
    cores = ""
    if client_cpus:
        listed = ",".join(map(str, client_cpus))
        cores = f" (here on cores {listed})" if generators else f" on cores {listed}"
    requests = f" ({peak_rate * calls:,.6g} requests/s)" if calls > 1 else ""
    return f"{generators or f'{tool} on this host'}{cores} -> {url}, at most {peak_rate:,.6g} {unit}{requests}"


def read_text_or_none(path: Path) -> str | None:
    """A file's text; None when it does not exist."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def write_text_atomically(path: Path, text: str | None) -> None:
    """Replace a file in one step (mode 0644); None removes it."""
    if text is None:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
