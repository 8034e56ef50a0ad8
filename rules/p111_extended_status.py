"""P111: per-request status bookkeeping left on."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.edits import add_directive, set_value
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import parse_flag

DOC = Doc(
    summary="ExtendedStatus On outside a measurement setup",
    what=(
        "Notes ExtendedStatus On at server scope, and the same state when mod_status is "
        "loaded without ExtendedStatus written (since httpd 2.3.6, loading mod_status turns "
        "it on by default)."
    ),
    why=(
        "With extended status every request takes extra time stamps and updates its "
        "scoreboard slot with the client, virtual host and request line: system calls and "
        "shared-memory writes on the fixed per-request path. Hu, Nanda & Yang (1999) "
        "measured 35-50 % of Apache's CPU in system calls and Almeida et al. (sec. 4.2) "
        "showed fixed per-request costs dominating small files. Worth paying while you "
        "measure (the tuner reads it); otherwise turn it off."
    ),
    evidence=(
        "Hu, Nanda & Yang (1999): system calls took 35-50 % of Apache's CPU; ExtendedStatus "
        "adds time calls and scoreboard writes to every request."
    ),
    bad="LoadModule status_module modules/mod_status.so\nExtendedStatus On",
    good="LoadModule status_module modules/mod_status.so\nExtendedStatus Off",
    fix="Set ExtendedStatus Off except while you are measuring the server.",
    references=(
        "Hu, Nanda & Yang 1999, IPCCC'99",
        "Almeida et al., sec. 4.2",
        "https://httpd.apache.org/docs/2.4/mod/core.html#extendedstatus",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    node = ctx.server_value("ExtendedStatus")
    if node is not None:
        if parse_flag(node.arg(0)) is True:
            report(node, "ExtendedStatus On adds time stamps and scoreboard updates to every "
                         "request; keep it for measurement sessions only.",
                   fix="ExtendedStatus Off", edit=set_value(ctx, node, "Off"))
        return
    if ctx.at_least(2, 3, 6) and ctx.has_module("status_module", "mod_status.c"):
        loaded = ctx.load_module_line("status_module")
        report(loaded or ctx.main_location(),
               "ExtendedStatus is On: httpd's default whenever mod_status is loaded (since "
               "2.3.6), not written anywhere; write ExtendedStatus Off unless you are measuring.",
               fix="ExtendedStatus Off", edit=add_directive(ctx, "ExtendedStatus Off"))


RULE = Rule(code="P111", slug="extended-status", severity="info", category="performance",
            directives=("ExtendedStatus",), doc=DOC, check=check, fixable=True)
