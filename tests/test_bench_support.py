"""Shared helpers for the bench/staging tests (real apache2, real httperf).

Kept in a test_ module so it sits with the tests it serves; it defines no
tests itself. Tools that are missing skip the tests on a workstation and fail
them in CI (CI=true), where a skip would hide a missing install step.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from advisor.tuner.staging.sandbox import Sandbox

# As tests/conftest.py: any non-empty CI counts (.ci/run sets CI=true).
IN_CI = bool(os.environ.get("CI"))
HTTPD = next((p for p in ("/usr/sbin/apache2", "/usr/sbin/httpd") if os.path.exists(p)), shutil.which("apache2"))
HTTPERF = shutil.which("httperf")
CLI_TIMEOUT = 240  # seconds: every CLI call in these tests is bounded


def require(*tools: str) -> None:
    missing = []
    if "apache2" in tools and not HTTPD:
        missing.append("apache2 (apt-get install apache2)")
    if "httperf" in tools and not HTTPERF:
        missing.append("httperf (apt-get install httperf)")
    for tool in tools:
        if tool not in ("apache2", "httperf") and not shutil.which(tool):
            missing.append(tool)
    if missing:
        message = "missing: " + ", ".join(missing)
        if IN_CI:
            pytest.fail(message + " (CI must install it)")
        pytest.skip(message)  # outside CI only: under CI=true it failed above


def two_cores() -> None:
    if (os.cpu_count() or 1) < 2:
        message = "needs 2 cores to pin server and client apart"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)  # outside CI only: under CI=true it failed above


def require_cgroup_cpu() -> None:
    """--cpu-quota needs root and a cgroup cpu controller (CI runs as root)."""
    from advisor.tuner.measure import cgroup

    if os.geteuid() == 0 and (cgroup._v2_root() or cgroup._v1_root()):
        return
    message = "--cpu-quota needs root and a cgroup cpu controller (v1 or v2)"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)  # outside CI only: under CI=true it failed above


def work_dir() -> Path:
    """A sandbox directory the httpd workers (www-data) may enter."""
    path = Path(tempfile.mkdtemp(prefix="aa-test-", dir="/tmp"))
    os.chmod(path, 0o755)
    return path


class SandboxRun:
    """A sandbox started for one test and always stopped afterwards."""

    def __init__(self, **up_kwargs):
        self.dir = work_dir()
        self.sandbox = Sandbox(self.dir)
        self.up_kwargs = up_kwargs
        self.state = None

    def __enter__(self) -> "SandboxRun":
        self.up_kwargs.setdefault("server_cpus", [0])
        self.state = self.sandbox.up(**self.up_kwargs)
        self.stock = self.sandbox.managed_path.read_text()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.sandbox.down()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def bench(self, *args: str, check: bool = True, timeout: float = CLI_TIMEOUT) -> subprocess.CompletedProcess:
        return cli("bench", "--workdir", str(self.dir), *args, check=check, timeout=timeout)

    def bench_json(self, *args: str) -> list[dict]:
        result = self.bench("--format", "json", *args)
        return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]

    def assert_stock_restored(self) -> None:
        assert self.sandbox.managed_path.read_text() == self.stock
        journal = self.sandbox.managed_path.with_name("managed.conf.journal")
        assert not journal.exists(), "journal left behind"


def cli(*args: str, check: bool = True, timeout: float = CLI_TIMEOUT, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200")
    result = subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True,
                            timeout=timeout, env=env, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"apache-advisor {' '.join(args)} exited {result.returncode}:\n{result.stderr[-2000:]}")
    return result


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The bad-input contract: exit 2, exactly one line on stderr, no traceback."""
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr[-500:])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("apache-advisor: ")
    return lines[0]


def wait_for(predicate, timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def samplers_watching(httpd_pid: int) -> list[int]:
    """The remote metrics samplers on this machine (every namespace's
    processes are seen here) that watch this httpd. Other samplers are not the
    caller's: the remote tune sessions run on another worker at the same time,
    each with a sandbox of its own, and a test that counted every sampler on
    the machine failed on theirs."""
    import psutil

    # The options' JSON is the program's last word: in python3's argv on the
    # host, and inside the one quoted command of the ssh client and the shell.
    mark = json.dumps({"pid": httpd_pid})[:-1] + ","
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        text = " ".join(process.info["cmdline"] or [])
        if "class ChildWatcher" in text and mark in text:
            found.append(process.info["pid"])
    return found


def keepalive_header(base_url: str) -> str | None:
    """What the live server says about keep-alive on a plain GET."""
    import requests

    response = requests.get(base_url + "/1k.html", timeout=5)
    return response.headers.get("Keep-Alive") if response.headers.get("Connection", "").lower() != "close" else None


def stop_group(process: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGTERM to a process started with start_new_session=True and all it
    started (apache2 under strace, say); SIGKILL after `timeout`."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)
