"""`apache-advisor lint`, `rules` and `explain`."""

from __future__ import annotations

import gc
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, List, Optional

import typer

from advisor.commands.options import (AllowMissingIncludesOption, ApacheVersionOption, DefineOption,
                                 ModuleOption, ModulesFromOption, ServerRootOption)

from advisor.errors import UsageError

MPMS = ("prefork", "worker", "event")
# The rules that size php-fpm pools: the pool files are read only for them.
FPM_RULES = {"C205", "C206", "C207", "C208"}


@dataclass
class LintOptions:
    """Everything `lint` was asked, before the config file is merged in."""

    paths: list[str]
    format: str = "text"
    output: str | None = None
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    profile: str | None = None
    fail_on: str | None = None
    ram: str | None = None
    worker_memory: str | None = None
    expected_clients: int | None = None
    mpm: str | None = None
    apache_version: str | None = None
    defines: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    modules_from: str | None = None
    server_root: str | None = None
    allow_missing_includes: bool = False
    config: str | None = None
    isolated: bool = False
    live: bool | None = None
    show_evidence: bool = True
    cache: bool = True
    cache_dir: str | None = None
    group: bool = True
    """Text output: a finding repeated in many places in the same shape once."""
    statistics: bool = False
    """Counts per rule instead of the findings (text and JSON)."""
    log_paths: list[str] = field(default_factory=list)
    """--log: access logs whose busiest second gives C202 the expected clients."""
    log_format: str | None = None
    fpm_config: list[str] = field(default_factory=list)
    """php-fpm.conf, pool files or pool.d directories (issue 30)."""
    fpm_memory: str | None = None
    """Memory of one php-fpm child; default measured or assumed."""
    live_facts: str | None = None
    """A saved snapshot of a running host (JSON, as advisor.lint.host.collect_live_facts
    writes it) for the live-host rules: what rule fixtures and offline checks use."""
    edits: bool = True
    """Whether the findings need their mechanical edits (`fix` does, SARIF shows
    them). A result saved to the cache always has them, whatever this says."""


class LintRun:
    """A lint's result. From the cache, its findings are decoded only when
    something reads them: a report saved with the entry needs none."""

    def __init__(self, findings: list | None, notes: list[str], files: list[str], exit_code: int,
                 trees: list[tuple[str, str]] | None = None, *, cached=None, saved=None,
                 afresh=None) -> None:
        self._findings = findings
        self.notes = notes
        self.files = files
        self.exit_code = exit_code
        self.trees = trees or []
        """(main file, server root) of each config linted (`fix` copies them)."""
        self._cached = cached
        self._afresh = afresh
        """Lints again when the cached findings turn out unreadable."""
        self.saved = saved
        """(cache, key, token) of the entry holding this result, when there is one."""

    @property
    def findings(self) -> list:
        if self._findings is None:
            from advisor.lint.edits import Edit
            from advisor.lint.rule import Finding

            try:
                self._findings = [Finding(*fields[:7], edit=Edit(*fields[7]) if len(fields) > 7 and fields[7]
                                          else None)
                                  for fields in self._cached.finding_fields()]
            except (OSError, ValueError, TypeError, KeyError, IndexError):
                # A damaged entry only ever costs time: lint afresh.
                fresh = self._afresh()
                self._findings = fresh.findings
                self.notes, self.files, self.exit_code = fresh.notes, fresh.files, fresh.exit_code
                self.saved = None
        return self._findings


def _run_order(run: tuple) -> tuple[int, str]:
    """A file's findings (position in read order, file, findings) sort by
    read order, then by name (files not read: after all the others)."""
    return run[0], run[1]


def _display_path(path: str) -> str:
    """Relative to the working directory when below it (what CI annotations
    and SARIF want), absolute otherwise."""
    absolute = os.path.abspath(path)
    cwd = os.getcwd()
    if absolute == cwd or absolute.startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, cwd)
    return absolute


def _plain_path(path: str) -> bool:
    """Whether an absolute path is already normal (no `.`, `..` or empty
    component): then below the working directory its display form is the
    rest of it, as relpath would say."""
    return "//" not in path and "/./" not in path and "/../" not in path \
        and not path.endswith(("/.", "/..", "/"))


def _host_value(cli_value: Any, host: dict[str, Any], key: str) -> tuple[Any, str]:
    if cli_value is not None:
        return cli_value, f"--{key}"
    if key in host:
        return host[key], "the config file"
    return None, ""


def _mpm_option(options: LintOptions, host: dict[str, Any]) -> str | None:
    """The MPM named by --mpm or the settings file, checked, lower-cased."""
    mpm, _ = _host_value(options.mpm, host, "mpm")
    if mpm is not None and str(mpm).lower() not in MPMS:
        raise UsageError(f"--mpm must be one of {', '.join(MPMS)}, got {mpm!r}")
    return str(mpm).lower() if mpm else None


def _facts(config, options: LintOptions, host: dict[str, Any], enabled_codes: set[str],
           notes: list[str], recorder=None):
    """The host facts for the rules, and whether this host was probed for
    them (then the result depends on the host's state, found or not)."""
    from advisor.lint.context import HostFacts
    from advisor.lint.values import format_bytes, parse_size

    mpm = _mpm_option(options, host)
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


def _cache_options(options: LintOptions) -> dict[str, Any]:
    """The options a lint result depends on (not how it is shown or where)."""
    shown_only = {"format", "output", "show_evidence", "config", "cache", "cache_dir", "group",
                  "statistics", "edits"}
    return {name: value for name, value in vars(options).items() if name not in shown_only}


def _open_cache(options: LintOptions, config_path: str | None):
    """The result cache and this run's key in it, or None when not caching."""
    if not options.cache or os.environ.get("APACHE_ADVISOR_NO_CACHE") or options.log_paths:
        return None  # (a log grows without the config changing: its result is not kept)
    from advisor.lint.cache import LintCache, default_directory, entry_key

    directory = options.cache_dir or default_directory()
    if not directory:
        return None
    try:
        return LintCache(directory), entry_key(_cache_options(options), config_path)
    except OSError:
        return None  # an unreadable settings file: the lint below says so in one line


def run_lint(options: LintOptions) -> LintRun:
    """Load every PATH, lint it, and say what the exit code should be."""
    from advisor.lint.settings import find_config_file

    if not options.paths:
        raise UsageError("lint needs at least one PATH", hint="the main config file, e.g. /etc/apache2/apache2.conf")
    if options.format not in ("text", "json", "sarif", "github"):
        raise UsageError(f"--format must be text, json, sarif or github, got {options.format!r}")
    if options.statistics and options.format not in ("text", "json"):
        raise UsageError(f"--statistics works with --format text or json, not {options.format}",
                         hint="SARIF and GitHub output always carry every finding")

    config_path = None
    if not options.isolated:
        config_path = options.config or find_config_file()
        if options.config and not os.path.isfile(options.config):
            raise UsageError(f"config file {options.config} does not exist")

    opened = _open_cache(options, config_path)
    if opened is not None:
        cache, key = opened
        hit = cache.lookup(key)
        if hit is not None:
            return LintRun(None, hit.notes, hit.files, hit.exit_code, cached=hit,
                           saved=(cache, key, hit.token),
                           afresh=lambda: _lint_afresh(options, config_path, record=False)[0])
    started_ns = time.time_ns()
    run, recorder, probed_host = _lint_afresh(options, config_path, record=opened is not None)
    if opened is not None and recorder is not None and not probed_host:
        from advisor.lint.cache import CachedResult

        result = CachedResult(
            [[f.code, f.severity, f.message, f.file, f.line, f.evidence, f.fix,
              f.edit.fields() if f.edit else None] for f in run.findings],
            run.notes, run.files, run.exit_code)
        if cache.store(key, recorder, result, started_ns):
            run.saved = (cache, key, result.token)
    return run


@dataclass
class LintSetup:
    """What every tree of one lint run is checked with: the settings file,
    the rules enabled, the failure threshold."""

    file_settings: Any
    enabled: list
    enabled_codes: set[str]
    known_codes: set[str]
    fail_on: str


def lint_setup(options: LintOptions, config_path: str | None) -> LintSetup:
    from advisor import rules as registry
    from advisor.lint.rule import PROFILES
    from advisor.lint.settings import FAIL_ON, FileSettings, check_choice, load_file_settings, select_rules

    file_settings = load_file_settings(config_path) if config_path else FileSettings()
    profile = check_choice(options.profile or file_settings.profile or "all", PROFILES, "--profile")
    fail_on = check_choice(options.fail_on or file_settings.fail_on or "warning", FAIL_ON, "--fail-on")
    all_rules = registry.all_rules()
    select = options.select if options.select else file_settings.select
    ignore = list(file_settings.ignore) + list(options.ignore)
    enabled = select_rules(all_rules, select, ignore, profile)
    enabled_codes = {rule.code for rule in enabled}
    known_codes = {rule.code for rule in all_rules}
    for code in file_settings.severity:
        if code not in known_codes:
            raise UsageError(f"[severity] names unknown rule {code}", file_settings.path)
    return LintSetup(file_settings, enabled, enabled_codes, known_codes, fail_on)


def _lint_afresh(options: LintOptions, config_path: str | None, record: bool):
    from dataclasses import replace

    from advisor.commands.options import load_options
    from advisor.config.inputs import InputRecorder
    from advisor.lint.engine import lint_config
    from advisor.lint.rule import SEVERITY_RANK, max_severity
    from advisor.config.loader import load_config
    from advisor.lint.edits import Edit

    setup = lint_setup(options, config_path)
    file_settings, enabled, enabled_codes = setup.file_settings, setup.enabled, setup.enabled_codes
    known_codes, fail_on = setup.known_codes, setup.fail_on
    host = file_settings.host
    version = options.apache_version or str(host.get("apache-version", "2.4"))
    load = load_options(options.defines, options.modules, options.modules_from, version,
                        options.server_root, options.allow_missing_includes,
                        mpm=_mpm_option(options, host))
    recorder = InputRecorder() if record else None
    if recorder is not None and options.live_facts:
        recorder.looked_at(options.live_facts)
    # The rules read the effective tree: built while reading, not copied after.
    load = replace(load, recorder=recorder, effective=True)

    findings: list = []
    notes: list[str] = []
    files: list[str] = []
    trees: list[tuple[str, str]] = []
    probed_host = False
    wants_edits = options.edits or recorder is not None
    for path in options.paths:
        config = load_config(path, load)
        facts, probed = _facts(config, options, host, enabled_codes, notes, recorder)
        probed_host = probed_host or probed
        result = lint_config(config, facts, enabled, known_codes=known_codes, settings=file_settings,
                             edits=wants_edits)
        findings.extend(result.findings)
        notes.extend(note for note in result.notes if note not in notes)
        files.extend(result.files)
        trees.append((config.main_file, config.server_root))
    # Files in the order httpd reads them (main file first), then by line.
    read_order = {path: position for position, path in enumerate(dict.fromkeys(files))}
    from operator import attrgetter

    # The files that have findings, in the engine's order (by name).
    with_findings = list(dict.fromkeys(map(attrgetter("file"), findings)))
    last = len(read_order)
    if len(options.paths) > 1:
        findings.sort(key=lambda f: (read_order.get(f.file, last), f.file, f.line, f.code))
    elif _out_of_read_order([read_order.get(file, last) for file in with_findings]):
        # One tree: the engine sorted its findings by (file, line, code), so
        # ordering the runs of each file by read order (a stable sort of one
        # key per file, not per finding) gives the same order. (When names
        # sort as the files are read, as with one directory of hosts, the
        # order is already right.)
        from itertools import chain, groupby

        runs = [(read_order.get(file, last), file, list(run))
                for file, run in groupby(findings, key=attrgetter("file"))]
        runs.sort(key=_run_order)
        findings = list(chain.from_iterable(run for _, _, run in runs))
    # Once per file, not per finding; and for a plain absolute path below
    # the working directory, a slice instead of relpath (a mass-hosting tree
    # has tens of thousands of findings in as many files). A fix's file is
    # its finding's file in nearly every case: the same table serves it.
    shown: dict[str, str] = {}
    cwd = os.getcwd().rstrip(os.sep)
    below = cwd + os.sep

    def display_of(path: str) -> str:
        display = shown.get(path)
        if display is None:
            if path[:1] == os.sep and path != cwd and _plain_path(path):
                # Already absolute and normal: shown as it is unless below.
                display = path[len(below):] if path.startswith(below) else path
            else:
                display = _display_path(path)
            shown[path] = display
        return display

    # Findings come in runs of one file: the display path is looked up once
    # per run. Nothing to do when every file is shown as it is named (a tree
    # outside the working directory) and no finding carries an edit.
    run_file: str | None = None
    run_display = ""
    moved = any(display_of(file) != file for file in with_findings)
    for finding in findings if moved or wants_edits else ():
        file = finding.file
        if file != run_file:
            run_file, run_display = file, display_of(file)
        finding.file = run_display
        edit = finding.edit
        if edit is not None:
            edit_file = run_display if edit.file == file else display_of(edit.file)
            if edit_file != edit.file:
                # Built field by field: dataclasses.replace looks every field
                # up again (0.45 s for 40,000 fixes).
                finding.edit = Edit(edit_file, edit.line, edit.start, edit.end, edit.text, edit.original,
                                    edit.summary, edit.blocked)

    worst = max_severity(findings)
    failed = (fail_on != "never" and worst is not None
              and SEVERITY_RANK[worst] >= SEVERITY_RANK[fail_on])
    run = LintRun(findings, notes, list(dict.fromkeys(files)), 1 if failed else 0, trees)
    return run, recorder, probed_host


def _out_of_read_order(positions: list[int]) -> bool:
    """Whether files sorted by name (their read positions in that order) are
    not in the order httpd reads them."""
    return any(earlier > later for earlier, later in zip(positions, positions[1:]))


def write_atomically(path: str, text: str | Iterable[str]) -> None:
    """Write the whole report or nothing: a temporary file renamed into place.
    `text` is the report, or its pieces in order (see `render`)."""
    import tempfile  # only here: importing it costs every lint about 3 ms

    directory = os.path.dirname(os.path.abspath(path)) or "."
    if not os.path.isdir(directory):
        raise UsageError(f"cannot write {path}: directory {directory} does not exist")
    handle, temporary = tempfile.mkstemp(prefix=".apache-advisor-", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", errors="surrogateescape") as stream:
            for piece in (text,) if isinstance(text, str) else text:
                stream.write(piece)
        os.replace(temporary, path)
    except BaseException as exc:
        if os.path.exists(temporary):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write {path}: {exc.strerror}") from None
        raise


def _report_variant(options: LintOptions) -> str | None:
    """The name a report of these options is saved under beside the cache
    entry, or None when it is not saved: text for a terminal (styled, and
    the terminal may change) is made afresh."""
    if options.format == "text" and options.output is None and not options.statistics:
        from advisor.output import text

        if text.styled(sys.stdout):
            return None
    return (f"{options.format}-{'evidence' if options.show_evidence else 'brief'}-"
            f"{'grouped' if options.group else 'every'}{'-statistics' if options.statistics else ''}")


def report_text(run: LintRun, options: LintOptions) -> Iterable[str] | None:
    """The report's pieces in order, from the cache when a report of this
    result was saved there, else made (and saved as they are written); None
    when it was printed straight to stdout (text for a terminal)."""
    variant = _report_variant(options)
    if variant is None:
        return render(run, options, colour=None)
    if run.saved is not None:
        cache, key, token = run.saved
        saved = cache.report(key, token, variant)
        if saved is not None:
            return saved
    made = render(run, options, colour=False)
    if run.saved is not None and made is not None:
        cache, key, token = run.saved
        return cache.storing_report(key, token, variant, made)
    return made


def render(run: LintRun, options: LintOptions, *, colour: bool | None) -> Iterable[str] | None:
    """The report's pieces in order (JSON and SARIF of tens of thousands of
    findings are written a piece at a time, never held whole), or None when
    it was printed straight to stdout (text, `colour` not False and no
    --output)."""
    from advisor import rules as registry

    if options.statistics:
        return (_render_statistics(run, options),)
    if options.format == "json":
        from advisor.output import jsonfmt

        return jsonfmt.render_pieces(run.findings)
    if options.format == "sarif":
        from advisor.output import sarif

        return sarif.render_pieces(run.findings, list(registry.all_rules()), run.notes)
    if options.format == "github":
        from advisor.output import github

        return (github.render(run.findings, registry.rule_by_code()),)
    import io

    from advisor.output import text

    if options.output is None and colour is not False:
        text.render(run.findings, sys.stdout, notes=run.notes, files_checked=len(run.files),
                    show_evidence=options.show_evidence, colour=colour, group=options.group)
        return None
    buffer = io.StringIO()
    text.render(run.findings, buffer, notes=run.notes, files_checked=len(run.files),
                show_evidence=options.show_evidence, colour=False, group=options.group)
    return (buffer.getvalue(),)


def _render_statistics(run: LintRun, options: LintOptions) -> str:
    """`--statistics`: the count of findings per rule (as ruff prints them)."""
    import io

    from advisor import rules as registry
    from advisor.output import text

    if options.format == "json":
        import json

        return json.dumps([{"code": code, "severity": severity, "count": count}
                           for code, severity, count in text.statistics(run.findings)], indent=2) + "\n"
    summaries = {rule.code: rule.slug for rule in registry.all_rules()}
    buffer = io.StringIO()
    text.render_statistics(run.findings, buffer, summaries, files_checked=len(run.files))
    return buffer.getvalue()


def register(app: typer.Typer) -> None:
    @app.command()
    def lint(
        paths: Optional[List[str]] = typer.Argument(None, help="Main config file(s), or directories holding apache2.conf / httpd.conf (with --host or --inventory: the main config's path on each host, default /etc/apache2/apache2.conf)."),
        format: str = typer.Option("text", "--format", "-f", help="text, json, sarif or github."),
        output: Optional[str] = typer.Option(None, "--output", "-o", help="Write the report to FILE instead of stdout."),
        select: Optional[List[str]] = typer.Option(None, "--select", help="Only these rules: codes, prefixes, categories or slugs (comma-separated or repeated)."),
        ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Skip these rules (same forms as --select)."),
        profile: Optional[str] = typer.Option(None, "--profile", help="performance, security or all (default all)."),
        fail_on: Optional[str] = typer.Option(None, "--fail-on", help="Exit 1 when a finding is at least this severe: error, warning (default), info or never."),
        ram: Optional[str] = typer.Option(None, "--ram", help="RAM of the server that runs this config, e.g. 4G."),
        worker_memory: Optional[str] = typer.Option(None, "--worker-memory", help="Private memory of one httpd child process, e.g. 48M."),
        expected_clients: Optional[int] = typer.Option(None, "--expected-clients", help="Concurrent clients the server should hold."),
        log: Optional[List[str]] = typer.Option(None, "--log", help="Access log whose busiest second (busy workers by Little's law, from %D) gives C202 the expected clients when --expected-clients is not given; repeat for rotated files."),
        log_format: Optional[str] = typer.Option(None, "--log-format", help="--log: the log's LogFormat string, or common/combined (default: the CustomLog's format in the config)."),
        mpm: Optional[str] = typer.Option(None, "--mpm", help="The MPM in use (prefork, worker, event) when the config does not load one."),
        apache_version: ApacheVersionOption = None,
        define: DefineOption = None,
        module: ModuleOption = None,
        modules_from: ModulesFromOption = None,
        server_root: ServerRootOption = None,
        allow_missing_includes: AllowMissingIncludesOption = False,
        config: Optional[str] = typer.Option(None, "--config", help="Settings file (default: nearest .apache-advisor.toml or pyproject.toml)."),
        isolated: bool = typer.Option(False, "--isolated", help="Ignore any settings file."),
        live: Optional[bool] = typer.Option(None, "--live/--no-live", help="Measure RAM and worker memory on this host (default: when the config is under /etc); an explicit --live also runs the live-host rules S513-S518 here."),
        evidence: bool = typer.Option(True, "--evidence/--no-evidence", help="Show each finding's evidence line in text output."),
        cache: bool = typer.Option(True, "--cache/--no-cache", help="Reuse the last result when no file, directory or variable it read has changed (also APACHE_ADVISOR_NO_CACHE=1)."),
        cache_dir: Optional[str] = typer.Option(None, "--cache-dir", help="Where results are kept (default $APACHE_ADVISOR_CACHE_DIR, else ~/.cache/apache-advisor)."),
        group: bool = typer.Option(True, "--group/--no-group", help="Text output: print a finding repeated in 4 or more places in the same shape once, with its count and first places (--no-group prints every one; JSON and SARIF always do)."),
        statistics: bool = typer.Option(False, "--statistics", help="Print the number of findings per rule instead of the findings (text or JSON); the exit code is unchanged."),
        fpm_config: Optional[List[str]] = typer.Option(None, "--fpm-config", help="php-fpm.conf, a pool file or a pool.d directory the config hands PHP to (default on this host: /etc/php/*/fpm/pool.d, /etc/php-fpm.d); repeat for several."),
        fpm_memory: Optional[str] = typer.Option(None, "--fpm-memory", help="Memory of one php-fpm child, e.g. 48M (default: measured PSS of its running children, else 48M)."),
        host: Optional[List[str]] = typer.Option(None, "--host", help="Lint the tree [USER@]HOST[:PORT] reads, over SSH, with that host's modules, version, MPM and RAM (repeat for several)."),
        inventory: Optional[str] = typer.Option(None, "--inventory", "-i", help="Lint the hosts of an Ansible inventory (INI or YAML), over SSH."),
        limit: Optional[str] = typer.Option(None, "--limit", help="With --inventory: an Ansible host pattern (group, host, glob, ~regex, !excluded, &also)."),
        ssh_option: Optional[List[str]] = typer.Option(None, "--ssh-option", help="With --host or --inventory: an ssh -o option, e.g. UserKnownHostsFile=FILE (repeat)."),
        identity: Optional[str] = typer.Option(None, "--identity", help="With --host or --inventory: the private key ssh uses (an inventory's ansible_ssh_private_key_file wins)."),
        jobs: int = typer.Option(8, "--jobs", "-j", help="With --host or --inventory: hosts read at once."),
        live_facts: Optional[str] = typer.Option(None, "--live-facts", help="A saved snapshot of a running host (JSON) for the live-host rules S513-S518."),
    ) -> None:
        """Check configs for risky, slow or broken settings; exit 1 on findings at --fail-on or above."""
        from dataclasses import replace

        from advisor.lint.settings import split_tokens

        options = LintOptions(
            paths=list(paths or []), format=format.lower(), output=output,
            select=split_tokens(select) or None, ignore=split_tokens(ignore), profile=profile,
            fail_on=fail_on, ram=ram, worker_memory=worker_memory,
            expected_clients=expected_clients, mpm=mpm, apache_version=apache_version,
            defines=list(define or []), modules=list(module or []), modules_from=modules_from,
            server_root=server_root, allow_missing_includes=allow_missing_includes,
            config=config, isolated=isolated, live=live,
            show_evidence=evidence, cache=cache, cache_dir=cache_dir, group=group,
            statistics=statistics, log_paths=list(log or []), log_format=log_format,
            fpm_config=list(fpm_config or []), fpm_memory=fpm_memory,
            live_facts=live_facts,
            # Of lint's reports, only SARIF shows the edits (as `fixes`).
            edits=format.lower() == "sarif",
        )
        if host or inventory:
            # A host's tree is read afresh each time (no cache) and never measured on this machine.
            _lint_hosts(list(host or []), inventory, limit, list(ssh_option or []), identity, jobs,
                        replace(options, live=False, cache=False))
        if ssh_option or identity or limit:
            raise UsageError("--ssh-option, --identity and --limit go with --host or --inventory",
                             hint="name the hosts to read over SSH")
        # The model (tens of thousands of nodes) lives until the command ends
        # and holds no garbage: the cycle collector would only rescan it
        # (~11 ms on a 2,000-file tree).
        collecting = gc.isenabled()
        gc.disable()
        try:
            run = run_lint(options)
            report = report_text(run, options)
            # Written as it is made, piece by piece (inside: the pieces are
            # made from the model as they are written).
            if report is not None:
                if output:
                    write_atomically(output, report)
                else:
                    for piece in report:
                        sys.stdout.write(piece)
                    sys.stdout.flush()
        finally:
            if collecting:
                gc.enable()
        raise typer.Exit(code=run.exit_code)

    def _lint_hosts(host_texts: list[str], inventory: str | None, limit: str | None,
                    ssh_options: list[str], identity: str | None, jobs: int, options: LintOptions) -> None:
        """`lint --host` / `--inventory`: every host's tree over SSH (advisor/commands/fleet.py)."""
        from advisor.commands import fleet

        if options.format not in ("text", "json", "sarif", "github"):
            raise UsageError(f"--format must be text, json, sarif or github, got {options.format!r}")
        if options.statistics:
            raise UsageError("--statistics does not go with --host or --inventory",
                             hint="the fleet report ends with the count of hosts per rule")
        if limit and not inventory:
            raise UsageError("--limit goes with --inventory", hint="name the inventory with --inventory FILE")
        if identity is not None and not os.path.isfile(identity):
            raise UsageError(f"identity file not found: {identity}", hint="pass the private key ssh should use")
        hosts = fleet.hosts_from_options(host_texts, options.paths, identity)
        if inventory:
            hosts += fleet.hosts_from_inventory(inventory, limit, options.paths, identity)
        from advisor.lint.settings import find_config_file

        if options.config and not os.path.isfile(options.config):
            raise UsageError(f"config file {options.config} does not exist")
        setup = lint_setup(options, None if options.isolated else options.config or find_config_file())
        run = fleet.lint_fleet(hosts, options, ssh_options, jobs, setup, _facts)
        for read in run.failed:
            sys.stderr.write(f"apache-advisor: {read.error}\n")
        if run.groups:
            report = fleet.render_fleet(run, options)
            if output_path := options.output:
                write_atomically(output_path, report)
            else:
                sys.stdout.write(report)
                sys.stdout.flush()
        raise typer.Exit(code=run.exit_code)

    @app.command("rules")
    def rules_command(
        format: str = typer.Option("table", "--format", "-f", help="table, json or markdown."),
        output: Optional[str] = typer.Option(None, "--output", "-o", help="Write to FILE instead of stdout."),
    ) -> None:
        """List the lint rules (codes are stable)."""
        from advisor import rules as registry

        rules = registry.all_rules()
        if format == "json":
            import json

            text = json.dumps([rule_metadata(rule) for rule in rules], indent=2) + "\n"
        elif format == "markdown":
            from advisor.lint.docs import rules_document

            text = rules_document(rules)
        elif format == "table":
            text = None
        else:
            raise UsageError(f"--format must be table, json or markdown, got {format!r}")
        if text is None:
            from rich.console import Console
            from rich.table import Table

            table = Table(show_lines=False, header_style="bold")
            for column in ("code", "slug", "severity", "category", "fix", "flags"):
                table.add_column(column, overflow="fold")
            for rule in rules:
                table.add_row(rule.code, rule.slug, rule.severity, rule.category,
                              "auto" if rule.fixable else "", rule.doc.summary)
            if output:
                import io

                buffer = io.StringIO()
                Console(file=buffer, width=160, force_terminal=False).print(table)
                write_atomically(output, buffer.getvalue())
            else:
                Console(highlight=False).print(table)
            return
        if output:
            write_atomically(output, text)
        else:
            sys.stdout.write(text)

    @app.command()
    def explain(code: str = typer.Argument(..., help="A rule code (P101) or slug.")) -> None:
        """Print one rule's documentation: what, why with the evidence, examples, fix."""
        from advisor import rules as registry
        from advisor.lint.docs import rule_text

        rule = registry.find_rule(code)
        if rule is None:
            raise UsageError(f"no rule {code!r}", hint="`apache-advisor rules` lists the codes")
        sys.stdout.write(rule_text(rule))


def rule_metadata(rule) -> dict:
    doc = rule.doc
    return {
        "code": rule.code,
        "slug": rule.slug,
        "severity": rule.severity,
        "category": rule.category,
        "directives": list(rule.directives),
        "needs": [need.replace("_", "-") for need in rule.needs],
        "fixable": rule.fixable,
        "summary": doc.summary,
        "what": doc.what,
        "why": doc.why,
        "evidence": doc.evidence,
        "bad": doc.bad,
        "good": doc.good,
        "fix": doc.fix,
        "references": list(doc.references),
        "baseline": list(rule.baseline),
        "trade_off": rule.trade_off,
    }
