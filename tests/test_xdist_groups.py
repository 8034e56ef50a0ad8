"""The suite's xdist groups are honoured by the pytest and pytest-xdist installed.

The host lock (tests/exclusive.py) and the shared fixtures (the test
network, the wheel and its venv) rely on `--dist loadgroup` sending every
test of a group to one worker. pytest 9.2 with pytest-xdist 3.8 ignored the
groups without a word (xdist issue #1386): the `load` tests were spread over
all four workers, each one then waited for whatever shared tests were running
when it took the host, and each worker built its own wheel. A fresh-clone run
measured 85 s lost to those waits. This test runs a small suite of its own,
groups added the way conftest.py adds them, and fails when they are not kept.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

CONFTEST = """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("heavy") is not None:
            item.add_marker(pytest.mark.xdist_group("alone"))
"""

TESTS = """
import pytest

@pytest.mark.heavy
@pytest.mark.parametrize("n", range(4))
def test_heavy(n):
    pass

@pytest.mark.parametrize("n", range(8))
def test_light(n):
    pass
"""


def test_a_group_added_at_collection_runs_on_one_worker(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    heavy: test\naddopts = --dist loadgroup\n")
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "test_a.py").write_text(textwrap.dedent(TESTS))
    (tmp_path / "test_b.py").write_text(textwrap.dedent(TESTS))
    result = subprocess.run([sys.executable, "-m", "pytest", "-n", "3", "-v", "-p", "no:cacheprovider"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    ran = re.findall(r"\[(gw\d+)\] \[\s*\d+%\] PASSED (\S+)", result.stdout)
    assert len(ran) == 24, result.stdout[-2000:]
    heavy = [(worker, nodeid) for worker, nodeid in ran if "test_heavy" in nodeid]
    assert len(heavy) == 8
    # The group's tests carry its name and share one worker.
    assert all(nodeid.endswith("@alone") for _, nodeid in heavy), heavy
    assert len({worker for worker, _ in heavy}) == 1, heavy
    # Near miss: the ungrouped tests are not held to it.
    assert not any(nodeid.endswith("@alone") for _, nodeid in ran if "test_light" in nodeid)
