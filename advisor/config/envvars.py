"""Debian's /etc/apache2/envvars: the environment apache2ctl gives httpd.

apache2ctl sources this shell file before starting httpd, so its `export
NAME=value` lines are what `${APACHE_LOG_DIR}` and friends expand to. We read
the plain assignments (the common case) without running a shell: a value may
refer to earlier ones as $NAME or ${NAME}; anything else is left alone.
"""

from __future__ import annotations

import os
import re
import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.config.inputs import InputRecorder

_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def read_envvars(path: str, base: dict[str, str], recorder: InputRecorder | None = None) -> dict[str, str]:
    """Assignments of an envvars file, expanded against `base` and each other."""
    values: dict[str, str] = {}
    if recorder is not None:
        recorder.looked_at(path)  # before reading: a later change shows
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return values

    def lookup(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name in values:
            return values[name]
        if recorder is not None:
            recorder.variable(name)
        return base.get(name, "")

    for line in lines:
        match = _ASSIGNMENT.match(line)
        if not match:
            continue
        name, text = match.groups()
        try:
            words = shlex.split(text, comments=True)
        except ValueError:
            continue
        value = words[0] if words else ""
        # Single-quoted text is literal in the shell; everything else expands.
        if not text.lstrip().startswith("'"):
            value = _REFERENCE.sub(lookup, value)
        values[name] = value
    return values


def envvars_beside(main_file: str, recorder: InputRecorder | None = None) -> str | None:
    """Debian keeps envvars next to apache2.conf."""
    if os.path.basename(main_file) != "apache2.conf":
        return None
    candidate = os.path.join(os.path.dirname(main_file), "envvars")
    if recorder is not None:
        recorder.looked_at(candidate)
    return candidate if os.path.isfile(candidate) else None
