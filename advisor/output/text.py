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


class _PlainConsole:
    """The part of rich's Console used below, without styles."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def print(self, text: "_PlainText | None" = None) -> None:
        self.stream.write((text.plain if text is not None else "") + "\n")


class _PlainText:
    """The part of rich's Text used below, without styles."""

    def __init__(self, text: str = "", style: str | None = None) -> None:
        self.plain = text.translate(_STRIPPED_CONTROLS)

    def append(self, text: str, style: str | None = None) -> None:
        self.plain += text.translate(_STRIPPED_CONTROLS)


def render(findings: Iterable[Finding], stream: IO[str], *, notes: Iterable[str] = (),
           files_checked: int = 0, show_evidence: bool = True, colour: bool | None = None) -> None:
    findings = list(findings)
    notes = list(notes)
    texts = [text for f in findings for text in (f.file, f.message, f.evidence, f.fix or "")] + notes
    if _needs_rich(stream, colour, texts):
        from rich.text import Text

        console = _console(stream, colour)
    else:
        Text = _PlainText  # type: ignore[assignment,misc]  # noqa: N806
        console = _PlainConsole(stream)  # type: ignore[assignment]
    current_file = None
    width = max((len(str(f.line)) for f in findings), default=1)
    for finding in findings:
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
        pad = " " * (width + 4)
        if finding.fix is not None:
            fix = Text(pad + "fix: ", style="green")
            fix.append(finding.fix if finding.fix else "(delete this line)")
            console.print(fix)
        if show_evidence:
            console.print(Text(pad + "why: " + finding.evidence, style="dim"))
    if findings:
        console.print()
    counts = {level: sum(1 for f in findings if f.severity == level) for level in SEVERITIES}
    files_with = len({f.file for f in findings})
    if findings:
        parts = [f"{counts[level]} {label}" for level, label in
                 (("error", "error" if counts["error"] == 1 else "errors"),
                  ("warning", "warning" if counts["warning"] == 1 else "warnings"),
                  ("info", "info"))
                 if counts[level]]
        summary = Text(f"Found {len(findings)} problem{'s' if len(findings) != 1 else ''} "
                       f"({', '.join(parts)}) in {files_with} file{'s' if files_with != 1 else ''}",
                       style="bold")
    else:
        summary = Text(f"No problems found in {files_checked} file{'s' if files_checked != 1 else ''}.",
                       style="bold green")
    console.print(summary)
    for note in notes:
        console.print(Text(f"note: {note}", style="dim"))
