"""P104: idle keep-alive connections holding workers for long."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.edits import set_value
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import parse_flag, parse_seconds

# prefork and worker keep a whole worker on an idle keep-alive connection;
# event hands it to the listener thread, where it costs a socket, not a worker.
PINNING_LIMIT = 5.0
EVENT_LIMIT = 30.0

DOC = Doc(
    summary="KeepAliveTimeout long enough to pin workers on idle connections",
    what=(
        "Flags a KeepAliveTimeout above 5 seconds under prefork or worker (warning), and "
        "above 30 seconds under event (info), when keep-alive is on."
    ),
    why=(
        "With prefork and worker, a connection waiting for its next request keeps a whole "
        "worker busy doing nothing until KeepAliveTimeout expires. Arlitt & Williamson (2004, "
        "sec. 5.1.6) saw that longer-lived connections tie server processes to connections "
        "and need more processes, and advised cleaning up idle connections more "
        "aggressively on a busy server; Kegel (1997) found every extra process costs RAM "
        "until the machine thrashes. The event MPM parks idle connections in its listener "
        "thread, so it tolerates longer timeouts."
    ),
    evidence=(
        "Arlitt & Williamson (2004, sec. 5.1.6): longer-lived persistent connections tie up "
        "server processes, so more processes are needed for the same load."
    ),
    bad="# prefork\nKeepAliveTimeout 15",
    good="# prefork\nKeepAliveTimeout 2\n# or switch to the event MPM",
    fix=(
        "Under prefork or worker keep KeepAliveTimeout at 5 s or less (1-3 s on busy "
        "servers). Under event up to about 30 s is cheap."
    ),
    references=(
        "Arlitt & Williamson 2004, sec. 5.1.6",
        "Kegel 1997, 'Fixing an overloaded web server' (RAM per process)",
        "https://httpd.apache.org/docs/2.4/mod/core.html#keepalivetimeout",
        "https://httpd.apache.org/docs/2.4/mod/event.html",
    ),
)


def _keepalive_on(ctx: LintContext, node) -> bool:
    vhost = node.parent if node.parent is not None and node.parent.lname == "virtualhost" else None
    setting = ctx.own_value(vhost, "KeepAlive") if vhost is not None else None
    setting = setting or ctx.server_value("KeepAlive")
    return setting is None or parse_flag(setting.arg(0)) is not False


def check(ctx: LintContext, report: Report) -> None:
    mpm = ctx.mpm
    if mpm not in ("prefork", "worker", "event"):
        return
    limit = EVENT_LIMIT if mpm == "event" else PINNING_LIMIT
    for node in ctx.directives("KeepAliveTimeout"):
        seconds = parse_seconds(node.arg(0))
        if seconds is None or seconds <= limit or not _keepalive_on(ctx, node):
            continue
        if mpm == "event":
            report(node, f"KeepAliveTimeout {node.arg(0)}: even under event each idle "
                         f"connection holds a connection slot and its buffers for {seconds:g} s; "
                         f"over {EVENT_LIMIT:g} s rarely pays off.",
                   fix=f"KeepAliveTimeout {EVENT_LIMIT:g}", severity="info",
                   edit=set_value(ctx, node, f"{EVENT_LIMIT:g}"))
        else:
            report(node, f"KeepAliveTimeout {node.arg(0)} under {mpm}: every idle keep-alive "
                         f"connection pins a worker for up to {seconds:g} s; keep it at "
                         f"{PINNING_LIMIT:g} s or less, or use the event MPM.",
                   fix=f"KeepAliveTimeout {PINNING_LIMIT:g}",
                   edit=set_value(ctx, node, f"{PINNING_LIMIT:g}"))


RULE = Rule(code="P104", slug="keepalive-timeout-pins-workers", severity="warning",
            category="performance", directives=("KeepAliveTimeout", "KeepAlive"), doc=DOC,
            check=check, fixable=True)
