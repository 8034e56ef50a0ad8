"""A load generator that dies mid-run is the client's failure, not a verdict
on the server, and not the end of a session.

bench/tune_bench.py lost its run over TLS when one httperf process ended on
a signal after printing its command line (nothing else: no report, no
message): the trial raised, the whole benchmark stopped. Here a real
httperf gets SIGSEGV, as a crash would, one second into a real trial (it
ignores SIGPIPE, and SIGINT makes it print its report): the trial comes back
invalid with the signal named, so a knee search may run it again.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading

import pytest

from advisor.tuner.load import httperf
from advisor.tuner.staging.managed_config import ManagedConfig
from advisor.tuner.staging.target import SandboxTarget
from advisor.tuner.trial.result import TrialInputs
from advisor.tuner.trial.runner import run_trial
from test_bench_support import SandboxRun, require, two_cores

pytestmark = [pytest.mark.load, pytest.mark.httpd]


def _httperf_pids(port: int) -> list[int]:
    found = subprocess.run(["pgrep", "-f", f"httperf .*--port={port} "], capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split()]


def test_an_httperf_killed_mid_run_makes_the_trial_invalid_with_the_signal_named():
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="prefork") as run:
        target = SandboxTarget(run.sandbox)
        port = run.state.port
        killed: list[int] = []

        def kill_after_a_second(elapsed: float, duration: float) -> None:
            if elapsed >= 1.0 and not killed:
                for pid in _httperf_pids(port):
                    os.kill(pid, signal.SIGSEGV)
                    killed.append(pid)

        inputs = TrialInputs(workload="1k", uri="/1k.html", rate=200, duration_s=4.0, timeout_s=2.0,
                             server_cpus=[0], client_cpus=[1], warmup_s=0)
        with ManagedConfig(target):
            result = run_trial(target, inputs, interval=0.5, on_tick=kill_after_a_second)
        run.assert_stock_restored()
    assert killed, "httperf was not found to kill"
    assert not result.valid
    assert any(reason.startswith("httperf died of SIGSEGV before its report") for reason in result.invalid_reasons), \
        result.invalid_reasons
    assert result.to_dict()["client_failed"] == "httperf died of SIGSEGV before its report"


def test_near_miss_an_httperf_that_never_ran_is_still_an_error_not_an_invalid_trial():
    require("httperf")
    # It refuses an unknown option and exits 1: a usage error, no signal.
    process = subprocess.Popen(["httperf", "--no-such-option"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    with pytest.raises(httperf.AdvisorError) as raised:
        httperf.finish(process, timeout=10)
    assert not isinstance(raised.value, httperf.HttperfDied)
    assert raised.value.message.startswith("httperf failed")


def test_an_httperf_that_gives_up_its_run_at_a_failed_tls_handshake_is_the_clients_failure():
    """httperf 0.9.0 exits (-1) at the first TLS handshake that fails, with no
    report: one reset connection costs the whole run. A real httperf with
    --ssl against a real socket that closes each connection it accepts."""
    require("httperf")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    stop = threading.Event()

    def close_each() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted, _ = listener.accept()
            except OSError:
                continue
            accepted.close()

    closer = threading.Thread(target=close_each, daemon=True)
    closer.start()
    try:
        process = subprocess.Popen(["httperf", "--ssl", "--server", "127.0.0.1", f"--port={port}",
                                    "--num-conns=5", "--rate=10", "--timeout=2"],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        with pytest.raises(httperf.HttperfDied) as raised:
            httperf.finish(process, timeout=20)
    finally:
        stop.set()
        closer.join()
        listener.close()
    assert process.returncode == 255
    assert raised.value.message.startswith("httperf ended its run at a failed TLS handshake "
                                           "(failed to connect to SSL server"), raised.value.message
