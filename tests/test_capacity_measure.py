"""Measuring real processes: stand-in process trees and a real apache2."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from advisor.capacity.host_probe import (
    document_set_size,
    kernel_socket_buffers,
    measure_httpd,
    measure_service,
    serves_config,
)
from advisor.errors import UsageError
from conftest import require_httpd

# A process name nothing else on the host uses (Linux keeps 15 characters).
FAKE = f"aat-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def fake_httpd(tmp_path):
    """A parent and two children, all named like a server: a copy of sh
    whose children are copies of sleep. Real processes, real memory."""
    (tmp_path / "p").mkdir()
    (tmp_path / "c").mkdir()
    parent_bin = tmp_path / "p" / FAKE
    child_bin = tmp_path / "c" / FAKE
    shutil.copy("/bin/sh", parent_bin)
    shutil.copy("/bin/sleep", child_bin)
    proc = subprocess.Popen([str(parent_bin), "-c", f"{child_bin} 30 & {child_bin} 30 & wait"])
    deadline = time.monotonic() + 5
    import psutil

    while time.monotonic() < deadline:
        if len(psutil.Process(proc.pid).children()) == 2:
            break
        time.sleep(0.05)
    yield proc
    children = psutil.Process(proc.pid).children()
    for child in children:
        child.send_signal(signal.SIGTERM)
    psutil.wait_procs(children, timeout=5)  # the shell's `wait` reaps them
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=5)


def test_measures_children_of_a_process_tree(fake_httpd):
    sample = measure_httpd(names=(FAKE,))
    assert sample is not None
    assert sample.parent_pid == fake_httpd.pid
    assert len(sample.children) == 2
    assert all(c.private > 0 and c.method in ("USS", "RSS - shared") for c in sample.children)
    assert sample.parent_rss > max(c.private for c in sample.children)
    assert sample.mpm_guess == ("prefork", 1)  # single-threaded children
    assert 0 <= sample.uptime < 60


def test_a_server_for_another_config_is_not_measured(fake_httpd, tmp_path):
    assert measure_httpd(str(tmp_path / "other.conf"), str(tmp_path), names=(FAKE,)) is None


def test_measures_named_services(fake_httpd):
    sample = measure_service(FAKE)
    assert sample.processes == 3
    assert sample.bytes > 0 and sample.method in ("PSS", "RSS", "PSS/RSS")


def test_unknown_service_is_a_usage_error():
    with pytest.raises(UsageError, match="no running process"):
        measure_service("no-such-daemon-xyz")


def test_serves_config():
    assert serves_config(["apache2", "-f", "/srv/a/httpd.conf"], "/srv/a/httpd.conf", "/srv/a")
    assert serves_config(["httpd", "-d", "/srv/a", "-f", "conf/x.conf"], "/srv/a/conf/x.conf", "/srv/a")
    assert not serves_config(["apache2", "-f", "/srv/b/httpd.conf"], "/srv/a/httpd.conf", "/srv/a")
    # The distribution's own server runs without -f.
    assert serves_config(["/usr/sbin/apache2", "-k", "start"], "/etc/apache2/apache2.conf", "/etc/apache2")
    assert not serves_config(["/usr/sbin/apache2", "-k", "start"], "/home/me/apache2.conf", "/home/me")


def test_document_set_size(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.html").write_bytes(b"x" * 1000)
    (tmp_path / "y.bin").write_bytes(b"y" * 5000)
    os.symlink(tmp_path / "y.bin", tmp_path / "link.bin")  # not counted twice
    assert document_set_size(str(tmp_path)) == (6000, 2)
    with pytest.raises(UsageError, match="not a directory"):
        document_set_size(str(tmp_path / "y.bin"))


def test_kernel_socket_buffers_are_read():
    found = kernel_socket_buffers()
    rmem = int(Path("/proc/sys/net/ipv4/tcp_rmem").read_text().split()[1])
    wmem = int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[1])
    assert found == (rmem + wmem, "kernel tcp_rmem + tcp_wmem defaults")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.httpd
def test_capacity_measures_a_real_prefork_apache(tmp_path):
    """Start Debian's apache2 on 127.0.0.1 from a private ServerRoot and let
    `capacity` measure its children."""
    import json

    import psutil

    from advisor.config.oracle import module_dir
    from test_capacity_cli import run_cli

    binary = require_httpd()
    modules = module_dir()
    (tmp_path / "logs").mkdir()
    conf = tmp_path / "httpd.conf"
    user = "www-data" if os.geteuid() == 0 else None
    conf.write_text(
        f"ServerRoot {tmp_path}\n"
        f"LoadModule mpm_prefork_module {modules}/mod_mpm_prefork.so\n"
        f"LoadModule authz_core_module {modules}/mod_authz_core.so\n"
        f"Listen 127.0.0.1:{_free_port()}\n"
        "ServerName 127.0.0.1\n"
        f"PidFile {tmp_path}/logs/httpd.pid\n"
        f"ErrorLog {tmp_path}/logs/error.log\n"
        + (f"User {user}\nGroup {user}\n" if user else "")
        + f"DocumentRoot {tmp_path}\n"
        "StartServers 3\nMinSpareServers 3\nMaxSpareServers 5\nMaxRequestWorkers 20\n"
    )
    # A session of its own: at shutdown httpd signals its whole process
    # group, which would otherwise include pytest.
    server = subprocess.Popen([binary, "-f", str(conf), "-DFOREGROUND"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(psutil.Process(server.pid).children()) < 3:
            assert server.poll() is None, server.stderr.read().decode()
            time.sleep(0.1)
        code, out, err = run_cli(["capacity", str(conf), "--ram", "1G", "--format", "json"])
        assert code == 0, err
        report = json.loads(out)
        child = report["memory"]["child"]
        assert child["source"].startswith("measured: ") and f"PID {server.pid}" in child["source"]
        assert child["count"] >= 3 and 0 < child["smallest"] <= child["average"] <= child["largest"]
        assert report["memory"]["parent"]["source"] == f"measured RSS of PID {server.pid}"
        assert any("started" in note for note in report["notes"])  # a fresh server
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)
