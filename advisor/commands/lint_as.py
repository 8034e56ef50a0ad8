"""`lint --as PATH CANDIDATE`: lint as the validate step of config management.

Ansible's `template` and `copy` (`validate:`), Puppet's `validate_cmd`,
Chef's `verify` and Salt's `check_cmd` render a file to a temporary place
and run a command on it before it replaces the real one. `apachectl -t -f
%s` judges that file alone, outside the tree it joins: no modules, no MPM,
nothing set elsewhere. Here the tree is read as it will be, with CANDIDATE
standing in for PATH (advisor/config/overlay.py: no copy for the reading),
then httpd judges a copy of the tree with the candidate in place (as `fix
--write` has it judge its edits), and the rules run. What is found in the
candidate is reported at CANDIDATE's path, the one the tool gave.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING, Callable

from advisor.errors import AdvisorError, UsageError

if TYPE_CHECKING:
    from advisor.commands.lint_options import LintOptions
    from advisor.config.load_options import LoadOptions
    from advisor.config.model import Config
    from advisor.config.overlay import Overlay


def prepared(options: LintOptions, pair: tuple[str, str], remote: bool) -> LintOptions:
    """The options of a lint `--as PATH CANDIDATE`: the tree to place it in
    (the distribution's main config when none is named; with `remote`, the
    hosts' Debian one), PATH absolute, the candidate readable."""
    target, candidate = pair
    paths = list(options.paths)
    if len(paths) > 1:
        raise UsageError(f"--as places {candidate} in one tree, and {len(paths)} were named",
                         hint="name the one main config PATH replaces a file of")
    if remote:
        if not target.startswith("/"):
            raise UsageError(f"with --host, --as PATH {target!r} must be an absolute path on the host",
                             hint="name the file as the host's httpd reads it, e.g. "
                                  "/etc/apache2/sites-enabled/shop.conf")
    elif not paths:
        from advisor.lint.host import DEFAULT_MAIN_FILES

        present = [path for path in DEFAULT_MAIN_FILES if os.path.isfile(path)]
        if not present:
            raise UsageError(f"--as needs a tree to place {candidate} in, and none was named nor found at "
                             f"{' or '.join(DEFAULT_MAIN_FILES)}",
                             hint="name the main config first: lint TREE --as PATH CANDIDATE")
        paths = present[:1]
    try:
        with open(candidate, "rb") as handle:
            handle.read(1)
    except IsADirectoryError:
        raise UsageError("the candidate is a directory, not a config file", candidate,
                         hint="pass the rendered file: Ansible's %s") from None
    except OSError as exc:
        raise UsageError(f"cannot read the candidate: {exc.strerror}", candidate,
                         hint="pass the rendered file, readable by this user: Ansible's %s") from None
    target = os.path.normpath(target if remote else os.path.abspath(target))
    # (The lint with the candidate is never cached, lint.py's _open_cache: the
    # candidate is a file of the moment; the lint of the tree as it is may be.)
    return replace(options, paths=paths, as_candidate=(target, candidate))


def load_with_candidate(path: str, load: LoadOptions, pair: tuple[str, str],
                        notes: list[str], aliases: tuple[str, ...] = ()) -> tuple[Config, Overlay]:
    """The tree of `path` read with the candidate in PATH's place (and in
    `aliases`', the paths the host resolves to PATH), judged by httpd on a
    copy when the tree is this machine's; one line (exit 2) when PATH is not
    part of the tree, or when the reader or httpd refuses the candidate."""
    from advisor.config.loader import load_config
    from advisor.config.overlay import Overlay

    target, candidate = pair
    overlay = Overlay.of(target, candidate, load.root, aliases)
    try:
        config = load_config(path, replace(load, overlay=overlay))
    except AdvisorError as error:
        raise at_candidate(error, overlay) from None
    if not overlay.replaced:
        raise not_read(config, target)
    if load.root is None:
        check_with_httpd(config, overlay, notes)
    return config, overlay


def at_candidate(error: AdvisorError, overlay: Overlay):
    """The error, at the candidate's path when it is in the candidate."""
    if error.file in overlay.replaced or error.file == overlay.target:
        error.file = overlay.candidate
    return error


def not_read(config: Config, target: str) -> UsageError:
    """PATH is not a file the tree reads, nor one an Include would pick up:
    say what the tree reads from PATH's directory, and through which lines."""
    from advisor.config.overlay import reading_includes

    directory = os.path.dirname(target)
    siblings = [os.path.basename(file) for file in config.files if os.path.dirname(file) == directory]
    if siblings:
        shown = ", ".join(siblings[:5]) + (f" and {len(siblings) - 5} more" if len(siblings) > 5 else "")
        lines = reading_includes(config, directory)
        through = f" (through {lines[0][2]} at {lines[0][0]}:{lines[0][1]})" if lines else ""
        hint = f"it reads {shown} from {directory}{through}: name one of those, or a name its Include matches"
    elif os.path.basename(directory) in ("sites-available", "conf-available", "mods-available"):
        enabled = directory[:-len("available")] + "enabled"
        hint = (f"Debian's tree reads {enabled}/, whose links point into {directory}/: enable the file "
                f"(a2ensite/a2enconf) or name the path under {enabled}/")
    else:
        hint = f"no Include of {config.main_file} reads from {directory}: add one, or name a file the tree reads"
    return UsageError(f"--as {target}: the tree of {config.main_file} does not read that file", hint=hint)


def check_with_httpd(config: Config, overlay: Overlay, notes: list[str]) -> None:
    """httpd's config test on a copy of the tree with the candidate in
    place; its own complaint, at the candidate's line when it is there."""
    from advisor.fix.check import refusal, resolve_command

    try:
        command = resolve_command(None)
    except UsageError:
        notes.append("no apache2 or httpd here to test the tree with the candidate: only lint judged it")
        return
    with open(overlay.candidate, "rb") as handle:
        data = handle.read()
    contents = {path: data for path in overlay.replaced}
    refused = refusal(command, config.main_file, config.server_root, config.files, contents)
    if refused is not None:
        raise refused_error(os.path.basename(command.argv[0]), refused, overlay, lambda: refusal(
            command, config.main_file, config.server_root, config.files, {}) is not None)


def refused_error(name: str, refused: tuple[str | None, int | None, str], overlay: Overlay,
                  refused_as_is: Callable[[], bool]) -> UsageError:
    """httpd's complaint about the tree with the candidate as one line: at
    the candidate's line when it is in the candidate, else saying whether
    httpd refuses the tree even without it (`refused_as_is` tells)."""
    file, line, message = refused
    error = UsageError(f"{name} refuses the tree with this file as {overlay.target}: {message}", file, line,
                       hint="httpd would not start with it; fix it before it is deployed")
    if file is not None and (file in overlay.replaced or file in overlay.aliases
                             or os.path.realpath(file) == os.path.realpath(overlay.target)):
        error.file = overlay.candidate
    elif refused_as_is():
        error.message = f"{name} refuses the tree even as it is now: {message}"
        error.hint = "make httpd accept the tree first; the candidate is not what it refused"
    return error


def brought_by_candidate(findings: list, notes: list[str], candidate: str,
                         as_it_is: Callable[[], list]) -> list:
    """The findings the candidate brings: every one in the candidate, and
    those elsewhere that the tree as it is (`as_it_is()` lints it) does not
    have, by code, file, line and message. The tree's own findings are left
    out (a note counts them): a tree with a warning today would otherwise
    refuse every candidate at the default --fail-on."""
    try:
        before = {(f.code, f.file, f.line, f.message) for f in as_it_is()}
    except AdvisorError as error:
        notes.append(f"the tree without the candidate could not be linted ({error.render()}): "
                     "every finding is counted")
        return findings
    # The candidate's name as the report shows it (relative when below the
    # working directory): once per file, not per finding.
    whole = os.path.abspath(candidate)
    named = {file for file in {f.file for f in findings} if os.path.abspath(file) == whole}
    kept, own = [], set()
    for finding in findings:
        if finding.file in named or (finding.code, finding.file, finding.line, finding.message) not in before:
            kept.append(finding)
        else:
            own.add(finding.code)
    if len(kept) < len(findings):
        count = len(findings) - len(kept)
        notes.append(f"{count} finding{'s' if count != 1 else ''} of the tree as it is ({', '.join(sorted(own))}) "
                     "not shown and not counted: they are not the candidate's (lint the tree alone to see them)")
    return kept


def show_at_candidate(findings: list, files: list[str], overlay: Overlay) -> None:
    """Findings and files of the candidate named by the candidate's path
    (in place): the path the validate step gave, whose lines they are."""
    replaced = set(overlay.replaced)
    candidate = overlay.candidate
    for finding in findings:
        if finding.file in replaced:
            finding.file = candidate
            if finding.edit is not None and finding.edit.file in replaced:
                finding.edit = replace(finding.edit, file=candidate)
        if finding.related is not None and finding.related[0] in replaced:
            finding.related = (candidate, finding.related[1])
    files[:] = [candidate if file in replaced else file for file in files]
