"""How many httpd workers fit in RAM: Kegel's sum, with measured parts.

Kegel (1997, "Conclusions") sized a Linux web server as

    RAM = OS + per server process + per TCP connection + active document set

with 8 MB, 256 KB and 64 KB for the first three on the machines of the day.
We keep the structure and replace the constants by what is measured or given:
the private (unshared) memory of real httpd children, the memory other
services hold, the kernel's socket buffers, and the hot document set that
must stay in the page cache (Kegel's overload was disk thrashing once the
worker pool and the documents no longer fitted).

Next to it stands apache2buddy's figure: floor((RAM - other services) /
largest child), with 90 % of it as the low end of its acceptable range.
When the two disagree, `explain` says which terms make the difference.

Pure arithmetic: nothing here reads files or processes (see host_probe.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from advisor.errors import UsageError

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

# Kegel (1997): 64 KB per TCP connection; used when the kernel's own socket
# buffer defaults cannot be read.
KEGEL_CONNECTION_BYTES = 64 * KIB
# Kegel's 256 KB per server process, applied today to each extra thread of a
# threaded child (its touched stack and per-thread pools).
DEFAULT_THREAD_BYTES = 256 * KIB
# A child that runs no scripting module: a few MiB of private memory.
DEFAULT_CHILD_BYTES = 8 * MIB
# mod_php keeps an interpreter and its heap in every prefork child.
PHP_CHILD_EXTRA_BYTES = 32 * MIB
# Kegel's 8 MB for the OS no longer describes a server: a systemd host idles
# at a few hundred MiB, and the kernel keeps 64 bytes of struct page per
# 4 KiB page (1.6 % of RAM) plus slab. 256 MiB + 2 % of RAM covers both.
OS_BASE_BYTES = 256 * MIB
OS_RAM_FRACTION = 0.02
# Under a cgroup memory limit: the group's own small processes (an init, a
# shell, a log shipper), beside the share of page cache charged to it.
CGROUP_BASE_BYTES = 32 * MIB

# Compile-time ceilings of httpd 2.4 (MAX_SERVER_LIMIT, MAX_THREAD_LIMIT).
PREFORK_MAX_SERVER_LIMIT = 200_000
THREADED_MAX_SERVER_LIMIT = 20_000
THREADED_MAX_THREAD_LIMIT = 20_000

# httpd's defaults when the config says nothing.
MPM_DEFAULTS = {
    "prefork": {"ServerLimit": 256, "MaxRequestWorkers": 256, "ThreadsPerChild": 1, "ThreadLimit": 1},
    "worker": {"ServerLimit": 16, "MaxRequestWorkers": 400, "ThreadsPerChild": 25, "ThreadLimit": 64},
    "event": {"ServerLimit": 16, "MaxRequestWorkers": 400, "ThreadsPerChild": 25, "ThreadLimit": 64},
}
DEFAULT_ASYNC_FACTOR = 2.0

APACHE2BUDDY_TOLERANCE = 0.90


# --------------------------------------------------------------------------
# Sizes


_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([kmgtp]?)(i?)(b?)\s*$", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def parse_size(text: str, option: str = "size") -> int:
    """'512M', '2G', '1.5GiB', '64k', '1048576' -> bytes.

    Every suffix is binary (K = 1024): memory is sold and reported in powers
    of two, and `free`, `ps` and apache2buddy count that way too.
    """
    match = _SIZE.match(text or "")
    if not match:
        raise UsageError(
            f"{option}: {text!r} is not a size",
            hint="write a number with an optional unit: 512M, 2G, 1.5GiB, 64K",
        )
    number, unit, _, _ = match.groups()
    value = float(number) * (1024 ** _POWERS[unit.lower()])
    return int(round(value))


def format_size(n_bytes: float) -> str:
    n = float(n_bytes)
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if abs(n) >= scale:
            value = n / scale
            return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{n:.0f} B"


# --------------------------------------------------------------------------
# Inputs


@dataclass
class Quantity:
    """A number of bytes and where it came from (shown to the admin)."""

    bytes: int
    source: str
    name: str = ""


@dataclass
class ChildMemory:
    """Private memory of one httpd child, as apache2buddy reports it."""

    smallest: int
    average: int
    largest: int
    count: int
    source: str
    mpm: str
    """The MPM the children ran (their memory includes its threads)."""
    threads_per_child: int


@dataclass
class MemoryInputs:
    ram: Quantity
    os_reserve: Quantity
    services: list[Quantity]
    """Other services (databases, PHP-FPM...), one entry per name."""
    parent: Quantity
    child: ChildMemory
    thread: Quantity
    connection: Quantity
    doc_set: Quantity
    limits: list = field(default_factory=list)
    fpm_pools: list[dict] = field(default_factory=list)
    """The php-fpm pools the config hands PHP to: name, settings with file:line, child memory."""
    """advisor.config.host_limits.Limit: the RAM and CPUs used, and the files they were read from."""

    @property
    def services_total(self) -> int:
        return sum(q.bytes for q in self.services)


def default_os_reserve(ram: int, cgroup: bool = False) -> Quantity:
    """The memory httpd's pool must leave to others. Under a cgroup limit
    (a container, a systemd slice) the kernel's own memory is not charged
    to the group, and nothing else of the host runs in it: what the group
    must keep is its page cache's share and its own small processes, so the
    host's reserve (which on a 512 MiB pod would leave no worker) shrinks."""
    if cgroup:
        return Quantity(int(CGROUP_BASE_BYTES + OS_RAM_FRACTION * ram),
                        f"assumed: {format_size(CGROUP_BASE_BYTES)} + {OS_RAM_FRACTION:.0%} of the cgroup's "
                        "limit (the kernel's memory is not charged to it)")
    return Quantity(
        int(OS_BASE_BYTES + OS_RAM_FRACTION * ram),
        f"assumed: {format_size(OS_BASE_BYTES)} + {OS_RAM_FRACTION:.0%} of RAM",
    )


def assumed_child(mpm: str, threads_per_child: int, has_php: bool) -> ChildMemory:
    size = DEFAULT_CHILD_BYTES + (threads_per_child - 1) * DEFAULT_THREAD_BYTES
    why = "no running httpd to measure"
    if has_php and mpm == "prefork":
        size += PHP_CHILD_EXTRA_BYTES
        why += "; mod_php loaded"
    return ChildMemory(size, size, size, 0, f"assumed ({why})", mpm, threads_per_child)


# --------------------------------------------------------------------------
# The MPM settings in force


@dataclass
class MpmSettings:
    mpm: str
    max_request_workers: int
    """What httpd will use, after its own adjustments."""
    server_limit: int
    threads_per_child: int
    thread_limit: int
    async_factor: float
    written_max_request_workers: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def family(self) -> str:
        return "prefork" if self.mpm == "prefork" else "threaded"


def effective_mpm_settings(
    mpm: str,
    max_request_workers: int | None,
    server_limit: int | None,
    threads_per_child: int | None,
    thread_limit: int | None,
    async_factor: float | None = None,
) -> MpmSettings:
    """Apply httpd's defaults and the corrections it makes at start-up.

    httpd does not refuse an inconsistent pool: it lowers MaxRequestWorkers to
    what ServerLimit (and ThreadsPerChild) allow, and warns in the error log.
    The model must use what httpd will really run.
    """
    defaults = MPM_DEFAULTS[mpm]
    notes: list[str] = []
    if mpm == "prefork":
        limit = server_limit or defaults["ServerLimit"]
        # httpd sets the default before it reads ServerLimit: 256 either way.
        mrw = max_request_workers if max_request_workers is not None else defaults["MaxRequestWorkers"]
        effective = mrw
        if mrw > limit:
            effective = limit
            notes.append(
                f"MaxRequestWorkers {mrw} exceeds ServerLimit {limit}: httpd lowers it to {limit} "
                f"(raise ServerLimit to {mrw} to get {mrw})"
            )
        effective = max(effective, 1)
        return MpmSettings(mpm, effective, limit, 1, 1, 0.0, max_request_workers, notes)

    tlimit = thread_limit or defaults["ThreadLimit"]
    tpc = threads_per_child or defaults["ThreadsPerChild"]
    if tpc > tlimit:
        notes.append(f"ThreadsPerChild {tpc} exceeds ThreadLimit {tlimit}: httpd lowers it to {tlimit}")
        tpc = tlimit
    limit = server_limit or defaults["ServerLimit"]
    # The default (400) is set before the config is read, whatever
    # ServerLimit and ThreadsPerChild then say.
    mrw = max_request_workers if max_request_workers is not None else defaults["MaxRequestWorkers"]
    effective = mrw
    if effective > limit * tpc:
        effective = limit * tpc
        notes.append(
            f"MaxRequestWorkers {mrw} exceeds ServerLimit x ThreadsPerChild = {limit} x {tpc}: "
            f"httpd lowers it to {effective} (raise ServerLimit to {math.ceil(mrw / tpc)})"
        )
    if effective < tpc:
        notes.append(f"MaxRequestWorkers {mrw} is below ThreadsPerChild {tpc}: httpd raises it to {tpc}")
        effective = tpc
    if effective % tpc:
        rounded = effective - effective % tpc
        notes.append(
            f"MaxRequestWorkers {effective} is not a multiple of ThreadsPerChild {tpc}: "
            f"httpd rounds it down to {rounded}"
        )
        effective = rounded
    factor = DEFAULT_ASYNC_FACTOR if async_factor is None else async_factor
    return MpmSettings(mpm, effective, limit, tpc, tlimit, factor if mpm == "event" else 0.0,
                       max_request_workers, notes)


# --------------------------------------------------------------------------
# The sum


@dataclass
class SumLine:
    label: str
    bytes: int
    detail: str = ""


@dataclass
class Apache2Buddy:
    high: int
    low: int
    remaining: int
    largest_child: int
    note: str = ""


@dataclass
class Recommendation:
    mpm: str
    threads_per_child: int
    max_request_workers: int
    server_limit: int
    thread_limit: int
    processes: int
    child_bytes: int
    """Private memory of one child process for this MPM."""
    connections_per_worker: float
    per_worker_bytes: float
    available_bytes: int
    lines: list[SumLine]
    """Kegel's sum at the recommended pool, line by line."""
    total_bytes: int
    apache2buddy: Apache2Buddy
    explanation: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    limited_by: str = "RAM"


def child_bytes_for(child: ChildMemory, mpm: str, threads_per_child: int, thread_bytes: int,
                    statistic: str = "largest") -> int:
    """Private memory of one child of `mpm` with `threads_per_child` threads.

    Measured children ran some MPM with some thread count. A child with more
    threads costs the extra threads' memory on top; a child with fewer is
    given the measured size unchanged, never less: how much of a measured
    child its threads account for is not known, and the sum must not promise
    memory it cannot show (an upper bound, conservative for RAM).
    """
    base = getattr(child, statistic)
    threads = threads_per_child if mpm != "prefork" else 1
    measured_threads = child.threads_per_child if child.mpm != "prefork" else 1
    return int(base + max(threads - measured_threads, 0) * thread_bytes)


def fixed_lines(inputs: MemoryInputs) -> list[SumLine]:
    """What is spent before the first worker: Kegel's OS term and the rest."""
    lines = [SumLine("OS and kernel", inputs.os_reserve.bytes, inputs.os_reserve.source)]
    for q in inputs.services:
        lines.append(SumLine(f"other service: {q.name}", q.bytes, q.source))
    lines.append(SumLine("httpd parent (with pages its children share)", inputs.parent.bytes,
                         inputs.parent.source))
    lines.append(SumLine("hot document set (page cache)", inputs.doc_set.bytes, inputs.doc_set.source))
    return lines


def recommend(inputs: MemoryInputs, mpm: str, threads_per_child: int, async_factor: float = DEFAULT_ASYNC_FACTOR,
              thread_limit: int | None = None, max_workers: int | None = None,
              max_workers_reason: str = "") -> Recommendation:
    """The largest pool whose Kegel sum fits in RAM, for one MPM.

    `max_workers` caps it for another reason (a response-time target); the
    pool is then the smaller one and `limited_by` says why.
    """
    tpc = 1 if mpm == "prefork" else max(1, threads_per_child)
    child = child_bytes_for(inputs.child, mpm, tpc, inputs.thread.bytes)
    conns = 1.0 + (async_factor if mpm == "event" else 0.0)
    per_process = child + tpc * conns * inputs.connection.bytes
    fixed = fixed_lines(inputs)
    fixed_total = sum(line.bytes for line in fixed)
    available = inputs.ram.bytes - fixed_total
    notes: list[str] = []
    limited_by = "RAM"
    processes = int(available // per_process) if available > 0 else 0
    max_processes = PREFORK_MAX_SERVER_LIMIT if mpm == "prefork" else THREADED_MAX_SERVER_LIMIT
    if processes > max_processes:
        processes = max_processes
        limited_by = "httpd's compiled ServerLimit ceiling"
        notes.append(f"RAM allows more, but httpd caps ServerLimit at {max_processes} for {mpm}")
    if max_workers is not None and processes * tpc > max_workers:
        capped = max(max_workers // tpc, 1)
        notes.append(f"RAM allows {processes * tpc}; {max_workers_reason} allows {capped * tpc}")
        processes = capped
        limited_by = max_workers_reason
    if available <= 0:
        notes.append(
            f"the fixed terms ({format_size(fixed_total)}) already exceed RAM "
            f"({format_size(inputs.ram.bytes)}): no worker fits"
        )
    mrw = processes * tpc
    server_limit = processes
    if mpm == "prefork":
        tlimit = 1
    else:
        tlimit = max(thread_limit or MPM_DEFAULTS[mpm]["ThreadLimit"], tpc)
    lines = list(fixed)
    what = "child" if mpm == "prefork" else f"child of {tpc} threads"
    lines.append(SumLine(f"{processes} x {what}", processes * child,
                         f"{format_size(child)} private each; {inputs.child.source}"))
    n_conns = int(round(mrw * conns))
    conn_detail = f"{format_size(inputs.connection.bytes)} each; {inputs.connection.source}"
    if mpm == "event":
        conn_detail += f"; event holds up to (1 + AsyncRequestWorkerFactor {async_factor:g}) per worker"
    lines.append(SumLine(f"{n_conns} x TCP connection", n_conns * inputs.connection.bytes, conn_detail))
    total = sum(line.bytes for line in lines)
    buddy = apache2buddy(inputs, mpm, tpc)
    rec = Recommendation(
        mpm=mpm, threads_per_child=tpc, max_request_workers=mrw, server_limit=server_limit,
        thread_limit=tlimit, processes=processes, child_bytes=child, connections_per_worker=conns,
        per_worker_bytes=per_process / tpc, available_bytes=available, lines=lines,
        total_bytes=total, apache2buddy=buddy, notes=notes, limited_by=limited_by,
    )
    rec.explanation = explain(inputs, rec)
    return rec


def apache2buddy(inputs: MemoryInputs, mpm: str, threads_per_child: int) -> Apache2Buddy:
    """apache2buddy: remaining = RAM - other services; MaxRequestWorkers =
    floor(remaining / largest child); acceptable from 90 % of that.

    apache2buddy only computes prefork; for threaded MPMs we apply the same
    rule per child process and multiply by ThreadsPerChild, and say so.
    """
    largest = child_bytes_for(inputs.child, mpm, threads_per_child, inputs.thread.bytes, "largest")
    remaining = inputs.ram.bytes - inputs.services_total
    processes = max(int(remaining // largest), 0)
    high = processes * (threads_per_child if mpm != "prefork" else 1)
    low = int(high * APACHE2BUDDY_TOLERANCE)
    note = "" if mpm == "prefork" else "apache2buddy itself only sizes prefork; same rule per child process"
    return Apache2Buddy(high, low, remaining, largest, note)


def explain(inputs: MemoryInputs, rec: Recommendation) -> list[str]:
    """Why Kegel's sum and apache2buddy differ, term by term, in workers.

    Start from apache2buddy's arithmetic and add this model's terms one at a
    time; each step's change in the worker count is that term's share.
    """
    buddy = rec.apache2buddy
    if buddy.low <= rec.max_request_workers <= buddy.high:
        return []
    tpc = rec.threads_per_child
    largest = buddy.largest_child

    def workers(remaining: float, per_process: float) -> int:
        return max(int(remaining // per_process), 0) * tpc if per_process > 0 else 0

    steps: list[str] = []
    remaining = float(buddy.remaining)
    per_process = float(largest)
    count = workers(remaining, per_process)
    terms = [
        ("OS and kernel", inputs.os_reserve.bytes),
        ("httpd parent", inputs.parent.bytes),
        ("hot document set", inputs.doc_set.bytes),
    ]
    for label, size in terms:
        if size <= 0:
            continue
        remaining -= size
        new = workers(remaining, per_process)
        if new != count:
            steps.append(f"-{count - new} for the {label} ({format_size(size)}), which apache2buddy leaves out")
        count = new
    conn_per_process = tpc * rec.connections_per_worker * inputs.connection.bytes
    if conn_per_process > 0:
        new = workers(remaining, per_process + conn_per_process)
        if new != count:
            steps.append(
                f"-{count - new} for socket memory ({format_size(inputs.connection.bytes)} x "
                f"{rec.connections_per_worker:g} per worker), which apache2buddy leaves out"
            )
        count = new
    if count != rec.max_request_workers and rec.limited_by != "RAM":
        steps.append(f"capped at {rec.max_request_workers} by {rec.limited_by}")
    if not steps:
        return []
    side = "fewer" if rec.max_request_workers < buddy.low else "more"
    head = (
        f"The recommendation ({rec.max_request_workers}) is {side} than apache2buddy's "
        f"{buddy.low}-{buddy.high}:"
    )
    return [head] + steps


def memory_at(inputs: MemoryInputs, settings: MpmSettings) -> tuple[int, list[SumLine]]:
    """Kegel's sum for the pool the config runs now (to show whether it fits)."""
    tpc = settings.threads_per_child
    child = child_bytes_for(inputs.child, settings.mpm, tpc, inputs.thread.bytes)
    processes = math.ceil(settings.max_request_workers / tpc)
    conns = 1.0 + (settings.async_factor if settings.mpm == "event" else 0.0)
    lines = fixed_lines(inputs)
    lines.append(SumLine(f"{processes} x child", processes * child, f"{format_size(child)} each"))
    n_conns = int(round(settings.max_request_workers * conns))
    lines.append(SumLine(f"{n_conns} x TCP connection", n_conns * inputs.connection.bytes,
                         f"{format_size(inputs.connection.bytes)} each"))
    return sum(line.bytes for line in lines), lines
