"""`apache-advisor lint` as a user and a CI job run it: exit codes, bad input,
selection, profiles, --output, several paths."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import assert_one_line_error

from lint_helpers import REPO, lint_json

CLI = [sys.executable, "-m", "advisor"]
EVENT = "LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so\n"
REQTIMEOUT = "LoadModule reqtimeout_module /usr/lib/apache2/modules/mod_reqtimeout.so\n"
CLEAN = (EVENT + REQTIMEOUT + "ServerName clean.test\nServerTokens Prod\nTraceEnable Off\n"
         "EnableSendfile On\nBufferedLogs On\nCustomLog /tmp/apache-advisor-clean-access.log common\n")


def run(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(CLI + ["lint", *args], capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL, env=full_env, timeout=60)


def config(tmp_path: Path, body: str, name: str = "httpd.conf") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


def test_clean_config_exits_zero(tmp_path):
    result = run("--isolated", str(config(tmp_path, CLEAN)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No problems found in 1 file." in result.stdout


def test_warning_fails_by_default_and_fail_on_moves_the_bar(tmp_path):
    path = config(tmp_path, CLEAN + "Timeout 300\nListenBacklog 64\n")
    assert run("--isolated", str(path)).returncode == 1  # R301 warning
    assert run("--isolated", "--fail-on", "error", str(path)).returncode == 0
    assert run("--isolated", "--fail-on", "never", str(path)).returncode == 0
    only_info = config(tmp_path, CLEAN + "ListenBacklog 64\n", "info.conf")
    assert run("--isolated", str(only_info)).returncode == 0  # P112 is info
    assert run("--isolated", "--fail-on", "info", str(only_info)).returncode == 1


def test_missing_file_is_one_line_exit_2(tmp_path):
    assert_one_line_error(run("--isolated", str(tmp_path / "nope.conf")), "nope.conf", "no such file")


def test_broken_config_is_one_line_with_file_and_line(tmp_path):
    path = config(tmp_path, CLEAN + "<VirtualHost *:80>\nServerName a\n")
    assert_one_line_error(run("--isolated", str(path)), f"{path}:", "not closed")


@pytest.mark.parametrize("args, fragment", [
    (["--format", "xml"], "--format"),
    (["--select", "Z9"], "Z9"),
    (["--ignore", "nonsense-slug"], "nonsense-slug"),
    (["--profile", "speed"], "profile"),
    (["--fail-on", "sometimes"], "fail-on"),
    (["--ram", "lots"], "--ram"),
    (["--mpm", "threads"], "--mpm"),
    (["--worker-memory", "-5M"], "--worker-memory"),
    (["--statistics", "--format", "sarif"], "--statistics"),
    (["--statistics", "--format", "github"], "--statistics"),
])
def test_bad_options_are_usage_errors(tmp_path, args, fragment):
    path = config(tmp_path, CLEAN)
    assert_one_line_error(run("--isolated", *args, str(path)), fragment)


def test_output_file_is_written_whole_and_stdout_stays_empty(tmp_path):
    path = config(tmp_path, CLEAN + "KeepAlive Off\n")
    report = tmp_path / "out" / "report.json"
    assert_one_line_error(run("--isolated", "-f", "json", "-o", str(report), str(path)), "does not exist")
    assert not report.exists()
    report.parent.mkdir()
    result = run("--isolated", "-f", "json", "-o", str(report), str(path))
    assert result.returncode == 1 and result.stdout == ""
    data = json.loads(report.read_text())
    assert [f["code"] for f in data] == ["P102"]
    leftovers = [p.name for p in report.parent.iterdir() if p.name != "report.json"]
    assert leftovers == []


def test_text_output_to_file_has_no_colour(tmp_path):
    path = config(tmp_path, CLEAN + "KeepAlive Off\n")
    report = tmp_path / "report.txt"
    run("--isolated", "-o", str(report), str(path), env={"FORCE_COLOR": "1"})
    text = report.read_text()
    assert "\x1b[" not in text
    assert "P102" in text and "fix: KeepAlive On" in text


def test_select_ignore_and_profiles(tmp_path):
    path = config(tmp_path, EVENT + "ServerName a.test\nKeepAlive Off\nTimeout 300\nServerTokens OS\n")
    codes = lambda *args: sorted({f["code"] for f in lint_json(str(path), *args)})  # noqa: E731
    everything = codes()
    assert {"P102", "R301", "S501", "R302", "S503"} <= set(everything)
    assert codes("--select", "P102") == ["P102"]
    assert codes("--select", "P1,R3") == sorted(c for c in everything if c[:2] in ("P1", "R3"))
    assert codes("--select", "security") == sorted(c for c in everything if c.startswith("S"))
    assert codes("--select", "keepalive-off") == ["P102"]
    assert "P102" not in codes("--ignore", "P102")
    assert codes("--ignore", "S", "--ignore", "R", "--select", "P,S,R") == ["P102", "P108"]
    security = codes("--profile", "security")
    assert security and all(c[0] in "SEA" for c in security)
    performance = codes("--profile", "performance")
    assert "P102" in performance and not any(c.startswith("S") for c in performance)


def test_several_paths_are_linted_each_as_its_own_config(tmp_path):
    first = config(tmp_path, CLEAN + "KeepAlive Off\n", "one.conf")
    second = config(tmp_path, CLEAN + "Timeout 600\n", "two.conf")
    findings = lint_json(str(first), str(second))
    assert {(Path(f["file"]).name, f["code"]) for f in findings} == {("one.conf", "P102"), ("two.conf", "R301")}


def test_directory_path_finds_the_main_file(tmp_path):
    config(tmp_path, CLEAN + "KeepAlive Off\n", "apache2.conf")
    findings = lint_json(str(tmp_path))
    assert [f["code"] for f in findings] == ["P102"]


def test_paths_are_relative_below_the_working_directory(tmp_path):
    config(tmp_path, CLEAN + "KeepAlive Off\n")
    result = run("--isolated", "-f", "json", "httpd.conf", cwd=tmp_path)
    assert json.loads(result.stdout)[0]["file"] == "httpd.conf"
    elsewhere = run("--isolated", "-f", "json", str(tmp_path / "httpd.conf"), cwd=REPO)
    assert json.loads(elsewhere.stdout)[0]["file"] == str(tmp_path / "httpd.conf")


def test_defines_and_modules_reach_the_loader(tmp_path):
    path = config(tmp_path, CLEAN + "<IfDefine SLOW>\nKeepAlive Off\n</IfDefine>\n"
                  "<IfModule mod_fancy.c>\nTimeout 900\n</IfModule>\n")
    assert lint_json(str(path)) == []
    codes = sorted(f["code"] for f in lint_json(str(path), "--define", "SLOW", "--module", "mod_fancy.c"))
    assert codes == ["P102", "R301"]
    listing = tmp_path / "modules.txt"
    listing.write_text("Loaded Modules:\n core_module (static)\n fancy_module (shared)\n")
    assert [f["code"] for f in lint_json(str(path), "--modules-from", str(listing))] == ["R301"]


def test_mpm_and_version_options_change_the_verdict(tmp_path):
    body = (REQTIMEOUT + "ServerName a.test\nServerTokens Prod\nTraceEnable Off\nEnableSendfile On\nKeepAliveTimeout 15\n"
            "BufferedLogs On\nCustomLog /tmp/apache-advisor-clean-access.log common\n")
    path = config(tmp_path, body)
    assert lint_json(str(path), "--mpm", "event") == []
    assert sorted(f["code"] for f in lint_json(str(path), "--mpm", "prefork")) == ["P104", "P113"]
    legacy = config(tmp_path, EVENT + REQTIMEOUT + "ServerName a\nMaxClients 100\n", "legacy.conf")
    assert "E404" in {f["code"] for f in lint_json(str(legacy))}
    assert "E404" not in {f["code"] for f in lint_json(str(legacy), "--apache-version", "2.2")}


def test_text_output_groups_by_file_with_summary(tmp_path):
    main = config(tmp_path, CLEAN + "KeepAlive Off\nInclude extra.conf\n")
    (tmp_path / "extra.conf").write_text("Timeout 300\nListenBacklog 10\n")
    result = run("--isolated", str(main))
    out = result.stdout
    assert out.index(str(main)) < out.index("P102") < out.index(str(tmp_path / "extra.conf")) < out.index("R301")
    assert re.search(r"^\s+9\s+warning\s+P102 ", out, re.M)
    assert re.search(r"^\s+1\s+warning\s+R301 ", out, re.M)
    assert "why: Arlitt & Williamson (2004, sec. 5.1.6)" in out
    assert "Found 3 problems (2 warnings, 1 info) in 2 files" in out
    assert "\x1b[" not in out  # not a terminal: no colour
    quiet = run("--isolated", "--no-evidence", str(main)).stdout
    assert "why:" not in quiet and "P102" in quiet


def test_notes_say_which_rules_lacked_host_facts(tmp_path):
    result = run("--isolated", "--no-live", str(config(tmp_path, CLEAN)))
    assert "note: C201, C202 skipped: RAM unknown" in result.stdout


def test_statistics_count_per_rule_and_keep_the_exit_code(tmp_path):
    """--statistics counts each rule's findings (text and JSON) and exits as
    the same lint without it would."""
    path = config(tmp_path, CLEAN + "KeepAlive Off\n<VirtualHost *:80>\nKeepAlive Off\n</VirtualHost>\n"
                  "HostnameLookups On\n")
    plain = run("--isolated", "--no-cache", "--format", "json", str(path))
    found = json.loads(plain.stdout)
    counted = run("--isolated", "--no-cache", "--statistics", "--format", "json", str(path))
    assert counted.returncode == plain.returncode == 1
    expected: dict[tuple[str, str], int] = {}
    for item in found:
        expected[(item["code"], item["severity"])] = expected.get((item["code"], item["severity"]), 0) + 1
    assert {(row["code"], row["severity"]): row["count"] for row in json.loads(counted.stdout)} == expected
    assert [row["count"] for row in json.loads(counted.stdout)] == sorted(expected.values(), reverse=True)
    as_text = run("--isolated", "--no-cache", "--statistics", str(path))
    assert as_text.returncode == 1
    assert re.search(r"^\s+2  P102  warning  keepalive-off$", as_text.stdout, re.M), as_text.stdout
    assert f"Found {len(found)} problems" in as_text.stdout
    never = run("--isolated", "--no-cache", "--statistics", "--fail-on", "never", str(path))
    assert never.returncode == 0
