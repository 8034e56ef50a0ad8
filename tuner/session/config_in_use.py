"""What a tuning session reads of its target before the plan: the config in
use (as the admin wrote it), the workers this host's RAM holds, and from
them the space the session searches, less the dimensions a later line of
the config overrides."""

from __future__ import annotations

from pathlib import Path

from advisor.errors import ConfigError, UsageError
from advisor.tuner.search.space import Space
from advisor.tuner.session.session_context import SessionSettings
from advisor.tuner.staging.target import HostKernel


def read_space(target, settings: SessionSettings, work_dir: Path | None, objective, workload):
    """(the config in use, its LoadOptions, the space derived from it): bounded
    by the RAM sizing of the target's host, narrowed by `--space`; with HTTP/2
    visitors only (`protocol` h2) the MPM switch leaves prefork out; a mix
    keeps it (its HTTP/2 share falls back to HTTP/1.1 there). With HTTP/2
    visitors the keep-alive stays open across a visit's think time
    (space_derive.keep_h2_connections_open)."""
    protocol = objective.protocol
    http2 = protocol == "h2"
    h2_idle_ms = None
    if protocol in ("h2", "mix") and workload.think_s:
        h2_idle_ms = 1000.0 * workload.think_s + objective.rtt_ms  # between a visit's pages
    from advisor.tuner.search.space import DEFAULT_SOMAXCONN
    from advisor.tuner.search.space_derive import derive_space, mpm_kept_by
    from advisor.tuner.search.space_narrow import narrow_from_file

    cfg, options = load_config_in_use(target)
    if settings.allow_mpm_switch and mpm_kept_by(cfg) is None:
        target.check_mpm_switch(cfg)  # one line, exit 2, before anything changes
    mpms = ("prefork", "worker", "event") if settings.allow_mpm_switch else (cfg.mpm,)
    if http2:
        mpms = tuple(m for m in mpms if m != "prefork") or mpms
    host = target.host_kernel()
    docroot = docroot_of(work_dir) if target.on_this_machine else None
    bounds, why = ram_workers(cfg, [m for m in mpms if m], settings.ram_bytes, docroot, host)
    space = derive_space(cfg, bounds, allow_mpm_switch=settings.allow_mpm_switch,
                         somaxconn=host.somaxconn or DEFAULT_SOMAXCONN, ram_why=why,
                         over_tls=target.base_url.lower().startswith("https:"), http2=http2,
                         protocol=protocol, h2_idle_ms=h2_idle_ms)
    if settings.space_file:
        space = narrow_from_file(space, settings.space_file)
    leave_out_overridden(target, cfg, space)
    return cfg, options, space


def leave_out_overridden(target, cfg, space: Space) -> None:
    """Dimensions whose directive a later line of the config overrides (or the
    virtual host the URL reaches sets) leave the search, with the line in the
    plan: a trial would measure the config's value under the trial's name.
    When that leaves nothing to search, the session is refused."""
    from advisor.tuner.search.space_narrow import leave_out
    from advisor.tuner.staging.overrides import target_overrides

    names = [d.name for d in space.dimensions if d.name != "MPM"] + ["ServerLimit", "ThreadLimit"]
    found = target_overrides(target, names, cfg)
    for override in found:
        leave_out(space, override.name, f"{target.where(override.file)}:{override.line}: {override.what()}")
    if found and not space.free:
        first = found[0]
        raise ConfigError(f"nothing is left to tune: {first.what()}, and every other dimension is fixed",
                          file=target.where(first.file), line=first.line, hint=first.fix())


def docroot_of(work_dir: Path | None) -> str | None:
    """The sandbox's document root under `work_dir`, when it has one."""
    if work_dir is not None and (work_dir / "docroot").is_dir():
        return str(work_dir / "docroot")
    return None


def load_config_in_use(target):
    """The config the target's server reads, as the admin wrote it: the
    sandbox's instrument include (one more worker for the metrics
    collector's connection) is the tool's, not the admin's, and is left out."""
    from advisor.config import load_config

    source = target.config_source()
    if source is None:
        raise UsageError("the target does not say which config its server reads",
                         hint="give the existing server's config with --config")
    path, options = source
    cfg = load_config(path, options)
    sandbox = getattr(target, "sandbox", None)
    if sandbox is not None:
        hide_file(cfg.effective, str(sandbox.instrument_path))
    return cfg, options


def hide_file(section, path: str) -> None:
    section.children = [c for c in section.children if c.file != path]
    for child in section.children:
        if getattr(child, "children", None):
            hide_file(child, path)


def ram_workers(cfg, mpms: list[str], ram_bytes: int | None, docroot: str | None,
                host: HostKernel) -> tuple[dict[str, int], str]:
    """How many workers of each MPM this host's RAM holds, by capacity's sizing
    (Kegel's sum), and a few words on where the figure comes from.

    Child sizes are capacity's assumed ones, not measured: a staging
    server's children are too fresh to show what they grow to, and the
    bound must come out the same when a session is resumed. A threaded
    worker is sized at its costliest point of the space (the fewest threads
    per child, event's most parked connections), so that no point's pool
    outgrows RAM.
    """
    from advisor.capacity import host_probe as probe
    from advisor.capacity.sizing import (DEFAULT_CHILD_BYTES, DEFAULT_THREAD_BYTES, KEGEL_CONNECTION_BYTES,
                                         MemoryInputs, Quantity, assumed_child, default_os_reserve,
                                         format_size, recommend)
    from advisor.tuner.search.space import ASYNC_FACTOR_GUARD, THREADS_PER_CHILD_GUARD

    ram = Quantity(ram_bytes, "--ram") if ram_bytes else Quantity(host.ram_bytes, f"{host.where} RAM")
    connection = (Quantity(host.socket_buffer_bytes, f"{host.where} kernel tcp_rmem + tcp_wmem defaults")
                  if host.socket_buffer_bytes else Quantity(KEGEL_CONNECTION_BYTES, "Kegel 1997: 64 KB"))
    if docroot is not None:
        size, files = probe.document_set_size(docroot)
        documents = Quantity(size, f"{files} files under {docroot}")
    else:
        documents = Quantity(0, "not counted")
    has_php = any(m.startswith("php") for m in cfg.modules)
    bounds: dict[str, int] = {}
    if not mpms:
        return bounds, ""  # no MPM: derive_space says so, with the file
    for mpm in mpms:
        threads = 1 if mpm == "prefork" else THREADS_PER_CHILD_GUARD[0]
        inputs = MemoryInputs(ram, default_os_reserve(ram.bytes), [], Quantity(DEFAULT_CHILD_BYTES, "assumed"),
                              assumed_child(mpm, threads, has_php), Quantity(DEFAULT_THREAD_BYTES, "assumed"),
                              connection, documents)
        bounds[mpm] = recommend(inputs, mpm, threads, async_factor=float(ASYNC_FACTOR_GUARD[1])).max_request_workers
    child = assumed_child(mpms[0], 1, has_php)
    php = " with mod_php" if has_php and mpms[0] == "prefork" else ""
    threaded = [m for m in mpms if m != "prefork"]
    sized = (f"; a {'/'.join(threaded)} worker sized at {THREADS_PER_CHILD_GUARD[0]} threads per child"
             + (f" and AsyncRequestWorkerFactor {ASYNC_FACTOR_GUARD[1]}" if "event" in threaded else "")
             if threaded else "")
    why = (f"{ram.source} {format_size(ram.bytes)}, {format_size(child.average)} per child{php} as capacity "
           f"assumes{sized}; --ram sizes for another host")
    return bounds, why
