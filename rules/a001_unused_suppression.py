"""A001: a suppression comment that silenced nothing."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

DOC = Doc(
    summary="Unused suppression comment",
    what=(
        "Reports a `# apache-advisor: disable=CODE` comment whose code was checked in this "
        "run but produced no finding where the comment applies. Codes not selected in this "
        "run are not reported."
    ),
    why=(
        "A stale suppression hides the next real finding at that place: after the config "
        "changes, the comment silences a problem nobody looked at. Linters that support "
        "suppressions (ruff's RUF100, ESLint's --report-unused-disable-directives) report "
        "unused ones for the same reason."
    ),
    evidence="A suppression that matches nothing today will silently hide a new finding at the same place tomorrow.",
    bad="# apache-advisor: disable=P102 -- keep-alive off for the load balancer\nKeepAlive On",
    good="KeepAlive On",
    fix="Delete the comment, or the codes in it that no longer apply.",
    references=(
        "https://docs.astral.sh/ruff/rules/unused-noqa/",
        "https://eslint.org/docs/latest/use/command-line-interface#--report-unused-disable-directives",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    state = ctx.suppression_state
    if state is None:
        return
    for entry in state.suppressions:
        if "ALL" in entry.codes:
            if not entry.used:
                report((entry.file, entry.line), "suppression `disable=all` silenced nothing.", fix="")
            continue
        unused = [code for code in entry.codes
                  if code in state.enabled_codes and code not in entry.used]
        if not unused:
            continue
        scope = "this file" if entry.whole_file else f"line {entry.start}"
        remaining = [code for code in entry.codes if code not in unused]
        fix = "" if not remaining else None
        report((entry.file, entry.line),
               f"suppression of {', '.join(unused)} is unused: no such finding on {scope}.",
               fix=fix)


RULE = Rule(code="A001", slug="unused-suppression", severity="warning", category="correctness",
            directives=(), doc=DOC, check=check, post=True)
