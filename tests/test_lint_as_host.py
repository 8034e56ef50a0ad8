"""`lint --host H --as PATH CANDIDATE` (issue 59): a candidate on this machine
judged in a namespace host's tree (tests/fleet_topology.py), the tree read
as `lint --host` reads it and httpd's test run by the host's own apache2 on
a copy in a private directory there. One host, several candidates: a risky
one exits 1 with its findings at its own lines, one httpd refuses exits 2
with httpd's line (named through sites-enabled and through the
sites-available file a link points to), one that causes a warning in
another file exits 1 at that file's line, for a deploy user with --become
on a tree only root may read. The host's files are
unchanged afterwards and no directory of the test is left in its /tmp
(the namespace host shares this machine's)."""

from __future__ import annotations

import glob
import hashlib
import json
import os
from pathlib import Path

import pytest

from conftest import assert_one_line_error, require_httpd
from test_bench_support import cli
from test_lint_as import CLEAN, REFUSED, RISKY

pytestmark = pytest.mark.netns

SITE = "/etc/apache2/sites-enabled/shop.conf"
LEFT_BEHIND = "/tmp/apache-advisor-validate-*"


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    import fleet_topology
    import netns_topology

    require_httpd()
    work = tmp_path_factory.mktemp("lint-as-host")
    (work / "run").mkdir()
    tree = fleet_topology.debian_tree(work / "apache2", work / "run")
    os.chmod(tree / "apache2.conf", 0o640)  # only root reads it: the deploy user needs --become
    build = lambda: fleet_topology.build(work / "net", [("web1", tree)],  # noqa: E731
                                         users=netns_topology.LOGIN_USERS)
    with netns_topology.held(build, "the validate host") as topo:
        yield topo, tree


def _state(tree: Path) -> dict[str, tuple]:
    """Every file, link and directory of the host's tree: mode, owner, and
    its bytes' digest or the link's target."""
    state = {}
    for directory, names, files in os.walk(tree):
        for name in names + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            body = os.readlink(path) if os.path.islink(path) else \
                hashlib.sha256(Path(path).read_bytes()).hexdigest() if os.path.isfile(path) else None
            state[os.path.relpath(path, tree)] = (info.st_mode, info.st_uid, info.st_gid, body)
    return state


def test_candidates_judged_in_the_hosts_tree_by_its_httpd(host, tmp_path):
    topo, tree = host
    address = topo.node("web1").addr
    before, left_before = _state(tree), set(glob.glob(LEFT_BEHIND))
    ssh = ["--identity", str(topo.user_key)] + [arg for option in topo.ssh_options()
                                                for arg in ("--ssh-option", option)]

    def lint_as(login: str, target: str, text: str, name: str, *extra: str):
        path = tmp_path / name
        path.write_text(text)
        result = cli("lint", "--isolated", "--host", f"{login}@{address}", *ssh, *extra, "--as", target,
                     str(path), check=False)
        return result, str(path)

    # Risky (S504 at its line 5, P110, S509): exit 1 at the default --fail-on
    # warning, though the tree has warnings of its own (S501, R301...): only
    # the candidate's findings are shown, at its path and lines.
    result, risky = lint_as("root", SITE, RISKY.replace("*:443", "*:80"), "risky.tmp", "--format", "json")
    assert result.returncode == 1, result.stderr
    found = json.loads(result.stdout)
    assert {(f["code"], f["file"], f["line"]) for f in found} == \
        {("S504", risky, 5), ("P110", risky, 5), ("S509", risky, 3)}, found
    assert {f["host"] for f in found} == {f"root@{address}"}

    # Clean: exit 0, and the text report notes the tree's own findings it leaves out.
    result, _ = lint_as("root", SITE, CLEAN, "clean.tmp", "--no-evidence")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "of the tree as it is (" in result.stdout and "R301" in result.stdout.split("of the tree as it is")[1]

    # httpd refuses it: its own line, at the candidate's line 4, exit 2; also
    # when PATH is the sites-available file the enabled link points to (the
    # host resolves the link: the local copy of its tree has no links).
    result, refused = lint_as("root", SITE, REFUSED, "refused.tmp")
    assert_one_line_error(result, f"root@{address}: {refused}:4: apache2 refuses the tree with this file as "
                                  f"{SITE}: Invalid command 'ServerNme'")
    result, refused = lint_as("root", "/etc/apache2/sites-available/000-default.conf", REFUSED, "refused.tmp")
    assert_one_line_error(result, f"{refused}:4: apache2 refuses the tree with this file as "
                                  "/etc/apache2/sites-available/000-default.conf: Invalid command 'ServerNme'")

    # A warning in apache2.conf that only the candidate causes (its KeepAliveTimeout
    # made dead, E406), as the deploy user under sudo: the tree is 0640 root, so
    # httpd's test of the copy ran as root too (the deploy user's copy of it
    # would fail to read apache2.conf).
    line = (tree / "apache2.conf").read_text().split("\n").index("KeepAliveTimeout 5") + 1
    result, _ = lint_as("deploy", "/etc/apache2/conf-enabled/zz.conf", "KeepAliveTimeout 3\n", "later.tmp",
                        "--become", "--format", "json")
    assert result.returncode == 1, result.stderr
    assert [(f["code"], f["file"], f["line"]) for f in json.loads(result.stdout)] == \
        [("E406", "/etc/apache2/apache2.conf", line)]

    # A PATH the host's tree does not read: one line naming what it reads there.
    result, _ = lint_as("root", "/etc/apache2/conf-enabled/notes.txt", CLEAN, "clean.tmp")
    assert_one_line_error(result, f"root@{address}: --as /etc/apache2/conf-enabled/notes.txt: the tree of "
                                  "/etc/apache2/apache2.conf does not read that file", "it reads charset.conf")

    assert _state(tree) == before
    assert set(glob.glob(LEFT_BEHIND)) == left_before
