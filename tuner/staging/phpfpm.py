"""`staging up --php-fpm`: a php-fpm pool beside the sandbox httpd.

Debian's php-fpm package (installed by .ci/install) runs one pool of its
own here, with its own php-fpm.conf under the work dir: `pm = static` with
`--fpm-children` children on a TCP port of 127.0.0.1 that httpd hands `*.php`
to through mod_proxy_fcgi (TCP, not a unix socket: php-fpm counts its listen
queue only on TCP sockets on Linux, and that queue is the evidence that the
pool ran out), and the status page on a socket of its own
(`pm.status_listen`), which answers while every child of the pool is busy
(advisor.tuner.measure.fpm_status reads it). The workload script
(`/work.php`) computes and then sleeps, like the mixed workload.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from advisor.errors import AdvisorError, UsageError

from advisor.tuner.load.workload import PHP_SCRIPT as WORK_SCRIPT
DEFAULT_CHILDREN = 5  # Debian's www pool ships pm.max_children = 5
BINARY_GLOBS = ("/usr/sbin/php-fpm[0-9]*", "/usr/sbin/php-fpm")


@dataclass
class FpmState:
    """What a running sandbox pool is (kept in staging.json)."""

    binary: str
    config: str
    pool: str
    address: str
    """host:port the pool listens on."""
    status_socket: str
    pid_file: str
    children: int

    def to_dict(self) -> dict:
        return asdict(self)

    def pid(self) -> int | None:
        """The php-fpm master's pid when it runs this sandbox's config."""
        try:
            pid = int(Path(self.pid_file).read_text().split()[0])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            return None
        return pid if self.config.encode() in cmdline else None


def find_php_fpm() -> str:
    for pattern in BINARY_GLOBS:
        found = sorted(glob.glob(pattern))
        if found:
            return found[-1]
    raise AdvisorError("php-fpm is not installed: --php-fpm runs Debian's php-fpm beside the sandbox",
                       hint="apt-get install php-fpm (or run .ci/install), or leave out --php-fpm")


def pool_name(work_dir: Path) -> str:
    return "sb" + hashlib.sha1(str(work_dir.resolve()).encode()).hexdigest()[:10]


def write_config(work_dir: Path, children: int, user: str | None, group: str | None, port: int) -> FpmState:
    """php-fpm.conf for the sandbox's pool, and the workload script in the docroot."""
    if not 1 <= children <= 1024:
        raise UsageError(f"--fpm-children {children}: give 1 to 1024")
    binary = find_php_fpm()
    run, logs, conf = work_dir / "run", work_dir / "logs", work_dir / "conf"
    name = pool_name(work_dir)
    state = FpmState(binary=binary, config=str(conf / "php-fpm.conf"), pool=name,
                     address=f"127.0.0.1:{port}", status_socket=str(run / "php-fpm-status.sock"),
                     pid_file=str(run / "php-fpm.pid"), children=children)
    owner = f"user = {user}\ngroup = {group}\n" if user else "; not root: the pool runs as the invoking user\n"
    Path(state.config).write_text(
        "; Written by `apache-advisor staging up --php-fpm`.\n"
        f"[global]\npid = {state.pid_file}\nerror_log = {logs / 'php-fpm.log'}\ndaemonize = yes\n\n"
        f"[{name}]\n{owner}listen = {state.address}\nlisten.allowed_clients = 127.0.0.1\nlisten.backlog = 511\n"
        f"pm = static\npm.max_children = {children}\npm.max_requests = 0\n"
        f"pm.status_path = /fpm-status\npm.status_listen = {state.status_socket}\n"
        "request_terminate_timeout = 60s\n")
    with resources.as_file(resources.files("advisor.tuner.load") / "assets" / WORK_SCRIPT) as source:
        shutil.copyfile(source, work_dir / "docroot" / WORK_SCRIPT)
    return state


def httpd_lines(modules_dir: str, state: FpmState) -> str:
    """What the sandbox's httpd.conf needs to hand *.php to the pool."""
    return (f'LoadModule proxy_module "{modules_dir}/mod_proxy.so"\n'
            f'LoadModule proxy_fcgi_module "{modules_dir}/mod_proxy_fcgi.so"\n'
            '<FilesMatch "\\.php$">\n'
            f'    SetHandler "proxy:fcgi://{state.address}"\n'
            "</FilesMatch>")


def start(state: FpmState, prefix: list[str], timeout: float = 15.0) -> int:
    """Start php-fpm (daemonized); its master's pid once its sockets answer."""
    Path(state.pid_file).unlink(missing_ok=True)
    started = subprocess.run([*prefix, state.binary, "--fpm-config", state.config],
                             capture_output=True, text=True, timeout=timeout)
    if started.returncode != 0:
        last = (started.stderr or started.stdout).strip().splitlines()
        raise AdvisorError(f"php-fpm did not start: {last[-1] if last else 'no message'}", file=state.config)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = state.pid()
        if pid is not None and _answers(state.address) and os.path.exists(state.status_socket):
            return pid
        time.sleep(0.05)
    stop(state)
    raise AdvisorError(f"php-fpm did not listen on {state.address} within {timeout:g} s", file=state.config)


def _answers(address: str) -> bool:
    import socket

    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except OSError:
        return False


def stop(state: FpmState, timeout: float = 10.0) -> list[str]:
    """End the master (SIGQUIT: graceful), then any child of the pool left."""
    import psutil

    ended: list[str] = []
    pid = state.pid()
    if pid is not None:
        try:
            os.kill(pid, signal.SIGQUIT)
        except ProcessLookupError:
            pid = None
    deadline = time.monotonic() + timeout
    while pid is not None and time.monotonic() < deadline and state.pid() is not None:
        time.sleep(0.05)
    marks = (f"pool {state.pool}", state.config)
    for proc in psutil.process_iter(["pid", "cmdline"]):
        args = " ".join(proc.info["cmdline"] or [])
        if any(mark in args for mark in marks):
            try:
                proc.kill()
                ended.append(f"pid {proc.pid} (php-fpm): SIGKILL")
            except psutil.Error:
                continue
    return ended
