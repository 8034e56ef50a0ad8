"""A002: a suppression comment that cannot work."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

DOC = Doc(
    summary="Malformed or misplaced suppression comment, or unknown rule code",
    what=(
        "Reports `# apache-advisor:` comments that do not parse, that name a code no rule "
        "has, or that stand where they apply to nothing (followed by a blank line in the "
        "middle of a file)."
    ),
    why=(
        "A suppression that does not work looks like one that does: the reader believes a "
        "finding was reviewed and silenced while the tool keeps reporting it, or worse, a "
        "typo in the code silences nothing and the comment misleads the next reader."
    ),
    evidence="A misspelt suppression code silences nothing while telling readers the finding was reviewed.",
    bad="# apache-advisor: disable=P1O1 -- letter O instead of zero\nMaxConnectionsPerChild 500",
    good="# apache-advisor: disable=P101 -- mod_foo leaks, see ticket 123\nMaxConnectionsPerChild 50000",
    fix="Use a code from `apache-advisor rules` and put the comment on the line right before the directive.",
    references=(
        "apache-advisor docs/rules.md (suppression syntax)",
        "https://www.shellcheck.net/wiki/Directive",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    state = ctx.suppression_state
    if state is None:
        return
    for problem in state.problems:
        report((problem.file, problem.line), problem.message)


RULE = Rule(code="A002", slug="invalid-suppression", severity="warning", category="correctness",
            directives=(), doc=DOC, check=check, post=True)
