"""Inventories and --limit patterns that cannot be read: one line naming the
file and line, exit 2 (issue 59). With Ansible installed the line is
Ansible's own message; with it hidden, our reader's."""

from __future__ import annotations

import subprocess
import sys

import pytest

from test_inventory_ansible import CASES, ansible_bin, no_ansible  # noqa: F401 - the fixture is used by name


def lint_inventory(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", "lint", "--inventory", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def one_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr[-1000:])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


@pytest.mark.parametrize("name, text, line, message", [
    ("hosts", "[web]\nweb1 ansible_host=10.0.0.1\n\n[web:bogus]\nweb2\n", 4,
     "Ansible's ini inventory plugin cannot parse it: Failed to parse inventory: Section [web:bogus] has unknown type"),
    ("fleet.yml", "all:\n  hosts:\n    a:\n   b: 1\n", 4,
     "Ansible's yaml inventory plugin cannot parse it: YAML parsing failed"),
])
def test_an_inventory_ansible_cannot_parse_is_ansibles_message_at_its_line(tmp_path, name, text, line, message):
    ansible_bin("ansible-inventory")
    (tmp_path / name).write_text(text)
    error = one_line(lint_inventory(name, cwd=tmp_path))
    assert error.startswith(f"apache-advisor: {name}:{line}: {message}"), error
    assert f"ansible-inventory -i {name} --list" in error


def test_a_limit_that_matches_nothing_is_one_line(tmp_path):
    ansible_bin("ansible-inventory")
    error = one_line(lint_inventory(str(CASES["ini"]), "--limit", "prod:&nothing*", cwd=tmp_path))
    assert "--limit 'prod:&nothing*' matches no host of" in error and "--graph" in error


def test_patterns_ansible_refuses_are_one_line():
    ansible_bin("ansible-inventory")
    from advisor.commands.inventory import limit_hosts, read_inventory
    from advisor.errors import UsageError

    hosts = read_inventory(str(CASES["ini"]))
    with pytest.raises(UsageError, match=r"--limit '~web\(': Invalid host list pattern"):
        limit_hosts(hosts, "~web(", "hosts")
    with pytest.raises(UsageError, match="No hosts matched the subscripted pattern"):
        limit_hosts(hosts, "db[9]", "hosts")


@pytest.mark.parametrize("text, line, message", [
    ("[web]\nweb1\n[web:bogus]\n", 3, "section [web:bogus] has unknown type 'bogus'"),
    ("[prod:children]\nweb\n[web:vars]\nx=1\n", 2, "section [prod:children] names group 'web', which the file never"),
    ("[db:vars]\nx=1\n", 1, "section [db:vars] is for group 'db', which the file never declares"),
    ("[web]\nweb[01:3]\n", 2, "host range 'web[01:3]': a zero-padded start needs"),
    ("[web]\nweb1 ansible_port\n", 2, "expected key=value after the host name"),
    ("[web]\nweb1:\n", 2, "host 'web1:' ends with ':', which only a port may follow"),
])
def test_our_reader_without_ansible_names_the_line(tmp_path, no_ansible, text, line, message):
    from advisor.commands.inventory import limit_hosts, read_inventory
    from advisor.errors import ConfigError, UsageError

    path = tmp_path / "hosts"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        read_inventory(str(path))
    assert caught.value.render().startswith(f"{path}:{line}: {message}")
    # and the patterns our reader refuses
    hosts = read_inventory(str(CASES["ini"]))
    with pytest.raises(UsageError, match="bad --limit pattern"):
        limit_hosts(hosts, "~web(", "hosts")
    with pytest.raises(UsageError, match="no host at the subscript"):
        limit_hosts(hosts, "db[9]", "hosts")
