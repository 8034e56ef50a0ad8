"""httperf is started so that it dies with the tool, and so that a Ctrl-C
or SIGTERM that arrives as it starts still ends the session.

Popen with a preexec_fn runs the interpreter's at-fork callbacks in the
parent, and an exception a signal handler raises inside one is printed and
dropped: a tune session signalled at that moment ran on to its end and
exited 0. The parent-death signal is set by util-linux's setpriv instead.
No server is needed: httperf is pointed at a socket that accepts nothing.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

from advisor.tuner.load import httperf
from test_bench_support import require, wait_for


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_httperf_starts_without_a_preexec_fn(monkeypatch):
    require("httperf")
    seen: dict[str, object] = {}
    real_popen = subprocess.Popen

    def spy(argv, **kwargs):
        seen.update(argv=list(argv), preexec=kwargs.get("preexec_fn"))
        return real_popen(argv, **kwargs)

    monkeypatch.setattr(httperf.subprocess, "Popen", spy)
    spec = httperf.HttperfSpec(host="127.0.0.1", port=_closed_port(), rate=0, num_conns=1, timeout_s=1.0)
    process = httperf.start(spec)
    out, _ = process.communicate(timeout=20)
    assert seen["preexec"] is None
    argv = seen["argv"]
    assert Path(argv[0]).name == "setpriv" and argv[1:4] == ["--pdeathsig", "KILL", "--"], argv
    assert argv[4:] == spec.argv()
    # It ran as httperf does: one connection tried, refused, reported.
    assert process.returncode == 0 and "Total: connections 1 " in out, out


def _state(pid: int) -> str | None:
    """The process's name, or None once it is gone (a zombie counts as gone)."""
    try:
        process = psutil.Process(pid)
        return None if process.status() == psutil.STATUS_ZOMBIE else process.name()
    except psutil.Error:
        return None


PARENT = """
import sys, time
from advisor.tuner.load import httperf
spec = httperf.HttperfSpec(host="127.0.0.1", port=int(sys.argv[1]), rate=1, num_conns=120, timeout_s=1.0)
process = httperf.start(spec)
print(process.pid, flush=True)
time.sleep(60)
"""


def test_httperf_dies_with_the_process_that_started_it():
    require("httperf")
    with socket.socket() as sink:
        # A listener that never accepts: httperf's two-minute run keeps going.
        sink.bind(("127.0.0.1", 0))
        sink.listen(1)
        parent = subprocess.Popen([sys.executable, "-c", PARENT, str(sink.getsockname()[1])],
                                  stdout=subprocess.PIPE, text=True)
        try:
            child = int(parent.stdout.readline())
            assert wait_for(lambda: _state(child) == "httperf", 10, step=0.02)
            os.kill(parent.pid, signal.SIGKILL)
            parent.wait(timeout=10)
            killed = time.monotonic()
            assert wait_for(lambda: _state(child) is None, 5, step=0.02), \
                f"httperf {child} outlived its parent by {time.monotonic() - killed:.1f} s"
        finally:
            if parent.poll() is None:
                parent.kill()
                parent.wait()
