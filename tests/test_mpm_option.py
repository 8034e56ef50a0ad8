"""`--mpm` names the MPM httpd runs when the config loads none (a static
build): its module then counts as loaded, so `<IfModule>` on it is active in
`lint` and `capacity` as it would be in httpd (issue 10, item 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import assert_one_line_error

from lint_helpers import lint_json

CLI = [sys.executable, "-m", "advisor"]

# The file of the issue: prefork settings, nothing loads an MPM.
PREFORK_ONLY = """<IfModule mpm_prefork_module>
StartServers 100
MaxClients 100
MinSpareServers 100
MaxSpareServers 100
ServerLimit 100
MaxRequestsPerChild 3000
</IfModule>
"""


def write(tmp_path: Path, body: str, name: str = "prefork.conf") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


def found(findings: list[dict]) -> list[tuple[str, int]]:
    return sorted((f["code"], f["line"]) for f in findings)


def test_mpm_option_makes_its_ifmodule_active(tmp_path):
    path = str(write(tmp_path, PREFORK_ONLY))
    with_mpm = found(lint_json(path, "--mpm", "prefork"))
    for expected in (("P105", 2), ("E404", 3), ("E404", 7), ("P101", 7)):
        assert expected in with_mpm, with_mpm
    # The same as telling the loader the module is loaded.
    assert with_mpm == found(lint_json(path, "--module", "mpm_prefork_module"))


def test_mpm_option_answers_the_source_file_name_too(tmp_path):
    body = PREFORK_ONLY.replace("mpm_prefork_module", "prefork.c")
    codes = found(lint_json(str(write(tmp_path, body)), "--mpm", "Prefork"))
    assert ("P105", 2) in codes and ("P101", 7) in codes, codes


def test_other_mpm_leaves_the_block_inactive(tmp_path):
    codes = found(lint_json(str(write(tmp_path, PREFORK_ONLY)), "--mpm", "event"))
    assert not {code for code, _ in codes} & {"P105", "E404", "P101"}, codes


def test_config_that_loads_an_mpm_is_read_without_the_option(tmp_path):
    """--mpm applies only when the config loads no MPM: a config loading
    event is read as it stands, the prefork block stays inactive and the
    reader reports no module loaded twice."""
    body = "LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so\n" + PREFORK_ONLY
    path = write(tmp_path, body)
    codes = found(lint_json(str(path), "--mpm", "prefork"))
    assert ("P105", 3) not in codes and ("P101", 8) not in codes, codes
    dumped = subprocess.run(CLI + ["dump", "--json", str(path)], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=60)
    assert dumped.returncode == 0 and "already loaded" not in dumped.stderr, dumped.stderr


def test_capacity_reads_the_block_of_the_mpm_option(tmp_path):
    path = write(tmp_path, PREFORK_ONLY)
    result = subprocess.run(CLI + ["capacity", str(path), "--mpm", "prefork", "--ram", "4G",
                                   "--worker-memory", "20M", "--rate", "50", "--service-time", "0.01",
                                   "--format", "json"],
                            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert result.returncode == 0, result.stderr
    settings = json.loads(result.stdout)["settings"]
    assert settings["mpm"] == "prefork"
    assert settings["written_max_request_workers"] == 100  # MaxClients 100 in the block
    assert settings["server_limit"] == 100


def test_unknown_mpm_is_one_line_exit_2(tmp_path):
    path = write(tmp_path, PREFORK_ONLY)
    result = subprocess.run(CLI + ["lint", "--isolated", "--mpm", "threadpool", str(path)],
                            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert_one_line_error(result, "--mpm", "threadpool")
