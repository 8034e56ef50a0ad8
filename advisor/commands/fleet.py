"""`lint --host` and `lint --inventory`: the trees of many hosts, read over SSH.

Each host's tree is read as its own httpd reads it, with the reading
`tune --host` uses (tuner/staging/mirror.py: `-t -D DUMP_INCLUDES`, envvars
sourced, one program sent over one ControlMaster connection), and in the
same round trip what that httpd says of itself (`-M`, `-v`) and the memory
it has (RAM, its cgroup's limit). Hosts are read `jobs` at a time; a host
that cannot be read is one line and the others go on. Hosts whose trees and
facts are the same byte for byte are linted once and reported as one group.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from advisor.errors import AdvisorError, UsageError

DEFAULT_CONFIG = "/etc/apache2/apache2.conf"
SCRATCH = "/dev/shm"
SCRATCH_ROOM = 128 << 20  # bytes free there before the copies go there


@dataclass(frozen=True)
class FleetHost:
    """One host to lint: the name reports use, how ssh reaches it, its main config."""

    name: str
    spec: Any  # tuner.transport.ssh.HostSpec
    identity: str | None = None
    config: str = DEFAULT_CONFIG
    become: str | None = None
    """The user the reading runs as through `sudo -n` on the host (None: the login user)."""
    unusable: str | None = None
    """Why the host cannot be read at all (its inventory asks for what is not supported)."""


@dataclass
class HostRead:
    """What one host gave: its tree and facts, or the one line saying why not."""

    host: FleetHost
    root: Path | None = None
    facts: dict = field(default_factory=dict)
    digest: str | None = None
    error: str | None = None


@dataclass
class HostGroup:
    """Hosts with one tree and the same facts: linted once."""

    hosts: list[FleetHost]
    read: HostRead
    findings: list = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    """What the lint said beside its findings (a rule skipped for want of a fact)."""

    @property
    def names(self) -> list[str]:
        return [host.name for host in self.hosts]


@dataclass
class FleetRun:
    groups: list[HostGroup]
    failed: list[HostRead]
    exit_code: int
    notes: list[str] = field(default_factory=list)


def hosts_from_options(host_texts: list[str], config_paths: list[str], identity: str | None,
                       become: str | None = None) -> list[FleetHost]:
    """`--host` values as FleetHosts, each reading every PATH given (default Debian's),
    as `become` through sudo when given."""
    from advisor.tuner.transport.ssh import HostSpec

    configs = config_paths or [DEFAULT_CONFIG]
    hosts: list[FleetHost] = []
    for text in host_texts:
        spec = HostSpec.parse(text)
        for config in configs:
            if not config.startswith("/"):
                raise UsageError(f"with --host, PATH {config!r} must be an absolute path on the host",
                                 hint="give the main config as the host's httpd reads it, e.g. /etc/apache2/apache2.conf")
            name = str(spec) if len(configs) == 1 else f"{spec}#{config}"
            hosts.append(FleetHost(name=name, spec=spec, identity=identity, config=config, become=become))
    return hosts


def become_from_options(become: bool, become_user: str | None, reaches_hosts: bool) -> str | None:
    """The user `--become` (with `--become-user`) names, None without it;
    UsageError where the options do not go together."""
    from advisor.tuner.transport.ssh import check_become_user

    if become_user is not None and not become:
        raise UsageError("--become-user goes with --become", hint="add --become to read the hosts under sudo")
    if become and not reaches_hosts:
        raise UsageError("--become goes with --host or --inventory: it reads the hosts' trees under sudo",
                         hint="name the hosts with --host USER@HOST or --inventory FILE")
    return check_become_user(become_user or "root") if become else None


def _read_host(host: FleetHost, ssh_options: list[str], work: Path) -> HostRead:
    from advisor.tuner.staging.mirror import read_host_tree
    from advisor.tuner.transport.ssh import SshConnection

    read = HostRead(host)
    if host.unusable is not None:
        read.error = _named(host.name, host.unusable)
        return read
    conn = None
    try:
        # One command per host: no master (multiplex=False) and no probe, one
        # round trip; the reading program says when python3 is missing.
        conn = SshConnection(host.spec, options=list(ssh_options), identity=host.identity, become=host.become,
                             multiplex=False)
        conn.connect(probe=False)
        root = work / hashlib.sha1(host.name.encode()).hexdigest()[:16]
        files, facts = read_host_tree(conn, host.config, root, with_facts=True, label=host.name)
        digest = hashlib.sha256()
        for path in sorted(files):
            digest.update(path.encode() + b"\0" + hashlib.sha256(files[path]).digest())
        digest.update(json.dumps([host.config, facts], sort_keys=True).encode())
        read.root, read.facts, read.digest = root, facts, digest.hexdigest()
    except AdvisorError as error:
        read.error = _named(host.name, error.render())
    except OSError as error:  # ssh missing, a full disk: the host is not read, the others go on
        read.error = _named(host.name, str(error.strerror or error))
    finally:
        if conn is not None:
            try:
                conn.close()
            except (OSError, AdvisorError, Exception):  # noqa: BLE001 - closing must not hide the result
                pass
    return read


def _named(name: str, text: str) -> str:
    """A host's error line, its name first (once: ssh's own lines name it already)."""
    if text.startswith(name) or text.startswith(f"ssh to {name}"):
        return text
    return f"{name}: {text}"


def read_hosts(hosts: list[FleetHost], ssh_options: list[str], jobs: int, work: Path,
               progress: bool, arrived: Callable[[int, HostRead], None] | None = None) -> list[HostRead]:
    """Every host read, `jobs` at a time, in the order given; `arrived` is
    called in this thread with each host's position and reading as it comes."""
    results: dict[int, HostRead] = {}
    bar = None
    if progress:
        from rich.progress import Progress

        bar = Progress(transient=True, console=_stderr_console())
        bar.start()
        task = bar.add_task("reading hosts", total=len(hosts))
    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = {pool.submit(_read_host, host, ssh_options, work): position
                       for position, host in enumerate(hosts)}
            for future in as_completed(futures):
                position = futures[future]
                results[position] = future.result()
                if arrived is not None:
                    arrived(position, results[position])
                if bar is not None:
                    bar.advance(task)
    finally:
        if bar is not None:
            bar.stop()
    return [results[position] for position in range(len(hosts))]


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def group_reads(reads: list[HostRead]) -> tuple[list[HostGroup], list[HostRead]]:
    """Hosts read fine, grouped by digest (first host's order); and the failures."""
    groups: dict[str, HostGroup] = {}
    failed = []
    for read in reads:
        if read.error is not None:
            failed.append(read)
        elif read.digest in groups:
            groups[read.digest].hosts.append(read.host)
        else:
            groups[read.digest] = HostGroup([read.host], read)
    return list(groups.values()), failed


def host_facts_read(config, facts: dict, name: str, options, setup, facts_of, notes: list[str]):
    """The rules' facts for a host's tree: lint's own from the options and
    settings, then what was read on the host (its MPM, its RAM or the
    memory limit below it, its live state)."""
    from advisor.lint.values import format_bytes

    host_facts, _ = facts_of(config, replace(options, live=False), setup.file_settings.host,
                             setup.enabled_codes, notes)
    host_facts.live = facts.get("live")
    setup.apply_to(host_facts)
    if host_facts.mpm is None and facts.get("mpm"):
        host_facts.mpm = facts["mpm"]
    if options.ram is None and "ram" not in setup.file_settings.host:
        ram, limit = facts.get("ram"), facts.get("memory_limit")
        if limit is not None and (ram is None or limit < ram):
            host_facts.ram, host_facts.ram_source = limit, f"{name}'s memory limit ({format_bytes(limit)})"
            notes.append(f"memory limit {format_bytes(limit)} read on {name} (below its RAM)")
        elif ram is not None:
            host_facts.ram, host_facts.ram_source = ram, f"{name}'s RAM"
            notes.append(f"RAM {format_bytes(ram)} read on {name}")
    return host_facts


def _lint_group(group: HostGroup, options, setup, facts_of) -> None:
    """Lint the group's tree once, with the first host's facts."""
    from advisor.commands.options import parse_defines
    from advisor.config.load_options import LoadOptions
    from advisor.config.loader import load_config
    from advisor.lint.engine import lint_config

    read = group.read
    facts = read.facts
    name = group.hosts[0].name
    modules = set(facts.get("modules") or []) | set(options.modules)
    load = LoadOptions(defines=parse_defines(options.defines), modules=modules, modules_from=options.modules_from,
                       mpm=options.mpm, apache_version=options.apache_version or facts.get("version") or "2.4",
                       allow_missing_includes=options.allow_missing_includes, root=str(read.root),
                       environ={}, effective=True)
    try:
        config = load_config(read.host.config, load)
        notes: list[str] = []
        host_facts = host_facts_read(config, facts, name, options, setup, facts_of, notes)
        result = lint_config(config, host_facts, setup.enabled, known_codes=setup.known_codes,
                             settings=setup.file_settings)
    except AdvisorError as error:
        if error.file and not error.file.startswith(name + ":"):
            error.file = f"{name}:{error.file}"
        group.error = _named(name, error.render())
        return
    read_order = {path: position for position, path in enumerate(dict.fromkeys(result.files))}
    group.findings = sorted(result.findings, key=lambda f: (read_order.get(f.file, len(read_order)),
                                                            f.file, f.line, f.code))
    for finding in group.findings:
        finding.host = name
        finding.edit = None  # fix edits files on this machine, not on a host
    group.files = list(dict.fromkeys(result.files))
    group.notes = list(dict.fromkeys(notes + list(result.notes)))


def _scratch_dir() -> str | None:
    """Where the hosts' copies are written: /dev/shm (memory) when TMPDIR does
    not say where and it has room, else the usual temporary directory. Each
    copy is a few dozen small files written once, read once and deleted, and
    on a journalled /tmp shared with other work the file creations cost the
    controller more CPU than the lint of the tree (50 ms against 8 ms a host,
    measured on ext4 with another job writing)."""
    if os.environ.get("TMPDIR"):
        return None
    try:
        room = os.statvfs(SCRATCH)
    except OSError:
        return None
    # Copies are deleted once linted, so about `jobs` trees exist at a time (a
    # Debian tree is 0.1 MB); a small /dev/shm (a container's 64 MB) is left
    # to what else uses it.
    if room.f_bavail * room.f_frsize < SCRATCH_ROOM or not os.access(SCRATCH, os.W_OK | os.X_OK):
        return None
    return SCRATCH


def lint_fleet(hosts: list[FleetHost], options, ssh_options: list[str], jobs: int, setup, facts_of,
               progress: bool | None = None) -> FleetRun:
    """Read every host, lint each distinct tree once, and say the exit code:
    2 when no host could be linted, 1 when a host failed or a finding reached
    --fail-on, else 0. `setup` is lint's LintSetup (the rules and settings),
    `facts_of` lint's reading of the host facts options and settings give."""
    from advisor.lint.rule import SEVERITY_RANK, max_severity

    if not hosts:
        raise UsageError("no host to lint", hint="name one with --host or --inventory")
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    if progress is None:
        progress = sys.stderr.isatty()
    by_digest: dict[str, tuple[int, HostGroup]] = {}

    def lint_on_arrival(position: int, read: HostRead) -> None:
        # Linting while the other hosts are being read keeps the cores busy
        # (after the last reading only its own lint is left). A group is linted
        # with its first host in the order given, as it is reported: a host
        # that comes in after a later one of its group makes it linted again.
        known = by_digest.get(read.digest) if read.digest is not None else None
        if read.error is None and (known is None or position < known[0]):
            group = HostGroup([read.host], read)
            _lint_group(group, options, setup, facts_of)
            by_digest[read.digest] = (position, group)  # type: ignore[index]
        if read.root is not None:  # linted or not needed: the copies on disk stay `jobs` trees
            shutil.rmtree(read.root, ignore_errors=True)

    with tempfile.TemporaryDirectory(prefix="apache-advisor-fleet-", dir=_scratch_dir()) as work:
        reads = read_hosts(hosts, ssh_options, jobs, Path(work), progress, lint_on_arrival)
    groups, failed = group_reads(reads)
    for group in groups:
        done = by_digest[group.read.digest][1]  # type: ignore[index]
        group.findings, group.files, group.error, group.notes = done.findings, done.files, done.error, done.notes
    linted = [group for group in groups if group.error is None]
    broken = [group for group in groups if group.error is not None]
    for group in broken:
        failed.append(HostRead(group.hosts[0], error=group.error))
        for other in group.hosts[1:]:
            failed.append(HostRead(other, error=f"{other.name}: same tree as {group.hosts[0].name}, which failed"))
    worst = max_severity(f for group in linted for f in group.findings)
    fail_on = setup.fail_on
    findings_fail = fail_on != "never" and worst is not None and SEVERITY_RANK[worst] >= SEVERITY_RANK[fail_on]
    if not linted:
        code = 2
    elif failed or findings_fail:
        code = 1
    else:
        code = 0
    return FleetRun(linted, failed, code)


# -- reports -------------------------------------------------------------------

def rule_summary(run: FleetRun) -> list[tuple[str, str, list[str]]]:
    """(code, severity, hosts) for each rule that fired, most hosts first."""
    hosts: dict[str, list[str]] = {}
    severity: dict[str, str] = {}
    for group in run.groups:
        for finding in group.findings:
            severity[finding.code] = finding.severity
            seen = hosts.setdefault(finding.code, [])
            for name in group.names:
                if name not in seen:
                    seen.append(name)
    return sorted(((code, severity[code], names) for code, names in hosts.items()),
                  key=lambda item: (-len(item[2]), item[0]))


def _shown(finding, label: str, file: str):
    return replace(finding, file=file, host=label)


def render_fleet(run: FleetRun, options) -> str:
    """The fleet's report in --format text, json, sarif or github."""
    import io

    total = sum(len(group.hosts) for group in run.groups) + len(run.failed)
    if options.format == "json":
        from advisor.output import jsonfmt

        items = []
        for group in run.groups:
            for finding in group.findings:
                item = jsonfmt.finding_object(finding)
                item["host"] = group.hosts[0].name
                item["hosts"] = group.names
                items.append(item)
        return jsonfmt.dumps_indented(items) + "\n"
    if options.format == "sarif":
        from urllib.parse import quote

        from advisor import rules as registry
        from advisor.output import sarif

        findings = [_shown(f, group.hosts[0].name, f"ssh://{quote(group.hosts[0].name, safe='@:[]')}{quote(f.file)}")
                    for group in run.groups for f in group.findings]
        notes = [read.error for read in run.failed if read.error]
        notes += [f"{', '.join(group.names)}: identical trees, linted once" for group in run.groups
                  if len(group.hosts) > 1]
        return sarif.render(findings, list(registry.all_rules()), notes)
    if options.format == "github":
        from advisor import rules as registry
        from advisor.output import github

        findings = [_shown(f, group.hosts[0].name, f"{group.hosts[0].name}:{f.file}")
                    for group in run.groups for f in group.findings]
        return github.render(findings, registry.rule_by_code())
    from advisor.output import text

    buffer = io.StringIO()
    for group in run.groups:
        if len(group.hosts) > 1:
            buffer.write(f"== {', '.join(group.names)}: identical trees, linted once ==\n")
        else:
            buffer.write(f"== {group.names[0]} ==\n")
        label = group.hosts[0].name
        text.render([_shown(f, label, f"{label}:{f.file}") for f in group.findings], buffer,
                    notes=group.notes, files_checked=len(group.files), show_evidence=options.show_evidence, colour=False,
                    group=options.group)
        buffer.write("\n")
    buffer.write(f"Fleet: {total - len(run.failed)} of {total} hosts linted "
                 f"({len(run.groups)} distinct tree{'s' if len(run.groups) != 1 else ''})"
                 + (f", {len(run.failed)} not read" if run.failed else "") + ".\n")
    for code, severity, names in rule_summary(run):
        buffer.write(f"  {code} {severity}: {len(names)} host{'s' if len(names) != 1 else ''}: {', '.join(names)}\n")
    for read in run.failed:
        buffer.write(f"  not linted: {read.error}\n")
    return buffer.getvalue()


def hosts_from_inventory(path: str, limit: str | None, config_paths: list[str],
                         identity: str | None, become: str | None = None) -> list[FleetHost]:
    """The hosts --limit selects in the inventory, with their connection variables
    and their become variables (which win over `become`, as Ansible's do over -b)."""
    from advisor.commands.inventory import limit_hosts, read_inventory
    from advisor.tuner.transport.ssh import HostSpec

    hosts = []
    for entry in limit_hosts(read_inventory(path), limit, path):
        address, user, port, key, config = entry.connection()
        try:
            spec = HostSpec(host=address, user=user, port=port)
        except (TypeError, ValueError):
            raise UsageError(f"host {entry.name} in {path} has a bad address or port") from None
        host_become, unusable = inventory_become(entry.variables, become)
        configs = [config] if config else (config_paths or [DEFAULT_CONFIG])
        for main in configs:
            name = entry.name if len(configs) == 1 else f"{entry.name}#{main}"
            hosts.append(FleetHost(name=name, spec=spec, identity=key or identity, config=main,
                                   become=host_become, unusable=unusable))
    return hosts


# Ansible's boolean() reads these (any case); a value of neither set is no boolean here.
_TRUE = {"yes", "y", "on", "true", "t", "1", "1.0"}
_FALSE = {"no", "n", "off", "false", "f", "0", "0.0", ""}


def inventory_become(variables: dict, become: str | None) -> tuple[str | None, str | None]:
    """(the user a host's reading runs as through sudo or None, why it cannot be
    read or None) from its ansible_become, ansible_become_user and
    ansible_become_method; the command line's `become` (--become-user, None
    without --become) where the inventory says nothing."""
    from advisor.tuner.transport.ssh import check_become_user

    wanted = become is not None
    if "ansible_become" in variables:
        text = str(variables["ansible_become"]).strip().lower()
        if text not in _TRUE | _FALSE:
            return None, f"ansible_become={variables['ansible_become']!r} is not a boolean (write yes or no)"
        wanted = text in _TRUE
    if not wanted:
        return None, None
    method = str(variables.get("ansible_become_method") or "sudo").strip()
    if method != "sudo":
        return None, (f"ansible_become_method={method} is not supported: only sudo is "
                      "(set ansible_become_method=sudo, or ansible_become=no and a login user that may read the tree)")
    user = str(variables.get("ansible_become_user") or become or "root").strip()
    try:
        return check_become_user(user, "ansible_become_user"), None
    except UsageError as error:
        return None, error.render()
