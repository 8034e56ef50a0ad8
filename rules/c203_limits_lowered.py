"""C203: pool limits that httpd silently lowers at start-up."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.edits import Edit, add_directive, set_value
from advisor.lint.rule import Doc, Report, Rule

from ._mpm import HARD_SERVER_LIMIT, HARD_THREAD_LIMIT, Setting, pool

DOC = Doc(
    summary="MaxRequestWorkers/ThreadsPerChild above what ServerLimit/ThreadLimit allow",
    what=(
        "Flags limits that httpd corrects at start-up with only a log line: "
        "MaxRequestWorkers > ServerLimit (prefork); MaxRequestWorkers > ServerLimit x "
        "ThreadsPerChild (worker, event); ThreadsPerChild > ThreadLimit; MaxRequestWorkers "
        "not a multiple of ThreadsPerChild; ServerLimit or ThreadLimit above the compiled-in "
        "maximum. The message says the value httpd will actually use."
    ),
    why=(
        "The admin believes the server holds N clients; httpd runs with fewer and says so "
        "once in the error log at start-up. Under load the missing workers turn into "
        "queued and refused connections: Arlitt & Williamson (2004, sec. 5.1.5) had to "
        "raise Apache's compiled-in process ceiling (HARD_SERVER_LIMIT) to 1,024 before a "
        "MaxClients of 1,024 meant anything, and with the larger pool saw fewer "
        "listen-queue drops under overload. ServerLimit is today's run-time ceiling."
    ),
    evidence=(
        "Arlitt & Williamson (2004, sec. 5.1.5): MaxClients 1,024 needed the hard process "
        "ceiling raised first, and then dropped fewer connections under overload than 150."
    ),
    bad="# event\nThreadsPerChild 25\nMaxRequestWorkers 1000\n# ServerLimit defaults to 16 -> 400 workers",
    good="# event\nThreadsPerChild 25\nServerLimit 40\nMaxRequestWorkers 1000",
    fix=(
        "Raise ServerLimit (and ThreadLimit) to cover what you ask for, or lower "
        "MaxRequestWorkers to what is allowed; keep MaxRequestWorkers a multiple of "
        "ThreadsPerChild."
    ),
    references=(
        "Arlitt & Williamson 2004, sec. 5.1.5",
        "https://httpd.apache.org/docs/2.4/mod/mpm_common.html#serverlimit",
        "https://httpd.apache.org/docs/2.4/mod/mpm_common.html#maxrequestworkers",
    ),
)


def _at(ctx: LintContext, *settings: Setting):
    for item in settings:
        if item.node is not None:
            return item.node
    return ctx.main_location()


def _label(item: Setting) -> str:
    return f"{item.name} {item.value}" + (" (httpd's default)" if item.node is None else "")


def _raise(ctx: LintContext, limit: Setting, value: int, beside: Setting) -> Edit | None:
    """The edit that writes `limit` = value: in place when it is written,
    else a new line next to the setting that needs it (same context)."""
    if limit.node is not None:
        return set_value(ctx, limit.node, str(value))
    if beside.node is not None:
        return add_directive(ctx, f"{limit.name} {value}", after=beside.node)
    return None


def check(ctx: LintContext, report: Report) -> None:
    mpm = ctx.mpm
    if mpm not in ("prefork", "worker", "event"):
        return
    s = pool(ctx)
    workers, server_limit = s["maxrequestworkers"], s["serverlimit"]
    if workers.value is None or server_limit.value is None:
        return
    limit = server_limit.value
    hard = HARD_SERVER_LIMIT[mpm]
    if limit > hard:
        report(_at(ctx, server_limit), f"ServerLimit {limit} is above httpd's compiled-in maximum "
                                       f"{hard} for {mpm}; httpd uses {hard}.",
               fix=f"ServerLimit {hard}", edit=_raise(ctx, server_limit, hard, server_limit))
        limit = hard
    if mpm == "prefork":
        if workers.value > limit:
            report(_at(ctx, workers, server_limit),
                   f"{_label(workers)} exceeds ServerLimit {limit}: httpd lowers "
                   f"MaxRequestWorkers to {limit} at start-up.",
                   fix=f"ServerLimit {workers.value}" if workers.node is not None else f"MaxRequestWorkers {limit}",
                   edit=_raise(ctx, server_limit, workers.value, workers) if workers.node is not None else None)
        return
    threads, thread_limit = s["threadsperchild"], s["threadlimit"]
    if threads.value is None or thread_limit.value is None or threads.value < 1:
        return
    tlimit = thread_limit.value
    if tlimit > HARD_THREAD_LIMIT[mpm]:
        report(_at(ctx, thread_limit), f"ThreadLimit {tlimit} is above httpd's compiled-in "
                                       f"maximum {HARD_THREAD_LIMIT[mpm]}; httpd uses that.",
               fix=f"ThreadLimit {HARD_THREAD_LIMIT[mpm]}",
               edit=_raise(ctx, thread_limit, HARD_THREAD_LIMIT[mpm], thread_limit))
        tlimit = HARD_THREAD_LIMIT[mpm]
    per_child = threads.value
    if per_child > tlimit:
        report(_at(ctx, threads, thread_limit),
               f"{_label(threads)} exceeds ThreadLimit {tlimit}: httpd lowers ThreadsPerChild "
               f"to {tlimit}.", fix=f"ThreadLimit {per_child}",
               edit=_raise(ctx, thread_limit, per_child, threads))
        per_child = tlimit
    wanted = workers.value
    ceiling = limit * per_child
    if wanted > ceiling:
        needed_limit = -(-wanted // per_child)
        report(_at(ctx, workers, server_limit),
               f"{_label(workers)} exceeds ServerLimit {limit} x ThreadsPerChild {per_child} = "
               f"{ceiling}: httpd lowers MaxRequestWorkers to {ceiling}.",
               fix=f"ServerLimit {needed_limit}", edit=_raise(ctx, server_limit, needed_limit, workers))
        wanted = ceiling
    if wanted < per_child:
        report(_at(ctx, workers, threads),
               f"{_label(workers)} is below ThreadsPerChild {per_child}: httpd raises it to "
               f"{per_child}.", fix=f"MaxRequestWorkers {per_child}")
        return
    if wanted % per_child:
        used = wanted - wanted % per_child
        report(_at(ctx, workers, threads),
               f"{_label(workers)} is not a multiple of ThreadsPerChild {per_child}: httpd "
               f"lowers it to {used}.", fix=f"MaxRequestWorkers {used}")


RULE = Rule(code="C203", slug="limits-silently-lowered", severity="warning", category="capacity",
            directives=("MaxRequestWorkers", "MaxClients", "ServerLimit", "ThreadsPerChild",
                        "ThreadLimit"), doc=DOC, check=check, fixable=True)
