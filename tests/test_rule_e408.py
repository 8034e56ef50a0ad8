"""E408 where a fixture cannot show it: a lone site file (no LoadModule, so no
complete config httpd would accept), the MPM line in another file, and an
httpd older than Protocols."""

from __future__ import annotations

from pathlib import Path

from lint_helpers import lint_json

SITE = """<VirtualHost *:443>
    ServerName shop.example.test
    SSLEngine on
    Protocols h2 http/1.1
</VirtualHost>
"""


def _e408(*args: str) -> list[dict]:
    return [f for f in lint_json(*args) if f["code"] == "E408"]


def test_a_lone_site_file_is_judged_only_when_the_mpm_is_given(tmp_path: Path):
    site = tmp_path / "shop.conf"
    site.write_text(SITE)
    assert _e408(str(site)) == []  # neither the MPM nor the modules are known
    found = _e408(str(site), "--mpm", "prefork")
    assert [(f["line"], f["severity"]) for f in found] == [(4, "warning")]
    assert "prefork, compiled in or given with --mpm" in found[0]["message"]
    assert _e408(str(site), "--mpm", "event") == []


def test_the_mpm_line_in_another_file_is_named_by_its_path(tmp_path: Path):
    mods = tmp_path / "mpm.load"
    mods.write_text("LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so\n")
    main = tmp_path / "apache2.conf"
    main.write_text(f"Include {mods}\n"
                    "LoadModule http2_module /usr/lib/apache2/modules/mod_http2.so\n"
                    "ServerName fixture.test\n" + SITE + "<VirtualHost *:8443>\n"
                    "    ServerName other.example.test\n</VirtualHost>\n")
    found = _e408(str(main))
    assert [f["line"] for f in found] == [7]
    assert f"LoadModule mpm_prefork_module at {mods}:1" in found[0]["message"]
    assert "to <VirtualHost *:443>" in found[0]["message"]


def test_silent_before_httpd_had_protocols(tmp_path: Path):
    site = tmp_path / "shop.conf"
    site.write_text(SITE)
    assert _e408(str(site), "--mpm", "prefork", "--apache-version", "2.4.16") == []
    assert len(_e408(str(site), "--mpm", "prefork", "--apache-version", "2.4.17")) == 1
