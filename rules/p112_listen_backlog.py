"""P112: a short listen queue."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import parse_int

THRESHOLD = 128

DOC = Doc(
    summary="ListenBacklog below 128",
    what="Notes a ListenBacklog below 128 (httpd's default is 511).",
    why=(
        "A short accept queue drops connections during bursts before httpd ever sees them. "
        "The measured effect is small: Arlitt & Williamson (2004, sec. 5.1.7) found changing "
        "ListenBacklog had little impact when the CPU was the bottleneck, and section 5.1.5 "
        "showed listen-queue drops mattering only under overload. Hence info, not warning."
    ),
    evidence=(
        "Arlitt & Williamson (2004, sec. 5.1.7): ListenBacklog had little effect while the "
        "CPU was the bottleneck; queue drops appeared only under overload (sec. 5.1.5)."
    ),
    bad="ListenBacklog 16",
    good="ListenBacklog 511",
    fix="Remove the line (default 511) or raise it; the kernel caps it at net.core.somaxconn.",
    references=(
        "Arlitt & Williamson 2004, sec. 5.1.7 and 5.1.5",
        "https://httpd.apache.org/docs/2.4/mod/mpm_common.html#listenbacklog",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    node = ctx.server_value("ListenBacklog")
    if node is None:
        return
    value = parse_int(node.arg(0))
    if value is not None and value < THRESHOLD:
        report(node, f"ListenBacklog {value} lets bursts overflow the accept queue; the default "
                     "is 511 (measured effect is small while the CPU is the bottleneck).",
               fix="ListenBacklog 511")


RULE = Rule(code="P112", slug="listen-backlog-short", severity="info", category="performance",
            directives=("ListenBacklog",), doc=DOC, check=check)
