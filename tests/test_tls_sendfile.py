"""What tune's space assumes over HTTPS (tuner/search/space_derive.py, TLS_LEAVES_OUT):
httpd sends a static file with sendfile() over plain HTTP, never over TLS,
where mod_ssl encrypts the body in user space. Watched on a real apache2
(the sandbox of `staging up --tls`, run as one process under strace) serving
the same 1 MiB file once each way."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import json
import time
import urllib.request
from pathlib import Path

import pytest

from test_bench_support import cli, require, stop_group, work_dir

pytestmark = pytest.mark.httpd


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fetch(url: str) -> int:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(url, context=context if url.startswith("https") else None, timeout=10) as reply:
        return len(reply.read())


def _wait_listening(port: int, bound_s: float = 10.0) -> None:
    end = time.monotonic() + bound_s
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"apache2 -X never listened on {port}")


def _sendfile_calls(trace: Path) -> list[str]:
    return [line for line in trace.read_text().splitlines() if "sendfile(" in line and "= 1048576" in line]


def test_a_file_goes_out_by_sendfile_over_http_and_never_over_https():
    require("apache2", "openssl", "strace")
    directory = work_dir()
    sandbox = directory / "w"
    info = cli("staging", "up", "--workdir", str(sandbox), "--mpm", "prefork", "--tls", "--format", "json")
    cli("staging", "down", "--workdir", str(sandbox))
    tls_port = int(json.loads(info.stdout)["url"].rsplit(":", 1)[1])
    plain_port = _free_port()
    conf = sandbox / "conf"
    (conf / "managed.conf").write_text("EnableSendfile On\n")
    text = (conf / "httpd.conf").read_text()
    (conf / "traced.conf").write_text(text.replace(f"Listen 127.0.0.1:{tls_port}\n",
                                                   f"Listen 127.0.0.1:{tls_port}\n"
                                                   f"Listen 127.0.0.1:{plain_port} http\n", 1))
    trace = directory / "strace.txt"
    server = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=sendfile", "-o", str(trace),
                               "apache2", "-X", "-d", str(sandbox), "-f", str(conf / "traced.conf")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait_listening(tls_port)
        _wait_listening(plain_port)
        assert _fetch(f"https://127.0.0.1:{tls_port}/1m.bin") == 1048576
        time.sleep(0.3)
        assert _sendfile_calls(trace) == [], "a file went out by sendfile() over TLS"
        assert _fetch(f"http://127.0.0.1:{plain_port}/1m.bin") == 1048576
        time.sleep(0.3)
        # Near miss, and proof that the trace sees it when it happens: the plain request.
        assert len(_sendfile_calls(trace)) == 1, trace.read_text()[-2000:]
    finally:
        stop_group(server)  # strace and apache2 -X share the session: both go
        _wait_gone(sandbox)
        shutil.rmtree(directory, ignore_errors=True)


def _wait_gone(sandbox: Path, bound_s: float = 10.0) -> None:
    end = time.monotonic() + bound_s
    while time.monotonic() < end:
        found = subprocess.run(["pgrep", "-f", f"apache2 -X -d {sandbox}"], capture_output=True, text=True)
        if not found.stdout.strip():
            return
        time.sleep(0.1)
    raise AssertionError(f"apache2 -X of {sandbox} outlived the test")
