"""The load generator's share of the core it wanted (MetricsCollector._client).

httperf busy-polls, so the share of the wall time it ran is the share of the
core it got. h2load sleeps between requests: at a few visitors a second it
runs a few per cent of the time with its core all to itself, and a reading of
its wall-time share once called such a trial disturbed ("httperf got only 0 %
of its core") and ended an HTTP/2 session. Real processes here, read from the
kernel's schedstat.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from advisor.tuner.measure.metrics import MetricsCollector

BUSY = "import time\nend = time.monotonic() + 3\nwhile time.monotonic() < end: pass\n"


def _share(pid: int, seconds: float = 1.0) -> float | None:
    collector = MetricsCollector(interval=seconds, server_pid=None, port=0)
    collector.client_pids = [pid]
    collector._client()
    time.sleep(seconds)
    return collector._client()[0]


def test_a_sleeping_client_is_no_starved_one():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        time.sleep(0.3)  # past the interpreter's start-up
        assert _share(sleeper.pid) is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_busy_client_sharing_its_core_gets_about_half_of_it():
    # Two busy loops on one core: each wants the whole core and gets at most
    # about half, however busy the other core is.
    loops = [subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", BUSY]) for _ in range(2)]
    try:
        time.sleep(0.3)
        share = _share(loops[0].pid)
        assert share is not None and 5.0 < share < 70.0, share
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def test_a_mix_is_as_starved_as_its_less_served_generator():
    # A protocol mix runs httperf and h2load at once: the first here sleeps
    # (no reading), the second shares its core with a busy loop. Watching the
    # first alone, as the collector once did, a mix whose h2load was starved
    # (a page's streams stalled 600 ms at a time) read as undisturbed.
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    loops = [subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", BUSY]) for _ in range(2)]
    try:
        time.sleep(0.3)
        collector = MetricsCollector(interval=1.0, server_pid=None, port=0)
        collector.client_pids = [sleeper.pid, loops[0].pid]
        collector._client()
        time.sleep(1.0)
        share, fds = collector._client()
        assert share is not None and 5.0 < share < 70.0, share
        assert fds == len(os.listdir(f"/proc/{sleeper.pid}/fd"))  # httperf's descriptors, the first's
    finally:
        for process in (sleeper, *loops):
            process.kill()
            process.wait()
