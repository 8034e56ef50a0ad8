"""P107: a DNS lookup for every request."""

from __future__ import annotations

from functools import cache

from advisor.lint.context import LintContext
from advisor.lint.edits import set_value
from advisor.lint.rule import Doc, Report, Rule

DOC = Doc(
    summary="HostnameLookups On/Double: a reverse DNS lookup per request",
    what="Flags HostnameLookups On or Double in any context.",
    why=(
        "With lookups on, the worker waits for a reverse DNS answer (Double: a reverse and "
        "a forward lookup) before it can log or serve the request. No seed measured DNS "
        "itself, but they show where it lands: Almeida et al. (sec. 4.2) found a fixed "
        "per-request cost of about 25 ms dominating small-file serving, and Kegel (1997) saw "
        "a small file take over a minute on an overloaded Apache; anything added to every "
        "request, and a remote round trip most of all, multiplies into that fixed cost and "
        "holds a worker meanwhile."
    ),
    evidence=(
        "Almeida et al. (sec. 4.2): per-request fixed costs of about 25 ms already dominate "
        "small files; a DNS round trip per request adds to that cost and holds the worker."
    ),
    bad="HostnameLookups On",
    good="HostnameLookups Off\n# resolve names afterwards: logresolve < access.log > resolved.log",
    fix=(
        "Set HostnameLookups Off (the default) and resolve addresses offline with "
        "logresolve. For access control by host name, `Require host` does its own double "
        "lookup only where it is used."
    ),
    references=(
        "Almeida et al., sec. 4.2 (fixed per-request costs)",
        "https://httpd.apache.org/docs/2.4/mod/core.html#hostnamelookups",
        "https://httpd.apache.org/docs/2.4/programs/logresolve.html",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    # One message per value as written: a large tree repeats the line in every host.
    message_for = cache(_message)
    for node in ctx.directives("HostnameLookups"):
        message = message_for(node.arg(0))
        if message is not None:
            report(node, message, fix="HostnameLookups Off", edit=set_value(ctx, node, "Off"))


def _message(written: str) -> str | None:
    value = written.lower()
    if value not in ("on", "double"):
        return None
    return (f"HostnameLookups {written} makes every request wait for "
            f"{'two DNS lookups' if value == 'double' else 'a reverse DNS lookup'} while it holds a worker.")


RULE = Rule(code="P107", slug="hostname-lookups", severity="warning", category="performance",
            directives=("HostnameLookups",), doc=DOC, check=check, fixable=True)
