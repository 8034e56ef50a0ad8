"""C202: a pool far smaller than both RAM and the expected load allow."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import format_bytes

from ._mpm import THREADED, effective_workers, setting
from .c201_memory_overcommit import workers_that_fit

# "Far below": less than half of what both limits allow.
FAR_BELOW = 0.5

DOC = Doc(
    summary="MaxRequestWorkers far below both what RAM allows and the expected clients",
    what=(
        "Notes a MaxRequestWorkers under half of the smaller of two numbers: the workers "
        "RAM can hold (C201's sum) and the expected concurrent clients (--expected-clients)."
    ),
    why=(
        "Kegel (1997) set MaxClients, StartServers and MaxSpareServers for his benchmark to "
        "the expected number of clients or as high as RAM allows, whichever is less. Far "
        "below both, connections beyond the pool wait in the listen queue or are refused "
        "while memory sits idle. Andersson et al. (2003, sec. II) model Apache as a server "
        "that holds at most K jobs and blocks the rest; their simulations reuse K = 208-298 "
        "for MaxClients 75 and 150 from the authors' earlier study (sec. III.C, Table 2), "
        "and the blocking probability the model predicts under bursty arrivals matched the "
        "measured one (Fig. 3). That a pool far below demand blocks more of each burst is "
        "our reading of that model, not a result of the paper. Arlitt & Williamson (2004, "
        "sec. 5.1.5) saw fewer listen-queue drops with 1,024 processes than with 150."
    ),
    evidence=(
        "Kegel (1997): size MaxClients to the expected clients or what RAM allows, whichever "
        "is less; Andersson et al. (2003): requests beyond the K the server holds are blocked."
    ),
    bad="# 16 GiB RAM, 800 expected clients, event\nMaxRequestWorkers 100",
    good="# 16 GiB RAM, 800 expected clients, event\nMaxRequestWorkers 800\nServerLimit 32",
    fix=(
        "Raise MaxRequestWorkers towards min(expected clients, what RAM holds), and "
        "ServerLimit with it (worker/event: ServerLimit x ThreadsPerChild must cover it)."
    ),
    references=(
        "Kegel 1997, 'Fixing an overloaded web server'",
        "Andersson, Cao, Kihl & Nyberg 2003, sec. II-IV, Table 2 (MMPP/G/1/K*PS, blocking)",
        "Arlitt & Williamson 2004, sec. 5.1.5",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    ram, clients = ctx.facts.ram, ctx.facts.expected_clients
    if ram is None or clients is None or ctx.mpm not in ("prefork", "worker", "event"):
        return
    workers = effective_workers(ctx)
    if workers is None or workers <= 0:
        return
    fits = workers_that_fit(ctx, ram)
    target = min(fits, clients)
    if workers >= FAR_BELOW * target:
        return
    if ctx.mpm in THREADED:
        threads = max(1, setting(ctx, "threadsperchild", "ThreadsPerChild").value or 25)
        target -= target % threads
    limit = setting(ctx, "maxrequestworkers", "MaxRequestWorkers")
    name = ctx.spelling("MaxRequestWorkers", "MaxClients")
    told = f"{limit.node.name} {workers}" if limit.node else f"{name} {workers} (httpd's default)"
    report(limit.node or ctx.main_location(),
           f"{told} while RAM ({format_bytes(ram)}) holds about {fits:,} workers and "
           f"{clients:,} clients are expected: connections beyond {workers:,} queue or are "
           f"refused under load. Consider {name} {target:,} (raise ServerLimit to match).",
           fix=f"{name} {target}")


RULE = Rule(code="C202", slug="workers-below-demand", severity="info", category="capacity",
            directives=("MaxRequestWorkers", "MaxClients"), doc=DOC, check=check,
            needs=("ram", "expected_clients"))
