"""`capacity --h2-share`: the protocol mix (issue 57).

The model's laws hold for any page and pool (hypothesis): more HTTP/2
visitors never open more connections nor hold more idle workers with
keep-alive on; event holds no idle worker for either protocol; prefork serves
no HTTP/2 at all. Then the command: its text and JSON, the log's %H, bad input.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.capacity.protocol_mix import (
    BROWSER_H1_CONNECTIONS,
    HTTP1,
    HTTP2,
    MixSettings,
    build_mix,
    h1_connections,
    h2_worker_limits,
    parse_share,
    protocol_rows,
    served_share,
)
from conftest import assert_one_line_error

CLI = [sys.executable, "-m", "advisor"]
FIXED = ["--no-measure", "--ram", "4G", "--worker-memory", "20M", "--connection-memory", "64K"]
MODULES = "/usr/lib/apache2/modules"

shares = st.floats(min_value=0.0, max_value=1.0)
pages = st.floats(min_value=1.0, max_value=200.0)
timeouts = st.floats(min_value=0.0, max_value=60.0)
mpms = st.sampled_from(["prefork", "worker", "event"])
service_times = st.floats(min_value=1e-4, max_value=2.0)


def settings(mpm: str = "worker", share: float = 0.5, **more) -> MixSettings:
    return MixSettings(mpm=mpm, asked_share=share, share_source="test", **more)


# ---- the model ----------------------------------------------------------------------


@given(mpm=mpms, low=shares, high=shares, per_page=pages, timeout=timeouts, keepalive=st.booleans(),
       x=service_times)
def test_more_http2_never_opens_more_connections(mpm, low, high, per_page, timeout, keepalive, x):
    low, high = sorted((low, high))
    one = settings(mpm, low, requests_per_page=per_page, keepalive_timeout=timeout, keepalive=keepalive)
    two = settings(mpm, high, requests_per_page=per_page, keepalive_timeout=timeout, keepalive=keepalive)
    mix_low = protocol_rows(one, served_share(one)[0], x)[2]
    mix_high = protocol_rows(two, served_share(two)[0], x)[2]
    assert mix_high.connections <= mix_low.connections + 1e-9
    assert mix_high.handshakes <= mix_low.handshakes + 1e-9
    if keepalive:
        # With keep-alive an HTTP/1.1 page idles at least one connection, HTTP/2 exactly one.
        assert mix_high.idle_worker_seconds <= mix_low.idle_worker_seconds + 1e-9


@given(share=shares, per_page=pages, timeout=timeouts, x=service_times, keepalive=st.booleans())
def test_event_holds_no_idle_worker_for_either_protocol(share, per_page, timeout, x, keepalive):
    s = settings("event", share, requests_per_page=per_page, keepalive_timeout=timeout, keepalive=keepalive)
    rows = protocol_rows(s, served_share(s)[0], x)
    assert all(row.idle_worker_seconds == 0 for row in rows)
    h2 = rows[1]
    # Its streams run on h2 workers; the connection holds one event worker only while they run.
    assert h2.h2_worker_seconds == pytest.approx(per_page * x)
    assert x <= h2.mpm_worker_seconds <= per_page * x + 1e-12


@given(share=shares.filter(lambda v: v > 0), timeout=timeouts, per_page=pages)
def test_worker_holds_its_thread_for_an_idle_http2_connection(share, timeout, per_page):
    s = settings("worker", share, requests_per_page=per_page, keepalive_timeout=timeout)
    h1, h2, _mix, base = protocol_rows(s, share, 0.01)
    assert h2.idle_worker_seconds == pytest.approx(timeout)
    assert h2.connections == 1.0
    assert h1.idle_worker_seconds == pytest.approx(h1.connections * timeout)
    assert h1.connections == base.connections == max(1.0, min(BROWSER_H1_CONNECTIONS, per_page - 1))


def test_event_before_2_4_19_kept_an_idle_http2_connection_on_its_worker():
    rows = protocol_rows(settings("event", 1.0, version=(2, 4, 18), keepalive_timeout=5.0), 1.0, 0.01)
    assert rows[1].idle_worker_seconds == 5.0
    assert rows[0].idle_worker_seconds == 0.0


@given(share=shares, version=st.sampled_from([(2, 4, 27), (2, 4, 58), (2, 4, 999)]))
def test_prefork_serves_no_http2(share, version):
    s = settings("prefork", share, version=version)
    served, notes = served_share(s)
    assert served == 0.0
    mix = build_mix(s, 0.01, [50.0], 150)
    assert mix.rows[2].connections == mix.rows[3].connections  # the mix is every visitor on HTTP/1.1
    assert mix.changes == []
    assert (share > 0) == any("AH10034" in note and "served HTTP/1.1" in note for note in notes)


def test_prefork_before_2_4_27_did_negotiate_http2():
    served, _ = served_share(settings("prefork", 0.4, version=(2, 4, 26)))
    assert served == 0.4
    assert served_share(settings("event", 0.4, version=(2, 4, 16)))[0] == 0.0  # no mod_http2 before 2.4.17


def test_what_ifs_are_said():
    notes = served_share(settings("event", 0.5, h2_loaded=False, tls=False))[1]
    assert any("loads no mod_http2" in n for n in notes) and any("no HTTPS" in n for n in notes)
    notes = served_share(settings("event", 0.5, h2_offered=False))[1]
    assert any("no Protocols line offers h2" in n for n in notes)
    assert served_share(settings("event", 0.0, h2_loaded=False))[1] == []


def test_keepalive_off_opens_a_connection_per_request_but_http2_still_one():
    s = settings("worker", 1.0, keepalive=False, requests_per_page=8.0, keepalive_timeout=5.0)
    h1, h2, _mix, _base = protocol_rows(s, 1.0, 0.01)
    assert h1.connections == 8.0 and h1.idle_worker_seconds == 0.0
    # mod_http2 times an idle connection with KeepAliveTimeout whatever the KeepAlive switch says.
    assert h2.connections == 1.0 and h2.idle_worker_seconds == 5.0
    assert h1_connections(8.0, True) == 6.0 and h1_connections(1.0, True) == 1.0


@given(mpm=st.sampled_from(["worker", "event"]), share=shares, rate=st.floats(min_value=0.1, max_value=1e4),
       x=service_times, per_page=pages)
def test_littles_law_at_each_rate(mpm, share, rate, x, per_page):
    s = settings(mpm, share, requests_per_page=per_page)
    mix = build_mix(s, x, [rate], 400)
    row = mix.at_rates[0]
    assert row.pages == pytest.approx(rate / per_page)
    assert row.h2_workers == pytest.approx(share * rate * x)
    assert row.h1_mpm_workers == pytest.approx(rate * x + row.h1_idle_workers)
    assert row.connections == pytest.approx(row.pages * mix.rows[2].connections)


def test_h2_worker_pool_defaults_and_written_values():
    low, high, source = h2_worker_limits(settings("event", threads_per_child=25))
    assert (low, high) == (25, 37) and "default" in source
    assert h2_worker_limits(settings("event", threads_per_child=2))[:2] == (2, 4)
    written = settings("event", h2_max_workers=8, h2_workers_where="H2MaxWorkers 8 (a.conf:3)", processes=4)
    mix = build_mix(written, 0.05, [200.0], 100)
    assert (mix.h2_max_workers, mix.h2_worker_pool) == (8, 32)
    # 0.5 x 200/s x 50 ms = 5 h2 workers busy of 32: not tight. At 2,000/s: 50 of 32.
    assert not any("raise H2MaxWorkers" in line for line in mix.changes)
    tight = build_mix(written, 0.05, [2000.0], 100)
    assert any("raise H2MaxWorkers" in line and "a.conf:3" in line for line in tight.changes)


def test_changes_name_the_pool_that_is_short():
    mix = build_mix(settings("worker", 0.6, keepalive_timeout=5.0), 0.01, [100.0], 400)
    line = next(line for line in mix.changes if line.startswith("at 100 req/s"))
    # All on HTTP/1.1: 100/5.21 pages/s x (4.21 x 5 s idle + 52 ms) = 405 threads; the mix 220.
    assert "405.0 -> 219.8" in line and "with the mix it holds" in line
    assert mix.rows[0].protocol == HTTP1 and mix.rows[1].protocol == HTTP2


@pytest.mark.parametrize("text", ["1.5", "-0.1", "abc", "nan", "inf", ""])
def test_parse_share_refuses(text):
    with pytest.raises(ValueError, match="--h2-share"):
        parse_share(text)


# ---- the command ----------------------------------------------------------------------


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + ["capacity", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)


def tls_config(tmp_path: Path, mpm: str, extra: str = "") -> Path:
    """A TLS site offering h2 the way Debian's http2.conf does."""
    path = tmp_path / f"{mpm}.conf"
    path.write_text(f"LoadModule mpm_{mpm}_module {MODULES}/mod_mpm_{mpm}.so\n"
                    f"LoadModule ssl_module {MODULES}/mod_ssl.so\n"
                    f"LoadModule http2_module {MODULES}/mod_http2.so\n"
                    "ServerName localhost\nListen 443\nKeepAliveTimeout 5\n"
                    "<IfModule http2_module>\n    Protocols h2 h2c http/1.1\n</IfModule>\n"
                    f"{extra}<VirtualHost *:443>\n    SSLEngine on\n</VirtualHost>\n")
    return path


def test_text_shows_the_mix_and_what_it_changed(tmp_path):
    result = run(str(tls_config(tmp_path, "worker")), *FIXED, "--service-time", "0.01", "--rate", "100",
                 "--h2-share", "0.6")
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "Protocol mix: 60 % of visitors on HTTP/2 (--h2-share)" in out
    assert "connections per page 4.21 -> 2.28 (-46 %)" in out
    assert "keeps its thread for its whole life" in out


def test_json_carries_the_mix(tmp_path):
    result = run(str(tls_config(tmp_path, "event", "H2MaxWorkers 30\n")), *FIXED, "--service-time", "0.02",
                 "--rate", "50", "--h2-share", "0.25", "--requests-per-page", "11", "--format", "json")
    assert result.returncode == 0, result.stderr
    mix = json.loads(result.stdout)["protocol_mix"]
    assert (mix["share"], mix["source"], mix["requests_per_page"]) == (0.25, "--h2-share", 11.0)
    h1, h2, mixed, base = mix["rows"]
    assert (h1["connections"], h2["connections"]) == (6.0, 1.0)
    assert mixed["connections"] == pytest.approx(0.75 * 6 + 0.25)
    assert all(row["idle_worker_seconds"] == 0 for row in mix["rows"])  # event
    assert mix["h2_max_workers"] == 30 and "H2MaxWorkers 30" in mix["h2_workers_source"]
    assert mix["at_rates"][0]["h2_workers"] == pytest.approx(0.25 * 50 * 0.02)


def test_prefork_says_http2_is_not_served(tmp_path):
    result = run(str(tls_config(tmp_path, "prefork")), *FIXED, "--h2-share", "0.6")
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "60 % of visitors would speak HTTP/2, all are served HTTP/1.1" in out
    assert "AH10034" in out


def test_default_is_every_visitor_on_http1(tmp_path):
    result = run(str(tls_config(tmp_path, "event")), *FIXED, "--format", "json")
    mix = json.loads(result.stdout)["protocol_mix"]
    assert (mix["share"], mix["source"], mix["changes"]) == (0.0, "the default, --h2-share 0", [])


@pytest.mark.parametrize(("args", "fragments"), [
    (["--h2-share", "1.5"], ["--h2-share 1.5", "between 0 and 1"]),
    (["--h2-share", "-0.2"], ["--h2-share -0.2", "between 0 and 1"]),
    (["--h2-share", "most"], ["--h2-share 'most'", "not a number"]),
    (["--requests-per-page", "0.5"], ["--requests-per-page 0.5", "at least one request"]),
    (["--requests-per-page", "many"], ["--requests-per-page 'many'", "not a number"]),
])
def test_bad_flags(tmp_path, args, fragments):
    assert_one_line_error(run(str(tls_config(tmp_path, "event")), *FIXED, *args), *fragments)


def test_bad_h2_workers_points_at_its_line(tmp_path):
    config = tls_config(tmp_path, "event", "H2MaxWorkers none\n")
    assert_one_line_error(run(str(config), *FIXED), f"{config}:10:", "H2MaxWorkers")


def test_h2_worker_threads_memory_is_said(tmp_path):
    # 16 children of 25 threads (the worker defaults): 25 to 37 h2 workers each, 256 KiB a thread.
    mix = build_mix(settings("worker", 0.0, threads_per_child=25, processes=16, thread_bytes=256 * 1024), None, [], 400)
    assert any("each of 16 children" in n and "100 to 148 MiB" in n for n in mix.notes)
    assert not build_mix(settings("worker", 0.0, h2_loaded=False, thread_bytes=256 * 1024), None, [], 400).notes
    assert not build_mix(settings("prefork", 0.5, thread_bytes=256 * 1024), None, [], 150).notes[1:]
