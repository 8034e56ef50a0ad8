"""The one place tests find the shared data beside the clone (issue 60,
tests/shared_data.py): an absent folder skips its tests with one line that
names it, and fails them with that line under CI=true; a present one is
found where APACHE_ADVISOR_SHARED (or `../shared`) says."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SARIF_SCHEMA
from shared_data import (REALWORLD, SEEDS, SHARED_ENV, absent_reason, seed_text, shared_files, shared_folder,
                         shared_root)


@pytest.fixture
def nowhere(tmp_path, monkeypatch) -> Path:
    """A shared root that does not exist, named through APACHE_ADVISOR_SHARED."""
    root = tmp_path / "nowhere"
    monkeypatch.setenv(SHARED_ENV, str(root))
    return root


def test_the_default_place_is_shared_beside_the_clone(monkeypatch):
    monkeypatch.delenv(SHARED_ENV, raising=False)
    assert shared_root() == REPO.parent / "shared"


def test_an_absent_folder_skips_with_one_line_naming_it(nowhere, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        shared_folder(SEEDS)
    assert skipped.value.msg == absent_reason(nowhere / SEEDS)
    assert str(nowhere / SEEDS) in skipped.value.msg and "\n" not in skipped.value.msg


def test_an_absent_folder_fails_under_ci_with_that_line(nowhere, monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception) as failed:
        shared_folder(REALWORLD)
    assert failed.value.msg == absent_reason(nowhere / REALWORLD)
    assert failed.value.pytrace is False  # the line alone, no traceback


def test_an_absent_folder_still_gives_a_parametrized_test_one_case(nowhere):
    assert shared_files(REALWORLD, "*.conf") == [nowhere / REALWORLD]


def test_a_present_folder_is_found_where_the_variable_says(tmp_path, monkeypatch):
    root = tmp_path / "elsewhere"
    (root / SEEDS).mkdir(parents=True)
    (root / SEEDS / "001_b.txt").write_text("second\n")
    (root / SEEDS / "000_a.txt").write_text("an   Arlitt\n\tfigure\n")
    (root / SEEDS / "notes.md").write_text("not a seed\n")
    monkeypatch.setenv(SHARED_ENV, str(root))
    monkeypatch.setenv("CI", "true")
    assert shared_folder(SEEDS) == root / SEEDS
    assert shared_files(SEEDS, "*.txt") == [root / SEEDS / "000_a.txt", root / SEEDS / "001_b.txt"]
    assert seed_text("000") == "an Arlitt figure "
    with pytest.raises(pytest.fail.Exception, match="seed 004 not found under"):
        seed_text("004")


def test_the_sarif_schema_is_the_official_copy_in_the_repository():
    """In the tree, so every clone validates SARIF; unedited, as its README
    (source, licence) records it."""
    assert SARIF_SCHEMA.is_relative_to(REPO)
    schema = json.loads(SARIF_SCHEMA.read_text())
    assert schema["id"] == "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    provenance = (SARIF_SCHEMA.parent / "README.md").read_text()
    assert f"`{hashlib.sha256(SARIF_SCHEMA.read_bytes()).hexdigest()}`" in provenance
    assert schema["id"] in provenance and "Copyright © OASIS Open" in provenance


TINY = """\
from shared_data import SEEDS, shared_folder


def test_reads_the_seeds():
    assert shared_folder(SEEDS).is_dir()
"""


def run_pytest(tmp_path: Path, ci: bool) -> subprocess.CompletedProcess:
    """pytest with the project's own settings (-ra) on a test that needs the
    seeds, the shared root pointing at nothing."""
    (tmp_path / "test_tiny.py").write_text(TINY)
    env = {key: value for key, value in os.environ.items()
           if key not in ("CI", "PYTEST_ADDOPTS") and not key.startswith("PYTEST_XDIST")}
    env.update({SHARED_ENV: str(tmp_path / "nowhere"), "PYTHONPATH": str(REPO / "tests")})
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"), "-q",
                           "-p", "no:cacheprovider", str(tmp_path / "test_tiny.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def test_the_summary_says_how_many_skipped_and_why(tmp_path):
    result = run_pytest(tmp_path, ci=False)
    reason = absent_reason(tmp_path / "nowhere" / SEEDS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout.splitlines()[-1], result.stdout
    assert any(line.startswith("SKIPPED [1] ") and line.endswith(reason)
               for line in result.stdout.splitlines()), result.stdout


def test_under_ci_the_run_fails_naming_the_folder(tmp_path):
    result = run_pytest(tmp_path, ci=True)
    reason = absent_reason(tmp_path / "nowhere" / SEEDS)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed" in result.stdout.splitlines()[-1], result.stdout
    lines = result.stdout.splitlines()
    assert reason in lines, result.stdout  # the failure's whole report: that line
    assert any(line.startswith("FAILED ") and line.endswith(f"::test_reads_the_seeds - Failed: {reason}")
               for line in lines), result.stdout
    assert "Traceback" not in result.stdout and "pytest.fail(" not in result.stdout, result.stdout
