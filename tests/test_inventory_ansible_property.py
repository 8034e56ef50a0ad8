"""Small generated INI inventories: our reader and Ansible's library (in this
process) give the same hosts, groups, variables and --limit picks (issue 59)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.errors import ConfigError
from test_inventory_ansible import ansible_bin

GROUPS = ["web", "db", "edge", "prod"]
HOSTS = ["h1", "h2", "h3", "web1", "db1"]
VALUES = ["deploy", "2222", "True", "no", "'quoted'", "[1, 2]", "1e3"]
KEYS = ["ansible_user", "ansible_port", "ansible_become", "ansible_become_user", "x"]


@st.composite
def ini_inventories(draw) -> str:
    lines: list[str] = []
    declared: set[str] = set()
    for group in draw(st.lists(st.sampled_from(GROUPS), min_size=1, max_size=4, unique=True)):
        declared.add(group)
        lines.append(f"[{group}]")
        for host in draw(st.lists(st.sampled_from(HOSTS), max_size=3, unique=True)):
            pairs = draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2))
            lines.append(" ".join([host, *(f"{k}={v}" for k, v in pairs.items())]))
        variables = draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2))
        if variables:
            lines.append(f"[{group}:vars]")
            lines += [f"{k}={v}" for k, v in variables.items()]
    parent = draw(st.sampled_from(["prod", "all"]))
    children = [g for g in sorted(declared) if g != parent]
    if parent == "prod" and "prod" in declared and children:
        lines.append("[prod:children]")
        lines += draw(st.lists(st.sampled_from(children), min_size=1, max_size=len(children), unique=True))
    return "\n".join(lines) + "\n"


def _reading(read, path: Path):
    try:
        return read(str(path))
    except ConfigError as exc:
        return exc


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=ini_inventories(), limit=st.sampled_from(["all", "prod", "web:db", "prod:!web", "h*:&prod", "~(web|db)1"]))
def test_our_reader_and_ansibles_agree_on_generated_ini(text, limit):
    ansible_bin("ansible-inventory")
    from advisor.commands.inventory_ansible import read_with_ansible
    from advisor.commands.inventory_static import read_static

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "hosts"
        path.write_text(text)
        theirs, ours = _reading(read_with_ansible, path), _reading(read_static, path)
    # A file one reader refuses, the other refuses at the same line ("[1, 2]" after a host splits in two).
    assert isinstance(ours, ConfigError) == isinstance(theirs, ConfigError), (text, ours, theirs)
    if isinstance(ours, ConfigError):
        assert (ours.file, ours.line) == (theirs.file, theirs.line) == (str(path), ours.line) and ours.line
        return
    assert {h.name: (h.variables, h.groups) for h in ours} == {h.name: (h.variables, h.groups) for h in theirs}
    assert set(ours.select(limit)) == set(theirs.select(limit)), (text, limit)
