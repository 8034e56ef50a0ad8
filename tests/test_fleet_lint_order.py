"""A fleet lint lints each tree as its host's reading comes in, while the
other hosts are still being read; the report must not depend on which host
answered first. Two hosts with one tree: `first`, named first, answers
last (its python3 starts 1.5 s late), so its group is linted with `second`'s
reading before `first` comes in, and again with `first`'s then, as the group
is reported under the first host named.
"""

from __future__ import annotations

import json
import shlex
import shutil
import stat
from pathlib import Path

import pytest

from test_bench_support import cli

pytestmark = pytest.mark.netns

REAL_PYTHON = Path("/usr/bin/python3").resolve()


def _late_python(work: Path) -> str:
    """Setup shell that makes the host's python3 start 1.5 s late: a copy of
    the real interpreter, and a script mounted over the original that sleeps,
    then runs the copy."""
    copy = work / "python-copy" / REAL_PYTHON.name
    copy.parent.mkdir()
    shutil.copy2(REAL_PYTHON, copy)
    script = work / "late-python"
    script.write_text(f"#!/bin/sh\nsleep 1.5\nexec {shlex.quote(str(copy))} \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return f"mount --bind {shlex.quote(str(script))} {shlex.quote(str(REAL_PYTHON))}\n"


def test_a_group_is_reported_under_its_first_host_whichever_answers_first(tmp_path):
    import fleet_topology
    import netns_topology

    run = tmp_path / "run"
    run.mkdir()
    tree = fleet_topology.debian_tree(tmp_path / "tree", run)
    plain = fleet_topology.plain_root_home(tmp_path)  # python3 is /usr/bin's, not pyenv's
    hosts = [("first", tree, plain + _late_python(tmp_path)), ("second", tree, plain)]
    with netns_topology.held(lambda: fleet_topology.build(tmp_path / "net", hosts), "the test fleet") as topo:
        argv = ["lint", "--isolated", "--fail-on", "never", "--identity", str(topo.user_key), "--jobs", "2"]
        for option in topo.ssh_options():
            argv += ["--ssh-option", option]
        argv += ["--host", f"root@{topo.node('first').addr}", "--host", f"root@{topo.node('second').addr}"]
        first, second = f"root@{topo.node('first').addr}", f"root@{topo.node('second').addr}"
        findings = json.loads(cli(*argv, "--format", "json").stdout)
        text = cli(*argv).stdout
    assert findings, "Debian's tree as shipped has findings (S501 at least)"
    assert all(f["host"] == first and f["hosts"] == [first, second] for f in findings), findings[:3]
    assert f"== {first}, {second}: identical trees, linted once ==" in text
    # The notes come from the host the group was linted with: the first named.
    assert f"read on {first}" in text and f"read on {second}" not in text, text
    assert "Fleet: 2 of 2 hosts linted (1 distinct tree)." in text
