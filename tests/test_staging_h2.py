"""HTTP/2 on the sandbox (`staging up --tls --h2`, issue 57).

Real apache2 with mod_ssl and mod_http2 on 127.0.0.1, and a real h2load
request (Debian's nghttp2-client) that prints the protocol the server's ALPN
picked: h2 under event, http/1.1 under prefork, where httpd starts but
mod_http2 stays inactive (AH10034 in its error log).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

from advisor.tuner.staging.sandbox_layout import SandboxState
from test_bench_support import cli, one_error_line, require, work_dir

pytestmark = pytest.mark.httpd


def _h2load_protocol(url: str) -> str:
    """The application protocol one h2load request negotiated ("h2", "http/1.1")."""
    run = subprocess.run(["h2load", "-n", "1", "-c", "1", url + "/index.html"], capture_output=True, text=True,
                         timeout=20)
    assert "1 succeeded" in run.stdout, run.stdout + run.stderr
    found = re.search(r"^Application protocol: (\S+)$", run.stdout, re.M)
    assert found, run.stdout
    return found.group(1)


@contextmanager
def _sandbox(*up_args: str):
    """`staging up --format json UP_ARGS` in a fresh work dir: (work dir, up's result), always stopped after."""
    directory = work_dir()
    try:
        yield directory, cli("staging", "up", "--workdir", str(directory), "--format", "json", *up_args)
    finally:
        cli("staging", "down", "--workdir", str(directory), check=False)
        shutil.rmtree(directory, ignore_errors=True)


def _status(directory: Path) -> tuple[dict, str]:
    as_json = json.loads(cli("staging", "status", "--workdir", str(directory), "--format", "json").stdout)
    return as_json, cli("staging", "status", "--workdir", str(directory)).stdout


def test_event_with_h2_serves_http2_and_status_says_so():
    require("apache2", "openssl", "h2load")
    with _sandbox("--mpm", "event", "--tls", "--h2") as (directory, up):
        info = json.loads(up.stdout)
        assert info["protocols"] == ["h2", "http/1.1"] and info["h2_inactive_reason"] is None
        assert up.stderr.strip() == ""  # no warning where h2 is served
        assert _h2load_protocol(info["url"]) == "h2"
        status, text = _status(directory)
        assert status["protocols"] == ["h2", "http/1.1"]
        assert status["h2"] == {"offered": True, "active": True, "negotiated": "h2", "inactive_reason": None}
        assert "protocols offered: h2 http/1.1; HTTP/2 active" in text
        # Debian's http2.conf at server scope, without its h2c; the state file records the offer.
        config = (directory / "conf" / "httpd.conf").read_text()
        assert re.findall(r"^Protocols .*$", config, re.M) == ["Protocols h2 http/1.1"]
        assert re.search(r'^LoadModule http2_module ".*/mod_http2\.so"$', config, re.M)
        assert json.loads((directory / "staging.json").read_text())["protocols"] == ["h2", "http/1.1"]


def test_tls_without_h2_offers_http1_only():
    require("apache2", "openssl", "h2load")
    with _sandbox("--mpm", "event", "--tls") as (directory, up):
        info = json.loads(up.stdout)
        assert info["protocols"] == ["http/1.1"]
        assert _h2load_protocol(info["url"]) == "http/1.1"
        status, text = _status(directory)
        assert status["h2"]["offered"] is False and status["h2"]["active"] is False
        assert "protocols offered: http/1.1\n" in text
        assert "http2_module" not in (directory / "conf" / "httpd.conf").read_text()


def test_prefork_with_h2_starts_says_it_once_and_serves_http1():
    require("apache2", "openssl", "h2load")
    with _sandbox("--mpm", "prefork", "--tls", "--h2") as (directory, up):
        info = json.loads(up.stdout)
        warning = [line for line in up.stderr.splitlines() if line.strip()]
        assert len(warning) == 1, up.stderr
        assert warning[0].startswith("apache-advisor: warning: --h2: HTTP/2 will not be negotiated:")
        assert "prefork" in warning[0] and "AH10034" in warning[0] and "HTTP/1.1" in warning[0]
        assert info["protocols"] == ["h2", "http/1.1"] and "prefork" in info["h2_inactive_reason"]
        assert _h2load_protocol(info["url"]) == "http/1.1"
        status, text = _status(directory)
        assert status["running"] and status["mpm"] == "prefork"
        h2 = status["h2"]
        assert h2["offered"] is True and h2["active"] is False and h2["negotiated"] == "http/1.1"
        assert "AH10034" in h2["inactive_reason"]
        assert "protocols offered: h2 http/1.1; HTTP/2 inactive: mod_http2 does not run under the prefork" in text
        # httpd's own word for it, which the reason cites.
        assert "AH10034" in (directory / "logs" / "error.log").read_text()


def test_h2_without_tls_is_one_line_and_makes_nothing(tmp_path):
    require("apache2")
    directory = tmp_path / "sandbox"
    line = one_error_line(cli("staging", "up", "--workdir", str(directory), "--h2", check=False))
    assert "--h2 without --tls" in line and "add --tls" in line and "h2c" in line
    assert not directory.exists()


def test_h2_without_mod_http2_is_one_line_and_makes_nothing(tmp_path, monkeypatch):
    """A private modules directory, the system's modules but mod_http2."""
    from advisor.tuner.staging.httpd_binary import find_httpd, find_modules_dir

    require("apache2")
    system = Path(find_modules_dir(find_httpd()))
    assert (system / "mod_http2.so").is_file()
    modules = tmp_path / "modules"
    modules.mkdir()
    for module in system.iterdir():
        if module.name != "mod_http2.so":
            (modules / module.name).symlink_to(module)
    directory = tmp_path / "sandbox"
    monkeypatch.setenv("APACHE_ADVISOR_MODULES_DIR", str(modules))
    line = one_error_line(cli("staging", "up", "--workdir", str(directory), "--tls", "--h2", check=False))
    assert f"no mod_http2.so in {modules}" in line and "leave out --h2" in line
    assert not directory.exists()
    # A modules directory that is not one at all.
    monkeypatch.setenv("APACHE_ADVISOR_MODULES_DIR", str(tmp_path))
    line = one_error_line(cli("staging", "up", "--workdir", str(directory), check=False))
    assert f"APACHE_ADVISOR_MODULES_DIR={tmp_path} holds no mod_status.so" in line
    assert not directory.exists()


def test_the_state_tells_bench_and_tune_whether_h2_is_negotiated():
    """staging.json's protocols and the MPM in effect (an MPM switch updates it)."""
    base = dict(work_dir="/w", binary="/usr/sbin/apache2", config="/w/conf/httpd.conf", managed="/w/m.conf",
                host="127.0.0.1", port=8443, tls_key="ecdsa-p256")
    older = SandboxState(mpm="event", **base)  # a staging.json written before --h2 existed
    assert older.protocols == ["http/1.1"] and not older.h2_offered and older.h2_inactive_reason is None
    offered = SandboxState(mpm="prefork", protocols=["h2", "http/1.1"], **base)
    assert offered.h2_offered and "AH10034" in offered.h2_inactive_reason
    for mpm in ("event", "worker"):
        offered.mpm = mpm
        assert offered.h2_inactive_reason is None
