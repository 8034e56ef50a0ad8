"""The staging sandbox: a private httpd from the system's binary on 127.0.0.1.

Everything lives in one work directory:

    conf/httpd.conf    the generated stock config (never edited afterwards)
    conf/site.conf     tuning directives taken from `staging up CONFIG`
    conf/managed.conf  the managed include: the only file trials change
    docroot/, cgi-bin/ workload files
    logs/, run/        error log, pid file, scoreboard, cgid socket
    staging.json       what `staging status` and `bench` need to find it

The server is started under `taskset` so that every child inherits the
server's cores, optionally inside a network namespace (`ip netns exec`)
that a test created, to put a rate-limited link between client and server,
and optionally in a cgroup with a CPU quota (advisor.tuner.measure.cgroup).
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from string import Template

from advisor.errors import AdvisorError, ConfigError, UsageError
from advisor.tuner.load import workload
from advisor.tuner.measure.status import fetch_status, wait_healthy

STATE_FILE = "staging.json"
MANAGED_HEADER = "# Managed by apache-advisor: trials write tuned directives here.\n"
STOCK_MANAGED = MANAGED_HEADER + "# Empty means the stock configuration.\n"
INSTRUMENT_HEADER = ("# Written by apache-advisor after each change of the managed include: one more\n"
                     "# prefork worker for the metrics collector's kept-alive status connection.\n")

# Server-scope directives that shape performance and carry no host paths or
# addresses: these are what `staging up CONFIG` takes from an admin's config.
TUNING_DIRECTIVES = (
    "StartServers", "MinSpareServers", "MaxSpareServers", "MinSpareThreads",
    "MaxSpareThreads", "ThreadsPerChild", "ThreadLimit", "ServerLimit",
    "MaxRequestWorkers", "MaxClients", "MaxConnectionsPerChild",
    "MaxRequestsPerChild", "AsyncRequestWorkerFactor", "KeepAlive",
    "KeepAliveTimeout", "MaxKeepAliveRequests", "Timeout", "ListenBacklog",
    "EnableSendfile", "EnableMMAP", "HostnameLookups", "ExtendedStatus",
    "MaxMemFree", "ThreadStackSize",
)
MPMS = ("prefork", "worker", "event")


def default_work_dir() -> Path:
    """Where `staging up` puts its sandbox unless told otherwise.

    Under the temp dir rather than $HOME: when started as root the workers run
    as an unprivileged user, who must be able to walk into the docroot.
    """
    env = os.environ.get("APACHE_ADVISOR_STAGING_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("TMPDIR", "/tmp")) / f"apache-advisor-{os.getuid()}" / "staging"


def find_httpd(explicit: str | None = None) -> str:
    """The system httpd binary: apache2 (Debian) or httpd (Red Hat)."""
    candidates = [explicit] if explicit else [os.environ.get("APACHE_ADVISOR_HTTPD")]
    if not explicit:
        candidates += ["/usr/sbin/apache2", "/usr/sbin/httpd", shutil.which("apache2"), shutil.which("httpd")]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    where = explicit or "apache2/httpd"
    raise AdvisorError(
        f"httpd binary not found: {where}",
        hint="install apache2 (apt-get install apache2) or pass --httpd-bin PATH",
    )


def find_modules_dir(binary: str) -> str:
    for candidate in ("/usr/lib/apache2/modules", "/usr/lib64/httpd/modules", "/usr/lib/httpd/modules"):
        if os.path.isfile(os.path.join(candidate, "mod_status.so")):
            return candidate
    root = _compile_setting(binary, "HTTPD_ROOT")
    if root and os.path.isfile(os.path.join(root, "modules", "mod_status.so")):
        return os.path.join(root, "modules")
    raise AdvisorError(
        f"cannot find httpd's modules directory for {binary}",
        hint="install the package that ships mod_status.so (apache2-bin or httpd)",
    )


def _compile_setting(binary: str, name: str) -> str | None:
    try:
        out = subprocess.run([binary, "-V"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(rf'-D {name}="([^"]*)"', out)
    return match.group(1) if match else None


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

    @property
    def tls(self) -> bool:
        return self.tls_key is not None

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    @property
    def status_url(self) -> str:
        return f"{self.base_url}/server-status?auto"


@dataclass
class StopResult:
    """What `Sandbox.down` found and did."""

    was_running: bool  # a server, or processes of one, were there to stop
    # Processes that outlived httpd's own stop and that down ended itself,
    # as "pid N (name): SIGTERM|SIGKILL".
    stragglers: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.was_running


class Sandbox:
    """A private httpd in `work_dir`. Methods raise AdvisorError on bad input."""

    def __init__(self, work_dir: Path | str | None = None, binary: str | None = None):
        self.work_dir = Path(work_dir) if work_dir else default_work_dir()
        self._binary = binary

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

    def _save_state(self, state: SandboxState) -> None:
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
        php_fpm_children: int | None = None,
        timeout: float = 15.0,
        _link=None,
    ) -> SandboxState:
        if self.running_pid():
            raise UsageError(
                f"a sandbox is already running in {self.work_dir}",
                hint="run `apache-advisor staging down` first, or pass another --workdir",
            )
        if isolated:
            from advisor.tuner.staging import isolated as isolation

            if netns is not None:
                raise UsageError("--isolated makes its own namespace", hint="give --isolated or --netns, not both")
            link = isolation.create(str(self.work_dir.resolve()))
            try:
                return self.up(source_config=source_config, mpm=mpm, port=port or 8080, host=link.server_addr,
                               server_cpus=server_cpus, netns=link.netns,
                               status_allow=list(status_allow or ["127.0.0.1", "::1"]) + [link.client_addr],
                               extended_status=extended_status, cpu_quota_pct=cpu_quota_pct, tls=tls,
                               tls_key=tls_key, php_fpm_children=php_fpm_children, timeout=timeout,
                               _link=link)
            except BaseException:
                isolation.destroy(link)
                raise
        binary = find_httpd(self._binary)
        modules_dir = find_modules_dir(binary)
        site: list[str] = []
        if source_config:
            config_mpm, site = read_tuning_directives(source_config)
            mpm = mpm or config_mpm
        mpm = mpm or "event"
        if mpm not in MPMS:
            raise UsageError(f"unknown MPM {mpm!r}", hint="choose prefork, worker or event")
        if not port:
            port = free_port(host) if netns is None else 8080
        tls_text = "# plain HTTP (staging up --tls serves HTTPS)"
        if tls or tls_key is not None:
            from advisor.tuner.staging import tls_setup

            tls_key = tls_setup.check_key_type(tls_key)
            tls_setup.check_modules(modules_dir)
            # Made before anything is written: a key openssl cannot make leaves the work dir as it was.
            cert, key = tls_setup.make_key_and_cert(self.conf_dir / "tls", tls_key, host)
            tls_text = tls_setup.config_lines(modules_dir, self.work_dir / "run", host, port, cert, key)
        for sub in ("conf", "logs", "run", "docroot", "cgi-bin"):
            (self.work_dir / sub).mkdir(parents=True, exist_ok=True)
        workload.write_docroot(self.work_dir / "docroot", self.work_dir / "cgi-bin")
        user_group = _user_group_lines(self.work_dir)
        fpm = None
        fpm_text = "# no php-fpm (staging up --php-fpm hands *.php to a pool)"
        if php_fpm_children is not None:
            from advisor.tuner.staging import phpfpm

            owner = dict(line.split(None, 1) for line in user_group.splitlines() if not line.startswith("#"))
            fpm = phpfpm.write_config(self.work_dir, php_fpm_children, owner.get("User"), owner.get("Group"),
                                      free_port("127.0.0.1"))
            fpm_text = phpfpm.httpd_lines(modules_dir, fpm)
        allow = " ".join(status_allow or ["127.0.0.1", "::1"])
        cgi = cgi_module_lines(mpm, modules_dir, self.work_dir / "run")
        # The mixed workload's in-process endpoint; without mod_lua it answers 404.
        lua = (f'LoadModule lua_module "{modules_dir}/mod_lua.so"\n'
               f'<Files "{workload.MIXED_SCRIPT}">\n    SetHandler lua-script\n</Files>'
               if os.path.exists(os.path.join(modules_dir, "mod_lua.so"))
               else "# mod_lua is not installed: the mixed workload is not served")
        template = Template((resources.files("advisor.tuner.staging") / "assets" / "httpd.conf.in").read_text())
        text = template.substitute(
            server_root=self.work_dir,
            server_name=host,
            run_dir=self.work_dir / "run",
            log_dir=self.work_dir / "logs",
            user_group=user_group,
            mpm=mpm,
            modules_dir=modules_dir,
            cgi_module=cgi,
            lua_module=lua,
            listen=f"Listen {host}:{port}",
            mime_types="/etc/mime.types" if os.path.exists("/etc/mime.types") else "/dev/null",
            docroot=self.work_dir / "docroot",
            cgi_dir=self.work_dir / "cgi-bin",
            extended_status="On" if extended_status else "Off",
            status_allow=allow,
            tls=tls_text,
            php_fpm=fpm_text,
            managed=self.managed_path,
        )
        site_path = self.conf_dir / "site.conf"
        site_path.write_text("# Tuning directives taken from %s\n%s" % (source_config or "(none: stock)", "".join(f"{d}\n" for d in site)))
        text = text.replace(f'IncludeOptional "{self.managed_path}"',
                            f'Include "{site_path}"\nIncludeOptional "{self.managed_path}"\n'
                            f'IncludeOptional "{self.instrument_path}"')
        self.config_path.write_text(text)
        self.managed_path.write_text(STOCK_MANAGED)
        self.write_instrument(mpm)
        self.validate()
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
            pid = self._launch(command, timeout)
        except BaseException:
            if quota is not None:
                quota.remove(timeout=1.0)
            if fpm is not None:
                phpfpm.stop(fpm)
            raise
        state = SandboxState(
            work_dir=str(self.work_dir), binary=binary, config=str(self.config_path),
            managed=str(self.managed_path), host=host, port=port, mpm=mpm, pid=pid,
            server_cpus=server_cpus, netns=netns, source_config=source_config,
            site_directives=site, started_at=time.time(),
            cpu_quota_pct=cpu_quota_pct, cgroup=quota.path if quota else None,
            cgroup_version=quota.version if quota else None,
            isolated=_link.to_dict() if _link is not None else None,
            tls_key=tls_key,
            php_fpm=fpm.to_dict() if fpm is not None else None,
        )
        self._save_state(state)
        wait_healthy(state.base_url + "/index.html", timeout=timeout)
        return state

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

    def _launch(self, command: list[str], timeout: float) -> int:
        """Run httpd's `-k start` command; the new parent's pid."""
        started = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if started.returncode != 0:
            raise AdvisorError(f"httpd did not start: {_last_line(started.stderr or started.stdout)}",
                               file=str(self.config_path), hint=f"see {self.error_log}")
        return self._wait_for_pid(timeout)

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
        self._stop(self.running_pid(), state, quota, timeout=timeout, grace=2.0)
        command = self.command_prefix(state.server_cpus, state.netns) + [state.binary, "-f", state.config, "-k", "start"]
        if quota is not None:
            command = quota.wrap(command)
        state.pid = self._launch(command, timeout)
        state.started_at = time.time()
        state.mpm = self.configured_mpm() or state.mpm  # an MPM switch takes effect here
        self._save_state(state)
        wait_healthy(state.base_url + "/index.html", timeout=timeout)

    # -- the MPM switch (tune --allow-mpm-switch) -------------------------------
    # httpd.conf's MPM and CGI lines are rewritten for another MPM, and the
    # site's MPM-only directives put under <IfModule>, so that the config
    # reads under all three; the session journals both files' text first
    # and puts it back at the end (ManagedConfig).

    def mpm_switch_files(self) -> list[Path]:
        return [self.config_path, self.conf_dir / "site.conf"]

    def configured_mpm(self) -> str | None:
        found = _MPM_LINE.search(_read_or_empty(self.config_path))
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
        text = self.config_path.read_text()
        if not _MPM_LINE.search(text) or not _CGI_LINES.search(text):
            raise AdvisorError("the sandbox's config has no MPM or CGI line to switch", file=str(self.config_path),
                               hint="run `apache-advisor staging down` and `up` again")
        text = _MPM_LINE.sub(f'LoadModule mpm_{mpm}_module "{modules_dir}/mod_mpm_{mpm}.so"', text, count=1)
        text = _CGI_LINES.sub(cgi_module_lines(mpm, modules_dir, self.work_dir / "run") + "\n", text, count=1)
        _write_atomically(self.config_path, text)
        site = self.conf_dir / "site.conf"
        if site.exists():
            _write_atomically(site, guard_mpm_directives(site.read_text()))

    def _wait_for_pid(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid = self.running_pid()
            if pid:
                return pid
            time.sleep(0.05)
        raise AdvisorError("httpd started but wrote no pid file", file=str(self.error_log),
                           hint="read the error log for the reason")

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
        stragglers = self._stop(pid, state, quota, timeout=timeout, grace=grace)
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

    def _stop(self, pid: int | None, state: SandboxState | None, quota, *, timeout: float,
              grace: float) -> list[str]:
        """httpd's own stop, then every process of the sandbox gone (see down)."""
        # Taken before the stop: once the parent is gone, its children's
        # parent link is gone too, and an exiting process has no cmdline.
        known = self._processes(pid, quota)
        stragglers: list[str] = []
        if pid is not None:
            binary = state.binary if state else find_httpd(self._binary)
            subprocess.run([binary, "-f", str(self.config_path), "-k", "stop"],
                           capture_output=True, text=True, timeout=timeout)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.05)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)  # our own server that ignored the stop
                stragglers.append(f"pid {pid} (httpd parent, ignored the stop): SIGKILL")
        stragglers += self._end_stragglers(known, quota, grace=grace if pid is not None else 0.0)
        return stragglers

    def _processes(self, pid: int | None, quota=None) -> dict[int, "object"]:
        """Every live process of this sandbox, by pid (psutil.Process, which
        also checks the pid was not reused): the parent's tree, anything run
        with this sandbox's config or one of its CGI programs, and whatever
        sits in its cgroup. Never this process or its ancestors."""
        import psutil

        found: dict[int, psutil.Process] = {}
        if pid is not None:
            try:
                parent = psutil.Process(pid)
                for proc in [parent, *parent.children(recursive=True)]:
                    found[proc.pid] = proc
            except psutil.Error:
                pass
        config = str(self.config_path)
        cgi_dir = str(self.work_dir / "cgi-bin") + os.sep
        for proc in psutil.process_iter(["pid", "cmdline"]):
            args = proc.info["cmdline"] or []
            if config in args or any(arg.startswith(cgi_dir) for arg in args):
                found.setdefault(proc.pid, proc)
        if quota is not None:
            try:
                for line in quota.procs_file.read_text().split():
                    try:
                        found.setdefault(int(line), psutil.Process(int(line)))
                    except psutil.Error:
                        continue
            except OSError:
                pass
        mine = {os.getpid()}
        try:
            mine.update(p.pid for p in psutil.Process().parents())
        except psutil.Error:
            pass
        return {p: proc for p, proc in found.items() if p not in mine and _running(proc)}

    def _end_stragglers(self, known: dict[int, "object"], quota, grace: float,
                        rounds: int = 3) -> list[str]:
        """Wait up to `grace` s for the sandbox's processes to go, then end the rest.

        Looked for again after each round, since a dying process may have
        forked; the rounds are bounded.
        """
        import psutil

        ended: list[str] = []
        deadline = time.monotonic() + grace
        left = {p: proc for p, proc in known.items() if _running(proc)}
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = {p: proc for p, proc in left.items() if _running(proc)}
        for _ in range(rounds):
            left.update(self._processes(None, quota))
            left = {p: proc for p, proc in left.items() if _running(proc)}
            if not left:
                return ended
            names = {p: _describe(proc) for p, proc in left.items()}
            for proc in left.values():
                try:
                    proc.terminate()
                except psutil.Error:
                    pass
            _gone, alive = psutil.wait_procs(list(left.values()), timeout=2.0)
            alive = [proc for proc in alive if _running(proc)]
            for proc in alive:
                try:
                    proc.kill()
                except psutil.Error:
                    pass
            psutil.wait_procs(alive, timeout=5.0)
            killed = {proc.pid for proc in alive}
            ended += [f"pid {p} ({names[p]}): {'SIGKILL' if p in killed else 'SIGTERM'}" for p in sorted(left)]
            left = {p: proc for p, proc in left.items() if _running(proc)}
        if left:
            raise AdvisorError(
                "processes of the sandbox would not end: " + ", ".join(f"pid {p}" for p in sorted(left)),
                file=str(self.work_dir), hint="they may be stuck in the kernel (state D); check `ps -o pid,stat,cmd`")
        return ended

    def status(self) -> dict[str, object]:
        state = self.load_state()
        pid = self.running_pid()
        info: dict[str, object] = {"work_dir": str(self.work_dir), "running": pid is not None, "pid": pid}
        if state is None:
            return info
        info.update(url=state.base_url, tls_key=state.tls_key, mpm=state.mpm, server_cpus=state.server_cpus, cpu_quota_pct=state.cpu_quota_pct,
                    config=state.config, managed=state.managed, netns=state.netns,
                    source_config=state.source_config)
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


_MPM_LINE = re.compile(r'^LoadModule mpm_(\w+)_module "[^"\n]*"$', re.M)
_CGI_LINES = re.compile(r'^LoadModule cgid?_module "[^"\n]*"\n(?:ScriptSock "[^"\n]*"\n)?', re.M)
# Server-scope directives that exist under some MPMs only: httpd refuses the
# others' (prefork has no threads; only event parks connections).
MPM_ONLY_DIRECTIVES: dict[str, str] = {
    "minspareservers": "mpm_prefork_module", "maxspareservers": "mpm_prefork_module",
    "threadsperchild": "!mpm_prefork_module", "threadlimit": "!mpm_prefork_module",
    "minsparethreads": "!mpm_prefork_module", "maxsparethreads": "!mpm_prefork_module",
    "threadstacksize": "!mpm_prefork_module", "asyncrequestworkerfactor": "mpm_event_module",
}


def cgi_module_lines(mpm: str, modules_dir: str, run_dir: Path) -> str:
    """mod_cgi under prefork; mod_cgid (one CGI daemon, no fork of a threaded child) otherwise."""
    if mpm == "prefork":
        return f'LoadModule cgi_module "{modules_dir}/mod_cgi.so"'
    return f'LoadModule cgid_module "{modules_dir}/mod_cgid.so"\nScriptSock "{run_dir}/cgid.sock"'


def guard_mpm_directives(text: str) -> str:
    """Each MPM-only line of a flat directive file inside the <IfModule> of the
    MPMs that have it; a file already guarded is left as it is."""
    if "<IfModule" in text:
        return text
    out = []
    for line in text.splitlines():
        guard = MPM_ONLY_DIRECTIVES.get(line.split(None, 1)[0].lower()) if line.strip() else None
        out.append(f"<IfModule {guard}>\n    {line}\n</IfModule>" if guard else line)
    return "".join(f"{line}\n" for line in out)


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def read_tuning_directives(path: str) -> tuple[str | None, list[str]]:
    """The MPM and the server-scope tuning directives of an admin's config."""
    if not os.path.isfile(path):
        raise ConfigError("config file not found", file=path, hint="give the path of an httpd.conf")
    try:
        from advisor.config.load_options import LoadOptions
        from advisor.config.loader import load_config
    except ImportError:  # the config model is not there: read the one file ourselves
        return _read_tuning_plain(path)
    cfg = load_config(path, LoadOptions(apache_version="2.4"))
    lines: list[str] = []
    for name in TUNING_DIRECTIVES:
        directive = cfg.server_value(name)
        if directive is not None:
            lines.append(f"{name} {directive.raw_args}")
    return cfg.mpm, lines


def _read_tuning_plain(path: str) -> tuple[str | None, list[str]]:
    wanted = {name.lower(): name for name in TUNING_DIRECTIVES}
    found: dict[str, str] = {}
    mpm = None
    depth = 0
    for raw in Path(path).read_text(errors="replace").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("</"):
            depth = max(0, depth - 1)
            continue
        if line.startswith("<"):
            if not line.lower().startswith("<ifmodule"):
                depth += 1
            continue
        word, _, rest = line.partition(" ")
        match = re.match(r"loadmodule\s+mpm_(\w+)_module", line, re.I)
        if match:
            mpm = match.group(1).lower()
        if depth == 0 and word.lower() in wanted:
            found[word.lower()] = f"{wanted[word.lower()]} {rest.strip()}"
    return mpm, list(found.values())


def config_test_error(output: str, default_file: str) -> ConfigError:
    """Turn httpd's -t complaint into one file:line error."""
    # An error inside an included file is reported once per level of
    # inclusion, outermost first: the last one names the line to fix.
    matches = list(re.finditer(r"Syntax error on line (\d+) of ([^:\n]+):[ \t]*\n?", output))
    if matches:
        last = matches[-1]
        rest = output[last.end():].strip().splitlines()
        return ConfigError(rest[0].strip() if rest else "syntax error", file=last.group(2),
                           line=int(last.group(1)), hint="httpd refused the configuration; fix or remove that line")
    return ConfigError(f"httpd refused the configuration: {_last_line(output)}", file=default_file,
                       hint="run the config test by hand to see all of it")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is dead for our purposes.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _user_group_lines(work_dir: Path) -> str:
    """As root, httpd drops to an unprivileged user that must read the docroot."""
    if os.getuid() != 0:
        return "# not root: workers run as the invoking user"
    for name in ("www-data", "apache", "daemon", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        _make_traversable(work_dir)
        import grp

        group = grp.getgrgid(entry.pw_gid).gr_name
        return f"User {name}\nGroup {group}"
    return "# no unprivileged user found"


def _make_traversable(work_dir: Path) -> None:
    """Let the worker user walk down to the docroot.

    The work directory is ours to open up; its ancestors are not, so one that
    others cannot enter is an error with a hint rather than a chmod.
    """
    path = work_dir.resolve()
    os.chmod(path, path.stat().st_mode | 0o005)
    for directory in path.parents:
        if not directory.stat().st_mode & 0o001:
            raise UsageError(
                f"the httpd workers cannot enter {directory}",
                hint="use a --workdir under /tmp or another directory others may enter",
            )


def _running(proc) -> bool:
    """A psutil.Process that still exists and is not a zombie (a zombie holds nothing)."""
    import psutil

    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _describe(proc) -> str:
    """`apache2` or `linger.cgi`: the program's name, for the straggler report."""
    import psutil

    try:
        args = proc.cmdline()
        name = proc.name()
    except psutil.Error:
        return "gone"
    script = next((os.path.basename(a) for a in args[1:2] if a.startswith("/")), None)
    return f"{name}, {script}" if script and script != name else name


def _read_or_empty(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
