"""C204: MaxSpareThreads that httpd raises."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._mpm import THREADED, pool

DOC = Doc(
    summary="MaxSpareThreads < MinSpareThreads + ThreadsPerChild (httpd adjusts it)",
    what=(
        "Flags MaxSpareThreads lower than MinSpareThreads + ThreadsPerChild under worker or "
        "event. httpd raises it to that sum at start-up, so the written value does nothing."
    ),
    why=(
        "The idle band must hold at least one child's worth of threads, or httpd would "
        "start a child to reach MinSpareThreads and immediately kill one to get under "
        "MaxSpareThreads. httpd prevents that by raising MaxSpareThreads; the config then "
        "says something httpd does not do. Forking and killing children under bursts is "
        "what the band exists to avoid: process creation costs far more than a small "
        "request (Arlitt & Williamson 2004, sec. 5.1.3), and arrivals are bursty (Andersson "
        "et al. 2003)."
    ),
    evidence=(
        "Arlitt & Williamson (2004, sec. 5.1.3): creating a process costs far more than "
        "serving a small request, so a pool that forks and reaps under bursts loses its "
        "pre-forking benefit."
    ),
    bad="ThreadsPerChild 25\nMinSpareThreads 75\nMaxSpareThreads 80",
    good="ThreadsPerChild 25\nMinSpareThreads 75\nMaxSpareThreads 250",
    fix="Set MaxSpareThreads to at least MinSpareThreads + ThreadsPerChild (better: two children more).",
    references=(
        "Arlitt & Williamson 2004, sec. 5.1.3",
        "Andersson, Cao, Kihl & Nyberg 2003 (bursty arrivals)",
        "https://httpd.apache.org/docs/2.4/mod/mpm_common.html#maxsparethreads",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    if ctx.mpm not in THREADED:
        return
    s = pool(ctx)
    low, high, threads = s["minsparethreads"], s["maxsparethreads"], s["threadsperchild"]
    if None in (low.value, high.value, threads.value):
        return
    if low.node is None and high.node is None and threads.node is None:
        return
    needed = low.value + threads.value
    if high.value < needed:
        at = high.node or low.node or threads.node
        report(at, f"MaxSpareThreads {high.value}{' (httpd default)' if high.node is None else ''} "
                   f"< MinSpareThreads {low.value} + ThreadsPerChild {threads.value}: httpd "
                   f"raises MaxSpareThreads to {needed}.",
               fix=f"MaxSpareThreads {needed}")


RULE = Rule(code="C204", slug="max-spare-threads-adjusted", severity="warning",
            category="capacity", directives=("MaxSpareThreads", "MinSpareThreads", "ThreadsPerChild"),
            doc=DOC, check=check)
