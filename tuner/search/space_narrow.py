"""A search space made smaller: narrowed or fixed by a --space TOML file, or
a dimension left out because a line of the config overrides what it writes."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Mapping

from advisor.errors import UsageError
from advisor.tuner.search.space import ON_OFF, Dimension, Space, Value, fix_dimension

# Set from other dimensions, never searched on their own.
DERIVED = {
    "ServerLimit": "it follows MaxRequestWorkers (and ThreadsPerChild); narrow those instead",
    "ThreadLimit": "it follows ThreadsPerChild; narrow that instead",
}

# A directive the pool's dimensions derive: left out with the dimension that sets it.
DERIVED_FROM = {"serverlimit": "MaxRequestWorkers", "threadlimit": "ThreadsPerChild"}
_DERIVES = {"MaxRequestWorkers": ("ServerLimit",), "ThreadsPerChild": ("ThreadLimit",)}


def leave_out(space: Space, directive: str, reason: str) -> Dimension | None:
    """Take the dimension that writes `directive` out of the search: a line of
    the config overrides it, so no trial's value would apply. It stays at the
    start (the value the config gives httpd) and is never written; `reason`
    (the overriding file:line) goes to the plan's notes. None when no
    dimension writes it."""
    name = DERIVED_FROM.get(directive.lower(), directive)
    dim = space.dimension(name)
    if dim is None or dim.name == "MPM":
        return None
    if not dim.is_fixed:
        fix_dimension(space, dim, space.start.get(dim.name, dim.low if dim.kind == "int" else dim.choices[0]))
    for written in (dim.name, *_DERIVES.get(dim.name, ())):
        if written not in space.unwritten:
            space.unwritten.append(written)
    head = f"{dim.name} left out: "
    for index, note in enumerate(space.notes):
        if note.startswith(head):  # one note per dimension, every line that overrides it
            space.notes[index] = f"{note}; {reason}"
            return dim
    space.notes.append(head + reason)
    return dim


# --------------------------------------------------------------------------
# --space FILE: narrow or fix dimensions


_TOML_POSITION = re.compile(r"\(at line (\d+), column \d+\)")


def narrow_from_file(space: Space, path: str) -> Space:
    """A copy of `space` narrowed by a TOML file:

        [MaxRequestWorkers]
        low = 50
        high = 200

        [KeepAlive]
        value = "On"

    Anything that would widen a guard, or that names no dimension of this
    space, is refused with one line naming the file (and line).
    """
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise UsageError("no such --space file", file=path, hint="give the path of a TOML file") from None
    except OSError as exc:
        raise UsageError(f"cannot read the --space file: {exc.strerror}", file=path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("the --space file is not UTF-8 text", file=path, hint="save it as UTF-8 TOML") from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = _TOML_POSITION.search(message)
        line = int(found.group(1)) if found else None
        message = _TOML_POSITION.sub("", message).strip()
        raise UsageError(f"not valid TOML: {message}", file=path, line=line,
                         hint="write one [Directive] table with low/high or value") from None
    return narrow(space, table, path=path, text=text)


def narrow(space: Space, table: Mapping[str, Any], *, path: str = "--space", text: str = "") -> Space:
    """Apply an already parsed --space table (see narrow_from_file)."""
    out = replace(space, dimensions=list(space.dimensions), start=dict(space.start),
                  start_notes=list(space.start_notes), start_written=dict(space.start_written))
    for key, spec in table.items():
        line = _line_of(text, key)

        def fail(message: str, hint: str | None = None) -> UsageError:
            return UsageError(message, file=path, line=line, hint=hint)

        dim = out.dimension(key)
        if dim is None:
            derived = next((k for k in DERIVED if k.lower() == key.lower()), None)
            if derived is not None:
                raise fail(f"{derived} cannot be set on its own: {DERIVED[derived]}")
            raise fail(f"{key} is not a dimension of this {space.mpm} search",
                       hint=f"use one of: {', '.join(d.name for d in space.dimensions)}")
        if not isinstance(spec, Mapping):
            raise fail(f"{dim.name} must be a table", hint=f"write [{dim.name}] with low/high or value")
        unknown = [k for k in spec if k not in ("low", "high", "value")]
        if unknown:
            raise fail(f"[{dim.name}] has no setting {unknown[0]!r}", hint="use low, high or value")
        if "value" in spec and ("low" in spec or "high" in spec):
            raise fail(f"[{dim.name}] gives both value and low/high", hint="fix it with value, or narrow it with low/high")
        if not spec:
            raise fail(f"[{dim.name}] is empty", hint="give low/high or value")
        if "value" in spec:
            value = _toml_value(dim, spec["value"], fail)
            fix_dimension(out, dim, value)
            continue
        if dim.kind == "choice":
            raise fail(f"{dim.name} is one of {'/'.join(dim.choices)}: it has no low or high",
                       hint=f'fix it with value = "{dim.choices[0]}"')
        guard_low, guard_high = dim.guard  # type: ignore[misc]
        low = _toml_int(dim, spec.get("low", dim.low), "low", fail)
        high = _toml_int(dim, spec.get("high", dim.high), "high", fail)
        for label, number in (("low", low), ("high", high)):
            if not guard_low <= number <= guard_high:
                raise fail(f"{dim.name} {label} = {number} is outside its guard {guard_low:,}..{guard_high:,}",
                           hint=dim.why.split(";")[0] if dim.why else None)
        if low > high:
            raise fail(f"{dim.name} low = {low} is above high = {high}")
        index = out.dimensions.index(dim)
        narrowed = replace(dim, low=low, high=high, log=dim.log and high > low,
                           unlimited_at_top=dim.unlimited_at_top and high == guard_high)
        out.dimensions[index] = narrowed
        if low == high:
            fix_dimension(out, narrowed, low)
            continue
        if not narrowed.contains(out.start[dim.name]):
            clipped = narrowed.clip(out.start[dim.name])
            out.start_notes.append(f"{path}: {dim.name} {out.start[dim.name]} is outside the narrowed range "
                                   f"{low:,}..{high:,}: the start is measured as written, and {clipped} stands "
                                   f"for it in the search")
            out.start_written.setdefault(dim.name, out.start[dim.name])
            out.start[dim.name] = clipped
    if not out.free:
        raise UsageError("every dimension is fixed: there is nothing to tune", file=path,
                         hint="leave at least one dimension free")
    return out


def _line_of(text: str, key: str) -> int | None:
    """The line of `[key]` (or a dotted `key.low = ...`) in the TOML text."""
    if not text:
        return None
    pattern = re.compile(r'^\s*(\[\s*["\']?' + re.escape(key) + r'["\']?\s*\]|["\']?' + re.escape(key)
                         + r'["\']?\s*[.=])')
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None


def _toml_int(dim: Dimension, value: Any, label: str, fail) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        unit = f" in {dim.unit}" if dim.unit else ""
        raise fail(f"{dim.name} {label} must be a whole number{unit}, got {value!r}")
    return value


def _toml_value(dim: Dimension, value: Any, fail) -> Value:
    if dim.kind == "choice":
        if isinstance(value, bool) and dim.choices == ON_OFF:
            value = "On" if value else "Off"
        if not isinstance(value, str):
            raise fail(f"{dim.name} value must be one of {'/'.join(dim.choices)}, got {value!r}")
        match = next((c for c in dim.choices if c.lower() == value.strip().lower()), None)
        if match is None:
            raise fail(f"{dim.name} value must be one of {'/'.join(dim.choices)}, got {value!r}")
        return match
    number = _toml_int(dim, value, "value", fail)
    if dim.unlimited_at_top and number == 0:
        number = dim.high
    guard_low, guard_high = dim.guard  # type: ignore[misc]
    if not guard_low <= number <= guard_high:
        raise fail(f"{dim.name} value = {number} is outside its guard {guard_low:,}..{guard_high:,}",
                   hint=dim.why.split(";")[0] if dim.why else None)
    return number
