"""`apache-advisor lint`, `rules` and `explain`."""

from __future__ import annotations

import gc
import os
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Optional

import typer

from advisor.commands.lint_options import (AsOption, BecomeOption, BecomeUserOption, CacheDirOption, CacheOption, EvidenceOption, ExpectedClientsOption,
                                           FailOnOption, FormatOption, FpmConfigOption, FpmMemoryOption, GroupOption,
                                           HostOption, IdentityOption, IgnoreOption, InventoryOption, IsolatedOption,
                                           JobsOption, LimitOption, LintOptions, LiveFactsOption, LiveOption,
                                           LogFormatOption, LogOption, MpmOption, OutputOption, PathsArgument,
                                           ProfileOption, RamOption, SelectOption, SettingsFileOption,
                                           SshOptionOption, StatisticsOption, TlsProfileOption,
                                           WorkerMemoryOption)
from advisor.commands.options import (AllowMissingIncludesOption, ApacheVersionOption, DefineOption,
                                 ModuleOption, ModulesFromOption, ServerRootOption)

from advisor.errors import UsageError

if TYPE_CHECKING:
    from advisor.config.inputs import InputRecorder
    from advisor.config.load_options import LoadOptions


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
        self.save_later: Any = None
        """Saves the entry in a process that outlives this one (run_lint's save_later)."""
        self.edits_later: Any = None
        """An EditsLater when the findings lack the edits the cache keeps:
        the save works them out (lint_later.add_edits), after the answer."""
        self.report_later: Any = None
        """(variant, pieces) of a report made whole, for the save to keep
        beside the entry."""

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


def _cache_options(options: LintOptions) -> dict[str, Any]:
    """The options a lint result depends on (not how it is shown or where)."""
    shown_only = {"format", "output", "show_evidence", "config", "cache", "cache_dir", "group",
                  "statistics", "edits"}
    return {name: value for name, value in vars(options).items() if name not in shown_only}


def _open_cache(options: LintOptions, config_path: str | None):
    """The result cache and this run's key in it, or None when not caching."""
    if not options.cache or os.environ.get("APACHE_ADVISOR_NO_CACHE") or options.log_paths:
        return None  # (a log grows without the config changing: its result is not kept)
    if options.as_candidate is not None:
        return None  # a candidate of the moment (its tree as it is may be kept: lint_as)
    from advisor.lint.cache import LintCache, default_directory, entry_key

    directory = options.cache_dir or default_directory()
    if not directory:
        return None
    try:
        return LintCache(directory), entry_key(_cache_options(options), config_path)
    except OSError:
        return None  # an unreadable settings file: the lint below says so in one line


def run_lint(options: LintOptions, *, save_later: bool = False) -> LintRun:
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
    run, recorder, probed_host = _lint_afresh(options, config_path, record=opened is not None,
                                              edits_later=save_later)
    if opened is not None and recorder is not None and not probed_host and cache.admits(recorder, started_ns):
        from advisor.lint.cache import CachedResult, new_token

        token = new_token()

        def save() -> bool:
            if run.edits_later is not None:
                from advisor.commands.lint_later import add_edits

                if not add_edits(run.edits_later):
                    return False
            result = CachedResult(_cached_rows(run.findings), run.notes, run.files, run.exit_code, token)
            if not cache.store(key, recorder, result, started_ns):
                return False
            if run.report_later is not None:
                variant, pieces = run.report_later
                for _ in cache.storing_report(key, token, variant, pieces):
                    pass
            return True

        # A report made now is kept under the token the entry will have.
        run.saved = (cache, key, token)
        if save_later:
            run.save_later = lambda: cache.store_after_exit(key, save)
        elif not save():
            run.saved = None
    return run


def _cached_rows(findings: list) -> list[tuple]:
    """Each finding as the cache keeps it: its seven report fields and its
    edit's fields (None without one). Tuples: marshal writes them faster
    and smaller than lists (45 against 55 ms for 120,000 findings)."""
    return [(f.code, f.severity, f.message, f.file, f.line, f.evidence, f.fix,
             f.edit.fields() if f.edit else None) for f in findings]


@dataclass
class LintSetup:
    """What every tree of one lint run is checked with: the settings file,
    the rules enabled, the failure threshold."""

    file_settings: Any
    enabled: list
    enabled_codes: set[str]
    known_codes: set[str]
    fail_on: str
    tls_profile: tuple[str, str]
    """The TLS profile the rules expect, and where it was chosen."""

    def apply_to(self, facts) -> None:
        """Hand the run's expectations (not the host's) to the rules' facts."""
        facts.tls_profile, facts.tls_profile_source = self.tls_profile


def lint_setup(options: LintOptions, config_path: str | None) -> LintSetup:
    from advisor import rules as registry
    from advisor.commands.lint_facts import tls_profile_choice
    from advisor.lint.rule import PROFILES
    from advisor.lint.settings import FAIL_ON, FileSettings, check_choice, load_file_settings, select_rules

    file_settings = load_file_settings(config_path) if config_path else FileSettings()
    profile = check_choice(options.profile or file_settings.profile or "all", PROFILES, "--profile")
    tls_profile = tls_profile_choice(options, file_settings)
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
    return LintSetup(file_settings, enabled, enabled_codes, known_codes, fail_on, tls_profile)


def _lint_afresh(options: LintOptions, config_path: str | None, record: bool, edits_later: bool = False):
    """A lint of the trees themselves: (run, recorder, whether the host was
    probed). With `edits_later`, a result to be saved after the answer is
    made without the edits the cache keeps, unless the command shows them
    (run.edits_later says how the save adds them)."""
    from operator import attrgetter

    from advisor.commands.lint_paths import in_read_order, show_display_paths
    from advisor.lint.rule import SEVERITY_RANK, max_severity

    setup = lint_setup(options, config_path)
    load, recorder = _load_options(options, setup.file_settings.host, record)
    wants_edits = options.edits or (recorder is not None and not edits_later)
    findings, notes, files, trees, probed_host, linted = _lint_trees(options, setup, load, recorder,
                                                                      wants_edits)
    # Files in the order httpd reads them (main file first), then by line.
    read_order = {path: position for position, path in enumerate(dict.fromkeys(files))}
    # The files that have findings, in the engine's order (by name).
    with_findings = list(dict.fromkeys(map(attrgetter("file"), findings)))
    findings = in_read_order(findings, read_order, with_findings, several_trees=len(options.paths) > 1)
    shown: dict[str, str] = {}
    show_display_paths(findings, with_findings, wants_edits, shown)
    if options.as_candidate is not None:
        from dataclasses import replace

        from advisor.commands.lint_as import brought_by_candidate

        # What the candidate brings counts; the tree's own findings (its lint as
        # it is, from the cache when kept there) do not.
        findings = brought_by_candidate(findings, notes, options.as_candidate[1],
                                        lambda: run_lint(replace(options, as_candidate=None)).findings)

    fail_on = setup.fail_on
    worst = max_severity(findings)
    failed = (fail_on != "never" and worst is not None
              and SEVERITY_RANK[worst] >= SEVERITY_RANK[fail_on])
    run = LintRun(findings, notes, list(dict.fromkeys(files)), 1 if failed else 0, trees)
    if recorder is not None and not wants_edits:
        from advisor.commands.lint_later import EditsLater

        run.edits_later = EditsLater(linted, setup, with_findings, shown)
    return run, recorder, probed_host


def _load_options(options: LintOptions, host: dict[str, Any], record: bool) -> tuple[LoadOptions, InputRecorder | None]:
    """How every tree of this lint is read (LoadOptions), and the recorder of
    the inputs it reads when the result is to be cached (else None)."""
    from dataclasses import replace

    from advisor.commands.lint_facts import mpm_option
    from advisor.commands.options import load_options
    from advisor.config.inputs import InputRecorder

    version = options.apache_version or str(host.get("apache-version", "2.4"))
    load = load_options(options.defines, options.modules, options.modules_from, version,
                        options.server_root, options.allow_missing_includes,
                        mpm=mpm_option(options, host))
    recorder = InputRecorder() if record else None
    if recorder is not None and options.live_facts:
        recorder.looked_at(options.live_facts)
    # The rules read the effective tree: built while reading, not copied after.
    load = replace(load, recorder=recorder, effective=True)
    return load, recorder


def _lint_trees(options: LintOptions, setup: LintSetup, load: LoadOptions, recorder: InputRecorder | None,
                wants_edits: bool) -> tuple[list, list[str], list[str], list[tuple[str, str]], bool, list]:
    """Every PATH read and linted: (findings, notes, files, trees, whether
    this host was probed for facts, each tree's LintedTree)."""
    from advisor.commands.lint_facts import host_facts
    from advisor.commands.lint_later import LintedTree
    from advisor.config.loader import load_config
    from advisor.lint.engine import lint_config

    file_settings, enabled, enabled_codes = setup.file_settings, setup.enabled, setup.enabled_codes
    known_codes = setup.known_codes
    host = file_settings.host
    findings: list = []
    notes: list[str] = []
    files: list[str] = []
    trees: list[tuple[str, str]] = []
    probed_host = False
    linted: list[LintedTree] = []
    for path in options.paths:
        overlay = None
        if options.as_candidate is None:
            config = load_config(path, load)
        else:
            from advisor.commands.lint_as import load_with_candidate

            config, overlay = load_with_candidate(path, load, options.as_candidate, notes)
        facts, probed = host_facts(config, options, host, enabled_codes, notes, recorder)
        setup.apply_to(facts)
        probed_host = probed_host or probed
        # Without edits for a result to be saved: the save adds them later,
        # from this run's context.
        edits_later = recorder is not None and not wants_edits
        result = lint_config(config, facts, enabled, known_codes=known_codes, settings=file_settings,
                             edits=wants_edits, keep_context=edits_later)
        if overlay is not None:
            from advisor.commands.lint_as import show_at_candidate

            show_at_candidate(result.findings, result.files, overlay)
        findings.extend(result.findings)
        notes.extend(note for note in result.notes if note not in notes)
        files.extend(result.files)
        trees.append((config.main_file, config.server_root))
        if edits_later:
            linted.append(LintedTree(config, facts, result.findings, result.edits_left_out, result.context))
    return findings, notes, files, trees, probed_host, linted


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
        if run.save_later is not None and isinstance(made, tuple):
            # Made whole (text, GitHub, statistics): the save keeps its copy
            # after the answer. JSON and SARIF are copied as they are
            # written: made again there, they would cost the save (and a
            # lint waiting for it) as much as the report did here.
            run.report_later = (variant, made)
            return made
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



def lint(
    paths: PathsArgument = None,
    format: FormatOption = "text",
    output: OutputOption = None,
    select: SelectOption = None,
    ignore: IgnoreOption = None,
    profile: ProfileOption = None,
    tls_profile: TlsProfileOption = None,
    fail_on: FailOnOption = None,
    ram: RamOption = None,
    worker_memory: WorkerMemoryOption = None,
    expected_clients: ExpectedClientsOption = None,
    log: LogOption = None,
    log_format: LogFormatOption = None,
    mpm: MpmOption = None,
    apache_version: ApacheVersionOption = None,
    define: DefineOption = None,
    module: ModuleOption = None,
    modules_from: ModulesFromOption = None,
    server_root: ServerRootOption = None,
    allow_missing_includes: AllowMissingIncludesOption = False,
    config: SettingsFileOption = None,
    isolated: IsolatedOption = False,
    live: LiveOption = None,
    evidence: EvidenceOption = True,
    cache: CacheOption = True,
    cache_dir: CacheDirOption = None,
    group: GroupOption = True,
    statistics: StatisticsOption = False,
    fpm_config: FpmConfigOption = None,
    fpm_memory: FpmMemoryOption = None,
    host: HostOption = None,
    inventory: InventoryOption = None,
    limit: LimitOption = None,
    ssh_option: SshOptionOption = None,
    identity: IdentityOption = None,
    become: BecomeOption = False,
    become_user: BecomeUserOption = None,
    jobs: JobsOption = 8,
    live_facts: LiveFactsOption = None,
    as_: AsOption = None,
) -> None:
    """Check configs for risky, slow or broken settings; exit 1 on findings at --fail-on or above."""
    from dataclasses import replace

    from advisor.lint.settings import split_tokens

    options = LintOptions(
        paths=list(paths or []), format=format.lower(), output=output,
        select=split_tokens(select) or None, ignore=split_tokens(ignore), profile=profile,
        tls_profile=tls_profile, fail_on=fail_on, ram=ram, worker_memory=worker_memory,
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
    if as_:
        from advisor.commands.lint_as import prepared

        options = prepared(options, as_, remote=bool(host or inventory))
    become_as = None
    if become or become_user is not None:
        from advisor.commands.fleet import become_from_options

        become_as = become_from_options(become, become_user, bool(host or inventory))
    if host or inventory:
        # A host's tree is read afresh each time (no cache) and never measured on this machine.
        _lint_hosts(list(host or []), inventory, limit, list(ssh_option or []), identity, jobs,
                    replace(options, live=False, cache=False), become_as)
    if ssh_option or identity or limit:
        raise UsageError("--ssh-option, --identity and --limit go with --host or --inventory",
                         hint="name the hosts to read over SSH")
    _lint_and_report(options)


def _lint_and_report(options: LintOptions) -> None:
    """`lint` of the trees on this machine: the report written, then the
    exit code (through typer.Exit)."""
    # The model (tens of thousands of nodes) lives until the command ends
    # and holds no garbage: the cycle collector would only rescan it
    # (~11 ms on a 2,000-file tree).
    collecting = gc.isenabled()
    gc.disable()
    try:
        run = run_lint(options, save_later=True)
        report = report_text(run, options)
        # Written as it is made, piece by piece (inside: the pieces are
        # made from the model as they are written).
        if report is not None:
            if options.output:
                write_atomically(options.output, report)
            else:
                for piece in report:
                    sys.stdout.write(piece)
                sys.stdout.flush()
        if run.save_later is not None:
            run.save_later()
    finally:
        if collecting:
            gc.enable()
    raise typer.Exit(code=run.exit_code)


def _lint_hosts(host_texts: list[str], inventory: str | None, limit: str | None,
                ssh_options: list[str], identity: str | None, jobs: int, options: LintOptions,
                become: str | None = None) -> None:
    """`lint --host` / `--inventory`: every host's tree over SSH (advisor/commands/fleet.py)."""
    from advisor.commands import fleet
    from advisor.commands.lint_facts import host_facts

    if options.format not in ("text", "json", "sarif", "github"):
        raise UsageError(f"--format must be text, json, sarif or github, got {options.format!r}")
    if options.statistics:
        raise UsageError("--statistics does not go with --host or --inventory",
                         hint="the fleet report ends with the count of hosts per rule")
    if limit and not inventory:
        raise UsageError("--limit goes with --inventory", hint="name the inventory with --inventory FILE")
    if identity is not None and not os.path.isfile(identity):
        raise UsageError(f"identity file not found: {identity}", hint="pass the private key ssh should use")
    hosts = fleet.hosts_from_options(host_texts, options.paths, identity, become)
    if inventory:
        hosts += fleet.hosts_from_inventory(inventory, limit, options.paths, identity, become)
    from advisor.lint.settings import find_config_file

    if options.config and not os.path.isfile(options.config):
        raise UsageError(f"config file {options.config} does not exist")
    setup = lint_setup(options, None if options.isolated else options.config or find_config_file())
    if options.as_candidate is not None:
        from advisor.commands.lint_as_host import lint_fleet_as

        run = lint_fleet_as(hosts, options, ssh_options, jobs, setup, host_facts)
    else:
        run = fleet.lint_fleet(hosts, options, ssh_options, jobs, setup, host_facts)
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


def explain(code: str = typer.Argument(..., help="A rule code (P101) or slug."),
            tls_profile: TlsProfileOption = None, config: SettingsFileOption = None,
            isolated: IsolatedOption = False) -> None:
    """Print one rule's documentation: what, why with the evidence, examples, fix; for a TLS
    rule, the TLS profile lint applies here (the settings file's, or --tls-profile) and what
    each profile expects."""
    from advisor import rules as registry
    from advisor.commands.lint_facts import tls_profile_choice
    from advisor.lint.docs import rule_text
    from advisor.lint.settings import FileSettings, find_config_file, load_file_settings

    rule = registry.find_rule(code)
    if rule is None:
        raise UsageError(f"no rule {code!r}", hint="`apache-advisor rules` lists the codes")
    if config and not os.path.isfile(config):
        raise UsageError(f"config file {config} does not exist")
    settings_path = None if isolated else config or find_config_file()
    file_settings = load_file_settings(settings_path) if settings_path else FileSettings()
    chosen = tls_profile_choice(LintOptions(paths=[], tls_profile=tls_profile), file_settings)
    sys.stdout.write(rule_text(rule, chosen))


def register(app: typer.Typer) -> None:
    app.command()(lint)
    app.command("rules")(rules_command)
    app.command()(explain)


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
        "tls_profiles": dict(rule.tls_profiles),
    }
