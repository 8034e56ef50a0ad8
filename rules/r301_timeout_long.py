"""R301: workers held by slow or stalled clients."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import parse_seconds

LIMIT = 60.0

DOC = Doc(
    summary="Timeout above 60 s: stalled clients hold workers",
    what="Flags Timeout above 60 seconds at server scope or in a virtual host.",
    why=(
        "Timeout bounds how long httpd waits on a client (or a backend) that has stopped "
        "sending or receiving. Each stalled connection keeps a worker for that long, so a "
        "handful of slow or hostile clients can fill the pool. Kegel (1997) found the "
        "event-driven thttpd timing out an idle header read after 5 seconds, and an "
        "overloaded Apache taking over a minute to serve a small file; Andersson et al. "
        "(2003) show that a server holding at most K jobs blocks every request beyond K, "
        "so every slot a stalled client keeps is a slot a live request cannot get."
    ),
    evidence=(
        "Kegel (1997): thttpd dropped stalled header reads after 5 s while an overloaded "
        "Apache took over a minute per small file; Andersson et al. (2003): requests beyond "
        "the K jobs held are blocked."
    ),
    bad="Timeout 300",
    good="Timeout 60\nRequestReadTimeout header=20-40,MinRate=500 body=20,MinRate=500",
    fix=(
        "Use Timeout 60 (httpd's default) or less, with mod_reqtimeout limiting the time to "
        "receive headers and body. Give long-running backends their own ProxyTimeout "
        "instead of raising Timeout for everyone."
    ),
    references=(
        "Kegel 1997, 'Fixing an overloaded web server'",
        "Andersson, Cao, Kihl & Nyberg 2003, sec. II (blocking at K jobs)",
        "https://httpd.apache.org/docs/2.4/mod/core.html#timeout",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    for node in ctx.directives("Timeout"):
        seconds = parse_seconds(node.arg(0))
        if seconds is not None and seconds > LIMIT:
            report(node, f"Timeout {node.arg(0)}: a stalled or slow client can hold a worker for "
                         f"{seconds:g} s per I/O wait; keep it at {LIMIT:g} s or less.",
                   fix=f"Timeout {LIMIT:g}")


RULE = Rule(code="R301", slug="timeout-long", severity="warning", category="reliability",
            directives=("Timeout",), doc=DOC, check=check)
