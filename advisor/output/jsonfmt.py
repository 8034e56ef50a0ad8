"""`--format json`: an array of findings, each with exactly seven keys."""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any, Callable, Iterable, Iterator

from advisor.lint.rule import Finding

FINDING_KEYS = ("code", "severity", "message", "file", "line", "evidence", "fix")


def finding_object(finding: Finding) -> dict:
    return {key: getattr(finding, key) for key in FINDING_KEYS}


class _Unusual(Exception):
    """A value the fast writer leaves to the json module."""


def _encode(value: Any, out: Callable[[str], None], newline: str) -> None:
    kind = type(value)
    if kind is str:
        out(encode_basestring(value))
    elif value is None:
        out("null")
    elif value is True:
        out("true")
    elif value is False:
        out("false")
    elif kind is int:
        out(int.__repr__(value))
    elif kind is dict:
        if not value:
            out("{}")
            return
        inner = newline + "  "
        separator = "{" + inner
        for key, item in value.items():
            if type(key) is not str:
                raise _Unusual
            out(separator + encode_basestring(key) + ": ")
            _encode(item, out, inner)
            separator = "," + inner
        out(newline + "}")
    elif kind is list:
        if not value:
            out("[]")
            return
        inner = newline + "  "
        separator = "[" + inner
        for item in value:
            out(separator)
            _encode(item, out, inner)
            separator = "," + inner
        out(newline + "]")
    else:
        raise _Unusual


def encode_at(value: Any, depth: int) -> str:
    """`value` as `dumps_indented` writes it when nested `depth` levels deep
    (its first line not indented, the rest indented to match)."""
    parts: list[str] = []
    try:
        _encode(value, parts.append, "\n" + "  " * depth)
    except _Unusual:
        text = json.dumps(value, indent=2, ensure_ascii=False)
        return text.replace("\n", "\n" + "  " * depth)
    return "".join(parts)


def dumps_indented(value: Any) -> str:
    """Exactly `json.dumps(value, indent=2, ensure_ascii=False)`, about 1.5-2.5
    times faster: with an indent the json module encodes in Python, through
    generators, which on 20,000 findings is most of the report's cost.
    Anything but dicts with string keys, lists, strings, ints, booleans and
    None goes to the json module."""
    parts: list[str] = []
    try:
        _encode(value, parts.append, "\n")
    except _Unusual:
        return json.dumps(value, indent=2, ensure_ascii=False)
    return "".join(parts)


def _string_or_null(value: Any) -> str:
    return "null" if value is None else encode_basestring(value)


# Findings joined into one piece of the report at a time: a report of tens
# of thousands is written piece by piece, never held whole (the whole list
# joined, then concatenated, then encoded held three copies of it).
PIECE = 1024


def joined_in_pieces(items: Iterable[str], opening: str, separator: str, closing: str, empty: str,
                     size: int) -> Iterator[str]:
    """`opening + separator.join(items) + closing` (`empty` when there are no
    items), in pieces of `size` items: what a report writes a piece at a time."""
    batch: list[str] = []
    started = False
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield (separator if started else opening) + separator.join(batch)
            batch.clear()
            started = True
    if batch:
        yield (separator if started else opening) + separator.join(batch) + closing
    else:
        yield closing if started else empty


def _finding_texts(findings: Iterable[Finding]) -> Iterator[str]:
    """Each finding as `dumps_indented` writes it inside the report's list,
    from one template: the keys and layout never change, so only the values
    are encoded (a findings-heavy tree has tens of thousands)."""
    encode = encode_basestring
    for f in findings:
        if type(f.line) is not int or type(f.message) is not str or type(f.file) is not str \
                or type(f.code) is not str or type(f.severity) is not str \
                or type(f.evidence) is not str or (f.fix is not None and type(f.fix) is not str):
            # The finding alone, through the general writer, at its depth.
            yield "  " + encode_at(finding_object(f), 1)
        else:
            yield (f'  {{\n    "code": {encode(f.code)},\n    "severity": {encode(f.severity)},\n'
                   f'    "message": {encode(f.message)},\n    "file": {encode(f.file)},\n'
                   f'    "line": {int.__repr__(f.line)},\n    "evidence": {encode(f.evidence)},\n'
                   f'    "fix": {_string_or_null(f.fix)}\n  }}')


def render_pieces(findings: Iterable[Finding]) -> Iterator[str]:
    """What `dumps_indented` writes for the list of finding objects, in
    pieces of PIECE findings."""
    return joined_in_pieces(_finding_texts(findings), "[\n", ",\n", "\n]\n", "[]\n", PIECE)


def render(findings: Iterable[Finding]) -> str:
    """The whole report as one string (see `render_pieces`)."""
    return "".join(render_pieces(findings))
