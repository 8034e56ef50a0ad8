"""mod_http2's dimensions in tune's space (issue 57): which appear under which protocol, and
that a recommendation with them is a config httpd accepts (no load)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from advisor.config import LoadOptions, load_config
from advisor.tuner.search.space_derive import derive_space
from test_bench_support import require

MODULES = Path("/usr/lib/apache2/modules")


def _config(tmp_path: Path, mpm: str = "event", http2: bool = True, protocols: str = "h2 http/1.1"):
    lines = [f"ServerRoot {tmp_path}", f"LoadModule mpm_{mpm}_module {MODULES}/mod_mpm_{mpm}.so",
             f"LoadModule authz_core_module {MODULES}/mod_authz_core.so"]
    if http2:
        lines += [f"LoadModule http2_module {MODULES}/mod_http2.so", f"Protocols {protocols}"]
    lines += ["Listen 127.0.0.1:8443", f"PidFile {tmp_path}/httpd.pid", f"ErrorLog {tmp_path}/error.log"]
    main = tmp_path / "httpd.conf"
    main.write_text("\n".join(lines) + "\n")
    return load_config(str(main), LoadOptions(apache_version="2.4.71"))


def _names(space) -> list[str]:
    return [d.name for d in space.dimensions]


def test_a_mix_searches_protocols_and_h2_limits_and_h2_alone_leaves_protocols_out(tmp_path):
    cfg = _config(tmp_path)
    mix = derive_space(cfg, 400, protocol="mix", over_tls=True)
    assert {"Protocols", "H2MaxSessionStreams", "H2MaxWorkers"} <= set(_names(mix))
    assert mix.dimension("Protocols").choices == ("h2 http/1.1", "http/1.1")
    assert (mix.dimension("H2MaxSessionStreams").low, mix.dimension("H2MaxSessionStreams").high) == (6, 400)
    # The start is the config's own: h2 offered, mod_http2's defaults (100 streams, 3/2 of 25 threads).
    assert mix.start["Protocols"] == "h2 http/1.1"
    assert mix.start["H2MaxSessionStreams"] == 100 and mix.start["H2MaxWorkers"] == 37
    assert any(note.startswith("H2WindowSize left out") for note in mix.notes)
    h2 = derive_space(cfg, 400, protocol="h2", over_tls=True)
    assert "Protocols" not in _names(h2) and "H2MaxWorkers" in _names(h2)
    assert any(note.startswith("Protocols left out: under --protocol h2") for note in h2.notes)
    # HTTP/1.1 trials, or a config without mod_http2: nothing of HTTP/2 is searched.
    assert not {"Protocols", "H2MaxSessionStreams", "H2MaxWorkers"} & set(_names(derive_space(cfg, 400)))
    plain = derive_space(_config(tmp_path, http2=False), 400, protocol="mix")
    assert not {"Protocols", "H2MaxSessionStreams"} & set(_names(plain))


def test_a_prefork_point_of_a_mix_says_its_visitors_get_http1(tmp_path):
    cfg = _config(tmp_path, mpm="prefork")
    space = derive_space(cfg, {"prefork": 150, "worker": 400, "event": 400}, allow_mpm_switch=True, protocol="mix")
    assert space.dimension("MPM").choices == ("prefork", "worker", "event")
    assert space.dimension("H2MaxWorkers").mpms == ("worker", "event")
    point = dict(space.start, Protocols="h2 http/1.1")
    prefork = space.settings(point)
    assert prefork["Protocols"] == "http/1.1" and "H2MaxWorkers" not in prefork
    event = space.settings(dict(point, MPM="event", ThreadsPerChild=32, H2MaxWorkers=8))
    assert event["Protocols"] == "h2 http/1.1"
    assert event["H2MaxWorkers"] == 32  # raised to ThreadsPerChild, as lint C209 asks
    # Prefork alone (no switch): offering h2 or not is the same point, so it is not searched.
    alone = derive_space(cfg, 150, protocol="mix")
    assert "Protocols" not in _names(alone)
    assert any("prefork serves HTTP/1.1 whatever is offered" in note for note in alone.notes)


def test_a_recommendation_with_the_h2_dimensions_is_a_config_httpd_accepts(tmp_path):
    require("apache2")
    cfg = _config(tmp_path)
    space = derive_space(cfg, 400, protocol="mix")
    for protocols in ("h2 http/1.1", "http/1.1"):
        point = dict(space.start, Protocols=protocols, H2MaxSessionStreams=6, H2MaxWorkers=96)
        lines = space.directives(point)
        assert f"Protocols {protocols}" in lines and "H2MaxSessionStreams 6" in lines
        include = tmp_path / "tuned.conf"
        include.write_text("\n".join(lines) + "\n")
        main = tmp_path / "with-include.conf"
        main.write_text((tmp_path / "httpd.conf").read_text() + f"Include {include}\n")
        checked = subprocess.run(["apache2", "-t", "-f", str(main)], capture_output=True, text=True, timeout=30)
        assert checked.returncode == 0, checked.stderr
        assert "Syntax OK" in checked.stderr
