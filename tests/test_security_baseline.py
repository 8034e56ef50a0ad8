"""Issue 16: the dev-sec apache-baseline's configuration controls as rules
S507-S512, judged by meaning, and the security/speed pairs (S510/P110,
S512/P106) that the profiles arbitrate. Every check runs the real CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.lint.baseline import DEV_SEC_APACHE
from advisor.rules import all_rules, rule_by_code
from conftest import SAMPLES, require_httpd
from lint_helpers import RULES_CORPUS, all_fixtures, lint_json, run_cli

HEADER = ("LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so\n"
          "LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so\n"
          "ServerName baseline.test\nErrorLog /tmp/apache-advisor-baseline-error.log\n")
SSL = ("LoadModule socache_shmcb_module /usr/lib/apache2/modules/mod_socache_shmcb.so\n"
       "LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so\nListen 127.0.0.1:8443\n")
PAIRS = (("S510", "P110"), ("S512", "P106"))


def findings(path: Path | str, code: str, *args: str) -> list[dict]:
    return [f for f in lint_json(str(path), "--select", code, *args) if f["code"] == code]


def write(tmp_path: Path, body: str, name: str = "httpd.conf") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + body)
    return path


def line_of(path: Path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1)
                if line.strip() == text)


# ---- S507: User / Group root ------------------------------------------------

def test_user_root_is_an_error_and_group_root_a_warning():
    user = findings(RULES_CORPUS / "S507" / "user_root.conf", "S507")
    assert [(f["line"], f["severity"]) for f in user] == [(8, "error")]
    group = findings(RULES_CORPUS / "S507" / "group_root.conf", "S507")
    assert [(f["line"], f["severity"]) for f in group] == [(9, "warning")]
    assert findings(RULES_CORPUS / "S507" / "unprivileged_fp.conf", "S507") == []


@pytest.mark.parametrize("user,expected", [("root", ["error"]), ("www-data", [])])
def test_user_is_read_through_debian_envvars(tmp_path, user, expected):
    (tmp_path / "envvars").write_text(f"export APACHE_RUN_USER={user}\nexport APACHE_RUN_GROUP=www-data\n")
    main = tmp_path / "apache2.conf"
    main.write_text(HEADER + "User ${APACHE_RUN_USER}\nGroup ${APACHE_RUN_GROUP}\n")
    found = findings(main, "S507")
    assert [f["severity"] for f in found] == expected
    if expected:
        assert found[0]["line"] == line_of(main, "User ${APACHE_RUN_USER}")


def test_debian_stock_runs_as_www_data():
    assert findings(SAMPLES / "debian" / "apache2.conf", "S507") == []


@pytest.mark.httpd
def test_httpd_refuses_user_root_on_the_line_lint_flags_as_an_error():
    httpd = require_httpd()
    fixture = RULES_CORPUS / "S507" / "user_root.conf"
    done = subprocess.run([httpd, "-t", "-f", str(fixture)], capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)
    assert done.returncode != 0, "httpd accepted User root"
    match = re.search(r"AH00526: Syntax error on line (\d+) of ([^:]+):", done.stderr)
    assert match and match.group(2) == str(fixture), done.stderr
    errors = [f["line"] for f in findings(fixture, "S507") if f["severity"] == "error"]
    assert errors == [int(match.group(1))]
    # and the same file with Group root only is one httpd starts
    group = RULES_CORPUS / "S507" / "group_root.conf"
    assert subprocess.run([httpd, "-t", "-f", str(group)], capture_output=True, timeout=30,
                          stdin=subprocess.DEVNULL).returncode == 0


# ---- S508: dav / cgi / include ----------------------------------------------

def test_unused_risky_modules_warn_and_used_ones_inform():
    unused = findings(RULES_CORPUS / "S508" / "unused_dav.conf", "S508")
    assert sorted((f["line"], f["severity"]) for f in unused) == [(8, "warning"), (9, "warning")]
    used = findings(RULES_CORPUS / "S508" / "used_cgid.conf", "S508")
    assert [(f["line"], f["severity"]) for f in used] == [(9, "info")]
    assert "ScriptAlias" in used[0]["message"]
    assert findings(RULES_CORPUS / "S508" / "not_loaded_fp.conf", "S508") == []


def test_include_used_through_its_filter_and_dav_through_dav_on(tmp_path):
    path = write(tmp_path, "LoadModule include_module /usr/lib/apache2/modules/mod_include.so\n"
                           "LoadModule dav_module /usr/lib/apache2/modules/mod_dav.so\n"
                           "LoadModule dav_fs_module /usr/lib/apache2/modules/mod_dav_fs.so\n"
                           "AddOutputFilter INCLUDES .shtml\n"
                           "<Location /dav>\n    Dav On\n</Location>\n")
    assert sorted(f["severity"] for f in findings(path, "S508")) == ["info"] * 3


def test_an_unused_module_is_not_called_unused_when_an_include_was_skipped(tmp_path):
    path = write(tmp_path, "LoadModule cgi_module /usr/lib/apache2/modules/mod_cgi.so\n"
                           "Include /nonexistent/apache-advisor/sites.conf\n")
    found = findings(path, "S508", "--allow-missing-includes")
    assert [f["severity"] for f in found] == ["info"] and "skipped" in found[0]["message"]


# ---- S509: HTTP methods ------------------------------------------------------

def test_methods_unrestricted_on_the_docroot_only():
    found = findings(RULES_CORPUS / "S509" / "open_docroot.conf", "S509")
    assert [(f["line"], f["severity"]) for f in found] == [(8, "info")]
    for near in ("limitexcept_fp.conf", "require_method_in_location_fp.conf"):
        assert findings(RULES_CORPUS / "S509" / near, "S509") == [], near


def test_restriction_in_main_server_reaches_vhosts_and_denied_trees_are_not_served(tmp_path):
    inherited = write(tmp_path, "DocumentRoot /var/www/html\n<Directory />\n"
                                "    <LimitExcept GET POST HEAD>\n        Require all denied\n"
                                "    </LimitExcept>\n</Directory>\n"
                                "<VirtualHost *:80>\n    DocumentRoot /srv/site\n</VirtualHost>\n")
    assert findings(inherited, "S509") == []
    only_one = write(tmp_path, "DocumentRoot /var/www/html\n"
                               "<Directory /var/www/html>\n    AllowMethods GET POST\n</Directory>\n"
                               "<VirtualHost *:80>\n    DocumentRoot /srv/site\n</VirtualHost>\n"
                               "<Directory /srv/closed>\n    Require all denied\n</Directory>\n"
                               "Alias /closed /srv/closed\n", "two.conf")
    messages = [f["message"] for f in findings(only_one, "S509")]
    assert len(messages) == 1 and messages[0].startswith("/srv/site "), messages


def test_a_vhost_file_alone_is_not_judged(tmp_path):
    path = tmp_path / "site.conf"
    path.write_text("<VirtualHost *:80>\n    DocumentRoot /srv/site\n</VirtualHost>\n")
    assert findings(path, "S509") == []


# ---- S510: FollowSymLinks ----------------------------------------------------

def test_follow_symlinks_written_or_by_default():
    written = findings(RULES_CORPUS / "S510" / "follow_docroot.conf", "S510")
    assert [(f["line"], f["severity"]) for f in written] == [(10, "info")]
    default = findings(RULES_CORPUS / "S510" / "default_follow.conf", "S510")
    assert [f["line"] for f in default] == [9] and "default" in default[0]["message"]
    assert findings(RULES_CORPUS / "S510" / "owner_match_fp.conf", "S510") == []


def test_options_inherited_from_directory_root_count(tmp_path):
    path = write(tmp_path, "<Directory />\n    Options -FollowSymLinks +SymLinksIfOwnerMatch\n</Directory>\n"
                           "DocumentRoot /var/www/html\n")
    assert findings(path, "S510") == []
    path.write_text(path.read_text() + "<Directory /var/www>\n    Options FollowSymLinks\n</Directory>\n")
    assert [f["line"] for f in findings(path, "S510")] == [line_of(path, "Options FollowSymLinks")]


# ---- S511: ciphers -----------------------------------------------------------

def test_weak_ciphers_own_and_inherited():
    own = findings(RULES_CORPUS / "S511" / "rc4_honor_off.conf", "S511")
    assert [(f["line"], f["severity"]) for f in own] == [(13, "warning")] and "RC4" in own[0]["message"]
    inherited = findings(RULES_CORPUS / "S511" / "inherited_medium.conf", "S511")
    assert [f["line"] for f in inherited] == [10]
    assert "RC4" in inherited[0]["message"] and "3DES" in inherited[0]["message"]
    assert findings(RULES_CORPUS / "S511" / "mozilla_fp.conf", "S511") == []


@pytest.mark.parametrize("suite,honor,expected", [
    ("RC4-SHA:AES128-SHA", "on", ["info"]),           # the server's order keeps RC4 back
    ("HIGH:!aNULL", "off", []),                        # Debian's ssl.conf
    ("HIGH", "off", ["warning"]),                      # HIGH includes anonymous suites
    ("ALL:!aNULL:!eNULL:!EXPORT:!DES:!RC4:!3DES:!MD5", "off", []),
    ("ALL:!ADH:!EXPORT:!SSLv2:RC4+RSA:+HIGH:+MEDIUM", "off", ["warning"]),
    ("EECDH+AESGCM:EDH+AESGCM", "off", []),
    ("TLSv1.3 TLS_AES_256_GCM_SHA384", "off", []),     # TLS 1.3 suites are all strong
])
def test_cipher_strings_by_meaning(tmp_path, suite, honor, expected):
    path = write(tmp_path, SSL + f"<VirtualHost 127.0.0.1:8443>\n    SSLEngine on\n"
                                 f"    SSLCipherSuite {suite}\n    SSLHonorCipherOrder {honor}\n"
                                 "</VirtualHost>\n")
    assert [f["severity"] for f in findings(path, "S511")] == expected


def test_a_weak_list_on_a_host_without_ssl_is_not_judged(tmp_path):
    path = write(tmp_path, SSL + "SSLCipherSuite RC4-SHA\n<VirtualHost 127.0.0.1:8443>\n"
                                 "    ServerName plain.test\n</VirtualHost>\n")
    assert findings(path, "S511") == []


# ---- S512: logs --------------------------------------------------------------

def test_hosts_without_an_access_log():
    found = findings(RULES_CORPUS / "S512" / "vhost_without_log.conf", "S512")
    assert [(f["line"], f["severity"]) for f in found] == [(9, "warning")]
    devnull = findings(RULES_CORPUS / "S512" / "devnull.conf", "S512")
    assert [f["line"] for f in devnull] == [11] and "/dev/null" in devnull[0]["message"]
    assert findings(RULES_CORPUS / "S512" / "inherited_fp.conf", "S512") == []


def test_global_log_covers_every_host_and_a_discarded_error_log_is_flagged(tmp_path):
    path = write(tmp_path, "GlobalLog /tmp/apache-advisor-all.log common\n"
                           "<VirtualHost *:80>\n    ServerName a.test\n</VirtualHost>\n")
    assert findings(path, "S512") == []
    path = write(tmp_path, "CustomLog /tmp/apache-advisor-access.log common\n"
                           "<VirtualHost *:80>\n    ErrorLog /dev/null\n</VirtualHost>\n", "err.conf")
    found = findings(path, "S512")
    assert [f["line"] for f in found] == [line_of(path, "ErrorLog /dev/null")]
    assert "error log" in found[0]["message"]


def test_a_vhost_file_alone_is_judged_on_what_it_writes(tmp_path):
    quiet = tmp_path / "site.conf"
    quiet.write_text("<VirtualHost *:80>\n    ServerName a.test\n</VirtualHost>\n")
    assert findings(quiet, "S512") == []
    loud = tmp_path / "devnull.conf"
    loud.write_text("<VirtualHost *:80>\n    CustomLog /dev/null common\n</VirtualHost>\n")
    assert [f["line"] for f in findings(loud, "S512")] == [2]


def test_debian_stock_vhosts_inherit_the_other_vhosts_log():
    assert findings(SAMPLES / "debian" / "apache2.conf", "S512") == []


# ---- security against speed ----------------------------------------------------

def _pair_configs(tmp_path: Path) -> list[Path]:
    """Every fixture of either rule of a pair, the Debian sample, and configs
    that give each tree or host the state one side or the other dislikes."""
    codes = {code for pair in PAIRS for code in pair}
    paths = [f.path for f in all_fixtures() if f.code in codes]
    paths.append(SAMPLES / "debian" / "apache2.conf")
    bodies = {
        "mixed_trees.conf": "DocumentRoot /var/www/html\nAlias /u/ /srv/users/\n"
                            "<Directory /var/www/html>\n    Options FollowSymLinks\n</Directory>\n"
                            "<Directory /srv/users>\n    Options SymLinksIfOwnerMatch\n</Directory>\n",
        "mixed_logs.conf": "<VirtualHost *:80>\n    CustomLog /tmp/apache-advisor-a.log common\n"
                           "</VirtualHost>\n<VirtualHost *:81>\n    ServerName quiet.test\n</VirtualHost>\n",
        "devnull_log.conf": "<VirtualHost *:80>\n    CustomLog /dev/null common\n</VirtualHost>\n",
    }
    paths += [write(tmp_path, body, name) for name, body in bodies.items()]
    return paths


def test_no_config_gets_both_findings_of_a_pair_under_one_profile(tmp_path):
    both_under_all = 0
    for path in _pair_configs(tmp_path):
        for profile in ("security", "performance"):
            codes = {f["code"] for f in lint_json(str(path), "--profile", profile)}
            for pair in PAIRS:
                assert not set(pair) <= codes, f"{path} under --profile {profile}: {pair}"
        everything = lint_json(str(path))
        codes = {f["code"] for f in everything}
        both_under_all += any(set(pair) <= codes for pair in PAIRS)
        for pair in PAIRS:
            # the default profile: the same line never gets both sides
            for first, second in (pair, pair[::-1]):
                lines = {(f["file"], f["line"]) for f in everything if f["code"] == first}
                assert not lines & {(f["file"], f["line"]) for f in everything if f["code"] == second}
    # the mixed configs do get both under `all` (different trees/hosts): the
    # profiles above are what separate them, not an accident of the inputs
    assert both_under_all >= 2


def test_each_side_of_a_pair_names_the_other_in_docs_and_findings(tmp_path):
    rules = rule_by_code()
    for security, performance in PAIRS:
        assert rules[security].trade_off == performance and rules[performance].trade_off == security
        assert rules[security].category == "security" and rules[performance].category == "performance"
        for code, other in ((security, performance), (performance, security)):
            assert other in rules[code].doc.why, code
    seen = {code: 0 for pair in PAIRS for code in pair}
    for path in _pair_configs(tmp_path):
        for finding in lint_json(str(path)):
            for security, performance in PAIRS:
                other = {security: performance, performance: security}.get(finding["code"])
                if other:
                    seen[finding["code"]] += 1
                    assert other in finding["message"], finding
    assert all(seen.values()), seen


# ---- metadata and coverage -----------------------------------------------------

def test_rules_json_maps_rules_to_baseline_controls():
    data = json.loads(run_cli("rules", "--format", "json").stdout)
    known = {control.id for control in DEV_SEC_APACHE}
    by_code = {item["code"]: item for item in data}
    for item in data:
        assert isinstance(item["references"], list) and item["references"]
        assert set(item["baseline"]) <= known, item["code"]
        for control in item["baseline"]:
            assert any(control in reference for reference in item["references"]), item["code"]
    covered = {control for item in data for control in item["baseline"]}
    config_controls = {control.id for control in DEV_SEC_APACHE if not control.live_host}
    # The live-host rules (S513-S515) judge the processes and the files' owners and
    # modes; apache-01/02 (installed and running, started at boot) stay out of reach.
    assert covered == config_controls | {"apache-03", "apache-04", "apache-05"}
    assert len(DEV_SEC_APACHE) == 14 and len(config_controls) == 9
    assert by_code["S507"]["baseline"] == ["apache-06"] and by_code["S510"]["trade_off"] == "P110"


def test_docs_carry_the_coverage_table_and_the_trade_offs():
    text = (Path(__file__).resolve().parent.parent / "docs" / "rules.md").read_text()
    for control in DEV_SEC_APACHE:
        row = next(line for line in text.splitlines() if line.startswith(f"| {control.id} |"))
        assert ("| yes |" in row) == control.live_host, row
        if not control.live_host:
            assert re.search(r"\| S5\d\d", row), row
    assert "## Security against speed" in text and "| S510 `follow-symlinks` | P110" in text


def test_security_profile_selects_the_new_rules_and_bad_profile_is_one_line():
    assert {rule.code for rule in all_rules() if rule.category == "security"} >= {
        "S507", "S508", "S509", "S510", "S511", "S512"}
    done = subprocess.run([sys.executable, "-m", "advisor", "lint", "--isolated",
                           "--profile", "speed", str(RULES_CORPUS / "S507" / "group_root.conf")],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "--profile" in done.stderr
