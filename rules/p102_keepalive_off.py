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
        "persistent connections remove. Where the advice turns: those studies' clients sent "
        "their requests back to back. Under prefork (and worker) an open connection holds its "
        "worker while the visitor thinks, so with think times and a pool that runs out first, "
        "closing each connection can serve more. This project measured it on its sandbox "
        "(prefork, Debian's stock pool, httpd held to half a core, sessions of five requests "
        "with 0.2 s think time, plain HTTP on loopback): 1,590 replies/s with KeepAlive On, "
        "the pool held by idle connections, against 6,385 with KeepAlive Off; the event MPM, "
        "which parks idle connections without a worker, served 3,993 with On. That case has "
        "no TLS and no distance: over TLS a connection per request cost the server 3.5 to 4.4 "
        "times the CPU per reply of five requests per connection (1.01-1.49 ms against "
        "0.29-0.36 ms), and every reconnect costs a distant visitor extra round trips. Measure "
        "your own case with `apache-advisor tune`: when it keeps KeepAlive Off it writes a "
        "suppression comment with the measured figure."
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
        "which parks idle keep-alive connections without a worker. If prefork must stay "
        "(mod_php) and measurements show Off serving more, keep it with a suppression "
        "comment that gives the figure."
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
                         "requests per connection (the advice can turn for prefork pools held "
                         "by idle visitors over plain HTTP: see `explain P102`).", fix="KeepAlive On",
                   edit=set_value(ctx, node, "On"))


RULE = Rule(code="P102", slug="keepalive-off", severity="warning", category="performance",
            directives=("KeepAlive",), doc=DOC, check=check, fixable=True)
