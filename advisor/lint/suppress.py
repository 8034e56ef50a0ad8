"""Suppression comments: `# apache-advisor: disable=P101,P106 -- reason`.

Placement decides the scope, as in ShellCheck:

* on the line (or stack of comment lines) right before a directive: that
  directive; before a section's opening tag: the whole section;
* in the comment block at the top of a file, separated from the first
  directive by a blank line: the whole file;
* `disable-file=` anywhere: the whole file.

A comment that names an unknown code, or that stands before nothing it could
apply to, is itself reported (A002); one that suppressed nothing is reported
as unused (A001).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from advisor.lint import MARKER

_COMMENT = re.compile(
    r"^\s*#\s*apache-advisor\s*:\s*(?P<kind>[A-Za-z-]+)\s*=\s*(?P<codes>.*?)\s*(?:--\s*(?P<reason>.*?))?\s*$"
)
# Only a comment that starts like a suppression is one; prose that merely
# mentions apache-advisor is left alone.
_ATTEMPT = re.compile(r"^#\s*apache-advisor\s*:", re.IGNORECASE)
_CODE = re.compile(r"^[A-Za-z]\d{3}$")
KINDS = ("disable", "disable-file")


@dataclass
class Suppression:
    file: str
    line: int
    """Line of the comment itself."""
    codes: tuple[str, ...]
    reason: str | None
    whole_file: bool
    start: int = 0
    end: int = 0
    used: set[str] = field(default_factory=set)

    def covers(self, code: str, line: int) -> bool:
        if code not in self.codes and "ALL" not in self.codes:
            return False
        return self.whole_file or self.start <= line <= self.end


@dataclass
class SuppressionProblem:
    file: str
    line: int
    message: str


@dataclass
class FileSuppressions:
    suppressions: list[Suppression] = field(default_factory=list)
    problems: list[SuppressionProblem] = field(default_factory=list)


def parse_file(path: str, text: str, known_codes: set[str],
               node_end: dict[int, int]) -> FileSuppressions:
    """Find the suppression comments of one file.

    `node_end` maps the first line of each node in the file to its last line
    (a section's closing tag), so a comment before a section covers it whole.
    """
    result = FileSuppressions()
    if MARKER not in text:
        return result
    lines = text.split("\n")
    seen_directive = False
    pending: list[Suppression] = []  # comments waiting for the line they apply to
    blank_since_pending = False
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            if pending:
                blank_since_pending = True
            continue
        if stripped.startswith("#"):
            if MARKER not in stripped or not _ATTEMPT.match(stripped):
                continue
            match = _COMMENT.match(stripped)
            if not match or match.group("kind").lower() not in KINDS:
                result.problems.append(SuppressionProblem(
                    path, number,
                    "malformed suppression comment (write `# apache-advisor: disable=CODE[,CODE] -- reason`)"))
                continue
            codes, bad = _codes(match.group("codes"), known_codes)
            for code in bad:
                result.problems.append(SuppressionProblem(
                    path, number, f"suppression names unknown rule code {code!r}"))
            if not codes:
                if not bad:
                    result.problems.append(SuppressionProblem(
                        path, number, "suppression names no rule code"))
                continue
            entry = Suppression(path, number, codes, match.group("reason") or None, whole_file=False)
            if match.group("kind").lower() == "disable-file":
                entry.whole_file = True
                result.suppressions.append(entry)
                continue
            if pending and blank_since_pending:
                _settle_detached(pending, seen_directive, result)
                pending = []
            pending.append(entry)
            blank_since_pending = False
            continue
        # A directive (or a section tag) line.
        if pending:
            if blank_since_pending:
                _settle_detached(pending, seen_directive, result)
            else:
                end = node_end.get(number, number)
                for entry in pending:
                    entry.start, entry.end = number, max(end, number)
                    result.suppressions.append(entry)
            pending = []
            blank_since_pending = False
        seen_directive = True
    if pending:
        _settle_detached(pending, seen_directive, result)
    return result


def _settle_detached(pending: list[Suppression], seen_directive: bool,
                     result: FileSuppressions) -> None:
    """Comments followed by a blank line: file-wide at the top of a file,
    misplaced anywhere else."""
    for entry in pending:
        if not seen_directive:
            entry.whole_file = True
            result.suppressions.append(entry)
        else:
            result.problems.append(SuppressionProblem(
                entry.file, entry.line,
                "suppression comment applies to nothing: put it on the line right before "
                "the directive, or at the top of the file (or use disable-file=)"))


def _codes(text: str, known: set[str]) -> tuple[tuple[str, ...], list[str]]:
    good: list[str] = []
    bad: list[str] = []
    for token in re.split(r"[\s,]+", text.strip()):
        if not token:
            continue
        code = token.upper()
        if code == "ALL" or (_CODE.match(code) and code in known):
            good.append(code)
        else:
            bad.append(token)
    return tuple(good), bad
