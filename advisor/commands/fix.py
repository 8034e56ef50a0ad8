"""`apache-advisor fix`: show, check and apply the mechanical lint fixes."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import List, Optional

import typer

from advisor.commands.options import (AllowMissingIncludesOption, ApacheVersionOption, DefineOption,
                                      ModuleOption, ModulesFromOption, ServerRootOption)
from advisor.errors import UsageError


@dataclass
class FixOutcome:
    diff: str
    """Unified diff of every changed file (empty when nothing changes)."""
    notes: list[str] = field(default_factory=list)
    """Findings left alone, and why (one line each)."""
    changed_files: list[str] = field(default_factory=list)
    fixed: list = field(default_factory=list)
    """The findings whose edit is in the diff."""
    written: bool = False


def plan_fixes(options, check_cmd: str | None, write: bool, backup_suffix: str | None) -> FixOutcome:
    """Lint, plan, splice, check on a copy, and (with `write`) replace."""
    from advisor.commands.lint import run_lint
    from advisor.fix.check import CheckCommand, check_tree, resolve_command
    from advisor.fix.plan import keep_inside, make_plan, splice, tree_root, unified_diff
    from advisor.fix.write import Target, write_all

    # Resolved first: a missing check command is refused before any work.
    # A preview on a machine without httpd (a laptop, a CI image) still
    # shows the diff; only --write, or a check command named and missing,
    # needs httpd's word.
    unchecked: str | None = None
    try:
        command = resolve_command(check_cmd)
    except UsageError as missing:
        if write or check_cmd is not None:
            raise
        command = CheckCommand([], skip=True)
        unchecked = (f"the diff was not checked by httpd: {missing.message}; --write needs it "
                     "(or --check-cmd CMD)")
    run = run_lint(options)
    plan = make_plan(run.findings)
    keep_inside(plan, [tree_root(main, root) for main, root in run.trees])
    outcome = FixOutcome("")
    if unchecked:
        outcome.notes.append(unchecked)
    for skipped in plan.skipped:
        finding = skipped.finding
        outcome.notes.append(f"{finding.file}:{finding.line}: {finding.code} not fixed "
                             f"automatically: {skipped.reason}")
    targets: list[Target] = []
    diffs: list[str] = []
    for file, pairs in plan.edits.items():
        try:
            with open(file, "rb") as handle:
                before = handle.read()
        except OSError as exc:
            raise UsageError(f"cannot read the file to fix: {exc.strerror}", file) from None
        after = splice(file, before, [edit for edit, _ in pairs])
        if after == before:
            continue
        targets.append(Target(file, after, before))
        diffs.append(unified_diff(file, before, after))
        outcome.fixed.extend(finding for _, finding in pairs)
    outcome.diff = "".join(diffs)
    outcome.changed_files = [target.path for target in targets]
    if not targets:
        return outcome
    # httpd judges the whole candidate tree before anything is kept.
    contents = {os.path.abspath(target.path): target.data for target in targets}
    for main_file, server_root in run.trees:
        check_tree(command, main_file, server_root, run.files, contents)
    if write:
        write_all(targets, backup_suffix)
        outcome.written = True
        outcome.notes.extend(_uncovered(options, run.findings))
    return outcome


def _uncovered(options, before: list) -> list[str]:
    """What lint reports now that it did not before: a fix can bring a
    setting into play that an earlier value hid (KeepAliveTimeout matters
    once KeepAlive is On). Said, not hidden; a second `fix` handles the
    mechanical ones."""
    from collections import Counter

    from advisor.commands.lint import run_lint

    after = run_lint(options).findings
    earlier = Counter(finding.code for finding in before)
    grown = Counter(finding.code for finding in after) - earlier
    notes = []
    for finding in after:
        if grown[finding.code] > 0:
            grown[finding.code] -= 1
            notes.append(f"{finding.file}:{finding.line}: after the fixes lint also reports "
                         f"{finding.code}: {finding.message}")
    return notes


def register(app: typer.Typer) -> None:
    @app.command()
    def fix(
        path: str = typer.Argument(..., help="Main config file, or a directory holding apache2.conf / httpd.conf."),
        write: bool = typer.Option(False, "--write", help="Apply the changes (default: only show the diff)."),
        check_cmd: Optional[str] = typer.Option(None, "--check-cmd", help="Command that must accept the fixed tree, run on a temporary copy; {config} and {root} name the copy's main file and server root, else `-d ROOT -f CONFIG` is appended (default: apache2 -t, or httpd -t / apachectl -t; `true` skips the check)."),
        backup: bool = typer.Option(True, "--backup/--no-backup", help="Keep each changed file's old content beside it."),
        backup_suffix: str = typer.Option(".orig", "--backup-suffix", help="Suffix of the backup files."),
        select: Optional[List[str]] = typer.Option(None, "--select", help="Only these rules' fixes: codes, prefixes, categories or slugs."),
        ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Leave these rules' findings alone (same forms as --select)."),
        mpm: Optional[str] = typer.Option(None, "--mpm", help="The MPM in use when the config does not load one."),
        tls_profile: Optional[str] = typer.Option(None, "--tls-profile", help="The TLS clients to expect (modern, intermediate or old, Mozilla's profiles), as for lint: S505 writes that profile's SSLProtocol."),
        apache_version: ApacheVersionOption = None,
        define: DefineOption = None,
        module: ModuleOption = None,
        modules_from: ModulesFromOption = None,
        server_root: ServerRootOption = None,
        allow_missing_includes: AllowMissingIncludesOption = False,
        config: Optional[str] = typer.Option(None, "--config", help="Settings file (default: nearest .apache-advisor.toml or pyproject.toml)."),
        isolated: bool = typer.Option(False, "--isolated", help="Ignore any settings file."),
    ) -> None:
        """Show (or with --write apply) the mechanical fixes lint suggests; exit 1 when something would change."""
        from advisor.commands.lint_options import LintOptions
        from advisor.lint.settings import split_tokens

        if not backup_suffix or os.sep in backup_suffix:
            raise UsageError(f"--backup-suffix must be a plain suffix such as .orig, got {backup_suffix!r}")
        options = LintOptions(
            paths=[path], format="json", select=split_tokens(select) or None,
            ignore=split_tokens(ignore), tls_profile=tls_profile, fail_on="never", mpm=mpm,
            apache_version=apache_version, defines=list(define or []), modules=list(module or []),
            modules_from=modules_from, server_root=server_root,
            allow_missing_includes=allow_missing_includes, config=config, isolated=isolated,
            live=False, cache=False,
        )
        outcome = plan_fixes(options, check_cmd, write, backup_suffix if backup else None)
        if outcome.diff:
            sys.stdout.buffer.write(outcome.diff.encode("utf-8", "surrogateescape"))
            sys.stdout.flush()
        for note in outcome.notes:
            sys.stderr.write(note + "\n")
        count, files = len(outcome.fixed), len(outcome.changed_files)
        if outcome.written:
            sys.stderr.write(f"fixed {count} finding{'s' * (count != 1)} in {files} "
                             f"file{'s' * (files != 1)}\n")
            raise typer.Exit(code=0)
        if count:
            sys.stderr.write(f"{count} finding{'s' * (count != 1)} can be fixed in {files} "
                             f"file{'s' * (files != 1)}: run again with --write\n")
            raise typer.Exit(code=1)
        sys.stderr.write("nothing to fix\n")
        raise typer.Exit(code=0)
