"""`--format github`: GitHub Actions workflow commands, one per finding.

GitHub shows them as annotations on the pull request's diff.
"""

from __future__ import annotations

from typing import Iterable

from advisor.lint.rule import Finding, Rule

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(findings: Iterable[Finding], rules: dict[str, Rule]) -> str:
    lines = []
    for finding in findings:
        rule = rules.get(finding.code)
        title = f"{finding.code} {rule.slug}" if rule else finding.code
        message = finding.message
        if finding.fix:
            message += f"\nfix: {finding.fix}"
        message += f"\n{finding.evidence}"
        lines.append(
            f"::{_LEVEL[finding.severity]} file={_escape_property(finding.file)},"
            f"line={finding.line},title={_escape_property(title)}::{_escape_data(message)}"
        )
    return "\n".join(lines) + ("\n" if lines else "")
