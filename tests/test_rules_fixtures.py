"""Every rule fires on its fixtures at the stated line and stays quiet on its
near misses (`*_fp.conf`); every fixture httpd should accept, it accepts."""

from __future__ import annotations

import os
import subprocess

import pytest

from advisor.rules import all_rules
from lint_helpers import RULES_CORPUS, all_fixtures, invalid_fixtures, lint_json

FIXTURES = all_fixtures()


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.id)
def test_fixture(fixture):
    findings = lint_json(str(fixture.path), *fixture.args)
    mine = [f for f in findings if os.path.abspath(f["file"]) == str(fixture.path)]
    if fixture.near_miss:
        hits = [f for f in findings if f["code"] == fixture.code]
        assert hits == [], f"{fixture.id} must not trigger {fixture.code}: {hits}"
        return
    assert fixture.expects, f"{fixture.id} states no expected finding"
    assert any(code == fixture.code for code, _ in fixture.expects), fixture.id
    for code, line in fixture.expects:
        lines = sorted(f["line"] for f in mine if f["code"] == code)
        assert line in lines, f"{fixture.id}: expected {code} on line {line}, got lines {lines}"
    # Nothing of this rule fires elsewhere in the fixture: the stated lines are all.
    stated = {line for code, line in fixture.expects if code == fixture.code}
    extra = [f for f in mine if f["code"] == fixture.code and f["line"] not in stated]
    assert extra == [], f"{fixture.id}: unexpected {fixture.code} findings {extra}"


def test_every_rule_has_fixtures_both_ways():
    by_code: dict[str, list] = {}
    for fixture in FIXTURES:
        by_code.setdefault(fixture.code, []).append(fixture)
    codes = {rule.code for rule in all_rules()}
    for code in sorted(codes):
        fixtures = by_code.get(code, [])
        assert any(not f.near_miss and f.expects for f in fixtures), f"{code}: no triggering fixture"
        assert any(f.near_miss for f in fixtures), f"{code}: no near-miss (_fp) fixture"
    strays = set(by_code) - codes
    assert not strays, f"fixture directories for unknown rules: {sorted(strays)}"


def test_invalid_list_names_real_fixtures():
    listed = invalid_fixtures()
    assert listed, "INVALID.txt lists nothing"
    for path in listed:
        assert path.is_file(), f"INVALID.txt names a missing fixture: {path}"
        assert not path.stem.endswith("_fp"), "a near miss should be a config httpd accepts"


@pytest.mark.httpd
def test_httpd_accepts_exactly_the_valid_fixtures(httpd):
    invalid = invalid_fixtures()
    wrong = []
    for fixture in FIXTURES:
        completed = subprocess.run([httpd, "-t", "-f", str(fixture.path)], capture_output=True,
                                   text=True, timeout=30, stdin=subprocess.DEVNULL)
        accepted = completed.returncode == 0
        if accepted == (fixture.path in invalid):
            wrong.append(f"{fixture.id}: httpd {'accepted' if accepted else 'rejected'} it: "
                         f"{completed.stderr.strip()[-200:]}")
    assert wrong == [], "\n".join(wrong)


def test_readme_explains_the_layout():
    text = (RULES_CORPUS / "README.md").read_text()
    assert "INVALID.txt" in text and "_fp" in text and "expect:" in text
