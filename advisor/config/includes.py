"""Resolve Include/IncludeOptional arguments to files, in httpd 2.4's order.

Mirrors httpd's process_resource_config_(no)fnmatch: wildcards may stand in
any path component (directory components match directories only), matches
are sorted by byte order of the full path, a directory is read recursively,
a leading dot must be matched explicitly, and a wildcard that matches
nothing is an error for Include but not for IncludeOptional.
"""

from __future__ import annotations

import fnmatch
import os
import re
from operator import attrgetter
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from advisor.config.inputs import InputRecorder

# httpd's AP_MAX_INCLUDE_DIR_DEPTH.
MAX_DIRECTORY_DEPTH = 128

_WILDCARD = re.compile(r"[*?]|\[[^\]]*\]")


class IncludeError(Exception):
    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def has_wildcard(text: str) -> bool:
    """apr_fnmatch_test: `*`, `?` or a bracket expression."""
    return bool(_WILDCARD.search(text))


def name_matcher(pattern: str) -> Callable[[str], bool]:
    """apr_fnmatch of `pattern` against a directory entry's name, compiled
    once for a whole listing (thousands of names in a sites directory)."""
    if pattern[:1] == "*" and not has_wildcard(pattern[1:]):
        # `*.conf`: a suffix test (the leading dot rule as below).
        suffix = pattern[1:]
        return lambda name: name[:1] != "." and name.endswith(suffix)
    match = re.compile(fnmatch.translate(pattern.replace("[^", "[!"))).match
    if pattern.startswith("."):
        return lambda name: match(name) is not None
    # APR_FNM_PERIOD: a leading dot is matched only by a leading dot.
    return lambda name: name[:1] != "." and match(name) is not None


def _join(directory: str, name: str) -> str:
    # ap_make_full_path: exactly one slash between the parts.
    return directory + name if directory.endswith("/") else f"{directory}/{name}"


def server_root_relative(path: str, server_root: str) -> str:
    if os.path.isabs(path):
        return os.path.normpath(path) if "//" in path or "/." in path else path
    return os.path.normpath(os.path.join(server_root, path))


def expand(argument: str, server_root: str, optional: bool,
           recorder: InputRecorder | None = None, root: str | None = None) -> list[str]:
    """Files an Include argument names, in the order httpd reads them.

    The recorder, when given, hears of every path tested and directory listed.
    With `root`, the host's `/` is that local directory: the walk runs there
    and the paths come back as the host names them (the loader passes it
    without a trailing slash)."""
    full = server_root_relative(argument, server_root)
    if root is not None:
        return _under_root(full, optional, root)
    if not has_wildcard(full):
        return _plain(full, optional, 0, recorder)
    parts = full.split("/")
    # parts[0] is "" for an absolute path: the walk starts at the root.
    return _walk("/", parts[1:], optional, recorder)


def _under_root(full: str, optional: bool, root: str) -> list[str]:
    try:
        if not has_wildcard(full):
            found = _plain(root + full, optional, 0, None)
        else:
            found = _walk(root or "/", full.split("/")[1:], optional, None)
    except IncludeError as exc:
        raise IncludeError(str(exc).replace(root + "/", "/"), exc.hint) from None
    return [path[len(root):] for path in found]


def _plain(path: str, optional: bool, depth: int, recorder: InputRecorder | None) -> list[str]:
    if recorder is not None:
        recorder.looked_at(path)
    if os.path.isdir(path):
        depth += 1
        if depth > MAX_DIRECTORY_DEPTH:
            raise IncludeError(
                f"directory {path} exceeds the include nesting limit of {MAX_DIRECTORY_DEPTH}",
                "look for a directory loop (symbolic links)")
        try:
            names = os.listdir(path)
        except OSError as exc:
            raise IncludeError(f"cannot open config directory {path}: {exc.strerror}") from None
        found: list[str] = []
        for full in sorted(_join(path, name) for name in names):
            found.extend(_plain(full, optional, depth, recorder))
        return found
    if not os.path.exists(path):
        if optional:
            return []
        raise IncludeError(f"cannot open configuration file {path}: no such file",
                           "fix the path, create the file, or use IncludeOptional")
    return [path]


def _walk(directory: str, components: list[str], optional: bool,
          recorder: InputRecorder | None) -> list[str]:
    # Skip empty components from doubled slashes, as the path merge does.
    while components and components[0] == "":
        components = components[1:]
    if not components:
        return _plain(directory, optional, 0, recorder)
    head, rest = components[0], components[1:]
    if not has_wildcard(head):
        path = _join(directory, head)
        if rest:
            return _walk(path, rest, optional, recorder)
        return _plain(path, optional, 0, recorder)
    if recorder is not None:
        recorder.looked_at(directory)  # its times change when entries come or go
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        if optional:
            return []
        raise IncludeError(f"cannot open directory {directory}: no such directory",
                           "fix the path or use IncludeOptional") from None
    except OSError as exc:
        raise IncludeError(f"cannot open directory {directory}: {exc.strerror}") from None
    matches = name_matcher(head)
    picked = [entry for entry in entries if matches(entry.name)]
    if rest:
        # In the middle of the path only real directories match (httpd
        # looks at the directory entry's type, which a symlink is not).
        picked = [entry for entry in picked if entry.is_dir(follow_symlinks=False)]
    if not picked:
        if optional:
            return []
        raise IncludeError(f"no matches for the wildcard '{head}' in '{directory}'",
                           "fix the pattern, or use IncludeOptional if the match is optional")
    # One directory: sorting the names sorts the paths.
    picked.sort(key=attrgetter("name"))
    prefix = _join(directory, "")
    if not rest and not any(entry.is_dir() for entry in picked):
        # Files only (a sites directory): each was just listed, no need to
        # stat it again.
        return [prefix + entry.name for entry in picked]
    found: list[str] = []
    for entry in picked:
        path = prefix + entry.name
        if rest:
            found.extend(_walk(path, rest, optional, recorder))
        elif entry.is_dir():
            found.extend(_plain(path, optional, 0, recorder))
        else:
            found.append(path)
    return found
