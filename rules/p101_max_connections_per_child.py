"""P101: child processes recycled after a fixed number of connections."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.edits import set_value
from advisor.lint.rule import Doc, Report, Rule

from ._mpm import setting

DOC = Doc(
    summary="MaxConnectionsPerChild (MaxRequestsPerChild) is nonzero: children are recycled",
    what=(
        "Flags a nonzero MaxConnectionsPerChild (or its old name MaxRequestsPerChild) at "
        "server scope. Values at or below 1,000 are errors, values below 10,000 warnings, "
        "larger nonzero values informational."
    ),
    why=(
        "Every recycled child has to be replaced by a freshly forked one, and creating a "
        "process costs far more than serving a small request: with a limit the server "
        "stops being pre-forked and behaves like a forking server. Arlitt & Williamson "
        "(2004, sec. 5.1.3) measured Apache's peak of 5,700 replies/s cut in half or worse "
        "at 1,000 requests per child and reduced by about 15 % at 10,000, the value the "
        "stock configuration suggested; unlimited (0) was best. In httpd 2.4 the limit "
        "counts connections, so with keep-alive each child serves more requests before it "
        "dies, but the cost per recycle is the same."
    ),
    evidence=(
        "Arlitt & Williamson (2004, sec. 5.1.3): 1,000 requests per child cut the 5,700 "
        "replies/s peak in half or worse; 10,000 cost about 15 %; 0 (unlimited) was best."
    ),
    bad="MaxConnectionsPerChild 1000",
    good="MaxConnectionsPerChild 0",
    fix=(
        "Set MaxConnectionsPerChild 0. Keep a limit only to contain a known memory leak in "
        "a module, and then make it as large as the leak allows (tens of thousands or more)."
    ),
    references=(
        "Arlitt & Williamson 2004, 'Understanding Web server configuration issues', sec. 5.1.3",
        "https://httpd.apache.org/docs/2.4/mod/mpm_common.html#maxconnectionsperchild",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    current = setting(ctx, "maxconnectionsperchild", "MaxConnectionsPerChild")
    node = current.node
    if node is None or current.value is None or current.value <= 0:
        return
    value = current.value
    name = node.name
    if value <= 1000:
        severity = "error"
        effect = "Arlitt & Williamson measured the peak cut in half or worse at 1,000"
    elif value < 10000:
        severity = "warning"
        effect = "limits this low cost more than the ~15 % measured at 10,000"
    else:
        severity = "info"
        effect = "10,000 still cost about 15 % of the peak in Arlitt & Williamson's test"
    report(
        node,
        f"{name} {value:,} recycles each child after {value:,} connections; "
        f"{effect}. Use 0 (unlimited) unless a module is known to leak.",
        fix=f"{ctx.spelling('MaxConnectionsPerChild', 'MaxRequestsPerChild')} 0",
        severity=severity,
        edit=set_value(ctx, node, "0"),
    )


RULE = Rule(
    code="P101",
    slug="max-connections-per-child",
    severity="warning",
    category="performance",
    directives=("MaxConnectionsPerChild", "MaxRequestsPerChild"),
    doc=DOC,
    check=check,
    fixable=True,
)
