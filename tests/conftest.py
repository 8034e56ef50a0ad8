"""Shared test helpers.

Tests about httpd use the real binary. When it is missing they skip on a
developer's machine but FAIL under CI (CI=true): CI must prove them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from typing import NoReturn

import pytest

# A shell without job control starts a background command (`.ci/run &` in a
# script, say) with SIGINT ignored, and every process it starts inherits
# that: the tune, bench and client processes the interruption tests send
# Ctrl-C to then go on to the end. Those tests are about what an admin at a
# terminal gets, so the suite's processes start their children with the
# default action. (Seen here: three such tests failed only when the whole
# suite ran as a background job; the remote client, started by sshd, still
# reported.)
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The lint result cache stays off in tests unless a test turns it on: a test
# that patches the engine must see the engine run, not an earlier result.
# tests/test_lint_cache.py checks the cache itself.
os.environ["APACHE_ADVISOR_NO_CACHE"] = "1"
# Everything the tool keeps between runs (lint results, tune's pace of this
# host) goes to a directory of this test process, not the admin's
# ~/.cache/apache-advisor: the suite had left 31 pace entries there, most
# of them for its own test networks. Tests that look at the cache set
# their own directory.
if "APACHE_ADVISOR_CACHE_DIR" not in os.environ:
    import tempfile

    _PRIVATE_CACHE = tempfile.mkdtemp(prefix="advisor-test-cache-")
    os.environ["APACHE_ADVISOR_CACHE_DIR"] = _PRIVATE_CACHE
else:
    _PRIVATE_CACHE = None


def pytest_unconfigure(config):
    if _PRIVATE_CACHE is not None:
        shutil.rmtree(_PRIVATE_CACHE, ignore_errors=True)

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "corpus"
SAMPLES = CORPUS / "samples"
# The official SARIF 2.1.0 schema, kept in the repository so every clone
# tests SARIF validity (tests/data/README.md: its source and licence).
SARIF_SCHEMA = REPO / "tests" / "data" / "sarif-schema-2.1.0.json"


def fail_in_ci_else_skip(message: str) -> NoReturn:
    """Skip with `message` on a developer's machine; under CI (any non-empty
    CI: .ci/run sets CI=true) fail with it, one line and no traceback: there
    a skip would hide a missing install step or missing shared data."""
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)  # in CI a missing part is a failure, never a skip
    pytest.skip(message)  # developer machine only; CI fails above


def _missing(tool: str) -> NoReturn:
    fail_in_ci_else_skip(f"{tool} is not installed; .ci/run installs it")


def require_httpd() -> str:
    from advisor.config.oracle import find_httpd, module_dir

    binary = find_httpd()
    if binary is None or module_dir() is None:
        _missing("apache2 (with mod_info)")
    return binary  # type: ignore[return-value]


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        _missing(name)
    return path  # type: ignore[return-value]


def sample_index() -> list[dict]:
    return json.loads((SAMPLES / "index.json").read_text())["samples"]


@pytest.fixture
def httpd() -> str:
    return require_httpd()


@pytest.fixture(scope="session")
def test_envvars(tmp_path_factory) -> Path:
    """An envvars file whose directories exist, so httpd -t accepts the
    Debian-style sample (its DefaultRuntimeDir must be a real directory)."""
    base = tmp_path_factory.mktemp("envvars")
    (base / "run").mkdir()
    (base / "log").mkdir()
    path = base / "envvars"
    path.write_text(
        f"export APACHE_RUN_DIR={base}/run\n"
        f"export APACHE_LOG_DIR={base}/log\n"
        f"export APACHE_PID_FILE={base}/run/apache2.pid\n"
        "export APACHE_RUN_USER=www-data\n"
        "export APACHE_RUN_GROUP=www-data\n"
    )
    return path


def assert_one_line_error(result, *fragments: str) -> None:
    """The bad-input contract: exit 2, nothing on stdout, no traceback, one
    line on stderr that holds every fragment (file:line, what is wrong)."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture(scope="session")
def netns_topology(tmp_path_factory):
    """Server + two client network namespaces, an sshd in each (tests/netns_topology.py).

    A machine that cannot build it skips on a developer's machine and FAILS
    under CI with the reason; teardown removes it even after a failure."""
    import netns_topology

    with netns_topology.held(lambda: netns_topology.build(tmp_path_factory.mktemp("netns")),
                             "the test network") as topo:
        yield topo


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory) -> Path:
    """The wheel `pip install .` builds from this checkout (tests/installed.py)."""
    import installed

    return installed.build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def installed_product(built_wheel, tmp_path_factory):
    """That wheel in a fresh venv, run from a directory outside the checkout."""
    import installed

    return installed.install(built_wheel, tmp_path_factory.mktemp("installed"))


# Side by side under pytest-xdist (tests/exclusive.py): `load` tests take
# the host alone, the rest share it. The `load` tests all run on one worker
# (their xdist group, below), one after the other, and that worker keeps the
# host from the first of a run of them to the last: taking it anew for each
# meant waiting, each time, for the longest shared test the other workers
# had started meanwhile (up to a minute, for a tune session over ssh).
_host_lock = None
_held_host = None  # the exclusive hold kept across consecutive `load` tests
_first_shared_test = True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _host_lock, _held_host, _first_shared_test
    import exclusive

    if _host_lock is None:
        _host_lock = exclusive.worker_lock() or False
    if not _host_lock:  # one process, one test at a time: only the host-wide lock matters
        if exclusive.needs_the_host(item):
            with exclusive.host_alone():
                yield
        else:
            yield
        return
    if not exclusive.needs_the_host(item):
        if _first_shared_test:
            _first_shared_test = False
            # The session's items are what runs after -m and -k deselected.
            if any(exclusive.needs_the_host(other) for other in item.session.items):
                _host_lock.wait_for_the_load_block()
        with _host_lock.shared():
            yield
        return
    if _held_host is None:
        _held_host = _host_lock.exclusive()
        _held_host.__enter__()
    try:
        yield
    finally:
        if nextitem is None or not exclusive.needs_the_host(nextitem):
            held, _held_host = _held_host, None
            held.__exit__(None, None, None)


# Tests that share an expensive session fixture run on one worker, which
# builds it once: the test network, and the wheel with its venv.
_WORKER_GROUPS = {"test_packaging": "wheel", "test_installed_product": "wheel", "test_github_action": "wheel"}
# The tune sessions over ssh get a test network of their own on another
# worker: on one worker every `netns` test ran in a row, 281 s of a
# fresh-clone run, longer than the other workers' share of the rest.
_NETNS_GROUPS = {"test_remote_tune": "netns-sessions", "test_tune_mpm_switch": "netns-sessions"}


# tryfirst: xdist's worker plugin, registered after this conftest, reads the
# xdist_group marks in its own collection_modifyitems and pluggy calls the
# later plugin first; without it the marks came too late, every group was
# ignored, and the `load` tests were spread over all workers.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    import exclusive

    for item in items:
        if exclusive.needs_the_host(item):
            # One worker runs them all in a row (a `netns` one builds its own
            # copy of the test network there).
            item.add_marker(pytest.mark.xdist_group("host-alone"))
        elif item.get_closest_marker("netns") is not None:
            item.add_marker(pytest.mark.xdist_group(_NETNS_GROUPS.get(item.module.__name__, "netns")))
        elif item.module.__name__ in _WORKER_GROUPS:
            item.add_marker(pytest.mark.xdist_group(_WORKER_GROUPS[item.module.__name__]))


# Where a run's wall time goes (issue 25): with ADVISOR_TEST_TIMELINE=FILE,
# each test appends "worker start end cpu nodeid" (wall-clock seconds; cpu:
# the seconds of CPU the worker and the child processes it waited for used)
# when it ends, so idle workers, the exclusive block's waits and the tests
# that load a run's shared cores can be read off one CI run. junit's per-test
# times say how long, not when, nor at what cost to the tests beside it.
_timeline_started: dict[str, tuple[float, float]] = {}


def _cpu_seconds() -> float:
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_runtest_logstart(nodeid, location):
    if os.environ.get("ADVISOR_TEST_TIMELINE"):
        import time

        _timeline_started[nodeid] = (time.time(), _cpu_seconds())


def pytest_runtest_logfinish(nodeid, location):
    path = os.environ.get("ADVISOR_TEST_TIMELINE")
    if not path or nodeid not in _timeline_started:
        return
    import time

    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    started, cpu = _timeline_started.pop(nodeid)
    with open(path, "a") as out:  # one short line per write: appends from several workers stay whole
        out.write(f"{worker} {started:.2f} {time.time():.2f} {_cpu_seconds() - cpu:.2f} {nodeid}\n")
