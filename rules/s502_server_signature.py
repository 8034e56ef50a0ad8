"""S502: server-generated pages sign themselves."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.edits import set_value
from advisor.lint.rule import Doc, Report, Rule

DOC = Doc(
    summary="ServerSignature On: version footer on error and index pages",
    what="Flags ServerSignature On or EMail in any context.",
    why=(
        "The signature footer repeats the server version (as ServerTokens sets it), host "
        "name and port, and with EMail the admin's address, on every error page and "
        "directory listing. CIS's Apache benchmark recommends turning it off. A hardening "
        "measure with no performance claim."
    ),
    evidence="CIS Apache HTTP Server 2.4 Benchmark: set ServerSignature Off so error pages carry no version footer.",
    bad="ServerSignature On",
    good="ServerSignature Off",
    fix="Set `ServerSignature Off` (httpd's default) and remove other ServerSignature lines.",
    references=(
        "CIS Apache HTTP Server 2.4 Benchmark (information leakage)",
        "https://httpd.apache.org/docs/2.4/mod/core.html#serversignature",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    for node in ctx.directives("ServerSignature"):
        if node.arg(0).lower() in ("on", "email"):
            report(node, f"ServerSignature {node.arg(0)} adds the server version and host to "
                         "every error page and listing.", fix="ServerSignature Off",
                   edit=set_value(ctx, node, "Off"))


RULE = Rule(code="S502", slug="server-signature", severity="warning", category="security",
            directives=("ServerSignature",), doc=DOC, check=check, fixable=True)
