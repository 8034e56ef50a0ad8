"""E410 where a fixture cannot show it: which names it may call misspelt (and
which third-party names it must leave alone), a lone site file, and a name
that comes from a variable, whose edit is left to the admin."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.commands.lint import run_lint
from advisor.commands.lint_options import LintOptions
from advisor.rules.e410_ifmodule_unknown_module import misspelt_module
from lint_helpers import lint_json


@pytest.mark.parametrize("name, meant", [
    ("mpm_prefork", "mpm_prefork_module"),  # Debian's older http2.conf
    ("prefork", "prefork.c"),
    ("prefork_module", "mpm_prefork_module"),
    ("mod_mpm_event.c", "event.c"),
    ("ssl", "ssl_module"),
    ("mod_ssl", "mod_ssl.c"),
    ("mod_ssl.so", "ssl_module"),
    ("Mod_SSL.c", "mod_ssl.c"),
    ("mod_ldap.c", "ldap_module"),  # mod_ldap is built from util_ldap.c
    ("mod_proxy_http2", "mod_proxy_http2.c"),
    ("itk.c", "mpm_itk.c"),  # 2.2's name
])
def test_misspellings_of_httpds_own_modules(name, meant):
    assert misspelt_module(name, set()) is not None
    assert misspelt_module(name, set())[0] == meant


@pytest.mark.parametrize("name", [
    "mpm_prefork_module", "prefork.c", "mod_ssl.c", "ssl_module", "util_ldap.c", "mpm_itk.c",
    "mpm_netware.c", "mpm_mpmt_os2_module",
    # third-party and old names no table here can rule out
    "mod_security2.c", "mod_php7.c", "php_module", "mod_wsgi.c", "pagespeed_module", "mod_shib",
    "mod_fcgid.c", "mod_passenger.c", "mpm_peruser_module", "mpmt_pthread.c", "mod_mem_cache.c",
    "mod_authz_default.c",
])
def test_right_and_unprovable_names_are_left_alone(name):
    assert misspelt_module(name, set()) is None


def test_a_name_the_config_loads_is_known_whatever_its_shape():
    assert misspelt_module("mpm_prefork", {"mpm_prefork"}) is None


def test_a_lone_site_file_is_judged(tmp_path: Path):
    site = tmp_path / "blog.conf"
    site.write_text("<VirtualHost *:80>\n    <IfModule mod_rewrite>\n        RewriteEngine On\n"
                    "    </IfModule>\n</VirtualHost>\n")
    found = [f for f in lint_json(str(site)) if f["code"] == "E410"]
    assert [(f["line"], f["fix"]) for f in found] == [(2, "<IfModule mod_rewrite.c>")]


def test_a_name_from_a_variable_is_flagged_but_its_edit_left_to_the_admin(tmp_path: Path):
    conf = tmp_path / "apache2.conf"
    conf.write_text("LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so\n"
                    "ServerName fixture.test\nDefine GUARD mpm_prefork\n"
                    "<IfModule !${GUARD}>\n    KeepAliveTimeout 3\n</IfModule>\n")
    result = run_lint(LintOptions(paths=[str(conf)], isolated=True, live=False, cache=False,
                                  fail_on="never", select=["E410"]))
    [finding] = result.findings
    assert finding.line == 4 and "mpm_prefork_module" in finding.message
    assert finding.edit is not None and not finding.edit.applicable
    assert "by hand" in finding.edit.blocked
