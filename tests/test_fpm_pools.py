"""php-fpm pools read as part of the config (issue 30): the Debian-style
sample tree, php-fpm's INI syntax and defaults, matching handoffs to pools,
the rules on the sample tree, and the bad-input lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import CORPUS, assert_one_line_error

TREE = CORPUS / "fpm" / "debian"
MAIN = str(TREE / "apache2.conf")
FPM_MAIN = str(TREE / "php" / "8.2" / "fpm" / "php-fpm.conf")
WWW = str(TREE / "php" / "8.2" / "fpm" / "pool.d" / "www.conf")
SNIPPET = str(TREE / "conf-enabled" / "php8.2-fpm.conf")
CLI = [sys.executable, "-m", "advisor"]
EVENT_PHP = ("LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so\n"
             "LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so\n"
             "LoadModule proxy_fcgi_module /usr/lib/apache2/modules/mod_proxy_fcgi.so\n"
             "ServerName fpm.test\n")


def load(path: str):
    from advisor.config import LoadOptions, load_config

    return load_config(path, LoadOptions(apache_version="2.4"))


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "APACHE_ADVISOR_NO_CACHE": "1"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, env=env)


def test_the_debian_tree_hands_php_to_the_www_pool_through_the_enabled_snippet():
    from advisor.config.fpm_pools import read_fpm

    setup = read_fpm(load(MAIN), [FPM_MAIN], look_in_defaults=False)
    assert setup.files == [FPM_MAIN, WWW]  # php-fpm.conf, then its include= glob
    [handoff] = setup.handoffs
    assert (handoff.file, handoff.line, handoff.directive) == (SNIPPET, 7, "SetHandler")
    assert handoff.address == ("unix", "/run/php/php8.2-fpm.sock", 0)
    pool = handoff.pool
    assert pool.name == "www" and (pool.file, pool.line) == (WWW, 2)
    summary = pool.summary()
    assert summary["pm.max_children"] == {"value": "40", "where": f"{WWW}:10"}
    assert summary["pm.max_requests"] == {"value": "500", "where": f"{WWW}:14"}
    # Not written: php-fpm's defaults, said to be defaults.
    assert summary["listen.backlog"] == {"value": "511", "where": "php-fpm's default"}
    assert summary["request_terminate_timeout"] == {"value": "0", "where": "php-fpm's default"}


def test_ini_details_defaults_and_addresses(tmp_path):
    from advisor.config.fpm_pools import listen_address, proxy_address, read_pools

    pool_file = tmp_path / "a.conf"
    pool_file.write_text("# hash comments too\n[global]\nlog_level = notice\n\n[shop]\n"
                         'listen = "/run/php/$pool.sock"  ; trailing comment\n'
                         "pm = dynamic\npm.max_children = 12\npm.min_spare_servers = 2\n"
                         "pm.max_spare_servers = 8\nrequest_terminate_timeout = 2m\n")
    [pool], files = read_pools([str(pool_file)])
    assert files == [str(pool_file)]
    assert pool.listen == "/run/php/shop.sock"
    assert pool.number("pm.start_servers") == 5  # min + (max - min) / 2
    assert pool.number("request_terminate_timeout") == 120
    assert pool.listen_backlog == 511
    assert listen_address("9000") == ("tcp", "", 9000)
    assert listen_address("[::1]:9001") == ("tcp", "::1", 9001)
    assert proxy_address("fcgi://127.0.0.1:9000/var/www/$1") == ("tcp", "127.0.0.1", 9000)
    assert proxy_address("fcgi://php") == ("tcp", "php", 8000)
    assert proxy_address("http://127.0.0.1:9000/") is None


def test_rules_on_the_debian_tree(tmp_path):
    """150 event workers (about 730 MiB with the OS) + 40 children x 48 MiB:
    too much for 2 GiB, enough for 4 GiB."""
    args = ["lint", "--isolated", "--fail-on", "never", "--format", "json", "--select", "C205,C206,C207,C208",
            "--fpm-memory", "48M", "--fpm-config", FPM_MAIN, MAIN]
    small = cli(*args, "--ram", "2G")
    assert small.returncode == 0, small.stderr
    [finding] = json.loads(small.stdout)
    assert (finding["code"], os.path.abspath(finding["file"]), finding["line"]) == ("C205", SNIPPET, 7)
    assert f"{WWW}:10" in finding["message"] and finding["fix"] == "pm.max_children = 27"
    large = cli(*args, "--ram", "4G")
    assert large.returncode == 0 and json.loads(large.stdout) == []
    # Without the pool files the rules have nothing to size, and say why.
    unknown = cli("lint", "--isolated", "--fail-on", "never", "--live", "--select", "C205", "--ram", "2G",
                  "--fpm-config", str(tmp_path), MAIN)
    assert unknown.returncode == 0, unknown.stderr
    assert "php-fpm rules skipped" in unknown.stdout and "C205 " not in unknown.stdout.split("note:")[0]
    # A directory is read as pool files: an Apache file there does not parse as one.
    wrong = cli(*args, "--ram", "2G", "--fpm-config", str(TREE / "sites-enabled"))
    assert_one_line_error(wrong, "000-default.conf:1:", "is not 'name = value'")


def test_a_pool_line_that_does_not_parse_is_one_line_at_its_place(tmp_path):
    bad = tmp_path / "www.conf"
    bad.write_text("[www]\nlisten = /run/php/php8.2-fpm.sock\npm = dynamic\npm.max_children 40\n")
    result = cli("lint", "--isolated", "--fpm-config", str(bad), MAIN)
    assert_one_line_error(result, f"{bad}:4:", "is not 'name = value'")


def test_a_number_that_is_not_one_and_a_missing_pm(tmp_path):
    word = tmp_path / "word.conf"
    word.write_text("[www]\nlisten = /run/php/php8.2-fpm.sock\npm = static\npm.max_children = lots\n")
    assert_one_line_error(cli("capacity", MAIN, "--no-measure", "--fpm-config", str(word)),
                          f"{word}:4:", "pm.max_children = 'lots' is not a whole number")
    no_pm = tmp_path / "nopm.conf"
    no_pm.write_text("[www]\nlisten = /run/php/php8.2-fpm.sock\npm.max_children = 4\n")
    assert_one_line_error(cli("lint", "--isolated", "--fpm-config", str(no_pm), MAIN),
                          f"{no_pm}:1:", "sets no pm")


def test_a_socket_no_pool_listens_on_is_one_line_at_the_apache_line(tmp_path):
    conf = tmp_path / "httpd.conf"
    conf.write_text(EVENT_PHP + '<FilesMatch "\\.php$">\n'
                    '    SetHandler "proxy:unix:/run/php/php7.4-fpm.sock|fcgi://localhost"\n</FilesMatch>\n')
    result = cli("lint", "--isolated", "--fpm-config", WWW, str(conf))
    assert_one_line_error(result, f"{conf}:6:", "reaches no php-fpm pool read", "[www] /run/php/php8.2-fpm.sock")
    missing = cli("lint", "--isolated", "--fpm-config", str(tmp_path / "nope.conf"), str(conf))
    assert_one_line_error(missing, "nope.conf", "--fpm-config")


def test_a_php_fpm_on_another_host_is_left_alone(tmp_path):
    from advisor.config.fpm_pools import read_fpm

    conf = tmp_path / "httpd.conf"
    conf.write_text(EVENT_PHP + 'ProxyPassMatch "^/(.*\\.php)$" "fcgi://10.0.0.5:9000/srv/$1" enablereuse=on\n')
    setup = read_fpm(load(str(conf)), [WWW], look_in_defaults=False)
    [handoff] = setup.handoffs
    assert handoff.pool is None and handoff.enablereuse and setup.used_pools() == []


def test_a_tree_without_mod_proxy_fcgi_is_not_walked(tmp_path):
    from advisor.config.fpm_pools import find_handoffs

    conf = tmp_path / "httpd.conf"
    conf.write_text("LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so\n"
                    "ServerName x.test\n")
    assert find_handoffs(load(str(conf))) == []
    assert Path(WWW).is_file()


def test_capacity_holds_back_the_pool_and_says_where_its_figures_come_from():
    base = ["capacity", MAIN, "--no-measure", "--ram", "4G", "--connection-memory", "64K", "--format", "json"]
    alone = json.loads(cli(*base).stdout)
    both = cli(*base, "--fpm-config", FPM_MAIN, "--fpm-memory", "48M")
    assert both.returncode == 0, both.stderr
    report = json.loads(both.stdout)
    [service] = report["memory"]["services"]
    assert service["name"] == "php-fpm pool www" and service["bytes"] == 40 * 48 * 1024 * 1024
    assert f"{WWW}:10" in service["source"]
    [pool] = report["memory"]["fpm_pools"]
    assert pool["settings"]["pm.max_children"]["where"] == f"{WWW}:10"
    assert pool["handoffs"] == [f"{SNIPPET}:7"]
    # 1.875 GiB held back for php-fpm: fewer httpd workers fit in the same RAM.
    fewer = report["recommendations"]["event"]["max_request_workers"]
    assert fewer < alone["recommendations"]["event"]["max_request_workers"]
    assert any("php-fpm pool www: 40 children" in note for note in report["notes"])
    # pm.max_children's own recommendation: what RAM leaves beside httpd's pool as configured.
    assert pool["children_that_fit"] > 40
    small = json.loads(cli(*base, "--ram", "2G", "--fpm-config", FPM_MAIN, "--fpm-memory", "48M").stdout)
    fits = small["memory"]["fpm_pools"][0]["children_that_fit"]
    assert 0 < fits < 40
    assert any(f"pm.max_children 40 ({WWW}:10) does not fit" in note and f"room for {fits} children" in note
               for note in small["notes"])


def test_lint_cache_sees_a_changed_pool_file(tmp_path):
    """Pool files named with --fpm-config are inputs of the cached result:
    after an edit the lint is not served stale from the cache."""
    pool = tmp_path / "www.conf"
    args = [*CLI, "lint", "--isolated", "--fail-on", "never", "--format", "json", "--select", "C205",
            "--cache-dir", str(tmp_path / "cache"), "--ram", "2G", "--fpm-memory", "48M",
            "--fpm-config", str(pool), MAIN]
    env = {name: value for name, value in os.environ.items() if name != "APACHE_ADVISOR_NO_CACHE"}
    codes = []
    for children in (40, 10, 40):
        pool.write_text(Path(WWW).read_text().replace("pm.max_children = 40", f"pm.max_children = {children}"))
        time.sleep(2.2)  # past the cache's racy window (2 s of mtime and ctime): results are saved
        for _ in range(2):  # the second run of each may come from the cache
            done = subprocess.run(args, capture_output=True, text=True, timeout=60, env=env)
            assert done.returncode == 0, done.stderr
            codes.append([f["code"] for f in json.loads(done.stdout)])
    assert codes == [["C205"], ["C205"], [], [], ["C205"], ["C205"]]
    assert list((tmp_path / "cache").glob("lint-*.json"))  # results were saved, and not reused stale


def test_debians_own_php_fpm_files_parse():
    """The files Debian's php-fpm package installs (.ci/install adds it): its
    php-fpm.conf includes pool.d/*.conf, whose www pool is read with its
    lines (about 500 lines of comments around them)."""
    import glob

    from conftest import _missing
    from advisor.config.fpm_pools import pool_files, read_pools

    mains = sorted(glob.glob("/etc/php/*/fpm/php-fpm.conf"))
    if not mains:
        _missing("php-fpm")
    pools, read = read_pools(pool_files([mains[-1]]))
    www = next(pool for pool in pools if pool.name == "www")
    assert www.pm == "dynamic" and www.max_children >= 1 and www.listen.startswith("/run/php/")
    assert www.value("pm.max_children").file in read and www.value("pm.max_children").line > 100
    assert pool_files([]) and all(path.endswith(".conf") for path in pool_files([]))  # the default globs


def test_two_pools_in_series_closed_forms():
    from advisor.capacity.fpm_model import mmck

    # M/M/1/K: P(K) = (1 - rho) rho^K / (1 - rho^(K+1)).
    rho, k = 0.8, 5
    one = mmck(8.0, 0.1, 1, k)
    assert abs(one.blocked_share - (1 - rho) * rho ** k / (1 - rho ** (k + 1))) < 1e-12
    assert abs(one.throughput - 8.0 * (1 - one.blocked_share)) < 1e-12
    # Far past saturation the pool serves children / service time, whatever K.
    assert abs(mmck(600.0, 0.1, 2, 50).throughput - 20.0) < 1e-6
    # Under it nothing waits long and nearly nothing is turned away.
    calm = mmck(5.0, 0.1, 40, 150)
    assert calm.blocked_share < 1e-12 and calm.mean_waiting < 1e-9 and abs(calm.busy_children - 0.5) < 1e-9


def test_capacity_predicts_the_series_from_the_pool_file():
    result = cli("capacity", MAIN, "--no-measure", "--ram", "4G", "--fpm-config", FPM_MAIN, "--fpm-memory", "48M",
                 "--service-time", "0.1", "--rate", "100", "--rate", "600", "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["fpm_predictions"]
    assert [name for name, _ in rows] == ["www", "www"]
    calm, overload = (row for _, row in rows)
    # 40 children of 100 ms: 400/s at most; K is httpd's 150 workers (< 40 + 511).
    assert calm["capacity"] == 150 and abs(calm["throughput"] - 100) < 0.01
    assert abs(overload["throughput"] - 400) < 0.5 and overload["blocked_share"] > 0.3
