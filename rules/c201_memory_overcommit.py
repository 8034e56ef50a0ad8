"""C201: a worker pool that does not fit in RAM.

The arithmetic is Kegel's (1997) sum, kept here so the rule depends on
nothing else: RAM needed = OS + per worker process + per connection +
active document set.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import format_bytes, parse_int

from ._mpm import THREADED, effective_workers, processes_for, setting

MIB = 1024 * 1024
# Defaults when nothing better is known. Kegel's 1997 estimate (his own guess,
# not a measured rule) was 8 MB for the OS, 256 KB per process and 64 KB per
# connection; processes today are far larger, connections not much.
DEFAULT_OS_RESERVE = 512 * MIB
DEFAULT_PER_CONNECTION = 64 * 1024
DEFAULT_PROCESS_MEMORY = {"prefork": 12 * MIB, "worker": 32 * MIB, "event": 32 * MIB}
DEFAULT_PREFORK_PHP = 48 * MIB
_PHP = ("php_module", "php5_module", "php7_module", "php8_module")


@dataclass
class Sizing:
    workers: int
    processes: int
    connections: int
    os_reserve: int
    per_process: int
    per_process_source: str
    per_connection: int
    document_set: int

    @property
    def total(self) -> int:
        return (self.os_reserve + self.processes * self.per_process
                + self.connections * self.per_connection + self.document_set)

    def breakdown(self) -> str:
        text = (f"OS {format_bytes(self.os_reserve)} + {self.processes:,} "
                f"process{'es' if self.processes != 1 else ''} x {format_bytes(self.per_process)} "
                f"({self.per_process_source}) + {self.connections:,} connections x "
                f"{format_bytes(self.per_connection)}")
        if self.document_set:
            text += f" + document set {format_bytes(self.document_set)}"
        return text


def per_process_memory(ctx: LintContext) -> tuple[int, str]:
    facts = ctx.facts
    if facts.worker_memory is not None:
        return facts.worker_memory, facts.worker_memory_source or "given"
    mpm = ctx.mpm or "prefork"
    if mpm == "prefork" and ctx.has_module(*_PHP):
        return DEFAULT_PREFORK_PHP, "default for prefork with mod_php; measure with --worker-memory"
    size = DEFAULT_PROCESS_MEMORY.get(mpm, DEFAULT_PROCESS_MEMORY["prefork"])
    return size, f"default for {mpm}; measure with --worker-memory"


def connections_for(ctx: LintContext, workers: int) -> int:
    """Connections held at most: one per worker, and under event also the
    idle keep-alive connections it parks (AsyncRequestWorkerFactor per worker)."""
    if ctx.mpm != "event":
        return workers
    factor_node = ctx.server_value("AsyncRequestWorkerFactor")
    factor = 2.0
    if factor_node is not None:
        try:
            factor = float(factor_node.arg(0))
        except ValueError:
            pass
    return int(workers * (1 + factor))


def sizing(ctx: LintContext, workers: int) -> Sizing:
    facts = ctx.facts
    per_process, source = per_process_memory(ctx)
    return Sizing(
        workers=workers,
        processes=processes_for(ctx, workers),
        connections=connections_for(ctx, workers),
        os_reserve=facts.os_reserve if facts.os_reserve is not None else DEFAULT_OS_RESERVE,
        per_process=per_process,
        per_process_source=source,
        per_connection=facts.per_connection if facts.per_connection is not None else DEFAULT_PER_CONNECTION,
        document_set=facts.document_set or 0,
    )


def workers_that_fit(ctx: LintContext, ram: int, ceiling: int = 1_000_000) -> int:
    """The largest MaxRequestWorkers whose sum stays within `ram` (0 if none),
    a multiple of ThreadsPerChild for threaded MPMs."""
    low, high = 0, ceiling
    while low < high:
        middle = (low + high + 1) // 2
        if sizing(ctx, middle).total <= ram:
            low = middle
        else:
            high = middle - 1
    if ctx.mpm in THREADED:
        threads = setting(ctx, "threadsperchild", "ThreadsPerChild").value or 25
        low -= low % max(1, threads)
    return low


DOC = Doc(
    summary="MaxRequestWorkers x per-worker memory + base exceeds RAM",
    what=(
        "Adds up the memory the worker pool needs at full load, with Kegel's structure: "
        "OS + processes x memory per process + connections x memory per connection + the "
        "active document set, and flags it when it exceeds RAM. Prefork runs one process "
        "per worker; worker and event run ceil(MaxRequestWorkers / ThreadsPerChild). RAM "
        "comes from --ram, the config file's [host] table, or this host when linting its "
        "own config under /etc: the least of its memory and the cgroup memory limit "
        "(memory.max, memory.limit_in_bytes) of the running httpd's parent or of the tool, "
        "named with its file in the message; per-process memory from --worker-memory, running httpd "
        "children, or an MPM default that the message names."
    ),
    why=(
        "When the pool outgrows RAM the failure is not gradual: the machine swaps, every "
        "worker slows, more connections queue, more workers start, and the host stops "
        "answering. Kegel (1997) saw exactly this: on 32 MB, starting 150 Apache processes "
        "made the whole machine unresponsive and 100 ran sluggishly, while 64 MB carried "
        "250. In his conclusions he says he had found no guideline and suspects something "
        "like 8 MB for the OS + 256 KB per process + 64 KB per TCP connection + the active "
        "document set: his own estimate, not a rule of the time. The constants have grown; "
        "the structure of the sum is what this rule keeps, and he set MaxClients to what "
        "RAM allows or the expected clients, whichever is less."
    ),
    evidence=(
        "Kegel (1997): with 32 MB of RAM, 150 Apache processes made the machine unresponsive; "
        "RAM = OS + per process + 64 KB per connection + active documents."
    ),
    bad="# 4 GiB of RAM, prefork children of ~60 MiB (mod_php)\nMaxRequestWorkers 400",
    good="# 4 GiB of RAM, prefork children of ~60 MiB (mod_php)\nMaxRequestWorkers 55",
    fix=(
        "Lower MaxRequestWorkers (and ServerLimit) to what fits, measure the real private "
        "memory of your children (`--worker-memory`, or lint on the host while httpd runs), "
        "or move to the event MPM, whose threads share one process's memory."
    ),
    references=(
        "Kegel 1997, 'Fixing an overloaded web server' (RAM rule of thumb, thrashing)",
        "Arlitt & Williamson 2004, sec. 5.1.5 (MaxClients and overload behaviour)",
        "https://httpd.apache.org/docs/2.4/misc/perf-tuning.html#hardware",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    ram = ctx.facts.ram
    if ram is None or ctx.mpm not in ("prefork", "worker", "event"):
        return
    workers = effective_workers(ctx)
    if workers is None or workers <= 0:
        return
    need = sizing(ctx, workers)
    if need.total <= ram:
        return
    limit = setting(ctx, "maxrequestworkers", "MaxRequestWorkers")
    fits = workers_that_fit(ctx, ram, ceiling=workers)
    name = ctx.spelling("MaxRequestWorkers", "MaxClients")
    where = limit.node or ctx.main_location()
    told = f"{limit.node.name} {parse_int(limit.node.arg(0))}" if limit.node else \
        f"{name} {workers} (httpd's default for {ctx.mpm})"
    ram_source = f" ({ctx.facts.ram_source})" if ctx.facts.ram_source else ""
    report(where,
           f"{told} needs about {format_bytes(need.total)} at full load "
           f"({need.breakdown()}) but RAM is {format_bytes(ram)}{ram_source}: under full load "
           f"the host swaps and stops answering. About {fits:,} workers fit.",
           fix=f"{name} {fits}" if fits > 0 else None,
           severity="error")


RULE = Rule(code="C201", slug="workers-exceed-ram", severity="error", category="capacity",
            directives=("MaxRequestWorkers", "MaxClients", "ThreadsPerChild", "ServerLimit"),
            doc=DOC, check=check, needs=("ram",))
