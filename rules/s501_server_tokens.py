"""S501: the Server header tells more than the product name."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.edits import add_directive, set_value
from advisor.lint.rule import Doc, Report, Rule

DOC = Doc(
    summary="ServerTokens other than Prod: version and OS in every response",
    what=(
        "Flags ServerTokens other than Prod (ProductOnly), including the unwritten default "
        "Full, which puts the httpd version, the OS and module versions in every Server "
        "header and error page."
    ),
    why=(
        "Version strings let scanners pick exploits for the exact release without probing. "
        "CIS's Apache HTTP Server benchmark recommends ServerTokens Prod among its "
        "information-leakage controls. This is a hardening measure, not a measured "
        "performance effect: the seeds measured none for it, and the rule makes no "
        "claim beyond disclosure."
    ),
    evidence="CIS Apache HTTP Server 2.4 Benchmark: set ServerTokens Prod to stop version and OS disclosure.",
    bad="ServerTokens OS",
    good="ServerTokens Prod",
    fix="Set `ServerTokens Prod` at server scope.",
    references=(
        "CIS Apache HTTP Server 2.4 Benchmark (information leakage)",
        "dev-sec apache-baseline apache-07 (Set the apache server token)",
        "https://httpd.apache.org/docs/2.4/mod/core.html#servertokens",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    node = ctx.server_value("ServerTokens")
    if node is None:
        if not ctx.complete:
            return
        report(ctx.main_location(),
               "ServerTokens is Full: httpd's default, not written anywhere; every response "
               "names the httpd version, OS and modules.", fix="ServerTokens Prod",
               edit=add_directive(ctx, "ServerTokens Prod"))
        return
    value = node.arg(0).lower()
    if value not in ("prod", "productonly"):
        report(node, f"ServerTokens {node.arg(0)} discloses more than the product name in "
                     "every Server header.", fix="ServerTokens Prod",
               edit=set_value(ctx, node, "Prod"))


RULE = Rule(code="S501", slug="server-tokens", severity="warning", category="security",
            directives=("ServerTokens",), doc=DOC, check=check, baseline=("apache-07",), fixable=True)
