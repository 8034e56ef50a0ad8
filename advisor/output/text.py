"""`--format text`: findings grouped by file, for a terminal or a CI log.

rich decides colour the usual way: only on a terminal, never when NO_COLOR
is set (FORCE_COLOR forces it). Lines never wrap, so `file:line` stays on
one line for editors and CI log viewers that make it a link.

Where rich would certainly print no styles at all (not a terminal, no
FORCE_COLOR or TTY_COMPATIBLE, or colour turned off) the same lines are
written directly: importing and driving rich costs a CI run or a pre-commit
hook more time (about 25 ms) than the lint of a small tree. Both paths give
the same bytes; a property test holds them to it.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from itertools import chain
from operator import attrgetter
from typing import IO, Iterable

from advisor.lint.rule import SEVERITIES, Finding

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _console(stream: IO[str], colour: bool | None):
    from rich.console import Console

    return Console(
        file=stream,
        force_terminal=colour,
        no_color=None,  # rich reads NO_COLOR itself
        highlight=False,
        soft_wrap=True,
        emoji=False,
        markup=False,
    )


# What rich's Text removes from any text it is given (rich.control).
_STRIPPED_CONTROLS = {code: None for code in (7, 8, 11, 12, 13)}


def styled(stream: IO[str]) -> bool:
    """Whether rich could print styles on `stream` (colour left to it)."""
    return _needs_rich(stream, None, ())


def _needs_rich(stream: IO[str], colour: bool | None, texts: Iterable[str]) -> bool:
    """False when rich would print the text as it is: then it need not be used."""
    # rich expands tabs by display cells, not characters: leave that to it.
    if any("\t" in text for text in texts):
        return True
    if colour is not None:
        return colour
    if os.environ.get("FORCE_COLOR") is not None or os.environ.get("TTY_COMPATIBLE") is not None:
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:
        return False


GROUP_MIN = 4
"""A finding seen in this many places or more (same rule, severity, message
shape, fix and evidence) is printed once, with its count and first places."""

GROUP_PLACES = 3
"""How many of a group's other places are named."""

# 0xFF never occurs in UTF-8: a marked digit cannot be confused with text.
_DIGIT_RUNS = re.compile(rb"[0-9]+")
_DIGITS_MARKED = bytes.maketrans(b"0123456789", b"\xff" * 10)
_MARK_RUNS = re.compile(rb"\xff+")


def shape(finding: Finding) -> tuple:
    """What makes two findings "the same" for grouping: every field a reader
    reads, with each run of digits made one mark (site1 and site20000, line
    numbers in messages), so a mass-hosting tree's per-host findings fall
    together. The mark is a byte UTF-8 never holds, so a written '#' is not
    taken for a number (a '#' marker grouped "site#" with "site1").
    `_groups` reaches the same groups a cheaper way."""
    fix = finding.fix
    return (finding.code, finding.severity, _DIGIT_RUNS.sub(b"\xff", finding.message.encode("utf-8", "surrogatepass")),
            None if fix is None else _DIGIT_RUNS.sub(b"\xff", fix.encode("utf-8", "surrogatepass")),
            finding.evidence)


def _refined(key: tuple) -> tuple:
    code, severity, message, fix, evidence = key
    return (code, severity, _MARK_RUNS.sub(b"\xff", message),
            None if fix is None else _MARK_RUNS.sub(b"\xff", fix), evidence)


def _groups(findings: list[Finding]) -> tuple[dict[int, list[int]], list[int]]:
    """(position of each group's first finding -> the positions of its others,
    the positions to print in order: each group's first, and every finding
    of too small a group). Groups are findings of equal `shape`."""
    # First by the very text (the fields read in C): a rule often says the
    # same words on every host (a constant, or the same address in each
    # <VirtualHost>), so there are few distinct texts.
    by_text: dict[tuple, list[int]] = {}
    for position, text in enumerate(map(_SHAPE_FIELDS, findings)):
        found = by_text.get(text)
        if found is None:
            by_text[text] = [position]
        else:
            found.append(position)
    # Then each distinct text by a coarse key: `shape` with each digit
    # marked rather than each run (a bytes translation, ten times cheaper
    # than the substitution). Texts with equal coarse keys have equal
    # shapes; the few distinct coarse keys are then merged by `_refined`.
    # Each distinct fix is marked once: a rule's fix text is nearly always
    # the same few strings.
    coarse: dict[tuple, list[list[int]]] = {}
    marked_fixes: dict[str, bytes] = {}
    for (code, severity, message, fix, evidence), positions in by_text.items():
        if fix is not None:
            marked = marked_fixes.get(fix)
            if marked is None:
                marked = marked_fixes[fix] = fix.encode("utf-8", "surrogatepass").translate(_DIGITS_MARKED)
        else:
            marked = None
        key = (code, severity, message.encode("utf-8", "surrogatepass").translate(_DIGITS_MARKED), marked,
               evidence)
        coarse.setdefault(key, []).append(positions)  # once per distinct text: few
    members: dict[tuple, list[list[int]]] = {}
    for key, lists in coarse.items():
        members.setdefault(_refined(key), []).extend(lists)
    heads: dict[int, list[int]] = {}
    # The renderers visit these positions only, not every finding: a grouped
    # report of 100,000 findings prints a handful.
    printed: list[int] = []
    for lists in members.values():
        # Merged once, at the end (each list is in order already).
        positions = lists[0] if len(lists) == 1 else sorted(chain.from_iterable(lists))
        if len(positions) >= GROUP_MIN:
            heads[positions[0]] = positions[1:]
            printed.append(positions[0])
        else:
            printed.extend(positions)
    printed.sort()
    return heads, printed


_SHAPE_FIELDS = attrgetter("code", "severity", "message", "fix", "evidence")


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def render(findings: Iterable[Finding], stream: IO[str], *, notes: Iterable[str] = (),
           files_checked: int = 0, show_evidence: bool = True, colour: bool | None = None,
           group: bool = True) -> None:
    """Findings under a heading per file, then a summary. With `group`, a
    finding repeated in GROUP_MIN places or more in the same shape is printed
    once (where it first occurs) with its count and first few other places."""
    findings = list(findings)
    notes = list(notes)
    heads, printed = _groups(findings) if group else ({}, range(len(findings)))
    if _needs_rich(stream, colour, ()):
        _render_rich(findings, stream, notes, files_checked, show_evidence, colour, heads, printed)
        return
    # Off a terminal: the same lines as plain strings, joined once, and the
    # control characters rich would drop removed from the whole at once.
    out: list[str] = []
    write = out.append
    # (The widest number is the largest: lines are never negative.)
    width = len(str(max(map(_LINE_OF, findings), default=0)))
    pad = " " * (width + 4)
    current_file = None
    for position in printed:
        finding = findings[position]
        if finding.file != current_file:
            if current_file is not None:
                write("\n")
            write(finding.file + "\n")
            current_file = finding.file
        write(f"  {finding.line:>{width}}  {finding.severity:<7} {finding.code} {finding.message}\n")
        if finding.fix is not None:
            write(f"{pad}fix: {finding.fix if finding.fix else '(delete this line)'}\n")
        if show_evidence:
            write(f"{pad}why: {finding.evidence}\n")
        others = heads.get(position)
        if others:
            write(pad + _group_line(findings, others) + "\n")
    if findings:
        write("\n")
    write(_summary(findings, files_checked) + "\n")
    if heads:
        write(_grouped_note(heads) + "\n")
    for note in notes:
        write(f"note: {note}\n")
    text = "".join(out)
    if "\t" in text:
        # rich expands tabs by display cells: leave that to it. (Every text
        # rich would print is in `text`, and no other.)
        _render_rich(findings, stream, notes, files_checked, show_evidence, colour, heads, printed)
        return
    if _CONTROLS.search(text):
        text = _CONTROLS.sub("", text)
    stream.write(text)


_CONTROLS = re.compile("[\x07\x08\x0b\x0c\x0d]")


def _group_line(findings: list[Finding], others: list[int]) -> str:
    places = ", ".join(f"{f.file}:{f.line}" for f in map(findings.__getitem__, others[:GROUP_PLACES]))
    more = len(others) - GROUP_PLACES
    return (f"same in {_plural(len(others), 'more place')}: {places}"
            + (f" and {more:,} more" if more > 0 else ""))


def _grouped_note(heads: dict[int, list[int]]) -> str:
    hidden = sum(len(others) for others in heads.values())
    return (f"{_plural(hidden, 'finding')} of the same shape as one shown are counted, not "
            f"printed (--no-group prints every one)")


_SEVERITY_OF = attrgetter("severity")
_LINE_OF = attrgetter("line")
_FILE_OF = attrgetter("file")


def _summary(findings: list[Finding], files_checked: int) -> str:
    if not findings:
        return f"No problems found in {files_checked} file{'s' if files_checked != 1 else ''}."
    counts = dict.fromkeys(SEVERITIES, 0)
    # Counted in C (map over an attribute getter): a finding each.
    counts.update(Counter(map(_SEVERITY_OF, findings)))
    files = set(map(_FILE_OF, findings))
    parts = [f"{counts[level]} {label}" for level, label in
             (("error", "error" if counts["error"] == 1 else "errors"),
              ("warning", "warning" if counts["warning"] == 1 else "warnings"),
              ("info", "info"))
             if counts[level]]
    return (f"Found {len(findings)} problem{'s' if len(findings) != 1 else ''} "
            f"({', '.join(parts)}) in {len(files)} file{'s' if len(files) != 1 else ''}")


def _render_rich(findings: list[Finding], stream: IO[str], notes: list[str], files_checked: int,
                 show_evidence: bool, colour: bool | None, heads: dict[int, list[int]],
                 printed: Iterable[int]) -> None:
    from rich.text import Text

    console = _console(stream, colour)
    current_file = None
    width = max((len(str(f.line)) for f in findings), default=1)
    pad = " " * (width + 4)
    for position in printed:
        finding = findings[position]
        if finding.file != current_file:
            if current_file is not None:
                console.print()
            console.print(Text(finding.file, style="bold underline"))
            current_file = finding.file
        line = Text("  ")
        line.append(f"{finding.line:>{width}}", style="dim")
        line.append("  ")
        line.append(f"{finding.severity:<7}", style=_STYLE[finding.severity])
        line.append(" ")
        line.append(finding.code, style="bold")
        line.append(" ")
        line.append(finding.message)
        console.print(line)
        if finding.fix is not None:
            fix = Text(pad + "fix: ", style="green")
            fix.append(finding.fix if finding.fix else "(delete this line)")
            console.print(fix)
        if show_evidence:
            console.print(Text(pad + "why: " + finding.evidence, style="dim"))
        others = heads.get(position)
        if others:
            console.print(Text(pad + _group_line(findings, others), style="dim"))
    if findings:
        console.print()
    console.print(Text(_summary(findings, files_checked), style="bold" if findings else "bold green"))
    if heads:
        console.print(Text(_grouped_note(heads), style="dim"))
    for note in notes:
        console.print(Text(f"note: {note}", style="dim"))


def render_statistics(findings: Iterable[Finding], stream: IO[str], summaries: dict[str, str], *,
                      files_checked: int = 0) -> None:
    """`--statistics`: one line per rule (count, code, severity, what it
    checks), most frequent first, then the summary line. No colour: it is
    a table to read or to pipe."""
    findings = list(findings)
    out = []
    for code, severity, count in statistics(findings):
        out.append(f"{count:>7,}  {code}  {severity:<7}  {summaries.get(code, '')}".rstrip() + "\n")
    if out:
        out.append("\n")
    out.append(_summary(findings, files_checked) + "\n")
    stream.write("".join(out).translate(_STRIPPED_CONTROLS))


def statistics(findings: Iterable[Finding]) -> list[tuple[str, str, int]]:
    """(code, severity, count) for each rule and severity found, most frequent
    first, then by code."""
    counts: dict[tuple[str, str], int] = {}
    for f in findings:
        key = (f.code, f.severity)
        counts[key] = counts.get(key, 0) + 1
    return sorted(((code, severity, count) for (code, severity), count in counts.items()),
                  key=lambda item: (-item[2], item[0], item[1]))
