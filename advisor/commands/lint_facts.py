"""The host facts `lint`'s rules read: the RAM, the worker memory, the MPM,
the expected clients (given, from the settings file's [host], from --log, or
measured on this host), the php-fpm pools and a running host's snapshot.
"""

from __future__ import annotations

from typing import Any

from advisor.commands.lint_options import LintOptions
from advisor.errors import UsageError

MPMS = ("prefork", "worker", "event")
# The rules that size php-fpm pools: the pool files are read only for them.
FPM_RULES = {"C205", "C206", "C207", "C208"}


def _host_value(cli_value: Any, host: dict[str, Any], key: str) -> tuple[Any, str]:
    if cli_value is not None:
        return cli_value, f"--{key}"
    if key in host:
        return host[key], "the config file"
    return None, ""


def mpm_option(options: LintOptions, host: dict[str, Any]) -> str | None:
    """The MPM named by --mpm or the settings file, checked, lower-cased."""
    mpm, _ = _host_value(options.mpm, host, "mpm")
    if mpm is not None and str(mpm).lower() not in MPMS:
        raise UsageError(f"--mpm must be one of {', '.join(MPMS)}, got {mpm!r}")
    return str(mpm).lower() if mpm else None


def tls_profile_choice(options: LintOptions, file_settings) -> tuple[str, str]:
    """The TLS profile the run expects and where it was chosen: --tls-profile,
    else the settings file's `tls-profile`, else Mozilla's intermediate."""
    from advisor.lint.settings import check_choice
    from advisor.lint.tls_profile import DEFAULT_TLS_PROFILE, TLS_PROFILE_NAMES

    if options.tls_profile is not None:
        return check_choice(options.tls_profile, TLS_PROFILE_NAMES, "--tls-profile"), "--tls-profile"
    if file_settings.tls_profile is not None:
        return file_settings.tls_profile, f"tls-profile in {file_settings.path}"
    return DEFAULT_TLS_PROFILE, "the default"


def host_facts(config, options: LintOptions, host: dict[str, Any], enabled_codes: set[str],
           notes: list[str], recorder=None):
    """The host facts for the rules, and whether this host was probed for
    them (then the result depends on the host's state, found or not)."""
    from advisor.lint.context import HostFacts
    from advisor.lint.values import format_bytes, parse_size

    mpm = mpm_option(options, host)
    facts = HostFacts(apache_version=config.apache_version, mpm=mpm or config.mpm)
    ram, ram_source = _host_value(options.ram, host, "ram")
    if ram is not None:
        facts.ram, facts.ram_source = parse_size(str(ram), "--ram"), ram_source
    worker, worker_source = _host_value(options.worker_memory, host, "worker-memory")
    if worker is not None:
        facts.worker_memory = parse_size(str(worker), "--worker-memory")
        facts.worker_memory_source = worker_source
    clients, _ = _host_value(options.expected_clients, host, "expected-clients")
    if clients is not None:
        try:
            facts.expected_clients = int(clients)
        except (TypeError, ValueError):
            raise UsageError(f"expected-clients must be a whole number, got {clients!r}") from None
        if facts.expected_clients <= 0:
            raise UsageError("--expected-clients must be positive")
    if facts.expected_clients is None and options.log_paths and "C202" in enabled_codes:
        facts.expected_clients = _clients_from_log(config, options, facts.mpm, notes)
    for key, attribute in (("os-reserve", "os_reserve"), ("per-connection", "per_connection"),
                           ("document-set", "document_set")):
        if key in host:
            setattr(facts, attribute, parse_size(str(host[key]), key))

    facts.live = _live_snapshot(config, options)
    wants_memory = bool(enabled_codes & {"C201", "C202"})
    live = options.live
    if live is None:
        from advisor.lint.host import is_system_config

        live = is_system_config(config.main_file)
    probed = wants_memory and live and (facts.ram is None or facts.worker_memory is None)
    if probed:
        from advisor.lint import host as host_probe

        if facts.ram is None:
            limit = host_probe.measure_ram(config.main_file)
            if limit is not None:
                facts.ram, facts.ram_source = int(limit.value), limit.describe()
                if limit.origin.startswith("cgroup") and facts.os_reserve is None:
                    from advisor.capacity.sizing import default_os_reserve

                    # The host's 512 MiB reserve would leave a 512 MiB pod no worker (capacity's sizing).
                    facts.os_reserve = default_os_reserve(facts.ram, cgroup=True).bytes
                notes.append(f"RAM {format_bytes(facts.ram)}: {facts.ram_source}")
        if facts.worker_memory is None:
            size, count = host_probe.measure_worker_memory(config.main_file)
            if size is not None:
                facts.worker_memory = size
                facts.worker_memory_source = f"measured from {count} running httpd children"
                notes.append(f"per-worker memory {format_bytes(size)} "
                             f"(private memory of {count} running httpd children)")
    fpm_probed = bool(enabled_codes & FPM_RULES) and _fpm_facts(config, options, facts, live, notes, recorder)
    # A snapshot taken now is the host's state, never a cacheable input; a saved
    # one (--live-facts) is a file the cache watches like the config's.
    return facts, probed or fpm_probed or (facts.live is not None and not options.live_facts)


def _fpm_facts(config, options: LintOptions, facts, live: bool, notes: list[str], recorder) -> bool:
    """The php-fpm pools the tree hands PHP to, and their children's memory.
    True when this host was probed for them (its /etc, its running
    children): the result then depends on the host and is not cached. Files
    named with --fpm-config are recorded as inputs like the tree's."""
    from advisor.config import fpm_pools
    from advisor.lint.values import parse_size

    setup = fpm_pools.read_fpm(config, options.fpm_config, look_in_defaults=live, recorder=recorder)
    looked = live and "proxy_fcgi_module" in config.modules
    if setup is None:
        if options.fpm_config or live:
            handoffs = fpm_pools.find_handoffs(config)
            if handoffs:
                notes.append(f"php-fpm rules skipped: {handoffs[0].file}:{handoffs[0].line} hands PHP to "
                             f"php-fpm but no pool file was found (pass --fpm-config)")
        return looked
    facts.fpm = setup
    if facts.ram is None:
        notes.append("C205, C208 skipped: RAM unknown (pass --ram, set [host] ram, or lint this host's "
                     "own config under /etc)")
    names = [pool.name for pool in setup.used_pools()]
    if options.fpm_memory is not None:
        size = parse_size(options.fpm_memory, "--fpm-memory")
        if size <= 0:
            raise UsageError("--fpm-memory must be more than 0")
        facts.fpm_memory = {name: (size, "--fpm-memory") for name in names}
    elif live:
        facts.fpm_memory = fpm_pools.measure_children(names)
    return looked


def _clients_from_log(config, options: LintOptions, mpm: str | None, notes: list[str]) -> int:
    """The busy workers of the log's busiest second (Little's law: arrivals x
    %D), as the concurrent clients the server must hold."""
    import math

    from advisor.commands.logdemand_input import read_log_demand

    log = read_log_demand(options.log_paths, options.log_format, config, mpm or "event", None,
                          no_hold_hint="log %D, or give --expected-clients")
    demand = log.demand
    clients = max(1, math.ceil(demand.peak_busy))
    from advisor.capacity.logcapacity import utc

    notes.append(f"expected clients {clients}: the busy workers of the busiest second in {', '.join(demand.files)} "
                 f"({utc(demand.peak_busy_at)}; {demand.busiest_second_rate} req/s at most in one second)")
    return clients


def _live_snapshot(config, options: LintOptions) -> dict | None:
    """The running host's snapshot for the live-host rules: from --live-facts
    FILE, or taken on this machine with an explicit --live; else None."""
    if options.live_facts:
        import json

        try:
            with open(options.live_facts, encoding="utf-8") as handle:
                snapshot = json.load(handle)
        except OSError as exc:
            raise UsageError(f"cannot read --live-facts {options.live_facts}: {exc.strerror}") from None
        except ValueError as exc:
            raise UsageError(f"--live-facts {options.live_facts} is not JSON: {exc}",
                             hint="pass a snapshot as `lint --host` takes it") from None
        if not isinstance(snapshot, dict):
            raise UsageError(f"--live-facts {options.live_facts} is not a JSON object")
        return snapshot
    if options.live is True:
        from advisor.config.oracle import find_httpd
        from advisor.lint.host import collect_live_facts

        binary = find_httpd()
        if binary is not None:
            return collect_live_facts(config.main_file, binary, list(config.files))
    return None
