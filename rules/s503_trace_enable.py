"""S503: TRACE answered."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.edits import add_directive, set_value
from advisor.lint.rule import Doc, Report, Rule

DOC = Doc(
    summary="TraceEnable not Off: TRACE requests are echoed",
    what=(
        "Flags TraceEnable On or Extended at server scope or in a virtual host, and the "
        "unwritten default (On) at server scope."
    ),
    why=(
        "TRACE echoes the request back, headers included; combined with a script injection "
        "it was used to read cookies marked HttpOnly (cross-site tracing), and it tells a "
        "scanner what proxies add. No application needs it. CIS's Apache benchmark "
        "recommends TraceEnable Off. A hardening measure with no performance claim."
    ),
    evidence="CIS Apache HTTP Server 2.4 Benchmark: disable the TRACE method with TraceEnable Off.",
    bad="TraceEnable On",
    good="TraceEnable Off",
    fix="Set `TraceEnable Off` at server scope (and remove On from virtual hosts).",
    references=(
        "CIS Apache HTTP Server 2.4 Benchmark (TRACE method)",
        "dev-sec apache-baseline apache-09 (Disable TRACE-methods)",
        "https://httpd.apache.org/docs/2.4/mod/core.html#traceenable",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    server = ctx.server_value("TraceEnable")
    if server is None and ctx.complete:
        report(ctx.main_location(), "TraceEnable is On: httpd's default, not written anywhere; "
                                    "TRACE requests are echoed back.", fix="TraceEnable Off",
               edit=add_directive(ctx, "TraceEnable Off"))
    for node in ctx.directives("TraceEnable"):
        parent = node.parent
        if parent is None or not (parent.is_root or parent.lname == "virtualhost"):
            continue
        if parent.is_root and node is not server:
            continue  # an earlier server-scope line that a later one overrides
        if node.arg(0).lower() != "off":
            report(node, f"TraceEnable {node.arg(0)} answers TRACE requests by echoing them.",
                   fix="TraceEnable Off", edit=set_value(ctx, node, "Off"))


RULE = Rule(code="S503", slug="trace-enabled", severity="warning", category="security",
            directives=("TraceEnable",), doc=DOC, check=check, fixable=True,
            baseline=("apache-09",))
