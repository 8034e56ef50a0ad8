"""Tests whose outcome depends on timing under load are marked `load` (issue 10).

A test that asserts a rate band, a peak or the probe sequence of a knee or
ramp passes only when the host gives httperf and httpd their cores; such a
test runs under the shared load lock with the other `load` tests, not among
the quick `httpd` ones. Found with `ast`: a comparison of a rate field with
a number, or a bench run in knee or ramp mode.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
RATE_FIELDS = {"connection_rate", "reply_rate", "request_rate", "peak_rate", "peak_reply_rate"}
TIMED_MODES = {"knee", "ramp"}


def _names_a_rate(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in RATE_FIELDS:
            return True
        if isinstance(sub, ast.Constant) and sub.value in RATE_FIELDS:
            return True
    return False


def _is_number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def timing_assertions(function: ast.FunctionDef) -> list[int]:
    """Lines where the test bounds a rate by a number or runs a knee/ramp bench."""
    lines = []
    for node in ast.walk(function):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_names_a_rate(s) for s in sides) and any(_is_number(s) for s in sides):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if any(a == "--mode" and b in TIMED_MODES for a, b in zip(args, args[1:])):
                lines.append(node.lineno)
    return lines


def _marks(decorators: list[ast.expr]) -> set[str]:
    names = set()
    for node in decorators:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute) and sub.value.attr == "mark":
                names.add(sub.attr)
    return names


def unmarked_timing_tests(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    module_marks: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            module_marks |= _marks([node.value])
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            if "load" in module_marks | _marks(node.decorator_list):
                continue
            lines = timing_assertions(node)
            if lines:
                found.append(f"{path.name}::{node.name} (line {lines[0]})")
    return found


def test_the_finder_sees_bands_peaks_and_timed_modes(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "import pytest\n"
        "pytestmark = pytest.mark.httpd\n"
        "def test_band(r):\n    assert 90 <= r.connection_rate <= 110\n"
        "def test_peak(k):\n    assert k['peak_rate'] == 400\n"
        "def test_knee(run):\n    run.bench_json('--mode', 'knee', '--max-rate', '400')\n"
        "def test_consistent(r):\n    assert r.connection_rate == pytest.approx(r.connections / r.test_duration_s)\n"
        "@pytest.mark.load\ndef test_marked(r):\n    assert r.reply_rate > 5\n")
    assert unmarked_timing_tests(sample) == [
        "test_sample.py::test_band (line 4)", "test_sample.py::test_peak (line 6)", "test_sample.py::test_knee (line 8)"]


def test_every_timing_dependent_test_is_a_load_test():
    found = [name for path in sorted(TESTS.glob("test_*.py")) for name in unmarked_timing_tests(path)]
    assert not found, "mark these `load` or make them independent of timing: " + ", ".join(found)
