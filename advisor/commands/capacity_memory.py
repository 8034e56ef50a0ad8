"""The host's memory for `capacity`'s sum: RAM and the cgroup's limits, what
other services hold (php-fpm's pools among them), one httpd child measured
or assumed, threads, connections and the document set; and, once the report
is made, the pm.max_children that fits beside httpd's pool.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from advisor.errors import UsageError

if TYPE_CHECKING:
    from advisor.capacity.host_probe import HttpdSample
    from advisor.capacity.report import CapacityReport
    from advisor.capacity.sizing import ChildMemory, MemoryInputs, Quantity
    from advisor.config.host_limits import Limit
    from advisor.config.model import Config

FRESH_SERVER_SECONDS = 24 * 3600


@dataclass(frozen=True)
class MemoryOptions:
    """What `capacity` was told about the host's memory, as given (sizes unparsed)."""

    ram: str | None
    reserve: str | None
    reserve_processes: list[str]
    os_reserve: str | None
    worker_memory: str | None
    thread_memory: str | None
    connection_memory: str | None
    docroot: str | None
    doc_set: str | None
    measure: bool
    fpm_config: list[str] = field(default_factory=list)
    fpm_memory: str | None = None


def gather_memory(cfg: Config, mpm: str, threads_per_child: int, memory: MemoryOptions,
                  notes: list[str]) -> MemoryInputs:
    """The sum's inputs: each from its flag, else measured on this host, else
    assumed (and a note says so)."""
    from advisor.capacity import host_probe as probe
    from advisor.capacity.sizing import DEFAULT_CHILD_BYTES, MemoryInputs, Quantity, parse_size

    sample = probe.measure_httpd(cfg.main_file, cfg.server_root) if memory.measure else None
    fpm_services, fpm_pools = _fpm_pools(cfg, memory, parse_size, notes)
    ram_q, os_q, limits = _ram(memory, sample)
    services = _reserved(memory, fpm_services)
    child = _child(cfg, mpm, threads_per_child, memory, sample, notes)
    if sample is not None:
        parent = Quantity(sample.parent_rss, f"measured RSS of PID {sample.parent_pid}")
    else:
        parent = Quantity(DEFAULT_CHILD_BYTES, "assumed")
    thread_q, conn_q, doc_q = _thread_connection_documents(memory)
    return MemoryInputs(ram_q, os_q, services, parent, child, thread_q, conn_q, doc_q, limits, fpm_pools)


def _ram(memory: MemoryOptions, sample: HttpdSample | None) -> tuple[Quantity, Quantity, list[Limit]]:
    """The RAM (--ram, else the host's or its cgroup's), the OS's reserve,
    and the limits (memory, CPU) of the cgroup that bounds the pool."""
    from advisor.capacity import host_probe as probe
    from advisor.capacity.sizing import Quantity, default_os_reserve, parse_size
    from advisor.config.host_limits import Limit, cpu_limit, effective_memory

    # Whose cgroup bounds the pool: the running httpd's parent, else this
    # tool's own (linting this host's config with httpd stopped).
    pid, whose = ((sample.parent_pid, f"httpd's parent (PID {sample.parent_pid})") if sample is not None
                  else (os.getpid(), f"this tool (PID {os.getpid()}; no running httpd serves the config)"))
    if memory.ram is not None:
        ram_q = Quantity(parse_size(memory.ram, "--ram"), "--ram")
        if ram_q.bytes <= 0:
            raise UsageError("--ram must be more than 0")
        ram_limit = Limit("memory", ram_q.bytes, "--ram", "", "the command line")
    else:
        ram_limit = effective_memory(probe.host_ram(), pid, whose)
        ram_q = Quantity(int(ram_limit.value), ram_limit.describe())
    limits = [ram_limit, cpu_limit(pid, whose)]
    os_q = (Quantity(parse_size(memory.os_reserve, "--os-reserve"), "--os-reserve")
            if memory.os_reserve is not None
            else default_os_reserve(ram_q.bytes, cgroup=ram_limit.origin.startswith("cgroup")))
    return ram_q, os_q, limits


def _reserved(memory: MemoryOptions, fpm_services: list[Quantity]) -> list[Quantity]:
    """The memory other services hold: --reserve, the --reserve-process
    processes measured, php-fpm's pools."""
    from advisor.capacity import host_probe as probe
    from advisor.capacity.sizing import Quantity, parse_size

    services = []
    if memory.reserve is not None:
        services.append(Quantity(parse_size(memory.reserve, "--reserve"), "--reserve", "others"))
    for name in memory.reserve_processes:
        service = probe.measure_service(name)
        services.append(Quantity(service.bytes, f"measured: {service.processes} processes, {service.method}", name))
    services.extend(fpm_services)
    return services


def _child(cfg: Config, mpm: str, threads_per_child: int, memory: MemoryOptions, sample: HttpdSample | None,
           notes: list[str]) -> ChildMemory:
    """One httpd child's memory: --worker-memory, else the running children
    measured, else assumed for the MPM (and PHP)."""
    from advisor.capacity.sizing import ChildMemory, assumed_child, parse_size

    has_php = any(m.startswith("php") for m in cfg.modules) if cfg is not None else False
    if memory.worker_memory is not None:
        size = parse_size(memory.worker_memory, "--worker-memory")
        if size <= 0:
            raise UsageError("--worker-memory must be more than 0")
        child = ChildMemory(size, size, size, 0, "--worker-memory", mpm, threads_per_child)
    elif sample is not None:
        sizes = [c.private for c in sample.children]
        measured_mpm, measured_threads = sample.mpm_guess
        child = ChildMemory(min(sizes), sum(sizes) // len(sizes), max(sizes), len(sizes),
                            f"measured: {len(sizes)} children of PID {sample.parent_pid}, {sample.method}",
                            measured_mpm, measured_threads)
        if sample.uptime < FRESH_SERVER_SECONDS:
            # Fresh children still share nearly every page with the parent;
            # they grow as they serve. apache2buddy warns below a day too.
            notes.append(f"httpd started {sample.uptime / 3600:.1f} h ago: children grow as they serve "
                         f"traffic, so measure after a busy day or give --worker-memory")
        if sample.other_masters:
            notes.append(f"{sample.other_masters + 1} running httpd instances read this config; measured PID "
                         f"{sample.parent_pid}, the one with the most children (or give --worker-memory)")
    else:
        child = assumed_child(mpm, threads_per_child, has_php)
        if memory.measure:
            notes.append("no running httpd serves this config, so child sizes are assumed: "
                         "run it and measure, or give --worker-memory")
    return child


def _thread_connection_documents(memory: MemoryOptions) -> tuple[Quantity, Quantity, Quantity]:
    """The memory of one extra thread, of one connection, and the hot
    document set: given, measured or assumed."""
    from advisor.capacity import host_probe as probe
    from advisor.capacity.sizing import DEFAULT_THREAD_BYTES, KEGEL_CONNECTION_BYTES, Quantity, parse_size

    thread_q = (Quantity(parse_size(memory.thread_memory, "--thread-memory"), "--thread-memory")
                if memory.thread_memory
                else Quantity(DEFAULT_THREAD_BYTES, "assumed (Kegel's 256 KB per server)"))
    if memory.connection_memory is not None:
        conn_q = Quantity(parse_size(memory.connection_memory, "--connection-memory"), "--connection-memory")
    else:
        kernel = probe.kernel_socket_buffers()
        conn_q = Quantity(*kernel) if kernel else Quantity(KEGEL_CONNECTION_BYTES, "Kegel 1997: 64 KB")
    if memory.docroot is not None and memory.doc_set is not None:
        raise UsageError("give --docroot or --doc-set, not both")
    if memory.docroot is not None:
        size, files = probe.document_set_size(memory.docroot)
        doc_q = Quantity(size, f"{files} files under {memory.docroot}")
    elif memory.doc_set is not None:
        doc_q = Quantity(parse_size(memory.doc_set, "--doc-set"), "--doc-set")
    else:
        doc_q = Quantity(0, "not counted: give --docroot DIR or --doc-set SIZE")
    return thread_q, conn_q, doc_q


def _fpm_pools(cfg: Config, memory: MemoryOptions, parse_size: Callable[[str, str], int],
               notes: list[str]) -> tuple[list[Quantity], list[dict]]:
    """The php-fpm pools the config hands PHP to, as memory the sum holds
    back (pm.max_children x one child's memory each) and as JSON rows."""
    from advisor.capacity.sizing import Quantity, format_size
    from advisor.config import fpm_pools

    on_this_host = memory.measure and os.path.realpath(cfg.main_file).startswith("/etc/")
    setup = fpm_pools.read_fpm(cfg, memory.fpm_config, look_in_defaults=on_this_host)
    if setup is None:
        handoffs = fpm_pools.find_handoffs(cfg) if (memory.fpm_config or on_this_host) else []
        if handoffs:
            notes.append(f"{handoffs[0].file}:{handoffs[0].line} hands PHP to php-fpm but no pool file was "
                         f"found: its children are not counted (pass --fpm-config)")
        return [], []
    pools = setup.used_pools()
    measured = fpm_pools.measure_children([p.name for p in pools]) if memory.measure else {}
    given = parse_size(memory.fpm_memory, "--fpm-memory") if memory.fpm_memory is not None else None
    if given is not None and given <= 0:
        raise UsageError("--fpm-memory must be more than 0")
    services, rows = [], []
    for pool in pools:
        if given is not None:
            size, source = given, "--fpm-memory"
        elif pool.name in measured:
            size, source = measured[pool.name]
        else:
            size = fpm_pools.DEFAULT_CHILD_BYTES
            source = f"assumed {format_size(size)} a child (none running to measure; or give --fpm-memory)"
        children = pool.value("pm.max_children")
        services.append(Quantity(pool.max_children * size,
                                 f"pm.max_children {pool.max_children} ({children.where()}) x "
                                 f"{format_size(size)} ({source})", f"php-fpm pool {pool.name}"))
        holds = pool.max_children + pool.listen_backlog
        notes.append(f"php-fpm pool {pool.name}: {pool.max_children} children work on PHP requests and "
                     f"listen.backlog {pool.listen_backlog} more wait ({holds} in all); httpd workers past "
                     f"{pool.max_children} sending PHP only queue there, past {holds} they are refused (503)")
        rows.append({"name": pool.name, "file": pool.file, "line": pool.line, "children": pool.max_children,
                     "listen_backlog": pool.listen_backlog, "child_bytes": size,
                     "child_source": source, "settings": pool.summary(),
                     "handoffs": [f"{h.file}:{h.line}" for h in setup.handoffs_to(pool)]})
    return services, rows


def recommend_children(report: CapacityReport) -> None:
    """pm.max_children that fits beside httpd's pool as configured: RAM less
    the sum at the config's MaxRequestWorkers without this pool's share."""
    from advisor.capacity.sizing import format_size

    ram = report.memory.ram.bytes
    for pool in report.memory.fpm_pools:
        held = pool["children"] * pool["child_bytes"]
        room = ram - (report.current_total - held)
        fits = max(0, room // pool["child_bytes"])
        pool["children_that_fit"] = fits
        where = pool["settings"]["pm.max_children"]["where"]
        verdict = "fits" if fits >= pool["children"] else "does not fit"
        report.notes.append(
            f"php-fpm pool {pool['name']}: pm.max_children {pool['children']} ({where}) {verdict}: beside httpd's "
            f"pool at MaxRequestWorkers {report.settings.max_request_workers}, RAM leaves room for {fits} children "
            f"of {format_size(pool['child_bytes'])}")
