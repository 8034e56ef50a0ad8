"""`--format json`: an array of findings, each with exactly seven keys."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Iterable

from advisor.lint.rule import Finding

FINDING_KEYS = ("code", "severity", "message", "file", "line", "evidence", "fix")


def finding_object(finding: Finding) -> dict:
    data = asdict(finding)
    return {key: data[key] for key in FINDING_KEYS}


def render(findings: Iterable[Finding]) -> str:
    return json.dumps([finding_object(f) for f in findings], indent=2, ensure_ascii=False) + "\n"
