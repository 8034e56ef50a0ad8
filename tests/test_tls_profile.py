"""The TLS expectations profile (issue 58): `lint --tls-profile`, the settings
file's `tls-profile`, what the TLS rules make of it, `explain` saying which
profile applies; and the TLS rules' cases a fixture cannot state (a version
range, a severity, a fragment linted alone)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import assert_one_line_error
from lint_helpers import RULES_CORPUS, lint_json, run_cli

CLI = [sys.executable, "-m", "advisor"]
HEAD = ("LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so\n"
        "LoadModule headers_module /usr/lib/apache2/modules/mod_headers.so\n"
        "LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so\n"
        "ServerName tls.test\n")
TLS_HOST = "Listen 127.0.0.1:8443\n<VirtualHost 127.0.0.1:8443>\n    SSLEngine on\n{body}</VirtualHost>\n"


def config(tmp_path: Path, server: str = "", host: str = "", head: str = HEAD) -> Path:
    path = tmp_path / "httpd.conf"
    path.write_text(head + server + TLS_HOST.format(body=host))
    return path


def findings(path: Path, code: str, *args: str) -> list[dict]:
    return [f for f in lint_json(str(path), "--select", code, *args) if f["code"] == code]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + list(args), capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=120)


# ---- the profile: where it comes from, bad input -------------------------------------


def test_unknown_profile_on_the_command_line_is_one_line_exit_2(tmp_path):
    path = config(tmp_path)
    assert_one_line_error(run("lint", "--isolated", "--no-live", "--tls-profile", "ancient", str(path)),
                          "--tls-profile", "ancient", "modern, intermediate, old")
    assert_one_line_error(run("explain", "S505", "--isolated", "--tls-profile", "ancient"),
                          "--tls-profile", "ancient")


def test_unknown_profile_in_the_settings_file_names_the_file(tmp_path):
    path = config(tmp_path)
    (tmp_path / ".apache-advisor.toml").write_text('tls-profile = "legacy"\n')
    done = run("lint", "--no-live", str(path), cwd=tmp_path)
    assert_one_line_error(done, ".apache-advisor.toml", "tls-profile", "legacy")


def test_settings_file_sets_the_profile_and_the_option_wins(tmp_path):
    path = config(tmp_path, server="SSLProtocol all -SSLv3\n")
    (tmp_path / ".apache-advisor.toml").write_text('tls-profile = "old"\n')

    def s505(*args: str) -> list[dict]:
        done = run("lint", "--no-live", "--no-cache", "-f", "json", "--fail-on", "never", "--select", "S505",
                   *args, str(path), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        import json

        return json.loads(done.stdout)

    assert s505() == []  # old admits TLSv1 and TLSv1.1
    modern = s505("--tls-profile", "modern")
    assert [f["line"] for f in modern] == [5]
    assert "TLSv1, TLSv1.1, TLSv1.2" in modern[0]["message"] and "modern" in modern[0]["message"]
    assert modern[0]["fix"] == "SSLProtocol -all +TLSv1.3"
    default = findings(path, "S505")  # --isolated: no settings file, intermediate
    assert "TLSv1, TLSv1.1 (" in default[0]["message"] and "intermediate" in default[0]["message"]


def test_explain_says_which_profile_applies_and_what_each_expects(tmp_path):
    plain = run_cli("explain", "S505", "--isolated")
    assert plain.exit_code == 0
    assert "TLS profile: intermediate (the default" in plain.stdout
    assert "* intermediate: TLSv1.2 and TLSv1.3" in plain.stdout and "- modern:" in plain.stdout
    (tmp_path / ".apache-advisor.toml").write_text('tls-profile = "modern"\n')
    chosen = run("explain", "S522", cwd=tmp_path)
    assert chosen.returncode == 0, chosen.stderr
    assert "TLS profile: modern (tls-profile in" in chosen.stdout
    assert "* modern: max-age of two years (63072000 s)" in chosen.stdout
    assert run("explain", "S522", "--tls-profile", "old", cwd=tmp_path).stdout.count("* old:") == 1
    # A rule the profile does not change says nothing of it.
    assert "TLS profile" not in run_cli("explain", "P101").stdout


def test_hsts_floor_follows_the_profile(tmp_path):
    year = 'Header always set Strict-Transport-Security "max-age=31536000"\n'
    path = config(tmp_path, host=year)
    assert findings(path, "S522") == []
    modern = findings(path, "S522", "--tls-profile", "modern")
    assert [f["line"] for f in modern] == [8] and "modern TLS profile's two years" in modern[0]["message"]


def test_old_profile_accepts_3des_only(tmp_path):
    path = config(tmp_path, host="    SSLCipherSuite DES-CBC3-SHA:RC4-SHA:ECDHE-RSA-AES128-GCM-SHA256\n")
    assert "3DES" in findings(path, "S511")[0]["message"]
    old = findings(path, "S511", "--tls-profile", "old")
    assert "RC4" in old[0]["message"] and "3DES" not in old[0]["message"]


def test_fix_writes_the_profiles_protocol_line(tmp_path):
    path = config(tmp_path, server="SSLProtocol all -SSLv3\n")
    done = run_cli("fix", "--isolated", "--tls-profile", "modern", "--check-cmd", "true", "--select", "S505",
                   str(path))
    assert done.exit_code == 1 and "+SSLProtocol -all +TLSv1.3\n" in done.stdout


# ---- what a fixture cannot state ---------------------------------------------------------


def test_tickets_and_tls13_rules_hold_to_their_versions(tmp_path):
    path = config(tmp_path, server="SSLSessionCache none\nSSLProtocol TLSv1.2\n")
    assert findings(path, "S521") and findings(path, "S523")
    assert findings(path, "S521", "--apache-version", "2.4.10") == []  # no SSLSessionTickets before 2.4.11
    assert findings(path, "S523", "--apache-version", "2.4.35") == []
    assert findings(path, "S523", "--apache-version", "2.4.37")


def test_session_cache_severity_follows_the_tickets(tmp_path):
    with_tickets = findings(config(tmp_path, server="SSLSessionCache none\n"), "P115")
    assert [f["severity"] for f in with_tickets] == ["info"] and "S521" in with_tickets[0]["message"]
    without = findings(config(tmp_path, server="SSLSessionCache none\nSSLSessionTickets off\n"), "P115")
    assert [f["severity"] for f in without] == ["warning"]
    conf_cmd = findings(config(tmp_path, server="SSLOpenSSLConfCmd Options -SessionTicket\n"), "P115")
    assert [f["severity"] for f in conf_cmd] == ["warning"] and "No SSLSessionCache" in conf_cmd[0]["message"]


def test_a_cache_whose_socache_module_is_missing_is_an_error(tmp_path):
    path = config(tmp_path, server="SSLSessionCache shmcb:/run/ssl_scache(512000)\n")
    found = findings(path, "P115")
    assert [(f["line"], f["severity"]) for f in found] == [(5, "error")]
    assert "socache_shmcb_module" in found[0]["message"]


def test_a_fragment_alone_claims_no_default(tmp_path):
    """A vhost file linted on its own: the cache, SSLEngine and tickets may be set in the main config."""
    fragment = tmp_path / "site.conf"
    fragment.write_text("<VirtualHost *:443>\n    ServerName www.test\n    SSLEngine on\n"
                        "    SSLUseStapling on\n</VirtualHost>\n<VirtualHost *:443>\n    ServerName b.test\n"
                        "</VirtualHost>\n")
    for code in ("S521", "P115", "E411", "E413"):
        assert findings(fragment, code) == [], code
    with_certificate = fragment.read_text().replace(
        "    ServerName b.test\n", "    ServerName b.test\n    SSLCertificateFile /etc/ssl/b.pem\n")
    fragment.write_text(with_certificate)
    assert [f["line"] for f in findings(fragment, "E413")] == [6]


def test_a_tls_fixture_fix_leaves_no_ticket_finding_behind(tmp_path):
    source = RULES_CORPUS / "S521" / "debian_default.conf"
    path = tmp_path / source.name
    path.write_text(source.read_text())
    done = run_cli("fix", "--isolated", "--check-cmd", "true", "--write", "--no-backup", "--select", "S521",
                   str(path))
    assert done.exit_code == 0, done.output
    assert "\tSSLSessionCacheTimeout  300\n\tSSLSessionTickets off\n" in path.read_text()
    assert findings(path, "S521") == []


def test_a_version_gated_tls_finding_on_an_unknown_patch_level_says_what_it_assumed():
    fixture = str(RULES_CORPUS / "S521" / "debian_default.conf")
    unknown = run_cli("lint", fixture, "--select", "S521,S523", "--no-cache")
    assert "S521" in unknown.stdout
    assert "note: S521 assumed httpd 2.4.11 or later (the patch level is unknown)" in unknown.stderr + unknown.stdout
    known = run_cli("lint", fixture, "--select", "S521,S523", "--no-cache", "--apache-version", "2.4.58")
    assert "S521" in known.stdout and "assumed httpd" not in known.stderr + known.stdout
