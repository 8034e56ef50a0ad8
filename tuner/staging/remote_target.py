"""A staging httpd on another host, driven over one SSH connection.

The primitives ManagedConfig needs, done remotely: the managed include is
read with `cat` and replaced by a temporary file renamed over it; the
config test and the reload are the server's own commands (`--test-cmd`,
default `apache2 -t -f CONFIG` or `httpd`; `--reload-cmd`, default
`apachectl graceful`); the parent httpd and its children are found with
`ps` there. Health and mod_status are read over HTTP from this machine, as
for a local server.

With `--become` the connection runs every one of these commands, reads and
writes under `sudo -n` on the host (tuner/transport/ssh.py): nothing here
changes, and the include keeps the owner and mode it had.

The journal, the lock and the load record stay on this machine, in a
directory named after the host and the managed file: after a run killed
with -9, the next run against the same host finds the journal and puts the
remote file back before anything else.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import posixpath
import re
import shlex
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import AdvisorError, ConfigError, UsageError
from advisor.tuner.staging.existing_server import ExistingServerTarget
from advisor.tuner.staging.httpd_binary import config_test_error
from advisor.tuner.transport.ssh import SshConnection

HTTPD_NAMES = ("apache2", "httpd")
PROBE_MAX_AGE_S = 0.5  # the warm-up asks ten times a second; one ssh round trip a half-second is enough
PID_MAX_AGE_S = 5.0

# Run on the host: the parent's child count and its listener's accept queue.
PROBE = """
def main():
    pid, port = int(sys.argv[1]), int(sys.argv[2])
    print(json.dumps([read_child_count(pid), read_listener("/proc/%d/net" % pid, port) if port else None]))


main()
"""


@dataclass(frozen=True)
class RemoteCpuQuota:
    """A CPU quota on the host's cgroup of the parent httpd (set there by its
    admin: systemd's CPUQuota=, a container). Its throttling is read by the
    sampler on the host; this machine has no such path."""

    path: str
    version: int
    pct: float
    period_us: int

    def throttling(self) -> None:
        return None


def _shipped(*functions) -> str:
    return "import json, os, sys\n\n" + "\n\n".join(inspect.getsource(f) for f in functions)


def default_state_root() -> Path:
    return Path(tempfile.gettempdir()) / f"apache-advisor-{os.getuid()}" / "remote"


class RemoteTarget(ExistingServerTarget):
    """An existing staging httpd on `conn`'s host."""

    kind = "remote"
    on_this_machine = False

    def __init__(self, conn: SshConnection, config: str, url: str, reload_cmd: str = "apachectl graceful",
                 managed: str | None = None, test_cmd: str | None = None, status_url: str | None = None,
                 state_root: Path | None = None, restart_cmd: str | None = None):
        if not posixpath.isabs(config):
            raise UsageError(f"--config {config!r} must be an absolute path on {conn.spec}",
                             hint="give the full path of the config the remote server reads")
        self.conn = conn
        self.config = posixpath.normpath(config)
        self.reload_cmd = reload_cmd
        self.restart_cmd = restart_cmd
        self.test_cmd = test_cmd
        self._managed = posixpath.normpath(managed) if managed else posixpath.join(
            posixpath.dirname(self.config), "apache-advisor-managed.conf")
        self._set_url(url, status_url)
        conn.connect()
        try:
            self._check_config()
        except BaseException:
            conn.close()  # the master would otherwise linger for ControlPersist seconds
            raise
        digest = hashlib.sha1(f"{conn.spec}\0{self._managed}".encode()).hexdigest()[:12]
        safe_host = re.sub(r"[^A-Za-z0-9.-]", "_", conn.spec.host)
        self._state_dir = (state_root or default_state_root()) / f"{safe_host}-{conn.spec.port or 22}-{digest}"
        self._state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._pid: tuple[float, int | None] | None = None
        self._probe: tuple[float, int, list] | None = None
        self._loaded = None  # the host's config as the model read it; dropped when the managed include changes

    def _check_config(self) -> None:
        text = self.conn.read_file(self.config)
        if text is None:
            raise ConfigError("config file not found", file=self.where(self.config),
                              hint="pass the config the staging server reads, as a path on that host")
        if self._managed not in text:
            raise ConfigError(
                f"the config does not include the managed file {self._managed}",
                file=self.where(self.config),
                hint=f"add `IncludeOptional {self._managed}` as its last line; the tool writes only that file",
            )

    def where(self, path: str) -> str:
        """`host:path`, how errors name a remote file."""
        return f"{self.conn.spec}:{path}"

    @property
    def managed_path(self) -> Path:
        return Path(self._managed)  # a path on the remote host

    @property
    def state_base(self) -> Path:
        return self._state_dir / posixpath.basename(self._managed)

    def read_managed(self) -> str | None:
        return self.conn.read_file(self._managed)

    def write_managed(self, text: str | None) -> None:
        self._loaded = None
        self.conn.write_file(self._managed, text)

    def loaded_config(self):
        """The host's config tree as the config model reads it (advisor.config.model.Config),
        copied once per state of the managed include."""
        from advisor.config.loader import load_config

        if self._loaded is None:
            self._loaded = load_config(*self.config_source())
        return self._loaded

    def pool_config(self, claimed: bool = True):
        """The pool the host's config sets up, read from the copy of its tree (the
        server there has no compensation include: claimed and run are the same)."""
        from advisor.tuner.staging.poolconfig import pool_of

        try:
            return pool_of(self.loaded_config())
        except (AdvisorError, OSError):
            return None

    def validate(self) -> None:
        if self.test_cmd:
            command = self.test_cmd
        else:
            # The same default as a local server: the system's httpd, -t on the config.
            config = shlex.quote(self.config)
            command = ("for b in apache2 httpd /usr/sbin/apache2 /usr/sbin/httpd; do "
                       f"if command -v \"$b\" >/dev/null 2>&1; then exec \"$b\" -t -f {config}; fi; done; "
                       "echo 'no apache2 or httpd binary found' >&2; exit 127")
        result = self.conn.run(command, timeout=60)
        if result.returncode != 0:
            error = config_test_error(result.stderr + result.stdout, self.config)
            error.file = self.where(error.file) if error.file else None
            if result.returncode == 127 and "found" in result.stderr:
                error.hint = "pass --test-cmd with the remote config test"
            raise error

    def reload(self) -> None:
        result = self.conn.run(self.reload_cmd, timeout=60)
        if result.returncode != 0:
            said = " ".join((result.stderr or result.stdout).split()[-12:])
            raise AdvisorError(f"reload command refused on {self.conn.spec}: {said or f'exit {result.returncode}'}",
                               file=self.where(self.config), hint=f"check --reload-cmd ({self.reload_cmd})")

    # The MPM switch's file access and restart, on the host (ExistingServerTarget does the rest).

    def _where(self, path: str) -> str:
        return self.where(path)

    def _file_exists(self, path: str) -> bool:
        return self.conn.run(f"test -f {shlex.quote(path)}", timeout=30).returncode == 0

    def _run_command(self, command: str):
        return self.conn.run(command, timeout=60)

    def read_config_file(self, path: str) -> str | None:
        return self.conn.read_file(path)

    def write_config_file(self, path: str, text: str | None) -> None:
        if text is None:
            self.conn.write_file(path, None)
            return
        # In place (`cat >`), not a rename: a symlinked .load file stays a symlink.
        result = self.conn.run(f"cat > {shlex.quote(path)}", input=text, timeout=60)
        if result.returncode != 0:
            raise AdvisorError(f"cannot write {self.where(path)}: {(result.stderr or '').strip()[-200:]}",
                               hint="check that the ssh user may write it")

    def server_pid(self) -> int | None:
        """None: the server has no process on this machine (remote_server_pid finds it there)."""
        return None

    def remote_server_pid(self) -> int | None:
        """The parent httpd on the host: started with this config, else the only top-level one."""
        return self._parent(self._processes())

    def metrics_collector(self, **settings):
        """The sampler on the host, for the host's parent httpd (a local pid means
        nothing there; the quota, from cpu_quota(), is a cgroup on the host)."""
        from advisor.tuner.measure.remote_sampler import RemoteMetricsCollector

        settings.pop("server_pid", None)
        return RemoteMetricsCollector(self.conn, remote_pid=self._parent_pid(fresh=True), **settings)

    def cpu_quota(self) -> RemoteCpuQuota | None:
        """The tightest CPU quota on the host's cgroups of the parent httpd, if any."""
        from advisor.tuner.measure.cgroup import find_quota

        pid = self._parent_pid(fresh=True)
        if pid is None:
            return None
        program = _shipped(find_quota) + "\n\nprint(json.dumps(find_quota(int(sys.argv[1]))))\n"
        result = self.conn.run(["python3", "-c", program, str(pid)], timeout=30)
        try:
            found = json.loads(result.stdout) if result.returncode == 0 else None
        except ValueError:
            found = None
        if not found:
            return None
        path, version, pct, period_us = found
        return RemoteCpuQuota(str(path), int(version), float(pct), int(period_us))

    def child_count(self, pid: int | None) -> int | None:
        return self._probed(None)[0]

    def accept_queue(self, pid: int | None, port: int | None) -> int | None:
        return self._probed(port)[1]

    def _parent_pid(self, fresh: bool = False) -> int | None:
        now = time.monotonic()
        if fresh or self._pid is None or now - self._pid[0] > PID_MAX_AGE_S:
            self._pid = (now, self.remote_server_pid())
        return self._pid[1]

    def _probed(self, port: int | None) -> list:
        """[children, accept queue] on the host, at most PROBE_MAX_AGE_S old."""
        from advisor.tuner.measure.metrics import read_child_count, read_listener

        port = port or self._probe_port()
        now = time.monotonic()
        if self._probe is not None and self._probe[1] == port and now - self._probe[0] < PROBE_MAX_AGE_S:
            return self._probe[2]
        pid = self._parent_pid()
        answer: list = [None, None]
        if pid is not None:
            result = self.conn.run(["python3", "-c", _shipped(read_child_count, read_listener) + PROBE, str(pid), str(port)],
                                   timeout=30)
            try:
                answer = json.loads(result.stdout) if result.returncode == 0 else answer
            except ValueError:
                pass
        self._probe = (now, port, answer)
        return answer

    def _probe_port(self) -> int:
        from urllib.parse import urlsplit

        return urlsplit(self.base_url).port or 80

    def server_children(self) -> set[int]:
        table = self._processes()  # one round trip: ManagedConfig polls this while a reload settles
        pid = self._parent(table)
        return {child for child, (ppid, _name, _args) in table.items() if ppid == pid} if pid else set()

    def _parent(self, table: dict[int, tuple[int, str, str]]) -> int | None:
        names = {pid: name for pid, (_ppid, name, _args) in table.items()}
        parents = [pid for pid, (ppid, name, _args) in table.items()
                   if name in HTTPD_NAMES and names.get(ppid) not in HTTPD_NAMES]
        for pid in parents:
            if self.config in table[pid][2].split():
                return pid
        return parents[0] if len(parents) == 1 else None

    def _processes(self) -> dict[int, tuple[int, str, str]]:
        """pid -> (parent pid, command name, arguments) of every process on the host."""
        out = self.conn.run("ps -e -o pid=,ppid=,comm=,args=", timeout=30, check=True).stdout
        table: dict[int, tuple[int, str, str]] = {}
        for line in out.splitlines():
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[0].isdigit() and parts[1].isdigit():
                table[int(parts[0])] = (int(parts[1]), parts[2], parts[3] if len(parts) > 3 else "")
        return table

    def config_source(self):
        """The host's config tree, copied here (tuner/staging/mirror.py) and
        read under that copy at the host's paths."""
        from advisor.config.load_options import LoadOptions
        from advisor.tuner.staging.mirror import read_host_tree

        root = self._state_dir / "tree"
        read_host_tree(self.conn, self.config, root)
        # httpd on the host runs with its own environment, not this one: only
        # Debian's envvars (copied with the tree) is known.
        return self.config, LoadOptions(apache_version="2.4", root=str(root), environ={})

    def host_kernel(self):
        """RAM and the kernel's socket settings of the host (what sizes its pool)."""
        from advisor.capacity.host_probe import read_host_kernel
        from advisor.tuner.staging.target import HostKernel

        program = _shipped(read_host_kernel) + "\n\nprint(json.dumps(read_host_kernel()))\n"
        result = self.conn.run(["python3", "-c", program], timeout=30)
        try:
            ram, buffers, somaxconn = json.loads(result.stdout)
            return HostKernel(int(ram), buffers, somaxconn, f"{self.conn.spec}'s")
        except (ValueError, TypeError):
            raise AdvisorError(f"cannot read RAM and socket settings on {self.conn.spec}",
                               hint="check that python3 runs there and /proc is readable") from None

    def describe(self) -> dict[str, object]:
        info = super().describe()
        info.update(host=str(self.conn.spec), managed=self.where(self._managed), config=self.where(self.config),
                    reload_cmd=self.reload_cmd, local_state=str(self._state_dir))
        if self.restart_cmd:
            info["restart_cmd"] = self.restart_cmd
        return info
