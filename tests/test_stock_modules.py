"""Every module httpd 2.4 ships is httpd's own, with or without directives
(issue 10, item 2): none is taken for a third-party module, so an unknown
directive in a stock tree is the error httpd makes of it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from advisor.config.envvars import read_envvars
from advisor.config.modules import STOCK, source_name
from advisor.config.oracle import module_dir, run_httpd
from conftest import SAMPLES, require_httpd, require_tool

from lint_helpers import lint_json

CLI = [sys.executable, "-m", "advisor"]


def shipped_modules() -> list[str]:
    """Paths of the mod_*.so in the real modules directory that the httpd
    package installed (dpkg says which; another package's module is not
    httpd's own)."""
    require_httpd()
    require_tool("dpkg")
    directory = module_dir()
    listed = subprocess.run(["dpkg", "-L", STOCK.package], capture_output=True, text=True).stdout
    owned = set(listed.split())
    found = [os.path.join(directory, name) for name in sorted(os.listdir(directory))
             if re.fullmatch(r"mod_\w+\.so", name)]
    shipped = [path for path in found if path in owned]
    assert len(shipped) > 100, (directory, len(found), len(shipped))
    return shipped


@pytest.mark.httpd
def test_the_data_knows_every_module_in_the_modules_directory():
    for path in shipped_modules():
        module_id = os.path.basename(path)[4:-3] + "_module"
        assert module_id in STOCK.ids, f"{path}: rerun python -m advisor.config.modules_build"
        assert STOCK.shared[module_id][0] == os.path.basename(path)


@pytest.mark.httpd
def test_no_shipped_module_is_called_third_party(tmp_path):
    """A config that loads every shared module httpd ships (one MPM) and
    writes a name nobody defines: E401 is an error, not the info given when
    a third-party module might own the name."""
    lines = []
    for path in shipped_modules():
        stem = os.path.basename(path)[4:-3]
        if stem.startswith("mpm_") and stem != "mpm_event":
            continue
        lines.append(f"LoadModule {stem}_module {path}")
    lines.append("qwerqwr on")
    config = tmp_path / "all-modules.conf"
    config.write_text("\n".join(lines) + "\n")
    unknown = [f for f in lint_json(str(config), "--select", "E401") if f["line"] == len(lines)]
    assert len(unknown) == 1, unknown
    assert unknown[0]["severity"] == "error", unknown[0]["message"]
    assert "third-party" not in unknown[0]["message"]


@pytest.mark.httpd
def test_regenerating_the_data_gives_the_same_facts():
    """The generator, run against the installed package, writes what the
    repository holds. A Debian update of the package (a new version string
    on a fresh CI machine) fails this only when it changes the modules."""
    require_tool("dpkg")
    require_httpd()
    installed = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", STOCK.package],
                               capture_output=True, text=True).stdout.strip()
    from advisor.config import modules_build

    rebuilt = modules_build.build(STOCK.package)
    recorded = json.loads(modules_build.OUT.read_text())
    if installed != STOCK.version:
        assert rebuilt.get("version") == installed
        for stamp in ("version", "httpd"):  # what names the release, not what it ships
            rebuilt[stamp] = recorded.get(stamp)
    assert rebuilt == recorded, (f"{STOCK.package} {installed} ships other modules than the data "
                                 f"from {STOCK.version} records: rerun python -m advisor.config.modules_build")


@pytest.mark.httpd
def test_ldap_source_name_is_the_one_httpd_answers_to(tmp_path):
    """mod_ldap is compiled from util_ldap.c: httpd's <IfModule> knows that
    name, not mod_ldap.c. The reader now takes the package's name."""
    require_httpd()
    directory = module_dir()
    assert source_name("ldap_module", f"{directory}/mod_ldap.so") == "util_ldap.c"
    (tmp_path / "logs").mkdir()
    config = tmp_path / "ldap.conf"
    config.write_text(
        "ServerName ldap.test\n"
        f"ErrorLog {tmp_path}/logs/error.log\n"
        f"LoadModule mpm_event_module {directory}/mod_mpm_event.so\n"
        f"LoadModule ldap_module {directory}/mod_ldap.so\n"
        "<IfModule util_ldap.c>\nDefine BY_SOURCE\n</IfModule>\n"
        "<IfModule mod_ldap.c>\nDefine BY_FILE_NAME\n</IfModule>\n")
    httpd = run_httpd(str(config), server_root=str(tmp_path), args=("-t", "-D", "DUMP_RUN_CFG"),
                      preload_info=False)
    httpd_defines = set(re.findall(r"^Define: (\w+)", httpd.stdout, re.M)) - {"DUMP_RUN_CFG"}
    dumped = subprocess.run(CLI + ["dump", "--json", str(config)], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=60)
    assert dumped.returncode == 0, dumped.stderr
    assert set(json.loads(dumped.stdout)["defines"]) == httpd_defines == {"BY_SOURCE"}


@pytest.mark.httpd
def test_stock_debian_tree_refuses_an_unknown_directive(tmp_path, test_envvars):
    """Debian's stock tree (authz_host and other modules without directives
    enabled) with `qwerqwr`: httpd refuses it on that line, and lint says
    error on the same line."""
    require_httpd()
    tree = tmp_path / "apache2"
    shutil.copytree(SAMPLES / "debian", tree)
    shutil.copy(test_envvars, tree / "envvars")
    main = tree / "apache2.conf"
    text = main.read_text()
    main.write_text(text + ("" if text.endswith("\n") else "\n") + "qwerqwr on\n")
    line = len(main.read_text().splitlines())

    env = dict(os.environ)
    env.update(read_envvars(str(tree / "envvars"), env))
    httpd = run_httpd(str(main), server_root=str(tree), env=env, args=("-t",), preload_info=False)
    assert not httpd.accepted
    assert f"line {line} of {main}" in httpd.stderr and "Invalid command 'qwerqwr'" in httpd.stderr, \
        httpd.stderr

    findings = [f for f in lint_json(str(main)) if f["code"] == "E401"]
    assert [(f["line"], f["severity"]) for f in findings] == [(line, "error")], findings
