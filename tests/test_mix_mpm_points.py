"""An HTTP/2 mix with --allow-mpm-switch tries worker and event (issue 57).

A session over `--protocol mix` from a prefork sandbox ran all its trials
under prefork: the candidate lint judged each worker and event point on a
tree of one LoadModule line, where the point's mod_http2 lines
(H2MaxSessionStreams, H2MaxWorkers) read as E401, and run_search refused
them without a word. The tree here is the sandbox's as `staging up --mpm
prefork --tls --h2` writes it, read by the real reader; no httpd runs."""

from __future__ import annotations

from pathlib import Path

from advisor.config import LoadOptions, load_config
from advisor.tuner.search.optimizer import _first_points
from advisor.tuner.search.space_derive import derive_space
from advisor.tuner.search.space_lint import CandidateLint

MODULES = Path("/usr/lib/apache2/modules")
RAM = {"prefork": 2867, "worker": 17168, "event": 9392}


def _sandbox_like_tree(tmp_path: Path) -> str:
    """A prefork tree with mod_http2 and mod_ssl, offering h2 as the sandbox does."""
    lines = [f'ServerRoot "{tmp_path}"', "ServerName 127.0.0.1", f'PidFile "{tmp_path}/httpd.pid"',
             f'ErrorLog "{tmp_path}/error.log"', "User www-data", "Group www-data"]
    lines += [f'LoadModule {name}_module "{MODULES}/mod_{name}.so"'
              for name in ("mpm_prefork", "authz_core", "mime", "dir", "status", "http2", "socache_shmcb", "ssl")]
    lines += ["Listen 127.0.0.1:8443", f'DocumentRoot "{tmp_path}"', "Protocols h2 http/1.1",
              f'SSLSessionCache "shmcb:{tmp_path}/ssl_scache(512000)"', "SSLProtocol -all +TLSv1.2 +TLSv1.3",
              "<VirtualHost 127.0.0.1:8443>", "    SSLEngine on",
              f'    SSLCertificateFile "{tmp_path}/server.crt"', f'    SSLCertificateKeyFile "{tmp_path}/server.key"',
              "</VirtualHost>"]
    main = tmp_path / "httpd.conf"
    main.write_text("\n".join(lines) + "\n")
    return str(main)


def test_the_first_points_of_a_mix_with_an_mpm_switch_pass_the_candidate_lint(tmp_path):
    cfg = load_config(_sandbox_like_tree(tmp_path), LoadOptions(apache_version="2.4.71"))
    space = derive_space(cfg, RAM, allow_mpm_switch=True, over_tls=True, protocol="mix")
    assert {"Protocols", "H2MaxSessionStreams", "H2MaxWorkers"} <= set(space.names)
    lint = CandidateLint(cfg, space)
    lint.freeze()  # as tune judges its candidates: on the tree as the plan read it
    try:
        first = _first_points(space, None)
        by_mpm = {space.mpm_of(point): origin for point, origin in first if origin == "mpm"}
        assert by_mpm == {"worker": "mpm", "event": "mpm"}
        for point, origin in first:
            verdict = lint.check(point)
            assert verdict.errors == [], (origin, space.mpm_of(point), verdict.errors)
        # The worker and event points write mod_http2's lines, and they were judged.
        worker = next(point for point, origin in first if space.mpm_of(point) == "worker")
        assert any(line.startswith("H2MaxWorkers ") for line in lint.check(worker).lines)
        # The switched MPM's point is still judged: an error it brings is refused.
        refused = lint.check(dict(worker, MaxConnectionsPerChild=500)).errors
        assert refused and all(error.startswith("candidate line") for error in refused), refused
        assert any(" P101 " in error for error in refused), refused
    finally:
        lint.close()
