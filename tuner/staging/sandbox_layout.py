"""The staging sandbox's work directory: where each of its files lives, the
state `staging up` leaves in staging.json, and the pid file that says
whether its server runs.

Everything lives in one work directory:

    conf/httpd.conf    the generated stock config (never edited afterwards)
    conf/site.conf     tuning directives taken from `staging up CONFIG`
    conf/managed.conf  the managed include: the only file trials change
    docroot/, cgi-bin/ workload files
    logs/, run/        error log, pid file, scoreboard, cgid socket
    staging.json       what `staging status` and `bench` need to find it
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from advisor.errors import AdvisorError
from advisor.tuner.staging.http2_setup import inactive_reason

STATE_FILE = "staging.json"


def default_work_dir() -> Path:
    """Where `staging up` puts its sandbox unless told otherwise.

    Under the temp dir rather than $HOME: when started as root the workers run
    as an unprivileged user, who must be able to walk into the docroot.
    """
    env = os.environ.get("APACHE_ADVISOR_STAGING_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("TMPDIR", "/tmp")) / f"apache-advisor-{os.getuid()}" / "staging"


@dataclass
class SandboxState:
    """What a running sandbox is: persisted in staging.json."""

    work_dir: str
    binary: str
    config: str
    managed: str
    host: str
    port: int
    mpm: str
    pid: int | None = None
    server_cpus: list[int] | None = None
    netns: str | None = None
    source_config: str | None = None
    site_directives: list[str] = field(default_factory=list)
    started_at: float = 0.0
    cpu_quota_pct: float | None = None  # % of one core the server may use (cgroup)
    cgroup: str | None = None
    cgroup_version: int | None = None
    isolated: dict | None = None
    """The namespace and link `staging up --isolated` made (advisor.tuner.staging.isolated.IsolatedLink)."""
    tls_key: str | None = None
    """`staging up --tls`: the key type (advisor.tuner.staging.tls_setup.KEY_TYPES); None serves plain HTTP."""
    php_fpm: dict | None = None
    """`staging up --php-fpm`: the pool beside httpd (advisor.tuner.staging.phpfpm.FpmState)."""
    protocols: list[str] = field(default_factory=lambda: ["http/1.1"])
    """The protocols httpd.conf's `Protocols` offers: ["h2", "http/1.1"] after `staging up --tls --h2`."""

    @property
    def h2_offered(self) -> bool:
        return "h2" in self.protocols

    @property
    def h2_inactive_reason(self) -> str | None:
        """Why h2, though offered, is not negotiated under the MPM the sandbox
        runs now (None where it is, or where it is not offered): what bench
        and tune check before they call a trial an HTTP/2 one."""
        return inactive_reason(self.mpm) if self.h2_offered else None

    @property
    def tls(self) -> bool:
        return self.tls_key is not None

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    @property
    def status_url(self) -> str:
        return f"{self.base_url}/server-status?auto"


class SandboxLayout:
    """The files of a sandbox in `work_dir`, its saved state and its server's pid."""

    def __init__(self, work_dir: Path):
        self.work_dir = work_dir

    # -- paths ---------------------------------------------------------------
    @property
    def conf_dir(self) -> Path:
        return self.work_dir / "conf"

    @property
    def config_path(self) -> Path:
        return self.conf_dir / "httpd.conf"

    @property
    def managed_path(self) -> Path:
        return self.conf_dir / "managed.conf"

    @property
    def instrument_path(self) -> Path:
        return self.conf_dir / "instrument.conf"

    @property
    def state_path(self) -> Path:
        return self.work_dir / STATE_FILE

    @property
    def pid_path(self) -> Path:
        return self.work_dir / "run" / "httpd.pid"

    @property
    def error_log(self) -> Path:
        return self.work_dir / "logs" / "error.log"

    # -- state ---------------------------------------------------------------
    def load_state(self) -> SandboxState | None:
        try:
            data = json.loads(self.state_path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise AdvisorError(f"unreadable sandbox state: {exc}", file=str(self.state_path),
                               hint="run `apache-advisor staging down` and `up` again") from None
        return SandboxState(**data)

    def save_state(self, state: SandboxState) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(state), indent=2))
        os.replace(tmp, self.state_path)

    def running_pid(self) -> int | None:
        """The parent httpd's pid if it is alive and really ours."""
        try:
            pid = int(self.pid_path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return None
        if str(self.config_path).encode() not in cmdline:
            return None  # a recycled pid, not our server
        return pid
