"""Every command from a regular install (issue 25).

The wheel built from this checkout is installed into a fresh venv
(tests/installed.py) and each command runs once from a directory outside the
checkout, as a user who followed the README would run it. The editable
install the other tests use maps the source tree and cannot see a module the
wheel leaves out; these runs can.
"""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import REPO, SAMPLES, require_httpd
from installed import declared_version, installed_module_path
from test_bench_support import work_dir

DEBIAN = SAMPLES / "debian"


def test_the_command_runs_the_wheel_not_the_source_tree(installed_product):
    where = installed_module_path(installed_product, "advisor.fix.plan")
    assert installed_product.venv in where.parents, where
    assert REPO not in where.parents, where


def test_version_is_the_package_metadata(installed_product):
    result = installed_product.run("--version")
    declared = declared_version()
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"apache-advisor {declared}"


def test_lint_dump_rules_and_explain(installed_product):
    lint = installed_product.run("lint", str(DEBIAN), "--format", "json", "--fail-on", "never")
    assert lint.returncode == 0, lint.stderr
    codes = {finding["code"] for finding in json.loads(lint.stdout)}
    assert "P101" in codes and "P109" in codes
    failing = installed_product.run("lint", str(DEBIAN), "--fail-on", "info")
    assert failing.returncode == 1 and "Found " in failing.stdout
    dump = installed_product.run("dump", str(DEBIAN))
    assert dump.returncode == 0 and "KeepAliveTimeout 15" in dump.stdout
    rules = installed_product.run("rules", "--format", "json")
    assert rules.returncode == 0 and any(rule["code"] == "P102" for rule in json.loads(rules.stdout))
    explain = installed_product.run("explain", "P101")
    assert explain.returncode == 0 and "MaxConnectionsPerChild" in explain.stdout


def test_fix_shows_the_diff_then_writes_a_copy(installed_product, tmp_path):
    require_httpd()  # the preview asks the system's apache2 whether the fixed tree starts
    preview = installed_product.run("fix", str(DEBIAN))
    assert preview.returncode == 1, preview.stderr
    assert f"--- {DEBIAN}/apache2.conf" in preview.stdout and "+KeepAliveTimeout 5" in preview.stdout
    copy = tmp_path / "debian"
    shutil.copytree(DEBIAN, copy, symlinks=True)
    written = installed_product.run("fix", "--write", "--check-cmd", "true", str(copy))
    assert written.returncode == 0, written.stderr
    assert "KeepAliveTimeout 5" in (copy / "apache2.conf").read_text()
    assert (copy / "apache2.conf.orig").read_text() == (DEBIAN / "apache2.conf").read_text()
    again = installed_product.run("fix", "--check-cmd", "true", str(copy))
    assert again.returncode == 0 and again.stdout == ""


def test_capacity(installed_product):
    result = installed_product.run("capacity", str(DEBIAN), "--ram", "4G", "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["settings"]["mpm"] == "prefork" and report["recommended_max_request_workers"] > 0


@pytest.mark.parametrize("command", ["staging", "bench", "tune"])
def test_the_measuring_commands_load(installed_product, command):
    result = installed_product.run(command, "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage: apache-advisor " + command in result.stdout


@pytest.mark.httpd
def test_staging_and_a_tune_plan_against_a_sandbox(installed_product, tmp_path):
    """The staging and tuning imports (the sandbox, the search space, the
    optimizer) proved from the wheel: a real sandbox up, a dry-run plan, down."""
    require_httpd()
    workdir = work_dir()
    up = installed_product.run("staging", "up", "--workdir", str(workdir), "--mpm", "prefork", "--format", "json")
    assert up.returncode == 0, up.stderr
    try:
        url = json.loads(up.stdout)["url"]
        plan = installed_product.run("tune", "--workdir", str(workdir), "--report", str(tmp_path / "report"),
                                     "--dry-run", "--budget", "3")
        assert plan.returncode == 0, plan.stderr
        assert "search space (" in plan.stdout and f"-> {url}" in plan.stdout
        status = installed_product.run("staging", "status", "--workdir", str(workdir), "--format", "json")
        assert status.returncode == 0 and json.loads(status.stdout)["running"]
    finally:
        down = installed_product.run("staging", "down", "--workdir", str(workdir))
    assert down.returncode == 0, down.stderr
    shutil.rmtree(workdir, ignore_errors=True)


_BENCH_SCRIPTS = sorted(path.name for path in (REPO / "bench").glob("*.py") if "__main__" in path.read_text())


@pytest.mark.parametrize("script", _BENCH_SCRIPTS)
def test_each_bench_script_runs_against_the_regular_install(installed_product, script):
    """bench/tune_bench.py put the checkout first on sys.path, where tuner/
    is not advisor.tuner: from a regular install it died on its first
    import (2026-11-28), and only an editable install, which maps tuner/,
    ran it."""
    import subprocess

    from installed import product_environment

    result = subprocess.run([str(installed_product.python), str(REPO / "bench" / script), "--help"],
                            cwd=installed_product.workdir, capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL, env=product_environment())
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage:" in result.stdout.lower(), result.stdout[:500]
