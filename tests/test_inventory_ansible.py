"""`lint --inventory` reads inventories exactly as Ansible does (issue 59).

Ansible's own command-line tools are the oracle, run as subprocesses on the
fleets of corpus/inventories/: `ansible-inventory --list` (hosts and each
host's merged variables), `--graph` (the groups each host is in),
`ansible-playbook --list-hosts` (one play per host pattern: the hosts each
pattern picks, in one run) and `ansible all --limit ... --list-hosts`. Both
of our readings are held to them: Ansible's library when ansible-core is
installed, and our own reader with Ansible hidden, on the static files.

Host lists are compared as sets: Ansible walks groups below the first level
through Python sets, so its own order changes from run to run there.

ansible-core comes with the `ansible` extra, which .ci/install installs: a
missing Ansible fails these tests under CI (CI=true), as a missing apache2
fails the httpd tests.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, fail_in_ci_else_skip

CORPUS = REPO / "corpus" / "inventories"
CASES = {"ini": CORPUS / "ini" / "hosts", "yaml": CORPUS / "yaml" / "hosts.yml",
         "script": CORPUS / "script" / "inventory.py"}
STATIC = ("ini", "yaml")
CONNECTION = ("ansible_host", "ansible_user", "ansible_port", "ansible_ssh_private_key_file", "ansible_become",
              "ansible_become_user", "ansible_become_method", "apache_advisor_config")
# Host patterns each fleet is read with: groups, unions, `:&`, `:!`, globs,
# `~regex`, subscripts on one level of a group, fnmatch classes, no match.
PATTERNS = {
    "ini": ["web", "prod", "web:db", "prod:&edge", "prod:!db", "web*", "~db-[ab]", "db[0]", "db[1:2]", "prod[0:2]",
            "db[2:]", "all:!prod", "*.example.com", "web,edge1", "ungrouped", "web:&canary:!web03.example.com",
            "lone.example.com", "db-[a:c]", "nothing-here", "prod:!web01*:&~.*example.*", "canary,db-z:edge"],
    "yaml": ["web", "prod", "prod:&edge", "prod:!db", "all:!prod", "web[1:3]", "~web[0-9]", "10.0.0.*", "db[-1]",
             "edge:web9", "empty", "ungrouped", "*:!web2", "&web,prod"],
    "script": ["prod", "web:!dyn-web2", "~dyn-(db|web)1", "dyn-*:&db", "web:&db"],
}
# One --limit per fleet, checked against `ansible all --limit` itself.
LIMITS = {"ini": "web:&prod:!web02.example.com", "yaml": "prod:edge:!db"}


def ansible_bin(name: str) -> str:
    """Ansible's tool in this venv (looked up without importing Ansible here:
    some tests hide it from this process)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        fail_in_ci_else_skip(f"ansible-core is not installed ({name} is not beside {sys.executable}); "
                             ".ci/install installs the 'ansible' extra")
    return str(path)


def run_ansible(tool: str, *args: str) -> str:
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PYTHONWARNINGS="ignore")
    result = subprocess.run([ansible_bin(tool), *args], capture_output=True, text=True, timeout=120, env=env,
                            cwd=REPO)
    assert result.returncode == 0, (tool, args, result.stderr[-2000:])
    return result.stdout


@functools.lru_cache(maxsize=None)
def oracle_list(case: str) -> dict:
    return json.loads(run_ansible("ansible-inventory", "-i", str(CASES[case]), "--list"))


@functools.lru_cache(maxsize=None)
def oracle_groups(case: str) -> dict[str, set[str]]:
    """Each host -> its groups, read off `ansible-inventory --graph` (a group
    holds the hosts printed anywhere below it)."""
    groups: dict[str, set[str]] = {}
    trail: list[tuple[int, str]] = []
    for line in run_ansible("ansible-inventory", "-i", str(CASES[case]), "--graph").splitlines():
        depth = line.find("@") if "@" in line else line.find("|--") + 3
        name = line[depth:].strip().lstrip("@").rstrip(":")
        trail = [(d, g) for d, g in trail if d < depth]
        if "@" in line:
            trail.append((depth, name))
        else:
            groups.setdefault(name, set()).update(g for _, g in trail)
    return groups


@functools.lru_cache(maxsize=None)
def oracle_patterns(case: str) -> dict[str, set[str]]:
    """The hosts each of PATTERNS[case] picks, from one `ansible-playbook
    --list-hosts` run with a play per pattern."""
    import tempfile

    plays = [{"name": f"p{i}", "hosts": pattern, "gather_facts": False, "tasks": []}
             for i, pattern in enumerate(PATTERNS[case])]
    with tempfile.TemporaryDirectory() as folder:
        playbook = Path(folder) / "plays.yml"
        playbook.write_text(json.dumps(plays))
        output = run_ansible("ansible-playbook", "-i", str(CASES[case]), "--list-hosts", str(playbook))
    picked: dict[str, set[str]] = {}
    current = None
    for line in output.splitlines():
        text = line.strip()
        if text.startswith("pattern:"):
            current = ",".join(ast.literal_eval(text.split(":", 1)[1].strip()))
            picked[current] = set()
        elif current is not None and text and not text.startswith(("hosts (", "play #", "playbook:")):
            picked[current].add(text)
    assert len(picked) == len(PATTERNS[case]), output
    return {pattern: picked[pattern] for pattern in PATTERNS[case]}


@pytest.fixture
def no_ansible(monkeypatch):
    """Ansible hidden from this process: its imports fail as on a machine without it."""
    for name in [n for n in sys.modules if n == "ansible" or n.startswith("ansible.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "ansible", None)
    from advisor.commands import inventory_ansible

    assert not inventory_ansible.available()


def our_reading(case: str):
    from advisor.commands.inventory import read_inventory

    return read_inventory(str(CASES[case]))


def assert_same_as_ansible(case: str, hosts) -> None:
    expected = oracle_list(case)["_meta"]["hostvars"]
    assert sorted(h.name for h in hosts) == sorted(expected)
    for host in hosts:
        assert host.variables == expected[host.name], host.name
        assert host.groups == oracle_groups(case)[host.name] | {"all"}, host.name
    # The fleets set every connection and become variable somewhere: a reading
    # that dropped one would not pass the equality above vacuously.
    assert set(CONNECTION) <= {key for host in hosts for key in host.variables}


@pytest.mark.parametrize("case", sorted(CASES))
def test_ansible_reads_the_fleet_as_ansible_inventory_does(case):
    ansible_bin("ansible-inventory")
    from advisor.commands import inventory_ansible

    assert inventory_ansible.available()
    assert_same_as_ansible(case, our_reading(case))


@pytest.mark.parametrize("case", sorted(CASES))
def test_host_patterns_pick_the_hosts_ansible_picks(case):
    from advisor.commands.inventory import limit_hosts
    from advisor.errors import UsageError

    expected = oracle_patterns(case)
    hosts = our_reading(case)
    assert any(expected.values()) and not all(expected.values())  # some patterns pick hosts, one picks none
    for pattern, names in expected.items():
        if names:
            assert {h.name for h in limit_hosts(hosts, pattern, "fleet")} == names, pattern
        else:
            with pytest.raises(UsageError, match="matches no host"):
                limit_hosts(hosts, pattern, "fleet")


@pytest.mark.parametrize("case", STATIC)
def test_our_reader_without_ansible_gives_ansibles_hosts_variables_and_patterns(case, no_ansible):
    from advisor.commands.inventory import limit_hosts

    hosts = our_reading(case)
    assert type(hosts.select.__self__).__name__ == "StaticInventory"  # our reader, not Ansible's
    assert_same_as_ansible(case, hosts)
    for pattern, names in oracle_patterns(case).items():
        if names:
            assert {h.name for h in limit_hosts(hosts, pattern, "fleet")} == names, pattern


@pytest.mark.parametrize("case", sorted(LIMITS))
def test_limit_is_ansibles_limit(case):
    from advisor.commands.inventory import limit_hosts

    listed = run_ansible("ansible", "all", "-i", str(CASES[case]), "--limit", LIMITS[case], "--list-hosts")
    expected = {line.strip() for line in listed.splitlines()[1:] if line.strip()}
    assert listed.splitlines()[0].strip() == f"hosts ({len(expected)}):" and expected
    assert [h.name for h in limit_hosts(our_reading(case), LIMITS[case], "fleet")] \
        == [h.name for h in our_reading(case) if h.name in expected]


def test_a_script_needs_ansible(no_ansible):
    from advisor.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        our_reading("script")
    assert caught.value.render().startswith(f"{CASES['script']}: this inventory is a script")
    assert "apache-advisor[ansible]" in caught.value.render()
