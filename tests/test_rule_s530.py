"""S530 at the edges of CVE-2023-25690's range, its note when the patch level
is unknown, and its reading of capture groups: what one fixture per version
cannot say."""

from __future__ import annotations

import pytest

from advisor.rules.s530_proxy_request_splitting import capture_groups, copied_text
from advisor.rules.e415_proxy_without_reverse import ProxyRoute
from advisor.config.model import Directive, Section
from lint_helpers import RULES_CORPUS, lint_json, run_cli

ADVISORY = str(RULES_CORPUS / "S530" / "advisory_example_2455.conf")


@pytest.mark.parametrize("version,reported", [
    ("2.2.34", False),  # not a 2.4 release: the advisory names 2.4 only
    ("2.4.0", True), ("2.4.41", True), ("2.4.55", True),
    ("2.4.56", False), ("2.4.71", False),
])
def test_the_advisory_s_range_is_2_4_0_to_2_4_55(version, reported):
    found = [f for f in lint_json(ADVISORY, "--apache-version", version, "--select", "S530")
             if f["code"] == "S530"]
    assert [f["line"] for f in found] == ([17] if reported else [])
    if reported:
        assert f"httpd {version} is open to CVE-2023-25690" in found[0]["message"]
        assert "($1)" in found[0]["message"]


def test_an_unknown_patch_level_is_silent_with_a_note():
    result = run_cli("lint", "--isolated", "--no-live", "--fail-on", "never", "--select", "S530", ADVISORY)
    assert result.exit_code == 0, result.output
    assert "S530 skipped: a RewriteRule [P] or ProxyPassMatch copies request text" in result.stdout
    assert "warning S530" not in result.stdout
    narrow = str(RULES_CORPUS / "S530" / "narrow_fp.conf")
    quiet = run_cli("lint", "--isolated", "--no-live", "--fail-on", "never", "--select", "S530",
                    "--apache-version", "2.4", narrow)
    assert "S530" not in quiet.stdout  # nothing copied: no note either


@pytest.mark.parametrize("pattern,groups", [
    (r"^/here/(.*)", [".*"]),
    (r"^/(?<user>[a-z]+)/(?:x|y)/(\d+)$", ["[a-z]+", r"\d+"]),
    (r"^/a/([](]+)/(b)", ["[](]+", "b"]),
    (r"^/c/\((.+)\)$", [".+"]),
    (r"^/d/((a)(b))", ["(a)(b)", "a", "b"]),
])
def test_capture_groups_are_read_in_number_order(pattern, groups):
    assert capture_groups(pattern) == groups


def _route(name: str, args: list[str], url: str, conditions: list[list[str]] = ()) -> ProxyRoute:
    vhost = Section(name="VirtualHost", args=["*:80"], raw_args="*:80", file="t.conf", line=1, end_line=9)
    for position, cond in enumerate(conditions):
        vhost.children.append(Directive("RewriteCond", cond, " ".join(cond), "t.conf", 2 + position, 2 + position))
    node = Directive(name, args, " ".join(args), "t.conf", 8, 8)
    vhost.children.append(node)
    for child in vhost.children:
        child.parent = vhost
    return ProxyRoute(node, url, vhost)


@pytest.mark.parametrize("args,copied", [
    (["^/a/(.*)$", "http://b/$1", "[P]"], ["$1"]),
    (["^/a/([^/]+)/(\\w+)$", "http://b/$1/$2", "[P]"], ["$1"]),  # [^/] admits CR LF, \w does not
    (["^/a/([0-9]+)$", "http://b/$1", "[P]"], []),
    (["^/a/(.*)$", "http://b/$1", "[P,B]"], []),  # B re-escapes backreferences
    (["^/a/(.*)$", "http://b/$1", "[P,BCTLS]"], []),
    (["^/a", "http://b%{REQUEST_URI}", "[P,B]"], ["%{REQUEST_URI}"]),  # B leaves variables alone
    (["^/a/(.*)$", "http://b/x?$0", "[P]"], ["$0"]),
])
def test_what_request_text_a_rewrite_copies(args, copied):
    assert copied_text(_route("RewriteRule", args, args[1])) == copied


def test_a_condition_s_capture_counts_only_when_it_reads_the_decoded_path():
    on_path = _route("RewriteRule", ["^", "http://b/%1", "[P]"], "http://b/%1",
                     [["%{REQUEST_URI}", "^/v1/(.+)$"]])
    on_host = _route("RewriteRule", ["^", "http://b/%1", "[P]"], "http://b/%1",
                     [["%{HTTP_HOST}", "^(.+)$"]])
    assert copied_text(on_path) == ["%1"]
    assert copied_text(on_host) == []


def test_proxypassmatch_copies_its_groups_and_has_no_b_flag():
    route = _route("ProxyPassMatch", ["^/api/(.*)$", "http://b/$1"], "http://b/$1")
    assert copied_text(route) == ["$1"]
