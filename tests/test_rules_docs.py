"""Rule metadata: complete documentation with evidence, stable codes, and a
docs/rules.md that matches the code."""

from __future__ import annotations

import json
import re

from advisor.lint.docs import rules_document
from advisor.lint.rule import CATEGORIES, SEVERITIES
from advisor.rules import all_rules, find_rule
from lint_helpers import REPO, run_cli

# The measured studies in ../shared/docs/evidence.md.
SEED_AUTHORS = ("Arlitt", "Almeida", "Hu, Nanda", "Kegel", "Andersson")
CODE = re.compile(r"^[APCERS]\d{3}$")
SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def test_codes_and_slugs_are_well_formed_and_unique():
    rules = all_rules()
    assert len(rules) == 72
    assert len({r.code for r in rules}) == len(rules)
    assert len({r.slug for r in rules}) == len(rules)
    for rule in rules:
        assert CODE.match(rule.code), rule.code
        assert SLUG.match(rule.slug), rule.slug
        assert rule.severity in SEVERITIES and rule.category in CATEGORIES
        prefix = {"P": "performance", "C": "capacity", "R": "reliability", "E": "correctness",
                  "S": "security", "A": "correctness"}[rule.code[0]]
        assert rule.category == prefix, rule.code


def test_every_rule_is_fully_documented():
    for rule in all_rules():
        assert rule.doc.missing_parts() == [], f"{rule.code} lacks {rule.doc.missing_parts()}"
        assert len(rule.doc.summary) <= 100, rule.code
        assert rule.check.__module__.startswith("advisor.rules."), rule.code


def test_measured_rules_cite_a_seed_with_a_figure():
    for rule in all_rules():
        if rule.category not in ("performance", "capacity", "reliability"):
            continue
        evidence = rule.doc.evidence
        assert re.search(r"\d", evidence), f"{rule.code}: evidence has no figure: {evidence}"
        assert any(author in evidence for author in SEED_AUTHORS), f"{rule.code}: {evidence}"
        assert any(author in rule.doc.why for author in SEED_AUTHORS), rule.code
        assert any(any(author in ref for author in SEED_AUTHORS) for ref in rule.doc.references), rule.code


def test_security_rules_name_their_standard():
    for rule in all_rules():
        if rule.category == "security":
            assert "CIS" in rule.doc.evidence or "RFC" in rule.doc.evidence, rule.code


def test_docs_rules_md_is_generated_from_the_metadata():
    on_disk = (REPO / "docs" / "rules.md").read_text()
    assert on_disk == rules_document(all_rules()), (
        "docs/rules.md is stale: run `apache-advisor rules --format markdown --output docs/rules.md`")


def test_rules_markdown_command_matches_the_generator():
    result = run_cli("rules", "--format", "markdown")
    assert result.exit_code == 0
    assert result.stdout == rules_document(all_rules())


def test_rules_json_lists_every_rule_with_its_metadata():
    result = run_cli("rules", "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert [item["code"] for item in data] == [r.code for r in all_rules()]
    p101 = next(item for item in data if item["code"] == "P101")
    assert p101["slug"] == "max-connections-per-child"
    assert p101["category"] == "performance"
    assert "MaxConnectionsPerChild" in p101["directives"]
    assert "5,700" in p101["evidence"]
    c201 = next(item for item in data if item["code"] == "C201")
    assert c201["needs"] == ["ram"]


def test_rules_table_lists_codes():
    result = run_cli("rules")
    assert result.exit_code == 0
    for code in ("P101", "C201", "E406", "S506"):
        assert code in result.stdout


def test_explain_prints_the_full_page_by_code_or_slug():
    by_code = run_cli("explain", "p101")
    by_slug = run_cli("explain", "max-connections-per-child")
    assert by_code.exit_code == 0 and by_code.stdout == by_slug.stdout
    for part in ("What it flags:", "Why:", "Evidence:", "Bad:", "Good:", "How to fix:", "References:",
                 "5.1.3", "MaxConnectionsPerChild 0"):
        assert part in by_code.stdout


def test_explain_unknown_code_is_a_usage_error():
    from advisor.errors import UsageError

    try:
        run_cli("explain", "Z999")
    except UsageError as error:
        assert "Z999" in error.render()
    else:  # pragma: no cover - the assertion below reports it
        raise AssertionError("explain Z999 did not fail")


def test_find_rule():
    assert find_rule("E406").slug == "duplicate-directive"
    assert find_rule("nope") is None
