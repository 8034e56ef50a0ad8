"""`--format sarif`: SARIF 2.1.0 for GitHub code scanning and other viewers.

Rule metadata and help go in `tool.driver.rules`; each result points at its
file through `%SRCROOT%` (the directory lint ran in) when the file lies
below it, so code scanning can match it to the repository.
"""

from __future__ import annotations

import os
from functools import lru_cache
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Iterable, Iterator
from urllib.parse import quote

from advisor.lint.docs import rule_markdown, rule_text
from advisor.lint.rule import Finding, Rule
from advisor.output.jsonfmt import dumps_indented, encode_at, joined_in_pieces

if TYPE_CHECKING:
    from advisor.lint.edits import Edit

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
# GitHub ranks security alerts by this number (CVSS-like, 0.0-10.0).
_SECURITY_SEVERITY = {"error": "8.0", "warning": "5.5", "info": "3.0"}


def _pascal(slug: str) -> str:
    return "".join(part.capitalize() for part in slug.split("-"))


def rule_descriptor(rule: Rule) -> dict:
    properties: dict = {"tags": [rule.category, "apache-httpd"], "precision": "high"}
    if rule.category == "security":
        # GitHub shows alerts tagged `security` in its security view.
        properties["security-severity"] = _SECURITY_SEVERITY[rule.severity]
    return {
        "id": rule.code,
        "name": _pascal(rule.slug),
        "shortDescription": {"text": rule.doc.summary},
        "fullDescription": {"text": rule.doc.what},
        "help": {"text": rule_text(rule), "markdown": rule_markdown(rule, heading_level=2)},
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": properties,
    }


def _artifact(file: str) -> dict:
    if file.startswith("ssh://"):
        return {"uri": file}  # a host's file (lint --host): the URI names the host, already quoted
    if os.path.isabs(file):
        return {"uri": "file://" + quote(file)}
    return {"uri": quote(file.replace(os.sep, "/")), "uriBaseId": "%SRCROOT%"}


def _fixes(finding: Finding, artifacts: dict[str, dict]) -> list[dict]:
    """The finding's edit as a SARIF fix: one replacement on one line
    (columns are 1-based; an insertion deletes an empty region)."""
    edit = finding.edit
    if edit is None or not edit.applicable:
        return []
    artifact = artifacts.get(edit.file)
    if artifact is None:
        artifact = artifacts[edit.file] = _artifact(edit.file)
    return [{
        "description": {"text": edit.summary},
        "artifactChanges": [{
            "artifactLocation": dict(artifact),
            "replacements": [{
                "deletedRegion": {"startLine": edit.line, "startColumn": edit.start + 1,
                                  "endLine": edit.line, "endColumn": edit.end + 1},
                "insertedContent": {"text": edit.text},
            }],
        }],
    }]


def _result(finding: Finding, index: dict[str, int], artifacts: dict[str, dict]) -> dict:
    """One finding as a SARIF result; `artifacts` keeps each file's location."""
    artifact = artifacts.get(finding.file)
    if artifact is None:
        artifact = artifacts[finding.file] = _artifact(finding.file)
    text = finding.message
    if finding.fix:
        text += f" Fix: {finding.fix}"
    result = {
        "ruleId": finding.code,
        "level": _LEVEL[finding.severity],
        "message": {"text": text},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": dict(artifact),
                "region": {"startLine": max(1, finding.line)},
            }
        }],
        "properties": {"evidence": finding.evidence, "fix": finding.fix},
    }
    if finding.code in index:
        result["ruleIndex"] = index[finding.code]
    fixes = _fixes(finding, artifacts)
    if fixes:
        result["fixes"] = fixes
    return result


@lru_cache(maxsize=1)
def _version() -> str:
    try:
        from importlib.metadata import version

        return version("apache-advisor")
    except Exception:  # metadata missing in a bare checkout
        return "0.0.0"


def build(findings: Iterable[Finding], rules: list[Rule], notes: Iterable[str] = (),
          root: str | None = None) -> dict:
    rules = list(rules)
    index = {rule.code: position for position, rule in enumerate(rules)}
    artifacts: dict[str, dict] = {}  # quote() once per file, not per finding
    results = [_result(finding, index, artifacts) for finding in findings]
    root_uri = "file://" + quote(os.path.abspath(root or os.getcwd()).rstrip("/") + "/")
    version = _version()
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "apache-advisor",
                "version": version,
                "semanticVersion": version,
                "informationUri": "https://httpd.apache.org/docs/2.4/",
                "rules": [rule_descriptor(rule) for rule in rules],
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root_uri}},
            "invocations": [{
                "executionSuccessful": True,
                "toolExecutionNotifications": [
                    {"level": "note", "message": {"text": note}} for note in notes
                ],
            }],
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


def _plain_edit(edit: Edit) -> bool:
    """An edit whose fields the fix template writes as json.dumps would."""
    return (type(edit.line) is int and type(edit.start) is int and type(edit.end) is int
            and type(edit.text) is str and type(edit.summary) is str and type(edit.file) is str)


# A result's "fixes" (what _fixes builds), as dumps_indented writes it at a
# result's depth: one template, where the general writer walked 20 keys a
# finding (SARIF of 2,000 hosts with two fixes each: 347 -> 203 ms).
_FIXES = (',\n          "fixes": [\n            {{\n              "description": {{\n'
          '                "text": {summary}\n              }},\n              "artifactChanges": [\n'
          '                {{\n                  "artifactLocation": {location},\n'
          '                  "replacements": [\n                    {{\n'
          '                      "deletedRegion": {{\n                        "startLine": {line},\n'
          '                        "startColumn": {start},\n                        "endLine": {line},\n'
          '                        "endColumn": {end}\n                      }},\n'
          '                      "insertedContent": {{\n                        "text": {text}\n'
          '                      }}\n                    }}\n                  ]\n                }}\n'
          '              ]\n            }}\n          ]')


# Results joined into one piece of the log at a time: SARIF of 20,000 hosts
# with two fixes each is 150 MB, and the log held whole (results, joined,
# concatenated, encoded) peaked at 690 MB.
PIECE = 512


def render(findings: Iterable[Finding], rules: list[Rule], notes: Iterable[str] = (),
           root: str | None = None) -> str:
    """The whole log as one string (see `render_pieces`)."""
    return "".join(render_pieces(findings, rules, notes, root))


def render_pieces(findings: Iterable[Finding], rules: list[Rule], notes: Iterable[str] = (),
                  root: str | None = None) -> Iterator[str]:
    """What `dumps_indented(build(...))` writes, in pieces, with each result
    written from one template (the rest of the log goes through the general
    writer): tens of thousands of results would otherwise each be walked
    key by key."""
    rules = list(rules)
    notes = list(notes)
    head = dumps_indented(build([], rules, notes, root))
    # "results" is the run's last key; its bare quotes cannot occur inside
    # an encoded string, so the last match is the key itself.
    empty = '"results": []'
    cut = head.rfind(empty)
    if cut < 0:  # not a layout this writer knows: the general writer, whole
        yield dumps_indented(build(findings, rules, notes, root)) + "\n"
        return
    yield from joined_in_pieces(_result_texts(findings, rules), head[:cut] + '"results": [\n        ',
                                ",\n        ", "\n      ]" + head[cut + len(empty):] + "\n", head + "\n", PIECE)


def _result_texts(findings: Iterable[Finding], rules: list[Rule]) -> Iterator[str]:
    """Each finding as `dumps_indented(build(...))` writes its result in the
    run's list, from one template (what repeats, once)."""
    index = {rule.code: position for position, rule in enumerate(rules)}
    artifacts: dict[str, dict] = {}
    located: dict[str, str] = {}  # the artifactLocation, encoded once per file
    located_in_fix: dict[str, str] = {}  # the same, at a fix's depth
    pieces: dict[tuple, tuple[str, str, str, str]] = {}
    for finding in findings:
        edit = finding.edit if finding.edit is not None and finding.edit.applicable else None
        if type(finding.line) is not int or type(finding.message) is not str \
                or type(finding.evidence) is not str or (finding.fix is not None and type(finding.fix) is not str) \
                or (edit is not None and not _plain_edit(edit)):
            # The result alone: building the whole log for it wraps every
            # rule's help text again (70 ms a finding).
            yield encode_at(_result(finding, index, artifacts), 4)
            continue
        location = located.get(finding.file)
        if location is None:
            artifact = artifacts[finding.file] = _artifact(finding.file)
            location = located[finding.file] = encode_at(artifact, 8)
        message = finding.message + (f" Fix: {finding.fix}" if finding.fix else "")
        # What repeats over thousands of results (rule, level, evidence, fix)
        # is encoded once.
        shared = (finding.code, finding.severity, finding.evidence, finding.fix)
        parts = pieces.get(shared)
        if parts is None:
            rule_index = index.get(finding.code)
            fix = "null" if finding.fix is None else encode_basestring(finding.fix)
            parts = pieces[shared] = (
                f'{{\n          "ruleId": {encode_basestring(finding.code)},\n'
                f'          "level": {encode_basestring(_LEVEL[finding.severity])},\n'
                f'          "message": {{\n            "text": ',
                f'\n          }},\n          "locations": [\n            {{\n'
                f'              "physicalLocation": {{\n                "artifactLocation": ',
                f',\n                "region": {{\n                  "startLine": ',
                f'\n                }}\n              }}\n            }}\n          ],\n'
                f'          "properties": {{\n            "evidence": {encode_basestring(finding.evidence)},\n'
                f'            "fix": {fix}\n          }}'
                + (f',\n          "ruleIndex": {rule_index}' if rule_index is not None else ""))
        fixes = ""
        if edit is not None:
            fix_location = located_in_fix.get(edit.file)
            if fix_location is None:
                artifact = artifacts.get(edit.file) or _artifact(edit.file)
                fix_location = located_in_fix[edit.file] = encode_at(artifact, 9)
            fixes = _FIXES.format(summary=encode_basestring(edit.summary), location=fix_location,
                                  line=edit.line, start=edit.start + 1, end=edit.end + 1,
                                  text=encode_basestring(edit.text))
        yield (parts[0] + encode_basestring(message) + parts[1] + location + parts[2]
               + str(max(1, finding.line)) + parts[3] + fixes + "\n        }")
