"""What a lint rule is: its identity, its documentation and its check.

A rule module in `rules/` defines one `RULE = Rule(...)`. The engine hands
the rule's `check` a `LintContext` (the loaded config, the directive index and
the host facts) and a `report` callable; the rule reports what it finds and
never reads files or prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Protocol, Union

if TYPE_CHECKING:
    from advisor.lint.context import LintContext
    from advisor.lint.edits import Edit
    from advisor.config.model import Node

SEVERITIES = ("info", "warning", "error")
"""Lowest first: `SEVERITY_RANK[s]` compares two severities."""
SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}

CATEGORIES = ("performance", "capacity", "reliability", "correctness", "security")

# A profile is a named selection of categories. Correctness findings mean the
# config will not start or will not do what it says, so every profile keeps
# them.
PROFILES: dict[str, tuple[str, ...]] = {
    "performance": ("performance", "capacity", "reliability", "correctness"),
    "security": ("security", "correctness"),
    "all": CATEGORIES,
}

Location = Union["Node", tuple[str, int]]


class Report(Protocol):
    def __call__(
        self,
        at: Location,
        message: str,
        *,
        fix: str | None = None,
        severity: str | None = None,
        evidence: str | None = None,
        edit: Edit | None = None,
        related: tuple[str, int] | None = None,
    ) -> None: ...


@dataclass(frozen=True)
class Doc:
    """A rule's documentation, kept next to its check.

    `evidence` is the one sentence with the measured figure that every
    finding of the rule carries; `why` is the longer argument behind it.
    """

    summary: str
    """One line: what the rule flags (used in tables and SARIF)."""
    what: str
    why: str
    evidence: str
    bad: str
    good: str
    fix: str
    references: tuple[str, ...]

    def missing_parts(self) -> list[str]:
        """Names of the parts that are empty: complete docs have none."""
        missing = [name for name in ("summary", "what", "why", "evidence", "bad", "good", "fix")
                   if not getattr(self, name).strip()]
        if not self.references or not all(ref.strip() for ref in self.references):
            missing.append("references")
        return missing


CheckFunction = Callable[["LintContext", Report], None]


@dataclass(frozen=True)
class Rule:
    code: str
    slug: str
    severity: str
    category: str
    directives: tuple[str, ...]
    """Directives the rule looks at (documentation and `rules --format json`)."""
    doc: Doc
    check: CheckFunction = field(repr=False, compare=False)
    needs: tuple[str, ...] = ()
    """Host facts the rule cannot work without (`ram`, `worker_memory`,
    `expected_clients`); the engine notes when it had to skip the rule."""
    post: bool = False
    """Runs after the other rules, on what they found (unused suppressions)."""
    fixable: bool = False
    """Its findings carry an `Edit` that `apache-advisor fix` applies."""
    baseline: tuple[str, ...] = ()
    """dev-sec apache-baseline controls the rule covers (`apache-06`): listed by
    `rules --format json` and in the coverage table of docs/rules.md."""
    trade_off: str | None = None
    """The rule that gives the opposite advice for the other goal (security
    against speed); each names the other in its docs and findings, and the
    profiles decide which one speaks."""
    tls_profiles: tuple[tuple[str, str], ...] = ()
    """What the rule expects under each of Mozilla's TLS profiles (name,
    expectation), for a rule that reads `--tls-profile`; `explain` shows them
    beside the profile a run applies."""

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"{self.code}: severity {self.severity!r} not in {SEVERITIES}")
        if self.category not in CATEGORIES:
            raise ValueError(f"{self.code}: category {self.category!r} not in {CATEGORIES}")

    @property
    def title(self) -> str:
        return f"{self.code} {self.slug}"


@dataclass(slots=True)
class Finding:
    """One problem found. These seven fields are the JSON contract."""

    code: str
    severity: str
    message: str
    file: str
    line: int
    evidence: str
    fix: str | None = None
    edit: Edit | None = field(default=None, compare=False)
    """The mechanical edit behind `fix`, when there is one (not part of the
    JSON contract: `apache-advisor fix` and SARIF `fixes` use it)."""
    related: tuple[str, int] | None = field(default=None, compare=False)
    """(file, line) of the line that causes the finding elsewhere (E406: the
    later line that overrides this one). A suppression before that line
    silences the finding too: a drop-in that overrides on purpose says so
    where it overrides, not in the file it overrides."""
    host: str | None = field(default=None, compare=False)
    """The host whose tree this is, for `lint --host` and `--inventory` (None:
    a tree on this machine). Not part of the seven-key contract: JSON adds a
    `host` key only when it is set."""

    def sort_key(self) -> tuple[str, int, str]:
        return (self.file, self.line, self.code)


def max_severity(findings: Iterable[Finding]) -> str | None:
    # The few distinct levels first, ranked once, not once per finding.
    levels = {finding.severity for finding in findings}
    return max(levels, key=SEVERITY_RANK.__getitem__) if levels else None
