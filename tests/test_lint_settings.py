"""The settings file: .apache-advisor.toml or [tool.apache-advisor] in
pyproject.toml, found upward from the working directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.errors import UsageError
from advisor.lint.settings import find_config_file, load_file_settings

CLI = [sys.executable, "-m", "advisor", "lint", "--no-live", "-f", "json", "--fail-on", "never"]
BODY = ("LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so\n"
        "LoadModule reqtimeout_module /usr/lib/apache2/modules/mod_reqtimeout.so\n"
        "ServerName s.test\nServerTokens Prod\nTraceEnable Off\nEnableSendfile On\n"
        "Timeout 300\nListenBacklog 64\nServerLimit 256\nMaxRequestWorkers 256\n")


def tree(tmp_path: Path, settings: str, name: str = ".apache-advisor.toml") -> Path:
    (tmp_path / "conf").mkdir(exist_ok=True)
    (tmp_path / "conf" / "httpd.conf").write_text(BODY)
    (tmp_path / "conf" / "legacy.conf").write_text(BODY)
    (tmp_path / name).write_text(settings)
    return tmp_path


def lint(cwd: Path, *args: str) -> list[dict]:
    result = subprocess.run(CLI + list(args), capture_output=True, text=True, cwd=cwd,
                            stdin=subprocess.DEVNULL, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_settings_select_ignore_severity_and_host(tmp_path):
    root = tree(tmp_path, """
select = ["P", "R", "C"]
ignore = ["P113"]
[severity]
P112 = "error"
[host]
ram = "1G"
worker_memory = "64M"
""")
    found = {(f["code"], f["severity"]) for f in lint(root / "conf", "httpd.conf")}
    assert found == {("R301", "warning"), ("P112", "error"), ("C201", "error")}


def test_cli_options_win_over_the_file(tmp_path):
    root = tree(tmp_path, 'select = ["R301"]\n[host]\nram = "1G"\nworker-memory = "64M"\n')
    assert {f["code"] for f in lint(root, "--select", "P112", "conf/httpd.conf")} == {"P112"}
    c201 = lint(root, "--select", "C201", "--ram", "64G", "conf/httpd.conf")
    assert c201 == []


def test_per_path_ignores(tmp_path):
    root = tree(tmp_path, '[per-path-ignores]\n"conf/legacy.conf" = ["R3", "P112"]\n')
    findings = lint(root, "conf/httpd.conf", "conf/legacy.conf")
    legacy = {f["code"] for f in findings if f["file"].endswith("legacy.conf")}
    main = {f["code"] for f in findings if f["file"].endswith("httpd.conf")}
    assert {"R301", "P112"} <= main
    assert not legacy & {"R301", "P112"} and legacy


def test_pyproject_table_and_isolated(tmp_path):
    root = tree(tmp_path, '[project]\nname = "x"\n[tool.apache-advisor]\nignore = ["R301"]\n',
                name="pyproject.toml")
    assert "R301" not in {f["code"] for f in lint(root / "conf", "httpd.conf")}
    assert "R301" in {f["code"] for f in lint(root / "conf", "--isolated", "httpd.conf")}


def test_explicit_config_option(tmp_path):
    root = tree(tmp_path, 'ignore = ["R301"]\n', name="other.toml")
    assert "R301" in {f["code"] for f in lint(root, "conf/httpd.conf")}
    assert "R301" not in {f["code"] for f in lint(root, "--config", "other.toml", "conf/httpd.conf")}


@pytest.mark.parametrize("settings, fragment", [
    ("colour = true\n", "unknown key 'colour'"),
    ("select = 3\n", "'select' must be"),
    ("fail-on = \"maybe\"\n", "fail-on must be one of"),
    ("[severity]\nP101 = \"fatal\"\n", "severity.P101"),
    ("[severity]\nZ999 = \"info\"\n", "unknown rule Z999"),
    ("[host]\nswap = \"1G\"\n", "unknown key 'swap' in [host]"),
    ("[host]\nram = \"plenty\"\n", "cannot read size"),
    ("select = [\n", "invalid TOML"),
])
def test_bad_settings_are_one_line_errors(tmp_path, settings, fragment):
    root = tree(tmp_path, settings)
    result = subprocess.run(CLI + ["conf/httpd.conf"], capture_output=True, text=True, cwd=root,
                            stdin=subprocess.DEVNULL, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert fragment in lines[0]


def test_find_config_file_walks_upward(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    found = find_config_file(str(tmp_path / "a" / "b"))
    assert found is None or not found.startswith(str(tmp_path))
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "unrelated"\n')
    assert find_config_file(str(tmp_path / "a" / "b")) != str(tmp_path / "pyproject.toml")
    (tmp_path / "a" / ".apache-advisor.toml").write_text("")
    assert find_config_file(str(tmp_path / "a" / "b")) == str(tmp_path / "a" / ".apache-advisor.toml")


def test_load_file_settings_parses_everything(tmp_path):
    path = tmp_path / ".apache-advisor.toml"
    path.write_text('select = "P1"\nprofile = "security"\nfail_on = "error"\n'
                    '[per-path-ignores]\n"*.conf" = "E406"\n[host]\nexpected-clients = 300\n')
    settings = load_file_settings(str(path))
    assert settings.select == ["P1"] and settings.profile == "security" and settings.fail_on == "error"
    assert settings.per_path_ignores == [("*.conf", ["E406"])]
    assert settings.host == {"expected-clients": 300}
    path.write_text("profile = 'fast'\n")
    with pytest.raises(UsageError):
        load_file_settings(str(path))
