"""`--format text`: findings grouped by file, for a terminal or a CI log.

rich decides colour the usual way: only on a terminal, never when NO_COLOR
is set (FORCE_COLOR forces it). Lines never wrap, so `file:line` stays on
one line for editors and CI log viewers that make it a link.
"""

from __future__ import annotations

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


def render(findings: Iterable[Finding], stream: IO[str], *, notes: Iterable[str] = (),
           files_checked: int = 0, show_evidence: bool = True, colour: bool | None = None) -> None:
    from rich.text import Text

    findings = list(findings)
    console = _console(stream, colour)
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
