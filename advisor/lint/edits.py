"""A finding's fix as data: the one edit, on one physical line, that makes it.

Rules describe the edit from the model alone (the node's file and line and
the text the reader kept in `Config.sources`); they never touch a file.
`apache-advisor fix` (advisor.fix) turns edits into bytes and splices them,
and SARIF shows the same edit as a `fixes` replacement.

An edit replaces columns `start:end` of physical line `line` with `text`.
Columns count characters of the line as the reader decoded it (bytes that
are not UTF-8 are one surrogate each, so they map back to single bytes). A
new line is an insertion at the end of an existing line's content, with the
line ending in front: `"\\n    ServerLimit 40"` after `MaxRequestWorkers`.
That keeps every other byte of the file where it was, the missing final
newline of a file included.

When the value cannot be changed mechanically (it comes from a macro, from
`${VAR}`, or it is continued over several lines) the edit still names the
place and says why in `blocked`; the applier reports it and leaves it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.config.model import Node
    from advisor.lint.context import LintContext

_BLANKS = " \t\f\v"


# Not frozen, though never changed after it is made: a frozen dataclass
# costs four times as much to build (0.87 against 0.19 us), and a tree of
# 20,000 hosts with two fixes each builds 80,000 (a lint's display paths
# build each one again). Make a new Edit instead of changing one.
@dataclass(slots=True)
class Edit:
    file: str
    line: int
    """1-based physical line the edit is on."""
    start: int
    end: int
    """Columns of the replaced text (0-based, end exclusive)."""
    text: str
    original: str
    """The whole line as it was read, without its newline: the applier
    refuses to splice into a file that has changed since."""
    summary: str
    """What it does, for people: `KeepAlive Off -> On`."""
    blocked: str = ""
    """Why this edit is not applied automatically ("" when it is)."""

    @property
    def applicable(self) -> bool:
        return not self.blocked

    @property
    def inserts_line(self) -> bool:
        return self.start == self.end and self.text[:1] in ("\n", "\r")

    def fields(self) -> tuple:
        """The fields in order (the lint cache keeps each edit as a tuple:
        `Edit(*fields)` makes it again)."""
        return (self.file, self.line, self.start, self.end, self.text, self.original,
                self.summary, self.blocked)


def _physical_lines(ctx: LintContext, file: str) -> list[str] | None:
    """The file's lines as read, split once per file and run."""
    cache = ctx.shared.get("edits.lines")
    if cache is None:
        cache = ctx.shared["edits.lines"] = {}
    lines = cache.get(file, _UNSPLIT)
    if lines is _UNSPLIT:
        text = ctx.config.sources.get(file)
        lines = cache[file] = None if text is None else text.split("\n")
    return lines


_UNSPLIT: list[str] = []


# A word as httpd's argument splitter groups it: a quoted run to its closing
# quote (a backslash escapes the next character; no closing quote: to the
# end), or anything up to the next blank. Every alternative takes a
# character, so the blanks after the last word end the search.
_WORD = re.compile(r"""[ \t\f\v]*("(?:\\.|\\\Z|[^"\\])*"?|'(?:\\.|\\\Z|[^'\\])*'?|[^ \t\f\v]+)""", re.S)


def _words(content: str, position: int) -> list[tuple[int, int]]:
    """Spans of the words from `position` on, quotes as httpd groups them."""
    return [match.span(1) for match in _WORD.finditer(content, position)]


# A line of unquoted words without a comment (nearly every line a fix
# touches): its name and the span of its value in one match. The value runs
# from its first word to its last, as `_words` would find them.
_PLAIN_LINE = re.compile(r"[ \t\f\v]*([^ \t\f\v]+)(?:[ \t\f\v]+([^ \t\f\v](?:.*[^ \t\f\v])?))?[ \t\f\v]*", re.S)


@lru_cache(maxsize=4096)
def _spans(content: str) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """(name span, value span) of a directive line (without its CR), or None
    when it holds no word. The value runs from the first argument to the
    last, short of a trailing comment httpd let through. Remembered per
    text: every host of a large tree has the same `KeepAlive Off` line."""
    if '"' not in content and "'" not in content and "#" not in content:
        plain = _PLAIN_LINE.fullmatch(content)
        if plain is None:
            return None  # blanks only
        name_span = plain.span(1)
        return name_span, plain.span(2) if plain.start(2) >= 0 else (name_span[1], name_span[1])
    return _spans_by_words(content)


def _spans_by_words(content: str) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """`_spans` for any line: word by word, quotes as httpd groups them."""
    words = _words(content, 0)
    if not words:
        return None
    name_span = words[0]
    kept = []
    for span in words[1:]:
        if content[span[0]] == "#" and kept:
            break  # a trailing comment httpd let through: keep it as it is
        kept.append(span)
    if kept:
        return name_span, (kept[0][0], kept[-1][1])
    return name_span, (name_span[1], name_span[1])


def _locate(ctx: LintContext, node: Node):
    """(line text, content without CR, name span, value span) or a reason."""
    if node.expansion is not None:
        return (f"{node.name} comes from a <Macro> ({node.expansion[0]}); change the macro "
                "or its Use line by hand")
    if node.end_line != node.line:
        return (f"{node.name} is continued over lines {node.line}-{node.end_line} with a "
                "backslash; edit it by hand")
    lines = _physical_lines(ctx, node.file)
    if lines is None or not 1 <= node.line <= len(lines):
        return f"the text of {node.file} was not kept by the reader"
    line = lines[node.line - 1]
    content = line[:-1] if line.endswith("\r") else line
    spans = _spans(content)
    if spans is None or content[spans[0][0]:spans[0][1]].lower() != node.name.lower():
        return f"line {node.line} does not start with {node.name} as it was read"
    name_span, value_span = spans
    if "${" in content[value_span[0]:value_span[1]]:
        return (f"the value of {node.name} comes from ${{...}} (Define or the environment); "
                "change it where the variable is defined")
    return line, content, name_span, value_span


def set_value(ctx: LintContext, node: Node, value: str) -> Edit | None:
    """Replace the arguments of `node` by `value`, in place: the name, the
    indentation and a trailing comment stay as written. None when the run
    does not want edits (`LintContext.wants_edits`), as for the two below."""
    if not ctx.wants_edits:
        return None
    found = _locate(ctx, node)
    if isinstance(found, str):
        return Edit(node.file, node.line, 0, 0, "", "", f"{node.name} {value}", found)
    line, content, _, (start, end) = found
    old = content[start:end]
    text = value if start != end else f" {value}"
    return Edit(node.file, node.line, start, end, text, line, f"{node.name} {old} -> {value}")


def rename(ctx: LintContext, node: Node, new_name: str) -> Edit | None:
    """Write `new_name` in place of the directive's name, arguments untouched."""
    if not ctx.wants_edits:
        return None
    found = _locate(ctx, node)
    if isinstance(found, str):
        return Edit(node.file, node.line, 0, 0, "", "", f"{node.name} -> {new_name}", found)
    line, _, (start, end), _ = found
    return Edit(node.file, node.line, start, end, new_name, line, f"{node.name} -> {new_name}")


def remove_directive(ctx: LintContext, node: Node) -> Edit | None:
    """Blank the line of `node`: httpd no longer reads the directive, and
    the line ending stays, so no other line moves (a finding's fix `""`,
    shown as "delete this line")."""
    if not ctx.wants_edits:
        return None
    summary = f"drop {node.name} {node.raw_args}"
    found = _locate(ctx, node)
    if isinstance(found, str):
        return Edit(node.file, node.line, 0, 0, "", "", summary, found)
    line, content, _, _ = found
    return Edit(node.file, node.line, 0, len(content), "", line, summary)


def add_directive(ctx: LintContext, directive: str, after: Node | None = None) -> Edit | None:
    """A new line `directive`: after `after` (same context, same indentation),
    or at the end of the main file (server scope) when `after` is None."""
    if not ctx.wants_edits:
        return None
    summary = f"add {directive}"
    if after is not None:
        if after.expansion is not None:
            return Edit(after.file, after.line, 0, 0, "", "", summary,
                        f"the place for {directive.split()[0]} is inside a <Macro>; add it by hand")
        file, anchor = after.file, after.end_line
    else:
        file = ctx.config.main_file
        anchor = 0
    lines = _physical_lines(ctx, file)
    if lines is None:
        return Edit(file, max(anchor, 1), 0, 0, "", "", summary,
                    f"the text of {file} was not kept by the reader")
    if after is None:
        # The last line with content; a final newline leaves an empty piece.
        anchor = len(lines) - 1 if len(lines) > 1 and lines[-1] == "" else len(lines)
    if not 1 <= anchor <= len(lines):
        return Edit(file, max(anchor, 1), 0, 0, "", "", summary, f"{file} has no line {anchor}")
    line = lines[anchor - 1]
    content = line[:-1] if line.endswith("\r") else line
    if content.endswith("\\"):
        return Edit(file, anchor, 0, 0, "", "", summary,
                    f"line {anchor} ends with a backslash that would join the new line; add "
                    f"{directive} by hand")
    # The file's own line ending: the anchor's, or for a last line without
    # one, the line before it.
    ending_from = line if anchor < len(lines) or anchor == 1 else lines[anchor - 2]
    newline = "\r\n" if ending_from.endswith("\r") else "\n"
    indent = ""
    if after is not None:
        first = lines[after.line - 1]
        indent = first[:len(first) - len(first.lstrip(_BLANKS))]
    if not content and anchor == 1 and len(lines) == 1:
        # An empty file: the directive is its only line.
        return Edit(file, 1, 0, 0, directive + "\n", line, summary)
    return Edit(file, anchor, len(content), len(content), newline + indent + directive, line, summary)
