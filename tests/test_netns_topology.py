"""The test network itself: sshd answers in every namespace, and nothing is left after teardown."""

from __future__ import annotations

import os
import subprocess

import pytest

import netns_topology as topology_module

pytestmark = pytest.mark.netns


def test_batch_mode_ssh_reaches_every_namespace(netns_topology):
    topo = netns_topology
    for node in topo.nodes:
        result = subprocess.run([*topo.ssh_argv(node), "cat /proc/self/net/dev; hostname -I"],
                                capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, result.stderr
        # The shell ran inside that node's namespace: its own address and links.
        assert node.addr in result.stdout.split()
        assert ("br0" in result.stdout) == (node.role == "server")


def test_client_namespace_reaches_the_server_over_the_bridge(netns_topology):
    topo = netns_topology
    client = topo.clients[0]
    result = topo.exec_in(client, *topo.ssh_argv(topo.server), "echo from-$(hostname -I)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"from-{topo.server.addr}"


def test_unknown_key_is_refused_without_a_prompt(netns_topology, tmp_path):
    topo = netns_topology
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "stranger")], check=True)
    argv = topo.ssh_argv(topo.server)
    argv[argv.index(str(topo.user_key))] = str(tmp_path / "stranger")
    result = subprocess.run([*argv, "true"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    assert result.returncode == 255
    assert "Permission denied" in result.stderr


def test_teardown_leaves_nothing(tmp_path):
    try:
        topo = topology_module.build(tmp_path / "net")
    except topology_module.TopologyUnavailable as exc:
        pytest.fail(str(exc)) if os.environ.get("CI") else pytest.skip(str(exc))
    sshd_pids = [node.sshd.pid for node in topo.nodes]
    # A process left running inside a namespace is ended too.
    stray = topo.exec_in(topo.clients[1], "sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!")
    assert stray.returncode == 0
    stray_pid = int(stray.stdout.strip())
    assert set(topo.namespaces) <= set(topology_module.list_namespaces())
    assert topo.close() == []
    names = topology_module.list_namespaces()
    assert not set(topo.namespaces) & set(names)
    for pid in [*sshd_pids, stray_pid]:
        assert not _alive(pid), pid
    assert not subprocess.run(["ip", "link", "show", topo.root_link], capture_output=True).returncode == 0


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
