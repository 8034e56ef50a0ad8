"""What a load depended on, so a saved result can be proven still current.

httpd's reading of a tree depends on more than the files it opens: on the
directories its wildcards listed, on paths that `<IfFile>` found missing, on
the Debian envvars file and on environment variables that `${NAME}` looked
up. The loader reports each of these to an `InputRecorder` when it is given
one; `changed()` later tells whether any of them is different now.

A file is identified by what `stat` says of it: modification and change
times in nanoseconds, size, inode, device and mode. Rewriting a file changes
its times; replacing it (an editor's save-and-rename, rsync, `ln -sf`)
changes its inode; adding or removing a file in a listed directory changes
the directory's times.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from operator import itemgetter

# (st_mtime_ns, st_ctime_ns, st_size, st_ino, st_dev, st_mode); None: absent.
Signature = tuple[int, int, int, int, int, int]


def signature_of(info: os.stat_result) -> Signature:
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino, info.st_dev, info.st_mode)


@dataclass
class InputRecorder:
    paths: dict[str, Signature | None] = field(default_factory=dict)
    """Every file read, directory listed and path tested, as found."""
    variables: dict[str, str | None] = field(default_factory=dict)
    """Environment variables looked up, with the value they had."""
    unreliable: bool = False
    """Something was read that a signature cannot vouch for (a path that
    could not be stat'ed): the result must not be reused."""

    def opened(self, path: str, info: os.stat_result) -> None:
        """A file read through a descriptor: its fstat is its signature."""
        self.paths[path] = signature_of(info)

    def looked_at(self, path: str) -> None:
        """A path httpd's reading tested or listed (a directory, IfFile)."""
        if path in self.paths:
            return
        try:
            self.paths[path] = signature_of(os.stat(path))
        except (FileNotFoundError, NotADirectoryError):
            self.paths[path] = None  # absence is an input too
        except OSError:
            self.unreliable = True

    def variable(self, name: str) -> None:
        if name not in self.variables:
            self.variables[name] = os.environ.get(name)

    def newest_time_ns(self) -> int:
        """The latest modification or change time among the recorded paths."""
        # In C: one pass per field instead of a max() call per path (20,000 files).
        found = [signature for signature in self.paths.values() if signature is not None]
        return max(max(map(itemgetter(0), found), default=0), max(map(itemgetter(1), found), default=0))


def changed(paths: dict[str, Signature | None], variables: dict[str, str | None]) -> str | None:
    """The first recorded input that is different now, or None when none is."""
    environ = os.environ
    for name, value in variables.items():
        if environ.get(name) != value:
            return f"${name}"
    stat = os.stat
    for path, recorded in paths.items():
        try:
            info = stat(path)
        except (FileNotFoundError, NotADirectoryError):
            if recorded is not None:
                return path
            continue
        except OSError:
            return path
        if recorded != signature_of(info):
            return path
    return None
