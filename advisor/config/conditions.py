"""Decide httpd's read-time conditional sections.

Each takes the section's argument text up to its last `>`, as httpd's own
handlers do, reads a leading `!` as negation, and then reads the rest as one
configuration word: quotes are removed and trailing blanks dropped. So on
httpd 2.4.71 `<IfModule "mod_ssl.c">` and `<IfModule !'ssl_module'>` name
mod_ssl, while in `<IfModule "!mod_ssl.c">` the `!` is part of the quoted
name, which no module has (checked with `apache2 -t -D DUMP_RUN_CFG`).
"""

from __future__ import annotations

import os
import re

from advisor.config.catalog import directives
from advisor.errors import ConfigError
from advisor.config.lexer import split_words
from advisor.config.model import Section
from advisor.config.state import ReadState


# Directives of the "mpm_common" family that only threaded MPMs define.
_THREADED_ONLY = {"threadsperchild", "threadlimit", "maxsparethreads", "minsparethreads",
                  "threadstacksize"}


def parse_version(text: str) -> tuple[int, int, int]:
    """'2.4' -> (2, 4, 999): a version without a patch level stands for the
    newest release of that line."""
    parts = re.findall(r"\d+", text)
    if len(parts) < 2:
        raise ConfigError(f"not an httpd version: {text!r}", None, None, "use e.g. 2.4 or 2.4.58")
    major, minor = int(parts[0]), int(parts[1])
    patch = int(parts[2]) if len(parts) > 2 else 999
    return major, minor, patch


def evaluate_condition(kind: str, inner: str, node: Section, state: ReadState) -> bool:
    if kind == "ifversion":
        return _if_version(inner, node, state)
    negate = inner.startswith("!")
    subject = inner[1:] if negate else inner
    if subject.strip():
        subject = split_words(subject)[0]
    if not subject:
        raise ConfigError(f"<{node.name}> directive requires additional arguments",
                          node.file, node.end_line)
    if kind == "ifmodule":
        result = subject in state.modules
    elif kind == "ifdefine":
        result = subject in state.defines
    elif kind == "iffile":
        path = subject if os.path.isabs(subject) else os.path.join(state.server_root, subject)
        if state.options.recorder is not None:
            state.options.recorder.looked_at(path)
        result = os.path.exists(state.options.root + path if state.options.root else path)
    elif kind == "ifdirective":
        result = directive_exists(subject, state)
    elif kind == "ifsection":
        result = directive_exists(subject if subject.startswith("<") else subject, state,
                                  section=True)
    else:  # pragma: no cover - CONDITIONAL_SECTIONS and this table move together
        raise AssertionError(kind)
    return result != negate


def directive_exists(name: str, state: ReadState, section: bool = False) -> bool:
    """Whether a loaded module defines the directive (httpd's ap_exists_directive)."""
    info = directives("2.4").get(name.lstrip("<").lower())
    if info is None or (section and not info.block):
        return False
    mpms = state.modules.mpms()
    for module in info.modules:
        if module in ("core", "mod_so", "http_core"):
            return True
        if module == "mpm_common":
            if name.lower() in _THREADED_ONLY:
                return any(m in ("worker", "event") for m in mpms)
            return bool(mpms)
        if module in ("prefork", "worker", "event", "mpm_winnt", "mpm_netware", "mpmt_os2"):
            if module.replace("mpm_", "") in mpms:
                return True
            continue
        if f"{module}.c" in state.modules:
            return True
    return False


_VERSION_OPERATORS = ("==", ">=", "<=", "=", ">", "<", "~")


def _if_version(inner: str, node: Section, state: ReadState) -> bool:
    words = split_words(inner)
    if not words:
        raise ConfigError("<IfVersion> directive requires additional arguments",
                          node.file, node.end_line)
    negate = False
    operator = "="
    if words[0].startswith("!"):
        negate = True
        words[0] = words[0][1:]
        if not words[0]:
            words = words[1:]
    if len(words) >= 2:
        operator, target = words[0], words[1]
    else:
        target = words[0]
        for candidate in _VERSION_OPERATORS:
            if target.startswith(candidate) and len(target) > len(candidate):
                operator, target = candidate, target[len(candidate):]
                break
    current = state.version
    if target.startswith("/") and target.endswith("/") and len(target) > 1:
        operator, target = "~", target[1:-1]
    if operator == "~":
        text = f"{current[0]}.{current[1]}.{current[2]}"
        result = re.search(target, text) is not None
    elif operator not in _VERSION_OPERATORS:
        raise ConfigError(f"<IfVersion>: unknown operator {operator!r}", node.file, node.end_line)
    else:
        wanted = tuple(int(p) for p in re.findall(r"\d+", target)[:3])
        if not wanted:
            raise ConfigError(f"<IfVersion>: not a version: {target!r}", node.file, node.end_line)
        wanted = wanted + (0,) * (3 - len(wanted))
        if operator in ("=", "=="):
            # A version without patch level (2.4) matches any 2.4.x.
            given = len(re.findall(r"\d+", target))
            result = current[:given] == wanted[:given]
        elif operator == ">":
            result = current > wanted
        elif operator == ">=":
            result = current >= wanted
        elif operator == "<":
            result = current < wanted
        else:
            result = current <= wanted
    return result != negate
