"""`lint --as` as the `validate:` of an Ansible `template` task (issue 59):
a real ansible-playbook against a namespace host (tests/fleet_topology.py:
its own sshd and its own /etc/apache2, this machine's filesystem for the
rest, so the project's command is reached by its absolute path), the
validate run ON the host against the host's tree. A risky candidate is
refused and the host's file stays as it was; a clean one lands; one httpd
refuses is refused with httpd's line."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import fail_in_ci_else_skip, require_httpd
from test_lint_as import CLEAN, REFUSED, RISKY

pytestmark = pytest.mark.netns

SITE = "/etc/apache2/sites-enabled/x.conf"


def _ansible_playbook() -> str:
    found = shutil.which("ansible-playbook", path=os.path.dirname(sys.executable)) or shutil.which("ansible-playbook")
    if found is None:
        fail_in_ci_else_skip("ansible-core (pip install 'apache-advisor[ansible]')")
    return found  # type: ignore[return-value]


def _advisor() -> str:
    """The command as the host runs it: this venv's, by absolute path."""
    script = shutil.which("apache-advisor", path=os.path.dirname(sys.executable))
    return script or f"{sys.executable} -m advisor"


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    import fleet_topology
    import netns_topology

    require_httpd()
    work = tmp_path_factory.mktemp("lint-as-ansible")
    (work / "run").mkdir()
    tree = fleet_topology.debian_tree(work / "apache2", work / "run")
    with netns_topology.held(lambda: fleet_topology.build(work / "net", [("web1", tree)]), "the validate host") as topo:
        yield topo, work, tree


def _playbook(topo, work: Path, source: Path) -> subprocess.CompletedProcess:
    node = topo.node("web1")
    ssh_args = " ".join(f"-o {option}" for option in topo.ssh_options())
    (work / "hosts.ini").write_text(
        f"[web]\nweb1 ansible_host={node.addr} ansible_user=root ansible_ssh_private_key_file={topo.user_key} "
        f"ansible_python_interpreter=/usr/bin/python3 ansible_ssh_common_args={shlex.quote(ssh_args)}\n")
    validate = f"{_advisor()} lint --isolated --no-live --fail-on error --as {SITE} %s"
    (work / "site.yml").write_text(
        "- hosts: web\n  gather_facts: false\n  tasks:\n"
        "    - name: the shop's site\n      ansible.builtin.template:\n"
        f"        src: {source}\n        dest: {SITE}\n        mode: '0644'\n"
        f"        validate: {validate}\n")
    # A configuration of the test's own, so no ansible.cfg of the machine's applies.
    (work / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(work / "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(work / "ansible-local"),
               ANSIBLE_REMOTE_TMP=str(work / "ansible-remote"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_PIPELINING="1", ANSIBLE_HOME=str(work / "ansible-home"))
    return subprocess.run([_ansible_playbook(), "-i", str(work / "hosts.ini"), str(work / "site.yml")],
                          capture_output=True, text=True, timeout=180, env=env, cwd=work,
                          stdin=subprocess.DEVNULL)


def test_ansible_template_validated_by_lint_as(host):
    topo, work, tree = host
    landed = tree / "sites-enabled" / "x.conf"
    risky, clean, refused = work / "risky.j2", work / "clean.j2", work / "refused.j2"
    risky.write_text(RISKY)
    clean.write_text(CLEAN)
    refused.write_text(REFUSED)

    # A risky site (E413, an error) deployed for the first time: refused, nothing lands.
    result = _playbook(topo, work, risky)
    assert result.returncode != 0, result.stdout
    assert "failed to validate" in result.stdout, result.stdout
    assert "E413" in result.stdout, result.stdout
    assert not landed.exists()

    # A clean one lands.
    result = _playbook(topo, work, clean)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "changed=1" in result.stdout
    assert landed.read_text() == CLEAN

    # One httpd refuses: refused with httpd's own line, at the candidate's line 4.
    result = _playbook(topo, work, refused)
    assert result.returncode != 0, result.stdout
    assert "failed to validate" in result.stdout
    assert ":4: apache2 refuses the tree with this file as /etc/apache2/sites-enabled/x.conf: " \
           "Invalid command 'ServerNme'" in result.stdout, result.stdout
    assert landed.read_text() == CLEAN
