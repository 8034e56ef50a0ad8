"""`lint --host/--inventory --become` (issue 59): hosts whose sshd refuses
root, reached as a deploy user who escalates with `sudo -n`.

Two namespace hosts (tests/fleet_topology.py) share one Debian tree that only
root may read (every file 0640 root:root, the main config as S515 asks).
`locked` refuses root's login; `twin` lets root in, so its reading is what root
sees. Both have the deploy users of netns_topology.LOGIN_USERS: `deploy`,
whose sudo asks nothing, and `pwdeploy`, whose sudo wants a password. The
users exist only in the hosts' own mount namespaces.
"""

from __future__ import annotations

import json
import os
import shlex

import pytest

from advisor.commands.fleet import inventory_become
from advisor.tuner.transport.ssh import HostSpec, SshConnection, become_failure
from conftest import assert_one_line_error
from test_bench_support import cli

MAIN = "/etc/apache2/apache2.conf"


@pytest.fixture(scope="module")
def hardened(tmp_path_factory):
    import fleet_topology
    import netns_topology

    work = tmp_path_factory.mktemp("become")
    run = work / "run"
    run.mkdir()
    tree = fleet_topology.debian_tree(work / "tree", run)
    for directory, _dirs, files in os.walk(tree):
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                os.chown(path, 0, 0)
                os.chmod(path, 0o640)
    # A main config anyone may read that includes one only root may.
    (tree / "open.conf").write_text("ServerName open.example\nInclude /etc/apache2/ports.conf\n")
    os.chmod(tree / "open.conf", 0o644)
    hosts = [("locked", tree), ("twin", tree)]
    build = lambda: fleet_topology.build(work / "net", hosts, users=netns_topology.LOGIN_USERS,  # noqa: E731
                                         root_refused={"locked"})
    with netns_topology.held(build, "the hardened fleet") as topo:
        yield topo


def _ssh(topo) -> list[str]:
    args = ["--identity", str(topo.user_key)]
    for option in topo.ssh_options():
        args += ["--ssh-option", option]
    return args


@pytest.mark.netns
def test_a_deploy_user_with_become_reads_a_root_only_tree_as_root_does(hardened):
    topo = hardened
    locked, twin = topo.node("locked").addr, topo.node("twin").addr
    # The host really refuses root: the deploy user is the only way in.
    assert_one_line_error(cli("lint", "--host", f"root@{locked}", *_ssh(topo), "--isolated", check=False),
                          f"ssh to root@{locked}: authentication refused")
    # Under sudo the reading is root's, byte for byte: the same files and facts
    # as root's own login on the twin, so the two are linted as one group.
    result = cli("lint", "--host", f"deploy@{locked}", "--become", "--host", f"root@{twin}", *_ssh(topo),
                 "--isolated", "--format", "json", "--fail-on", "never", check=False)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    findings = json.loads(result.stdout)
    assert findings, "Debian's stock tree has findings (ServerTokens OS, at least)"
    assert {tuple(f["hosts"]) for f in findings} == {(f"deploy@{locked}", f"root@{twin}")}
    assert "S501" in {f["code"] for f in findings}
    # Without --become the same login cannot read the main config: one line naming it.
    assert_one_line_error(cli("lint", "--host", f"deploy@{locked}", *_ssh(topo), "--isolated", check=False),
                          f"deploy@{locked}:{MAIN}: ", "Permission denied", "--become")
    # An included file only root may read: httpd's own line, at the Include, with the same hint.
    assert_one_line_error(cli("lint", "--host", f"deploy@{locked}", "/etc/apache2/open.conf", *_ssh(topo),
                              "--isolated", check=False),
                          f"deploy@{locked}:/etc/apache2/open.conf:2: ", "ports.conf", "--become")
    # --become-user is who sudo runs the reading as: www-data may not read a root-only tree either,
    # and a user the host does not know is sudo's own refusal.
    assert_one_line_error(cli("lint", "--host", f"deploy@{locked}", "--become", "--become-user", "www-data",
                              *_ssh(topo), "--isolated", check=False),
                          f"deploy@{locked}:{MAIN}: ", "Permission denied")
    assert_one_line_error(cli("lint", "--host", f"deploy@{locked}", "--become", "--become-user", "nosuchuser",
                              *_ssh(topo), "--isolated", check=False),
                          f"deploy@{locked}: sudo knows no user nosuchuser there", "ansible_become_user")


@pytest.mark.netns
def test_a_fleet_with_a_password_sudo_host_lints_the_others(hardened, tmp_path):
    topo = hardened
    locked, twin = topo.node("locked").addr, topo.node("twin").addr
    inventory = tmp_path / "hosts.ini"
    inventory.write_text(
        "[web]\n"
        f"good ansible_host={locked} ansible_user=deploy\n"
        f"asks ansible_host={locked} ansible_user=pwdeploy\n"
        f"su ansible_host={twin} ansible_user=deploy ansible_become_method=su\n"
        f"plain ansible_host={locked} ansible_user=deploy ansible_become=no\n"
        f"web2 ansible_host={twin} ansible_user=deploy ansible_become=1 ansible_become_user=root\n"
        "[web:vars]\nansible_become=yes\n")
    result = cli("lint", "--inventory", str(inventory), *_ssh(topo), "--isolated", "--format", "json",
                 "--fail-on", "never", check=False)
    # docs/fleet.md: 1 when a host could not be read and others were linted.
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = sorted(result.stderr.strip().splitlines())
    assert len(lines) == 3, result.stderr
    asks, plain, su = lines
    assert asks.startswith(f"apache-advisor: asks: pwdeploy@{locked}: sudo wants a password for pwdeploy")
    assert "NOPASSWD" in asks
    assert plain.startswith(f"apache-advisor: plain:{MAIN}: ") and "--become" in plain
    assert su.startswith("apache-advisor: su: ansible_become_method=su is not supported: only sudo is")
    findings = json.loads(result.stdout)
    assert findings and {tuple(f["hosts"]) for f in findings} == {("good", "web2")}


def test_every_remote_command_is_wrapped_in_sudo_n():
    conn = SshConnection(HostSpec.parse("deploy@web1"), become="www-data")
    remote = conn.argv("cat > /x; echo done")[-1]
    assert shlex.split(remote) == ["sudo", "-n", "-u", "www-data", "--", "sh", "-c", "cat > /x; echo done"]
    assert shlex.split(conn.argv(["python3", "-c", "print(1)"])[-1])[:6] == ["sudo", "-n", "-u", "www-data", "--",
                                                                             "python3"]
    assert SshConnection(HostSpec.parse("web1")).argv("id")[-1] == "id"


# What sudo 1.9 and a shell say, as run() sees it in a failed command's stderr.
@pytest.mark.parametrize("code,stderr,fragments", [
    (1, "sudo: a password is required\n", ["sudo wants a password for deploy", "NOPASSWD"]),
    (1, "Sorry, user deploy is not allowed to execute '/bin/sh -c id' as root on web1.\n",
     ["sudo refuses to let deploy run commands as root", "sudoers rule"]),
    (1, "deploy is not in the sudoers file.\n", ["sudo refuses to let deploy"]),
    (127, "sh: 1: sudo: not found\n", ["needs sudo there, and it is not installed"]),
    (1, "sudo: sorry, you must have a tty to run sudo\n", ["requiretty", "!requiretty"]),
])
def test_sudos_refusals_are_named(code, stderr, fragments):
    error = become_failure(HostSpec.parse("deploy@web1"), "root", code, stderr)
    assert error is not None and error.render().startswith("deploy@web1: ")
    for fragment in fragments:
        assert fragment in error.render()


def test_a_command_of_its_own_failing_is_not_sudos_refusal():
    assert become_failure(HostSpec.parse("deploy@web1"), "root", 1, "cat: /x: No such file or directory\n") is None


@pytest.mark.parametrize("variables,become,expected", [
    ({}, None, (None, None)),
    ({}, "root", ("root", None)),
    ({"ansible_become": "yes"}, None, ("root", None)),
    ({"ansible_become": True, "ansible_become_user": "www-data"}, None, ("www-data", None)),
    ({"ansible_become": "1"}, None, ("root", None)),
    ({"ansible_become": "True", "ansible_become_method": "sudo"}, None, ("root", None)),
    ({"ansible_become": "no"}, "root", (None, None)),
    ({"ansible_become": False}, "root", (None, None)),
    ({"ansible_become": "0"}, "root", (None, None)),
    ({"ansible_become_user": "backup"}, "root", ("backup", None)),
    ({}, "www-data", ("www-data", None)),
])
def test_the_inventorys_become_variables_win_as_in_ansible(variables, become, expected):
    assert inventory_become(variables, become) == expected


@pytest.mark.parametrize("variables,fragment", [
    ({"ansible_become": "maybe"}, "ansible_become='maybe' is not a boolean"),
    ({"ansible_become": "yes", "ansible_become_method": "su"}, "ansible_become_method=su is not supported"),
    ({"ansible_become": "yes", "ansible_become_method": "doas"}, "only sudo is"),
    ({"ansible_become": "yes", "ansible_become_user": "-r"}, "bad ansible_become_user '-r'"),
])
def test_become_variables_that_cannot_be_honoured_say_why(variables, fragment):
    user, why = inventory_become(variables, None)
    assert user is None and fragment in why


@pytest.mark.parametrize("args,fragment", [
    (["--become"], "--become goes with --host or --inventory"),
    (["--become-user", "root", "--host", "web1"], "--become-user goes with --become"),
    (["--become", "--become-user", "a b", "--host", "web1"], "bad --become-user 'a b'"),
])
def test_bad_become_options_are_one_line(args, fragment):
    assert_one_line_error(cli("lint", *args, check=False), fragment)


@pytest.mark.parametrize("args,fragment", [
    (["--become"], "--become goes with --host"),
    (["--become-user", "root"], "--become-user goes with --become"),
])
def test_bench_refuses_become_without_a_host(args, fragment):
    assert_one_line_error(cli("bench", "--duration", "1", "--rate", "1", *args, check=False, timeout=60), fragment)
