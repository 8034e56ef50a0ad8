"""bench/tls_resumption.py's four cases really change what the sandbox resumes (issue 58).

The bench's first version set `SSLSessionCache none` through the managed
include, which mod_ssl ignores after the sandbox's own shmcb line, and
measured the cache where it meant its absence. Here each case is set as the
bench sets it (its own `set_case`, the sandbox's httpd.conf rewritten and
restarted) and checked from the client's side with the bench's own chain of
`openssl s_client -sess_out/-sess_in` connections, which counts a ticket
resumption as well as a cache hit, and against mod_ssl's cache counters.
No load: three connections per case and TLS version.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from advisor.errors import AdvisorError
from advisor.tuner.staging import tls_setup
from test_bench_support import SandboxRun, require

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import tls_resumption as bench  # noqa: E402

pytestmark = pytest.mark.httpd


def test_each_case_resumes_as_it_claims_tickets_unseen_by_the_cache_counters():
    require("apache2", "openssl")
    cases = {case.key: case for case in bench.CASES}
    with SandboxRun(mpm="prefork", tls=True) as run:
        port = run.state.port
        seen: dict[tuple[str, str], list[bool]] = {}
        counted: dict[str, dict[str, int] | None] = {}
        for key in ("b", "a", "c", "d"):  # b first: the stock sandbox (a) must not leak into it
            bench.set_case(run.sandbox, cases[key])
            before = bench.cache_counters(port)
            for version in bench.VERSIONS:
                seen[key, version] = bench.chain(port, version, 3, run.dir)
            after = bench.cache_counters(port)
            counted[key] = None if before is None or after is None else {
                name: after[name] - before[name] for name in after}
        # The first connection of a chain has nothing to offer: always a full handshake.
        assert not any(links[0] for links in seen.values()), seen
        # b: no cache, no tickets: nothing resumes, in either version, and the
        # status page shows no cache at all (the first attempt's shmcb gone).
        assert seen["b", "1.3"] == seen["b", "1.2"] == [False, False, False]
        assert counted["b"] is None
        # a, c, d: every later connection resumes, in both versions.
        for key in ("a", "c", "d"):
            for version in bench.VERSIONS:
                assert seen[key, version] == [False, True, True], (key, version, seen[key, version])
        # c: resumption with no cache at all, so by ticket.
        assert counted["c"] is None
        # a: tickets off, so the cache did the resuming: 2 resumptions a version
        # (TLS 1.2's session IDs, TLS 1.3's stateful tickets), all cache hits.
        assert counted["a"] is not None and counted["a"]["CacheRetrieveHitCount"] == 4, counted["a"]
        # d: the cache is there, but the tickets resume: no hit at all.
        assert counted["d"] is not None and counted["d"]["CacheRetrieveHitCount"] == 0, counted["d"]
        assert tls_setup.session_resumption(run.sandbox.config_path) == (True, True)


def test_a_sandbox_without_the_lines_is_one_line_and_untouched(tmp_path):
    config = tmp_path / "httpd.conf"
    text = "# plain HTTP (staging up --tls serves HTTPS)\nListen 127.0.0.1:8080\n"
    config.write_text(text)
    with pytest.raises(AdvisorError) as raised:
        tls_setup.set_session_resumption(config, tmp_path / "run", cache=False, tickets=False)
    line = raised.value.render()
    assert line.startswith(f"{config}: ") and "staging up --tls" in line and "\n" not in line
    assert config.read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["httpd.conf"]


def test_the_lines_round_trip(tmp_path):
    config = tmp_path / "httpd.conf"
    run_dir = tmp_path / "run"
    stock = "\n".join(["LoadModule ssl_module x", tls_setup.session_cache_line(run_dir, cache=True),
                       "SSLSessionCacheTimeout 300", "SSLSessionTickets off", ""])
    config.write_text(stock)
    assert tls_setup.session_resumption(config) == (True, False)
    tls_setup.set_session_resumption(config, run_dir, cache=False, tickets=True)
    assert tls_setup.session_resumption(config) == (False, True)
    assert "SSLSessionCache none\nSSLSessionCacheTimeout 300\nSSLSessionTickets on\n" in config.read_text()
    tls_setup.set_session_resumption(config, run_dir, cache=True, tickets=False)
    assert config.read_text() == stock
