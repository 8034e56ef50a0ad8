"""P105: a worker pool that cannot grow and shrink with the load."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._mpm import THREADED, Setting, pool

# Narrower idle bands than these make bursts spawn and reap children all the
# time. prefork: fewer than 3 idle processes between the bounds; threaded:
# less than two children's worth of threads (httpd itself forces one).
PREFORK_MIN_BAND = 3
THREADED_MIN_BAND_CHILDREN = 2

DOC = Doc(
    summary="Static or too tight worker pool (StartServers = MinSpare = MaxSpare, MinSpare >= MaxSpare)",
    what=(
        "Flags a static pool: StartServers = MinSpareServers = MaxSpareServers (prefork), "
        "StartServers x ThreadsPerChild = MinSpareThreads = MaxSpareThreads (worker, "
        "event), or a pool started at MaxRequestWorkers that never reaps idle children. "
        "Also flags MinSpare >= MaxSpare, and idle bands so narrow that bursty load keeps "
        "creating and killing children (info)."
    ),
    why=(
        "A common tuning tip is to pin the pool to a fixed size. Arlitt & Williamson (2004, "
        "sec. 5.1.5, Fig. 9) tested static pools of 128, 256, 512 and 1,024 processes "
        "against the dynamic default: every static pool had a lower peak, because the "
        "extra idle processes cost more to administer than the dynamic pool ever spent "
        "spawning. The opposite mistake, an idle band too narrow, makes each burst fork "
        "and reap children; forking costs far more than a small request (sec. 5.1.3), and "
        "real traffic is bursty (Andersson et al. 2003 model arrivals as an MMPP with a "
        "burst state 5 % of the time)."
    ),
    evidence=(
        "Arlitt & Williamson (2004, sec. 5.1.5, Fig. 9): every static pool tested (128 to "
        "1,024 processes) had a lower peak than the dynamic default."
    ),
    bad="StartServers 256\nMinSpareServers 256\nMaxSpareServers 256\nMaxRequestWorkers 256",
    good="StartServers 5\nMinSpareServers 5\nMaxSpareServers 10\nMaxRequestWorkers 256",
    fix=(
        "Let httpd size the pool: keep MinSpare well below MaxSpare (prefork 5/10, "
        "threaded 75/250 threads are the defaults) and StartServers small."
    ),
    references=(
        "Arlitt & Williamson 2004, sec. 5.1.5 and Fig. 9 (static vs dynamic pool)",
        "Arlitt & Williamson 2004, sec. 5.1.3 (cost of creating a process)",
        "Andersson, Cao, Kihl & Nyberg 2003, sec. II (bursty MMPP arrivals)",
        "https://httpd.apache.org/docs/2.4/mod/prefork.html",
    ),
)


def _where(*settings: Setting):
    for item in settings:
        if item.node is not None:
            return item.node
    return None


def _prefork(ctx: LintContext, report: Report, s: dict[str, Setting]) -> None:
    start, low, high, limit = (s["startservers"], s["minspareservers"], s["maxspareservers"],
                               s["maxrequestworkers"])
    if None in (start.value, low.value, high.value, limit.value):
        return
    at = _where(start, low, high)
    if at is None:
        return  # all defaults: the dynamic pool httpd ships with
    if (start.value == low.value == high.value) or (start.value >= limit.value and high.value >= limit.value):
        full = " (= MaxRequestWorkers)" if start.value >= limit.value else ""
        report(at, f"static prefork pool: StartServers {start.value}, MinSpareServers {low.value}, "
                   f"MaxSpareServers {high.value}{full}; every static pool measured peaked "
                   "lower than the dynamic default.",
               )
        return
    if low.value >= high.value:
        report(high.node or at, f"MinSpareServers {low.value} >= MaxSpareServers {high.value}: "
                                f"httpd raises MaxSpareServers to {low.value + 1}, leaving no room "
                                "between spawning and reaping.",
               fix=f"MaxSpareServers {low.value + PREFORK_MIN_BAND + 2}")
        return
    if high.value - low.value < PREFORK_MIN_BAND:
        report(high.node or at, f"idle band MinSpareServers {low.value} .. MaxSpareServers "
                                f"{high.value} is {high.value - low.value} process(es) wide: "
                                "bursts will fork and reap children continually.",
               fix=f"MaxSpareServers {low.value + 5}", severity="info")


def _threaded(ctx: LintContext, report: Report, s: dict[str, Setting]) -> None:
    start, low, high, threads, limit = (s["startservers"], s["minsparethreads"], s["maxsparethreads"],
                                        s["threadsperchild"], s["maxrequestworkers"])
    if None in (start.value, low.value, high.value, threads.value, limit.value) or threads.value < 1:
        return
    at = _where(start, low, high)
    if at is None:
        return
    started = start.value * threads.value
    if (started == low.value == high.value) or (started >= limit.value and high.value >= limit.value):
        report(at, f"static {ctx.mpm} pool: StartServers {start.value} x ThreadsPerChild "
                   f"{threads.value} = {started} threads, MinSpareThreads {low.value}, "
                   f"MaxSpareThreads {high.value}; every static pool measured peaked lower "
                   "than the dynamic default.")
        return
    if low.value >= high.value:
        report(high.node or at, f"MinSpareThreads {low.value} >= MaxSpareThreads {high.value}: "
                                "the pool has no idle band; httpd raises MaxSpareThreads to "
                                f"{low.value + threads.value}.",
               fix=f"MaxSpareThreads {low.value + THREADED_MIN_BAND_CHILDREN * threads.value}")
        return
    band = high.value - low.value
    if threads.value <= band < THREADED_MIN_BAND_CHILDREN * threads.value:
        report(high.node or at, f"idle band MinSpareThreads {low.value} .. MaxSpareThreads "
                                f"{high.value} is narrower than two children ({threads.value} "
                                "threads each): bursts will start and stop children continually.",
               fix=f"MaxSpareThreads {low.value + THREADED_MIN_BAND_CHILDREN * threads.value}",
               severity="info")


def check(ctx: LintContext, report: Report) -> None:
    settings = pool(ctx)
    if ctx.mpm == "prefork":
        _prefork(ctx, report, settings)
    elif ctx.mpm in THREADED:
        _threaded(ctx, report, settings)


RULE = Rule(code="P105", slug="static-worker-pool", severity="warning", category="performance",
            directives=("StartServers", "MinSpareServers", "MaxSpareServers", "MinSpareThreads",
                        "MaxSpareThreads", "ThreadsPerChild", "MaxRequestWorkers"),
            doc=DOC, check=check)
