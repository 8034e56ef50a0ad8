"""A staging sandbox's processes: its httpd started (`-k start`, then the pid
file) and stopped, and every process of it found and ended: the parent
httpd's tree, anything run with the sandbox's config or one of its CGI
programs, whatever sits in its cgroup. `staging down` ends those that
outlive httpd's own stop (advisor.tuner.staging.sandbox.Sandbox.down)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from advisor.errors import AdvisorError
from advisor.tuner.staging.httpd_binary import find_httpd, last_output_line
from advisor.tuner.staging.sandbox_layout import SandboxLayout, SandboxState


def launch_server(layout: SandboxLayout, command: list[str], timeout: float) -> int:
    """Run httpd's `-k start` command; the new parent's pid."""
    started = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if started.returncode != 0:
        raise AdvisorError(f"httpd did not start: {last_output_line(started.stderr or started.stdout)}",
                           file=str(layout.config_path), hint=f"see {layout.error_log}")
    return _wait_for_pid(layout, timeout)


def _wait_for_pid(layout: SandboxLayout, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = layout.running_pid()
        if pid:
            return pid
        time.sleep(0.05)
    raise AdvisorError("httpd started but wrote no pid file", file=str(layout.error_log),
                       hint="read the error log for the reason")


def stop_server(layout: SandboxLayout, pid: int | None, state: SandboxState | None, quota,
                explicit_binary: str | None, *, timeout: float, grace: float) -> list[str]:
    """httpd's own stop, then every process of the sandbox gone (see Sandbox.down).
    `explicit_binary`: the httpd the sandbox was told to use, for a stop without saved state."""
    # Taken before the stop: once the parent is gone, its children's
    # parent link is gone too, and an exiting process has no cmdline.
    known = sandbox_processes(layout, pid, quota)
    stragglers: list[str] = []
    if pid is not None:
        binary = state.binary if state else find_httpd(explicit_binary)
        subprocess.run([binary, "-f", str(layout.config_path), "-k", "stop"],
                       capture_output=True, text=True, timeout=timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and pid_alive(pid):
            time.sleep(0.05)
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)  # our own server that ignored the stop
            stragglers.append(f"pid {pid} (httpd parent, ignored the stop): SIGKILL")
    stragglers += end_stragglers(layout, known, quota, grace=grace if pid is not None else 0.0)
    return stragglers


def sandbox_processes(layout: SandboxLayout, pid: int | None, quota=None) -> dict[int, "object"]:
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
    config = str(layout.config_path)
    cgi_dir = str(layout.work_dir / "cgi-bin") + os.sep
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
    return {p: proc for p, proc in found.items() if p not in mine and process_running(proc)}


def end_stragglers(layout: SandboxLayout, known: dict[int, "object"], quota, grace: float,
                   rounds: int = 3) -> list[str]:
    """Wait up to `grace` s for the sandbox's processes to go, then end the rest.

    Looked for again after each round, since a dying process may have
    forked; the rounds are bounded.
    """
    import psutil

    ended: list[str] = []
    deadline = time.monotonic() + grace
    left = {p: proc for p, proc in known.items() if process_running(proc)}
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = {p: proc for p, proc in left.items() if process_running(proc)}
    for _ in range(rounds):
        left.update(sandbox_processes(layout, None, quota))
        left = {p: proc for p, proc in left.items() if process_running(proc)}
        if not left:
            return ended
        names = {p: _describe(proc) for p, proc in left.items()}
        for proc in left.values():
            try:
                proc.terminate()
            except psutil.Error:
                pass
        _gone, alive = psutil.wait_procs(list(left.values()), timeout=2.0)
        alive = [proc for proc in alive if process_running(proc)]
        for proc in alive:
            try:
                proc.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(alive, timeout=5.0)
        killed = {proc.pid for proc in alive}
        ended += [f"pid {p} ({names[p]}): {'SIGKILL' if p in killed else 'SIGTERM'}" for p in sorted(left)]
        left = {p: proc for p, proc in left.items() if process_running(proc)}
    if left:
        raise AdvisorError(
            "processes of the sandbox would not end: " + ", ".join(f"pid {p}" for p in sorted(left)),
            file=str(layout.work_dir), hint="they may be stuck in the kernel (state D); check `ps -o pid,stat,cmd`")
    return ended


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
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


def process_running(proc) -> bool:
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
