"""Where `lint`'s findings stand: in the order httpd reads their files, each
file (and each fix's file) named as reports show it, relative to the working
directory when below it.

On the lint's hot path: a mass-hosting tree has tens of thousands of
findings in as many files, so the work is done once per file, not per
finding, wherever it can be.
"""

from __future__ import annotations

import os


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


def plain_path(path: str) -> bool:
    """Whether an absolute path is already normal (no `.`, `..` or empty
    component): then below the working directory its display form is the
    rest of it, as relpath would say."""
    return "//" not in path and "/./" not in path and "/../" not in path \
        and not path.endswith(("/.", "/..", "/"))


def in_read_order(findings: list, read_order: dict[str, int], with_findings: list[str], several_trees: bool) -> list:
    """The findings in the order httpd reads their files, then by line.
    `read_order` holds each file's position in that order; `with_findings`
    the files that have findings, in the engine's order (by name)."""
    from operator import attrgetter

    last = len(read_order)
    if several_trees:
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
    return findings


def show_display_paths(findings: list, with_findings: list[str], wants_edits: bool,
                       shown: dict[str, str] | None = None) -> None:
    """Name each finding's file, and its edit's, as reports show them (in
    place). `with_findings` lists the files that have findings; `shown`,
    when given, keeps each file's name as shown (an earlier call's: the
    edits a save adds later are named with the very strings the findings
    were, so the cache entry is the bytes it would have been)."""
    from advisor.lint.edits import Edit

    # Once per file, not per finding; and for a plain absolute path below
    # the working directory, a slice instead of relpath (a mass-hosting tree
    # has tens of thousands of findings in as many files). A fix's file is
    # its finding's file in nearly every case: the same table serves it.
    if shown is None:
        shown = {}
    cwd = os.getcwd().rstrip(os.sep)
    below = cwd + os.sep

    def display_of(path: str) -> str:
        display = shown.get(path)
        if display is None:
            if path[:1] == os.sep and path != cwd and plain_path(path):
                # Already absolute and normal: shown as it is unless below.
                display = path[len(below):] if path.startswith(below) else path
            else:
                display = _display_path(path)
            shown[path] = display
        return display

    # Findings come in runs of one file: the display path is looked up once
    # per run. When every file with findings is shown as it is named (a tree
    # outside the working directory), only an edit in another file than its
    # finding's can be shown otherwise: nothing else is visited (a lint that
    # saves its result wants the edits: 40,000 of them on 20,000 hosts).
    moved = any(display_of(file) != file for file in with_findings)
    if not moved:
        for finding in findings if wants_edits else ():
            edit = finding.edit
            if edit is not None and edit.file != finding.file:
                edit_file = display_of(edit.file)
                if edit_file != edit.file:
                    finding.edit = _edit_in(Edit, edit, edit_file)
        return
    run_file: str | None = None
    run_display = ""
    for finding in findings:
        file = finding.file
        if file != run_file:
            run_file, run_display = file, display_of(file)
        finding.file = run_display
        edit = finding.edit
        if edit is not None:
            edit_file = run_display if edit.file == file else display_of(edit.file)
            if edit_file != edit.file:
                finding.edit = _edit_in(Edit, edit, edit_file)


def _edit_in(edit_type, edit, file: str):
    """The same edit, its file named `file`. Built field by field:
    dataclasses.replace looks every field up again (0.45 s for 40,000 fixes)."""
    return edit_type(file, edit.line, edit.start, edit.end, edit.text, edit.original, edit.summary, edit.blocked)


def _out_of_read_order(positions: list[int]) -> bool:
    """Whether files sorted by name (their read positions in that order) are
    not in the order httpd reads them."""
    return any(earlier > later for earlier, later in zip(positions, positions[1:]))
