"""The SSH transport of the remote target: host specs, one multiplexed
connection, files replaced atomically, and one clear line for each way ssh fails."""

from __future__ import annotations

import os
import subprocess

import pytest

from advisor.errors import AdvisorError, UsageError
from advisor.tuner.transport.ssh import HostSpec, SshConnection, SshError


@pytest.mark.parametrize("text,host,user,port", [
    ("staging", "staging", None, None),
    ("deploy@staging.example:2222", "staging.example", "deploy", 2222),
    ("10.0.0.5:22", "10.0.0.5", None, 22),
    ("[2001:db8::1]:2200", "2001:db8::1", None, 2200),
    ("ops@[::1]", "::1", "ops", None),
    ("2001:db8::7", "2001:db8::7", None, None),
])
def test_host_spec_parses(text, host, user, port):
    spec = HostSpec.parse(text)
    assert (spec.host, spec.user, spec.port) == (host, user, port)
    assert HostSpec.parse(str(spec)) == spec  # printed the way it is written


@pytest.mark.parametrize("text,fragment", [
    ("", "bad --host"), ("@host", "empty user"), ("host:99999", "bad port"), ("host:ssh", "bad port"),
    ("[::1", "IPv6"), ("-oProxyCommand=x", "bad --host"), ("a b", "bad --host"),
])
def test_host_spec_refuses(text, fragment):
    with pytest.raises(UsageError) as caught:
        HostSpec.parse(text)
    assert fragment in str(caught.value)


def connection(topo, node, port=None, identity=None) -> SshConnection:
    spec = HostSpec(node.addr, "root", port)
    return SshConnection(spec, options=topo.ssh_options(), identity=str(identity or topo.user_key),
                         connect_timeout_s=5)


def _master_processes(conn: SshConnection) -> list[int]:
    # A persisting master renames itself "ssh: <control path> [mux]".
    out = subprocess.run(["pgrep", "-f", f"{conn.control_path} \\[mux\\]"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


@pytest.mark.netns
def test_one_master_carries_every_command(netns_topology):
    topo = netns_topology
    conn = connection(topo, topo.server)
    try:
        conn.connect()
        assert conn.master_alive()
        masters = _master_processes(conn)
        assert len(masters) == 1
        for _ in range(5):
            # Each command runs in the server's namespace...
            assert topo.server.addr in conn.run("hostname -I", check=True).stdout.split()
        # ...over the same master: no second connection was opened.
        assert _master_processes(conn) == masters
    finally:
        conn.close()
    assert not conn.master_alive()
    assert not _master_processes(conn)


@pytest.mark.netns
def test_a_connection_without_multiplexing_makes_no_master(netns_topology):
    # What a fleet's reading uses: one command a host, so no master to fork and end.
    topo = netns_topology
    spec = HostSpec(topo.server.addr, "root")
    conn = SshConnection(spec, options=topo.ssh_options(), identity=str(topo.user_key), connect_timeout_s=5,
                         multiplex=False)
    conn.connect(probe=False)
    assert topo.server.addr in conn.run("hostname -I", check=True).stdout.split()
    assert not conn.control_path.exists() and not _master_processes(conn)
    assert "ControlMaster=no" in conn.base_argv() and not any(a.startswith("ControlPath=") for a in conn.base_argv())
    conn.close()  # nothing to end


@pytest.mark.netns
def test_files_are_read_and_replaced_atomically(netns_topology, tmp_path):
    topo = netns_topology
    conn = connection(topo, topo.server)
    target = tmp_path / "site" / "managed.conf"  # the namespaces share this file system
    target.parent.mkdir()
    try:
        assert conn.read_file(str(target)) is None
        conn.write_file(str(target), "KeepAlive On\n")
        first_inode = target.stat().st_ino
        assert conn.read_file(str(target)) == "KeepAlive On\n"
        text = "# odd bytes: $HOME `id` 'quotes' \"double\" \\ é\nKeepAliveTimeout 3\n"
        conn.write_file(str(target), text)
        assert target.read_text() == text
        assert target.stat().st_ino != first_inode  # a new file renamed over the old one
        assert oct(target.stat().st_mode & 0o777) == "0o644"
        assert os.listdir(target.parent) == ["managed.conf"]  # no temporary file left
        with pytest.raises(AdvisorError) as caught:
            conn.write_file(str(tmp_path / "missing-dir" / "x.conf"), "x\n")
        assert "cannot write" in str(caught.value) and "directory exists" in str(caught.value)
        assert not (tmp_path / "missing-dir").exists()
        conn.write_file(str(target), None)
        assert not target.exists()
    finally:
        conn.close()


@pytest.mark.netns
def test_unreachable_host_says_what_to_do(netns_topology):
    topo = netns_topology
    conn = connection(topo, topo.server, port=2999)  # nothing listens there
    with pytest.raises(SshError) as caught:
        conn.connect()
    line = str(caught.value)
    assert "host unreachable" in line and "Connection refused" in line
    assert "sshd runs there" in line and "\n" not in line


@pytest.mark.netns
def test_refused_key_says_what_to_do(netns_topology, tmp_path):
    topo = netns_topology
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "stranger")], check=True)
    conn = connection(topo, topo.server, identity=tmp_path / "stranger")
    with pytest.raises(SshError) as caught:
        conn.connect()
    line = str(caught.value)
    assert "authentication refused" in line and "--identity" in line and "BatchMode" in line


@pytest.mark.netns
def test_unknown_host_key_is_not_accepted(netns_topology, tmp_path):
    topo = netns_topology
    (tmp_path / "empty_known_hosts").write_text("")
    conn = SshConnection(HostSpec(topo.server.addr, "root"), identity=str(topo.user_key),
                         options=[f"UserKnownHostsFile={tmp_path / 'empty_known_hosts'}",
                                  "StrictHostKeyChecking=yes", "GlobalKnownHostsFile=/dev/null"])
    with pytest.raises(SshError) as caught:
        conn.connect()
    assert "host key is not known" in str(caught.value)


@pytest.mark.netns
def test_missing_python3_says_what_to_do(netns_topology):
    import netns_topology as topology_module

    topo = netns_topology
    conn = connection(topo, topo.server, port=topology_module.NO_PYTHON_PORT)
    try:
        with pytest.raises(AdvisorError) as caught:
            conn.connect()
        assert "python3 not found on root@" in str(caught.value) and "apt-get install" in str(caught.value)
        assert not conn.master_alive()  # closed with the error
        conn.connect(require_python=False)  # the connection itself is fine
    finally:
        conn.close()
