"""The lock that lets `load` and `netns` tests run alone while the rest of
the suite runs side by side (tests/exclusive.py), held to its promises
by real processes: shared holders overlap, an exclusive holder overlaps
nobody, a waiting exclusive holder goes before shared ones that come
after it, and a load test run in one process (no xdist) waits for the
host-wide lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO

HOLDER = """
import sys, time
sys.path.insert(0, {tests!r})
from pathlib import Path
from exclusive import HostLock, host_alone
lock = HostLock(Path({directory!r}), "selftest", host_lock=Path({host!r}))
kind, name, hold = sys.argv[1], sys.argv[2], float(sys.argv[3])
until = sys.argv[4] if len(sys.argv) > 4 else None  # hold on until this holder has started too (10 s at most)
held = {{"exclusive": lock.exclusive, "alone": lambda: host_alone(Path({host!r}))}}.get(kind, lock.shared)
if kind == "first":  # a worker's first shared test in a run with `load` tests
    lock.wait_for_the_load_block(timeout=2.0)
with held():
    with open({log!r}, "a") as log:
        log.write(f"{{time.monotonic():.6f}} start {{name}}\\n")
    time.sleep(hold)
    deadline = time.monotonic() + 10
    while until and f"start {{until}}" not in Path({log!r}).read_text() and time.monotonic() < deadline:
        time.sleep(0.01)
    with open({log!r}, "a") as log:
        log.write(f"{{time.monotonic():.6f}} end {{name}}\\n")
"""


def spans(log: Path) -> dict[str, tuple[float, float]]:
    start: dict[str, float] = {}
    found = {}
    for line in log.read_text().splitlines():
        moment, what, name = line.split()
        if what == "start":
            start[name] = float(moment)
        else:
            found[name] = (start[name], float(moment))
    return found


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def run_holders(tmp_path: Path, plan: list[tuple]) -> dict[str, tuple[float, float]]:
    """plan: (kind, name, start after s or once the named holder is in, hold s[, the holder it waits to
    see start before it lets go]); every holder ends by itself."""
    log = tmp_path / "log"
    script = HOLDER.format(tests=str(REPO / "tests"), directory=str(tmp_path), host=str(tmp_path / "host.lock"),
                           log=str(log))
    processes = []
    began = time.monotonic()
    for kind, name, after, hold, *until in plan:
        if isinstance(after, str):  # once that holder is in
            deadline = time.monotonic() + 20
            while f"start {after}" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
                time.sleep(0.01)
        else:
            time.sleep(max(0.0, began + after - time.monotonic()))
        processes.append(subprocess.Popen([sys.executable, "-c", script, kind, name, str(hold), *until]))
    for process in processes:
        assert process.wait(timeout=30) == 0
    return spans(log)


def test_shared_holders_overlap_and_an_exclusive_one_overlaps_nobody(tmp_path):
    # a holds on until b is in, and x asks once b is in: on a busy host b's
    # Python may start later than a's hold (CI once saw 1.5 s) or than x's
    # request (and then rightly waits for x). A lock that let only one holder
    # in would keep b out until a gave up.
    found = run_holders(tmp_path, [("shared", "a", 0.0, 1.0, "b"), ("shared", "b", 0.1, 1.0),
                                   ("exclusive", "x", "b", 0.5)])
    assert overlap(found["a"], found["b"])
    assert not overlap(found["x"], found["a"]) and not overlap(found["x"], found["b"])
    assert found["x"][0] >= max(found["a"][1], found["b"][1])


def test_a_waiting_exclusive_holder_goes_before_later_shared_ones(tmp_path):
    # a holds shared; x asks for the host; c asks for shared after x: c must
    # wait for x, although a shared lock alone would have let it in beside a.
    found = run_holders(tmp_path, [("shared", "a", 0.0, 1.0), ("exclusive", "x", 0.3, 0.5),
                                   ("shared", "c", 0.6, 0.2)])
    assert found["x"][0] >= found["a"][1]
    assert found["c"][0] >= found["x"][1]


def test_a_workers_first_shared_test_lets_the_load_block_go_first(tmp_path):
    # a is the first test of a worker and asks a moment before x, the first
    # load test: without the grace it would take the host first and hold x
    # back for its whole length (36 s in a CI run), here 1 s.
    found = run_holders(tmp_path, [("first", "a", 0.0, 1.0), ("exclusive", "x", 0.3, 0.5)])
    assert found["a"][0] >= found["x"][1]


def test_the_grace_ends_by_itself_when_no_load_block_comes(tmp_path):
    began = time.monotonic()
    found = run_holders(tmp_path, [("first", "a", 0.0, 0.1)])
    assert found["a"][0] - began < 2.0 + 1.5  # the 2-s grace, and a Python start


def test_a_load_test_outside_xdist_waits_for_a_suites_load_test(tmp_path):
    # y is a load test run by hand (one process, no xdist): it takes only the
    # host-wide lock, and so waits for x, a load test of an xdist run.
    found = run_holders(tmp_path, [("exclusive", "x", 0.0, 0.8), ("alone", "y", 0.2, 0.3)])
    assert found["y"][0] >= found["x"][1]


def test_a_run_started_under_the_host_lock_does_not_wait_for_itself(tmp_path):
    # `flock /tmp/advisor-load.lock pytest ...` holds the lock in the parent:
    # the load test inside must go on, not wait for its own parent.
    host = tmp_path / "host.lock"
    script = (f"import sys; sys.path.insert(0, {str(REPO / 'tests')!r})\n"
              "from pathlib import Path\nfrom exclusive import host_alone\n"
              f"with host_alone(Path({str(host)!r})):\n    print('ran')\n")
    process = subprocess.Popen(["flock", str(host), sys.executable, "-c", script], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:  # waiting for itself: end it and the child with it
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0 and out.strip() == "ran", err
