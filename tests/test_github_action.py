"""The GitHub Action (action.yml) runs its shell steps from action/lint.sh;
here they run as the action runs them: `install` into a fresh venv from the
wheel this checkout builds, then `lint` with the action's INPUT_* variables.
The SARIF is held to the 2.1.0 schema and the exit code to lint's own.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from conftest import REPO, SAMPLES, SARIF_SCHEMA
from installed import fresh_venv, product_environment

SCRIPT = REPO / "action" / "lint.sh"


@pytest.fixture(scope="module")
def action_venv(built_wheel, tmp_path_factory) -> dict[str, str]:
    """The variables the action's steps see, after its install step ran."""
    base = tmp_path_factory.mktemp("action")
    venv = base / "venv"
    # The runner's Python makes the venv (setup-python); the install step
    # then installs the wheel into it. Third-party dependencies come from the
    # test venv (tests/installed.py says why); the project only from the wheel.
    fresh_venv(venv, with_pip=True)
    env = {"ADVISOR_VENV": str(venv), "ADVISOR_PACKAGE": str(built_wheel), "ADVISOR_PIP_ARGS": "--no-deps",
           "RUNNER_TEMP": str(base), "GITHUB_ACTION_PATH": str(REPO)}
    installed = step("install", env, cwd=base)
    assert installed.returncode == 0, installed.stderr
    assert installed.stdout.startswith("apache-advisor ")
    return env


def step(name: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), name], cwd=cwd, env=product_environment(env),
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)


def lint_exit(*args: str, cwd: Path, env: dict[str, str]) -> int:
    command = [str(Path(env["ADVISOR_VENV"]) / "bin" / "apache-advisor"), "lint", *args]
    return subprocess.run(command, cwd=cwd, env=product_environment(), capture_output=True,
                          stdin=subprocess.DEVNULL).returncode


def run_action(action_venv, workspace: Path, **inputs: str) -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    workspace.mkdir(exist_ok=True)
    outputs = workspace / "github_output"
    outputs.write_text("")
    env = {**action_venv, "GITHUB_OUTPUT": str(outputs),
           **{f"INPUT_{name.upper()}": value for name, value in inputs.items()}}
    result = step("lint", env, cwd=workspace)
    said = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    return result, said


def test_the_action_lints_the_debian_sample_into_valid_sarif(action_venv, tmp_path):
    workspace = tmp_path / "workspace"
    result, outputs = run_action(action_venv, workspace, path=str(SAMPLES / "debian"), fail_on="warning",
                                 sarif_file="out/advisor.sarif")
    expected = lint_exit(str(SAMPLES / "debian"), "--fail-on", "warning", cwd=workspace, env=action_venv)
    assert expected == 1  # the sample has warnings
    assert result.returncode == expected, result.stderr
    assert outputs == {"sarif-file": "out/advisor.sarif", "exit-code": "1"}
    report = json.loads((workspace / "out" / "advisor.sarif").read_text())
    jsonschema.validate(report, json.loads(SARIF_SCHEMA.read_text()))
    rules = {r["ruleId"] for r in report["runs"][0]["results"]}
    assert {"P101", "P109"} <= rules
    # Annotations for the pull request, one per finding, on stdout.
    annotations = [line for line in result.stdout.splitlines() if line.startswith("::")]
    assert len(annotations) == len(report["runs"][0]["results"])
    assert any(line.startswith("::warning file=") for line in annotations)
    assert any("title=P101 " in line for line in annotations)


def test_fail_on_and_args_reach_lint(action_venv, tmp_path):
    workspace = tmp_path / "workspace"
    result, outputs = run_action(action_venv, workspace, path=str(SAMPLES / "debian"), fail_on="error",
                                 args="--ignore 'E401,C203' --apache-version 2.4.58", annotations="false")
    expected = lint_exit("--fail-on", "error", "--ignore", "E401,C203", "--apache-version", "2.4.58",
                         str(SAMPLES / "debian"), cwd=workspace, env=action_venv)
    assert result.returncode == expected, result.stderr
    assert outputs["exit-code"] == str(expected)
    assert not [line for line in result.stdout.splitlines() if line.startswith("::")]
    report = json.loads((workspace / "apache-advisor.sarif").read_text())
    assert not {"E401", "C203"} & {r["ruleId"] for r in report["runs"][0]["results"]}


def test_an_unreadable_tree_exits_2_and_writes_no_sarif(action_venv, tmp_path):
    workspace = tmp_path / "workspace"
    broken = workspace / "httpd.conf"
    workspace.mkdir()
    broken.write_text("ServerRoot /tmp\nInclude /nonexistent/apache-advisor-missing.conf\n")
    result, outputs = run_action(action_venv, workspace, path=str(broken))
    assert result.returncode == 2
    assert outputs == {"exit-code": "2"}
    assert not (workspace / "apache-advisor.sarif").exists()
    assert f"{broken}:2:" in result.stderr and "Traceback" not in result.stderr


def test_lint_before_install_is_one_line(tmp_path):
    result = step("lint", {"ADVISOR_VENV": str(tmp_path / "none")}, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"apache-advisor action: apache-advisor is not installed in {tmp_path / 'none'}: run the install step first"]
