"""P102: persistent connections switched off."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.edits import set_value
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import parse_flag

DOC = Doc(
    summary="KeepAlive Off: every request pays for a new TCP connection",
    what="Flags `KeepAlive Off` at server scope or in a virtual host.",
    why=(
        "Without persistent connections each request costs a TCP handshake, a teardown and "
        "a TIME_WAIT entry. Arlitt & Williamson (2004, sec. 5.1.6) raised Apache's peak from "
        "7,300 to 9,600 replies/s (+32 %) with just two requests per connection, to 11,200 "
        "with eight, and to 16,000 with eight pipelined requests, about 2.2 times the 7,300 "
        "of one request per connection (the paper's text says \"nearly 220 %\"; its figures "
        "give 2.19). Almeida et al. (sec. 4.1) found that TCP TIME_WAIT timer "
        "handling alone took over half of the kernel's time for small files: a fixed cost "
        "persistent connections remove."
    ),
    evidence=(
        "Arlitt & Williamson (2004, sec. 5.1.6): 2 requests per connection raised the peak "
        "from 7,300 to 9,600 replies/s (+32 %); 8 pipelined requests reached 16,000, about 2.2 "
        "times one request per connection."
    ),
    bad="KeepAlive Off",
    good="KeepAlive On\nKeepAliveTimeout 5\nMaxKeepAliveRequests 100",
    fix=(
        "Set `KeepAlive On` (httpd's default) with a short KeepAliveTimeout. If idle "
        "connections pinning workers was the reason to turn it off, use the event MPM, "
        "which parks idle keep-alive connections without a worker."
    ),
    references=(
        "Arlitt & Williamson 2004, sec. 5.1.6 (persistent connections and pipelining)",
        "Almeida et al., WebMonitor study of Apache, sec. 4.1 (TIME_WAIT timer cost)",
        "https://httpd.apache.org/docs/2.4/mod/core.html#keepalive",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    nodes = ctx.directives("KeepAlive")
    # Judge each distinct value once (a big tree repeats "On" per vhost),
    # then visit the nodes only when some value is Off.
    off = {value for value in {node.arg(0) for node in nodes} if parse_flag(value) is False}
    if not off:
        return
    for node in nodes:
        if node.arg(0) in off:
            report(node, "KeepAlive Off makes every request open and close its own TCP "
                         "connection; persistent connections measured +32 % at only two "
                         "requests per connection.", fix="KeepAlive On",
                   edit=set_value(ctx, node, "On"))


RULE = Rule(code="P102", slug="keepalive-off", severity="warning", category="performance",
            directives=("KeepAlive",), doc=DOC, check=check, fixable=True)
