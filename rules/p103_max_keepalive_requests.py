"""P103: keep-alive connections closed after very few requests."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.edits import set_value
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import parse_int

DOC = Doc(
    summary="MaxKeepAliveRequests between 1 and 99: connections closed too early",
    what=(
        "Flags MaxKeepAliveRequests set between 1 and 99 (0 means unlimited; the default "
        "is 100) at server scope or in a virtual host."
    ),
    why=(
        "The gain from persistent connections grows with the number of requests a "
        "connection carries: Arlitt & Williamson (2004, sec. 5.1.6) measured 9,600, 10,400 "
        "and 11,200 replies/s at 2, 4 and 8 requests per connection against 7,300 with one. "
        "A small cap forces browsers that fetch dozens of assets from a page to reconnect, "
        "paying the handshake and TIME_WAIT costs again; a cap of 1 turns keep-alive off."
    ),
    evidence=(
        "Arlitt & Williamson (2004, sec. 5.1.6): 7,300 replies/s at 1 request per connection, "
        "9,600 at 2, 10,400 at 4, 11,200 at 8."
    ),
    bad="MaxKeepAliveRequests 10",
    good="MaxKeepAliveRequests 100",
    fix="Use 100 (httpd's default) or more; 0 removes the cap.",
    references=(
        "Arlitt & Williamson 2004, sec. 5.1.6",
        "https://httpd.apache.org/docs/2.4/mod/core.html#maxkeepaliverequests",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    for node in ctx.directives("MaxKeepAliveRequests"):
        value = parse_int(node.arg(0))
        if value is not None and 1 <= value <= 99:
            effect = ("1 request per connection is the same as KeepAlive Off" if value == 1
                      else f"browsers must reconnect after every {value} requests")
            report(node, f"MaxKeepAliveRequests {value}: {effect}; throughput kept rising up "
                         "to 8 requests per connection in the measurements.",
                   fix="MaxKeepAliveRequests 100", edit=set_value(ctx, node, "100"))


RULE = Rule(code="P103", slug="max-keepalive-requests-low", severity="warning",
            category="performance", directives=("MaxKeepAliveRequests",), doc=DOC, check=check, fixable=True)
