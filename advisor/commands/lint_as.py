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
from typing import TYPE_CHECKING

from advisor.errors import AdvisorError, UsageError

if TYPE_CHECKING:
    from advisor.commands.lint_options import LintOptions
    from advisor.config.load_options import LoadOptions
    from advisor.config.model import Config
    from advisor.config.overlay import Overlay


def prepared(options: LintOptions, pair: tuple[str, str], remote: bool) -> LintOptions:
    """The options of a lint `--as PATH CANDIDATE`: the tree to place it in
    (the distribution's main config when none is named), PATH absolute, the
    candidate readable. No cache: the candidate is a file of the moment."""
    target, candidate = pair
    if remote:
        # The reading would take the overlay (the host's copy is read under a
        # root), but httpd's test of the candidate must run on the host, on a
        # copy there: not built yet, and a validate without it proves less.
        raise UsageError("--as does not go with --host or --inventory yet",
                         hint="run `lint --as PATH CANDIDATE` on the host itself, as a validate step does")
    paths = list(options.paths)
    if len(paths) > 1:
        raise UsageError(f"--as places {candidate} in one tree, and {len(paths)} were named",
                         hint="name the one main config PATH replaces a file of")
    if not paths:
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
    return replace(options, paths=paths, as_candidate=(os.path.normpath(os.path.abspath(target)), candidate),
                   cache=False)


def load_with_candidate(path: str, load: LoadOptions, pair: tuple[str, str],
                        notes: list[str]) -> tuple[Config, Overlay]:
    """The tree of `path` read with the candidate in PATH's place, judged
    by httpd on a copy; one line (exit 2) when PATH is not part of the
    tree, or when the reader or httpd refuses the candidate."""
    from advisor.config.loader import load_config
    from advisor.config.overlay import Overlay

    target, candidate = pair
    overlay = Overlay.of(target, candidate, load.root)
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
    if refused is None:
        return
    file, line, message = refused
    name = os.path.basename(command.argv[0])
    error = UsageError(f"{name} refuses the tree with this file as {overlay.target}: {message}", file, line,
                       hint="httpd would not start with it; fix it before it is deployed")
    if file is not None and (file in overlay.replaced
                             or os.path.realpath(file) == os.path.realpath(overlay.target)):
        error.file = overlay.candidate
    elif refusal(command, config.main_file, config.server_root, config.files, {}) is not None:
        error.message = f"{name} refuses the tree even as it is now: {message}"
        error.hint = "make httpd accept the tree first; the candidate is not what it refused"
    raise error


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
