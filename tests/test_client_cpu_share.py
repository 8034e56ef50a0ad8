"""The load generator's share of the core it wanted (MetricsCollector._client).

httperf busy-polls, so the share of the wall time it ran is the share of the
core it got. h2load sleeps between requests: at a few visitors a second it
runs a few per cent of the time with its core all to itself, and a reading of
its wall-time share once called such a trial disturbed ("httperf got only 0 %
of its core") and ended an HTTP/2 session. Real processes here, read from the
kernel's schedstat.
"""

from __future__ import annotations

import subprocess
import sys
import time

from advisor.tuner.measure.metrics import MetricsCollector

BUSY = "import time\nend = time.monotonic() + 3\nwhile time.monotonic() < end: pass\n"


def _share(pid: int, seconds: float = 1.0) -> float | None:
    collector = MetricsCollector(interval=seconds, server_pid=None, port=0)
    collector.client_pid = pid
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
