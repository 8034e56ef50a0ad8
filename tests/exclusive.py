"""Tests that need the host to themselves, among tests that run side by side.

The suite runs on four pytest-xdist workers. Most tests read configs, start an
httpd and ask it something, or drive a command to its one-line error: they
share the two cores happily. A `load` test asserts a rate, a peak or a probe
sequence and pins httpd and httperf to a core each, and the trial itself
marks a run disturbed when another program takes the server's core. Each of
those runs alone: it takes this lock exclusively, every other test takes it
shared.

Two flock(2) locks make a readers-writer lock that prefers the writer: a
test that wants the host waits at most for the tests already running, never
for the stream of shared tests that would otherwise keep starting around it.
Exclusive tests also take the host-wide load lock that bench/capacity_truth.py
takes, so a measurement started by hand and the suite do not overlap.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

# Marks whose tests need the host alone. (The netns tests that send no load
# share the host, on one worker: they share one session-scoped topology.)
EXCLUSIVE_MARKS = ("load",)
HOST_LOAD_LOCK = Path("/tmp/advisor-load.lock")


# How long the first shared test of a worker waits for the `load` tests'
# worker to take the turnstile, when the run has `load` tests (see
# `HostLock.wait_for_the_load_block`).
LOAD_BLOCK_GRACE_S = 5.0


class HostLock:
    def __init__(self, directory: Path, run_id: str, host_lock: Path | None = HOST_LOAD_LOCK) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._block_started = directory / f"apache-advisor-tests-{run_id}.load-block"
        # Separate open files per process: flock locks belong to the open file.
        self._turnstile = open(directory / f"apache-advisor-tests-{run_id}.turnstile", "a+")
        self._readers_writer = open(directory / f"apache-advisor-tests-{run_id}.rw", "a+")
        self._host = None
        if host_lock is not None:
            try:
                self._host = open(host_lock, "a+")
            except OSError:
                pass  # another user's lock file: the suite still excludes itself

    @contextmanager
    def shared(self) -> Iterator[None]:
        fcntl.flock(self._turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(self._readers_writer, fcntl.LOCK_SH)
        finally:
            fcntl.flock(self._turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self._readers_writer, fcntl.LOCK_UN)

    def wait_for_the_load_block(self, timeout: float = LOAD_BLOCK_GRACE_S) -> None:
        """At the start of a run, let the `load` tests go first.

        The `load` block is the run's critical path (about 1,000 s, against
        the other tests' few hundred, which cannot overlap it). Every worker
        starts its first test at the same moment, and a shared test that
        takes the lock a moment before the block's worker holds it back for
        its whole length: 36 s in a fresh-clone CI run (a tune session over
        ssh), 2 s in another. So a worker's first shared test waits, at most
        `timeout`, for the block's worker to hold the turnstile; it then
        queues behind the block like any later shared test."""
        import time

        deadline = time.monotonic() + timeout
        while not self._block_started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        # Holding the turnstile keeps new shared tests from starting while
        # the ones already running finish.
        fcntl.flock(self._turnstile, fcntl.LOCK_EX)
        self._block_started.touch()
        try:
            fcntl.flock(self._readers_writer, fcntl.LOCK_EX)
            try:
                if self._host is not None:
                    fcntl.flock(self._host, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    if self._host is not None:
                        fcntl.flock(self._host, fcntl.LOCK_UN)
            finally:
                fcntl.flock(self._readers_writer, fcntl.LOCK_UN)
        finally:
            fcntl.flock(self._turnstile, fcntl.LOCK_UN)


def needs_the_host(item) -> bool:
    return any(item.get_closest_marker(mark) is not None for mark in EXCLUSIVE_MARKS)


@contextmanager
def host_alone(host_lock: Path = HOST_LOAD_LOCK) -> Iterator[None]:
    """The host-wide load lock alone, for a `load` test run outside xdist.

    One pytest process runs one test at a time, so it needs no lock of its
    own; but two people running load tests by hand, or a bench script, would
    otherwise load the host at once and each measure the other.
    """
    try:
        handle = open(host_lock, "a+")
    except OSError:
        handle = None  # another user's lock file: run unguarded, as the suite does
    if handle is None or _held_by_an_ancestor(handle):  # `flock LOCK pytest ...`: already ours
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _held_by_an_ancestor(handle) -> bool:
    """Whether a process this one descends from holds the flock on `handle`'s
    file (read from /proc/locks): taking it again would wait for ourselves."""
    inode = os.fstat(handle.fileno()).st_ino
    holders = set()
    try:
        with open("/proc/locks") as locks:
            for line in locks:
                parts = line.split()  # "1: FLOCK ADVISORY WRITE <pid> <maj:min:inode> 0 EOF"; waiters have "->"
                if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5].rsplit(":", 1)[-1] == str(inode):
                    holders.add(int(parts[4]))
        pid = os.getppid()
        for _ in range(64):  # bounded walk up the process tree
            if pid in holders:
                return True
            if pid <= 1:
                return False
            with open(f"/proc/{pid}/stat") as stat:
                pid = int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    return False


def worker_lock() -> HostLock | None:
    """The lock of this xdist run, or None outside xdist (one test at a time anyway)."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not os.environ.get("PYTEST_XDIST_WORKER") or not run_id:
        return None
    return HostLock(Path(os.environ.get("TMPDIR", "/tmp")), run_id)
