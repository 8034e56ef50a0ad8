"""`--host` on the command line: what is refused before any connection, and
each way the connection fails, as one line and exit code 2."""

from __future__ import annotations

import subprocess

import pytest

from conftest import assert_one_line_error
from test_bench_support import cli

# TEST-NET-2 (RFC 5737): documentation addresses, never reached: these are refused first.
FAR = "198.51.100.7"


def bench(*args: str) -> subprocess.CompletedProcess:
    return cli("bench", "--duration", "1", "--rate", "1", *args, check=False, timeout=60)


def test_a_host_off_loopback_is_refused_unless_allowed():
    result = bench("--host", f"root@{FAR}", "--config", "/etc/apache2/apache2.conf", "--url", f"http://{FAR}/")
    assert_one_line_error(result, f"--host root@{FAR} is not on loopback", f"--allow-host {FAR}")


def test_the_url_host_must_be_allowed_too():
    result = bench("--host", f"root@{FAR}", "--allow-host", FAR, "--config", "/etc/apache2/apache2.conf",
                   "--url", "http://198.51.100.8/")
    assert_one_line_error(result, "the target http://198.51.100.8/ is not on loopback", "--allow-host 198.51.100.8")


@pytest.mark.parametrize("args,fragment", [
    (["--identity", "/etc/hostname"], "--ssh-option and --identity go with --host"),
    (["--host", "127.0.0.1", "--url", "http://127.0.0.1/"], "needs --config (its path there) and --url"),
    (["--host", "root@[::1", "--config", "/x.conf", "--url", "http://127.0.0.1/"], "bad --host"),
    (["--host", "127.0.0.1", "--identity", "/nonexistent/key", "--config", "/x.conf", "--url", "http://127.0.0.1/"],
     "identity file not found: /nonexistent/key"),
    (["--client-host", "root@[::1"], "bad --client-host 'root@[::1'"),
    (["--client-host", "local", "--client-host", "local"], "--client-host local is named twice"),
    (["--client-host", "local", "--identity", "/etc/hostname"], "--ssh-option and --identity go with --host or --client-host"),
])
def test_bad_remote_options_are_one_line(args, fragment):
    assert_one_line_error(bench(*args), fragment)


@pytest.mark.parametrize("args,fragment", [
    (["--client-host", "root@[::1"], "bad --client-host 'root@[::1'"),
    (["--client-host", "local", "--client-host", "local"], "--client-host local is named twice"),
    (["--client-host", "local", "--identity", "/etc/hostname"], "--ssh-option and --identity go with --host or --client-host"),
])
def test_tune_refuses_bad_client_hosts_like_bench(args, fragment, tmp_path):
    result = cli("tune", "--yes", "--report", str(tmp_path / "r"), *args, check=False, timeout=60)
    assert_one_line_error(result, fragment)
    assert not (tmp_path / "r").exists()


def _ssh_args(topo, port=None, identity=None) -> list[str]:
    host = f"root@{topo.server.addr}" + (f":{port}" if port else "")
    args = ["--host", host, "--allow-host", topo.server.addr, "--identity", str(identity or topo.user_key)]
    for option in topo.ssh_options():
        args += ["--ssh-option", option]
    return args + ["--url", f"http://{topo.server.addr}:8080/index.html"]


@pytest.mark.netns
def test_connection_failures_are_one_line(netns_topology, tmp_path):
    import netns_topology as topology_module

    topo = netns_topology
    config = ["--config", "/etc/apache2/apache2.conf"]
    assert_one_line_error(bench(*_ssh_args(topo, port=2999), *config),
                          f"ssh to root@{topo.server.addr}:2999: host unreachable", "sshd runs there")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "stranger")], check=True)
    assert_one_line_error(bench(*_ssh_args(topo, identity=tmp_path / "stranger"), *config),
                          "authentication refused", "--identity")
    assert_one_line_error(bench(*_ssh_args(topo, port=topology_module.NO_PYTHON_PORT), *config),
                          "python3 not found on root@", "apt-get install")


@pytest.mark.netns
def test_load_client_problems_are_one_line(netns_topology):
    from test_bench_support import SandboxRun, require

    require("apache2", "httperf")
    topo = netns_topology
    ssh = ["--identity", str(topo.user_key)]
    for option in topo.ssh_options():
        ssh += ["--ssh-option", option]
    with SandboxRun(mpm="event") as run:
        # On 127.0.0.1 the server is out of reach of another host's httperf (it would load itself).
        assert_one_line_error(bench("--workdir", str(run.dir), "--client-host", f"root@{topo.clients[0].addr}", *ssh),
                              "a load client on another host cannot reach http://127.0.0.1:", "--client-host local")
        run.assert_stock_restored()
    with SandboxRun(mpm="event", netns=topo.server.netns, host=topo.server.addr, port=8080,
                    status_allow=["127.0.0.1", topo.root_addr]) as run:
        assert_one_line_error(bench("--workdir", str(run.dir), "--allow-host", topo.server.addr,
                                    "--client-host", f"root@{topo.clients[0].addr}:2999", *ssh),
                              f"ssh to root@{topo.clients[0].addr}:2999: host unreachable")
        run.assert_stock_restored()


@pytest.mark.netns
def test_remote_config_problems_name_the_host_file(netns_topology, tmp_path):
    topo = netns_topology
    config = tmp_path / "httpd.conf"
    config.write_text("Listen 8080\n")  # the namespaces share this file system
    assert_one_line_error(bench(*_ssh_args(topo), "--config", str(config)),
                          f"root@{topo.server.addr}:{config}: the config does not include the managed file",
                          "IncludeOptional")
    assert_one_line_error(bench(*_ssh_args(topo), "--config", str(tmp_path / "missing.conf")),
                          f"root@{topo.server.addr}:{tmp_path / 'missing.conf'}: config file not found")


@pytest.mark.netns
def test_a_remote_config_its_httpd_refuses_stops_tune_before_any_change(netns_topology, tmp_path):
    """tune reads the host's tree with the host's own httpd: its refusal is
    one line naming the host's file and line, and no file there is written."""
    from test_bench_support import SandboxRun, require

    require("apache2")
    topo = netns_topology
    with SandboxRun(mpm="prefork", netns=topo.server.netns, host=topo.server.addr, port=8080,
                    status_allow=["127.0.0.1", topo.root_addr]) as run:
        extra = tmp_path / "extra.conf"
        extra.write_text("KeepAlive On\nMaxRequestWorkerz 10\n")
        config = tmp_path / "httpd.conf"  # the server's own config and one broken include (not loaded)
        config.write_text(run.sandbox.config_path.read_text() + f"Include {extra}\n")
        report = tmp_path / "report"
        before = run.sandbox.managed_path.read_text()
        result = cli("tune", *_ssh_args(topo), "--config", str(config), "--managed", str(run.sandbox.managed_path),
                     "--yes", "--report", str(report), "--workload", "1k", check=False, timeout=120)
        assert_one_line_error(result, f"root@{topo.server.addr}:{extra}:2", "httpd refused")
        assert run.sandbox.managed_path.read_text() == before
        assert not (report / "journal.jsonl").exists()


@pytest.mark.netns
def test_resolution_gives_a_remote_target(netns_topology):
    from advisor.commands.targets import RemoteOptions, TargetOptions, place_processes, resolve_target
    from advisor.errors import UsageError
    from test_bench_support import SandboxRun, require

    require("apache2")
    topo = netns_topology
    with SandboxRun(mpm="event", netns=topo.server.netns, host=topo.server.addr, port=8080,
                    status_allow=["127.0.0.1", topo.root_addr]) as run:
        resolved = resolve_target(
            TargetOptions(workdir=None, config=str(run.sandbox.config_path),
                          url=f"http://{topo.server.addr}:8080/index.html", reload_cmd="apachectl graceful",
                          test_cmd=None, managed=str(run.sandbox.managed_path)),
            RemoteOptions(host=f"root@{topo.server.addr}", ssh_options=topo.ssh_options(),
                          identity=str(topo.user_key)),
            allow_hosts=[topo.server.addr])
        target = resolved.target
        try:
            assert target.kind == "remote" and resolved.work_dir is None
            assert target.describe()["managed"] == f"root@{topo.server.addr}:{run.sandbox.managed_path}"
            assert target.read_managed() == run.stock
            target.validate()  # the default test: apache2 -t -f CONFIG, run on the host
            # Cores here say nothing of the host's: no server cores, the load may use any.
            assert place_processes(target, None, "0") == (None, [0])
            with pytest.raises(UsageError, match="--server-cpus pins a server on this machine"):
                place_processes(target, "0", None)
        finally:
            target.conn.close()
