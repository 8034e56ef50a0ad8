"""Which edits to make, per file, and the bytes each file becomes.

Splicing works on bytes: a file is cut at its `\\n` bytes (the reader's own
line split), only the edited lines are re-encoded, and every other byte is
copied as it was: CR before LF, a missing final newline, bytes that are not
UTF-8, tabs, comments.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.errors import ConfigError
from advisor.lint.edits import Edit
from advisor.lint.rule import Finding


@dataclass
class Skipped:
    finding: Finding
    reason: str


@dataclass
class Plan:
    edits: dict[str, list[tuple[Edit, Finding]]] = field(default_factory=dict)
    """Per file (in the order the findings came), the edits to make."""
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def fixed(self) -> list[Finding]:
        return [finding for pairs in self.edits.values() for _, finding in pairs]


def _overlaps(a: Edit, b: Edit) -> bool:
    if a.line != b.line:
        return False
    if a.start == a.end or b.start == b.end:
        # An insertion clashes only with a replacement that spans its point.
        point, other = (a, b) if a.start == a.end else (b, a)
        return other.start < point.start < other.end
    return a.start < b.end and b.start < a.end


def make_plan(findings: list[Finding]) -> Plan:
    plan = Plan()
    for finding in findings:
        edit = finding.edit
        if edit is None:
            continue
        if not edit.applicable:
            plan.skipped.append(Skipped(finding, edit.blocked))
            continue
        planned = plan.edits.setdefault(edit.file, [])
        same = next((kept for kept, _ in planned
                     if (kept.line, kept.start, kept.end, kept.text) == (edit.line, edit.start, edit.end, edit.text)),
                    None)
        if same is not None:
            continue  # two findings asking for the same change: one edit
        clash = next(((kept, by) for kept, by in planned if _overlaps(kept, edit)), None)
        if clash is not None:
            plan.skipped.append(Skipped(finding, f"it changes the same text as the {clash[1].code} fix "
                                                 f"({clash[0].summary}); run fix again after this one"))
            continue
        planned.append((edit, finding))
    for file in [file for file, pairs in plan.edits.items() if not pairs]:
        del plan.edits[file]
    return plan


def tree_root(main_file: str, server_root: str) -> str:
    """The directory a fix may write in: the server root when it holds the
    main file, else the main file's directory."""
    import os

    main, root = os.path.realpath(main_file), os.path.realpath(server_root)
    return root if main.startswith(root.rstrip(os.sep) + os.sep) else os.path.dirname(main)


def keep_inside(plan: Plan, roots: list[str]) -> None:
    """Leave alone files outside the trees being fixed: an absolute Include
    can pull in another server's files (/etc/apache2 from a copy under
    /tmp), and those are not the admin's to change from here."""
    import os

    for file in list(plan.edits):
        real = os.path.realpath(file)
        if any(real.startswith(root.rstrip(os.sep) + os.sep) for root in roots):
            continue
        for _, finding in plan.edits.pop(file):
            plan.skipped.append(Skipped(finding, f"{file} lies outside the tree being fixed "
                                                 f"({', '.join(roots)}); fix it there"))


def split_lines(data: bytes) -> list[bytes]:
    """The file cut after each LF; the last piece has no LF (maybe empty)."""
    pieces = data.split(b"\n")
    return [piece + b"\n" for piece in pieces[:-1]] + [pieces[-1]]


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")


def splice(file: str, data: bytes, edits: list[Edit]) -> bytes:
    """`data` with the edits made. Each edited line must still read as it
    did when lint saw it, or the file changed in between."""
    lines = split_lines(data)
    by_line: dict[int, list[Edit]] = {}
    for edit in edits:
        by_line.setdefault(edit.line, []).append(edit)
    for number, line_edits in by_line.items():
        if not 1 <= number <= len(lines):
            raise ConfigError("the file changed since it was read (it has fewer lines now)", file,
                              number, "run fix again")
        raw = lines[number - 1]
        body, ending = (raw[:-1], b"\n") if raw.endswith(b"\n") else (raw, b"")
        text = _decode(body)
        for edit in line_edits:
            if edit.original != text:
                raise ConfigError("the file changed since it was read", file, number, "run fix again")
        # From the right, so earlier columns stay valid; insertions at one
        # point go in the order the findings came.
        ordered = sorted(enumerate(line_edits), key=lambda item: (item[1].start, item[0]), reverse=True)
        for _, edit in ordered:
            text = text[:edit.start] + edit.text + text[edit.end:]
        lines[number - 1] = _encode(text) + ending
    return b"".join(lines)


def unified_diff(shown_as: str, before: bytes, after: bytes) -> str:
    """A unified diff of one file, as `diff -u` writes it (apply it with
    `patch -p0`); lines as written, a CR stays at the end of its line."""
    import difflib

    def lines(data: bytes) -> list[str]:
        found = [_decode(piece) for piece in split_lines(data)]
        return found if found[-1] else found[:-1]

    old, new = lines(before), lines(after)
    out = []
    for line in difflib.unified_diff(old, new, shown_as, shown_as, n=3):
        if line.startswith(("---", "+++")):
            out.append(line.rstrip("\n") + "\n")
            continue
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
