"""Output formats: the JSON contract, SARIF 2.1.0 valid against the schema and
fit for GitHub code scanning, GitHub annotations, colour rules for text."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.lint.rule import Finding
from advisor.output import github, sarif, text
from advisor.rules import all_rules, rule_by_code
from conftest import SARIF_SCHEMA
from lint_helpers import REPO, run_cli

SCHEMA = json.loads(SARIF_SCHEMA.read_text())
DEBIAN = REPO / "corpus" / "samples" / "debian" / "apache2.conf"
LEGACY = REPO / "corpus" / "samples" / "legacy-1.3" / "httpd.conf"


def lint_output(fmt: str, *paths: Path) -> str:
    result = run_cli("lint", "--isolated", "--no-live", "--fail-on", "never", "-f", fmt,
                     *(str(p) for p in paths))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_json_findings_have_exactly_the_contract_keys():
    data = json.loads(lint_output("json", DEBIAN, LEGACY))
    assert len(data) > 10
    for item in data:
        assert list(item) == ["code", "severity", "message", "file", "line", "evidence", "fix"]
        assert item["severity"] in ("error", "warning", "info")
        assert isinstance(item["line"], int) and item["line"] >= 1
        assert item["fix"] is None or isinstance(item["fix"], str)
        assert item["evidence"] and item["message"]
    assert any(item["fix"] is None for item in data) and any(item["fix"] for item in data)


def test_sarif_is_valid_and_carries_rule_metadata():
    log = json.loads(lint_output("sarif", DEBIAN, LEGACY))
    jsonschema.validate(log, SCHEMA)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "apache-advisor"
    ids = [rule["id"] for rule in driver["rules"]]
    assert ids == [rule.code for rule in all_rules()]
    p101 = driver["rules"][ids.index("P101")]
    assert p101["name"] == "MaxConnectionsPerChild"
    assert "5.1.3" in p101["help"]["markdown"] and "5.1.3" in p101["help"]["text"]
    assert p101["defaultConfiguration"]["level"] == "warning"
    s501 = driver["rules"][ids.index("S501")]
    assert "security" in s501["properties"]["tags"]
    assert float(s501["properties"]["security-severity"]) > 0
    results = run["results"]
    assert results
    levels = {r["level"] for r in results}
    assert levels <= {"error", "warning", "note"} and "error" in levels
    for result in results:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert not location["artifactLocation"]["uri"].startswith("/")
        assert location["region"]["startLine"] >= 1
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/")


def test_sarif_without_findings_is_valid_too():
    log = sarif.build([], list(all_rules()), ["a note"])
    jsonschema.validate(log, SCHEMA)
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"] == "a note"


def test_sarif_rule_names_are_identifiers():
    for descriptor in sarif.build([], list(all_rules()))["runs"][0]["tool"]["driver"]["rules"]:
        assert descriptor["name"].isidentifier(), descriptor["name"]


def test_sarif_absolute_paths_become_file_uris():
    finding = Finding("P102", "warning", "m", "/etc/apache2/apache 2.conf", 3, "e", None)
    result = sarif.build([finding], list(all_rules()))["runs"][0]["results"][0]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "file:///etc/apache2/apache%202.conf"}


def test_github_annotations():
    lines = lint_output("github", DEBIAN).splitlines()
    assert lines
    for line in lines:
        assert line.startswith(("::error file=", "::warning file=", "::notice file="))
        assert ",line=" in line and ",title=" in line and "::" in line[2:]
    r301 = next(line for line in lines if "R301" in line)
    assert r301.startswith("::warning file=corpus/samples/debian/apache2.conf,line=11,title=R301 timeout-long::")


def test_github_escapes_what_would_break_a_command():
    finding = Finding("P106", "info", "50% of\nrequests", "a,b:c.conf", 1, "e", "x")
    line = github.render([finding], rule_by_code())
    assert line.count("\n") == 1
    assert "file=a%2Cb%3Ac.conf" in line and "50%25 of%0Arequests" in line
    assert line.startswith("::notice ")


def _render(colour, env, monkeypatch) -> str:
    for key in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    stream = io.StringIO()
    finding = Finding("P102", "warning", "KeepAlive Off [sic]", "a.conf", 2, "evidence", "KeepAlive On")
    text.render([finding], stream, colour=colour)
    return stream.getvalue()


def test_text_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    plain = _render(None, {}, monkeypatch)  # StringIO is not a terminal
    assert "\x1b[" not in plain and "KeepAlive Off [sic]" in plain
    coloured = _render(True, {"TERM": "xterm-256color"}, monkeypatch)
    assert "\x1b[33m" in coloured  # warning in yellow
    no_color = _render(True, {"TERM": "xterm-256color", "NO_COLOR": "1"}, monkeypatch)
    assert "\x1b[33m" not in no_color and "\x1b[3" not in no_color.replace("\x1b[3m", "")


def test_text_marks_deletions_and_counts(monkeypatch):
    stream = io.StringIO()
    findings = [Finding("E406", "warning", "dead", "a.conf", 1, "e", ""),
                Finding("P112", "info", "short", "a.conf", 3, "e", None),
                Finding("E401", "error", "typo", "b.conf", 9, "e", None)]
    text.render(findings, stream, files_checked=2)
    out = stream.getvalue()
    assert "fix: (delete this line)" in out
    assert "Found 3 problems (1 error, 1 warning, 1 info) in 2 files" in out


_ANY_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40) | st.text(
    st.sampled_from("ab \t\n\r\x07\x08\x0b\x0c\x1b é漢😀\u200b"), max_size=30)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(st.tuples(st.sampled_from(["P101", "E401", "S504"]),
                                st.sampled_from(["error", "warning", "info"]),
                                _ANY_TEXT, _ANY_TEXT, st.integers(1, 10**6), _ANY_TEXT,
                                st.none() | _ANY_TEXT), max_size=4),
       notes=st.lists(_ANY_TEXT, max_size=2), evidence=st.booleans())
def test_plain_text_is_what_rich_prints_without_a_terminal(monkeypatch, items, notes, evidence):
    """Off a terminal the report is written without rich; byte for byte what
    rich would have printed there, whatever the messages hold."""
    findings = [Finding(*item) for item in items]
    plain = io.StringIO()
    text.render(findings, plain, notes=notes, files_checked=3, show_evidence=evidence, colour=False)
    monkeypatch.setenv("FORCE_COLOR", "")  # rich decides: not a terminal
    through_rich = io.StringIO()
    text.render(findings, through_rich, notes=notes, files_checked=3, show_evidence=evidence, colour=None)
    assert plain.getvalue() == through_rich.getvalue()
