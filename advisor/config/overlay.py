"""A tree read as it will be once one of its files is replaced.

Config management renders a file to a temporary place and asks a command
whether it may replace the real one (Ansible's `validate:`, Puppet's
`validate_cmd`): `lint --as PATH CANDIDATE`. The tree is not copied for
that. The reader is told, through `LoadOptions.overlay`, to open CANDIDATE
wherever the tree reads PATH, and to count PATH among the files an Include
finds even when PATH does not exist yet (a site deployed for the first
time). Everything else is read where it is.

PATH is matched by name, and when it exists by the file it is: Debian's
sites-enabled/ holds links to sites-available/, so a candidate for
sites-available/x.conf stands in for the link the tree reads.
"""

from __future__ import annotations

import os
from bisect import bisect
from dataclasses import dataclass, field

from advisor.config import includes


@dataclass
class Overlay:
    """PATH (as the host names it) and the local file read in its place."""

    target: str
    candidate: str
    identity: tuple[int, int] | None = None
    """(device, inode) of PATH as the tree has it now; None when it does not exist yet."""
    replaced: list[str] = field(default_factory=list)
    """The paths the reading took from the candidate (PATH, or a link to it)."""
    aliases: tuple[str, ...] = ()
    """Other paths of the tree that are PATH, as the host resolves them: a
    host's tree is read from a local copy where its links are plain files,
    so the file they are cannot be told by its inode here."""

    @classmethod
    def of(cls, target: str, candidate: str, root: str | None = None,
           aliases: tuple[str, ...] = ()) -> "Overlay":
        """The overlay of `candidate` on `target` (absolute, normalised);
        `root` stands for the host's `/` when the tree is a copy."""
        target = os.path.normpath(target)
        try:
            info = os.stat((root.rstrip("/") if root else "") + target)
            identity: tuple[int, int] | None = (info.st_dev, info.st_ino)
        except OSError:
            identity = None
        return cls(target, candidate, identity, aliases=tuple(aliases))

    def source(self, path: str, local: str) -> str:
        """The file to open for the tree's `path`, found at `local`."""
        if path != self.target and path not in self.aliases:
            if self.identity is None:
                return local
            try:
                info = os.stat(local)
            except OSError:
                return local  # the reading says what is wrong with it
            if (info.st_dev, info.st_ino) != self.identity:
                return local
        if path not in self.replaced:
            self.replaced.append(path)
        return self.candidate

    def joined(self, argument: str, server_root: str, found: list[str], root: str | None) -> list[str]:
        """The files an Include of `argument` reads, with PATH in its place
        among them when the Include would pick it up and the listing did not
        (PATH does not exist yet). Paths sort as httpd walks them: by
        component, one directory at a time."""
        if self.target in found:
            return found
        full = includes.server_root_relative(argument, server_root)
        if not picks_up(full, self.target, root or ""):
            return found
        key = self.target.split("/")
        position = bisect([path.split("/") for path in found], key)
        return found[:position] + [self.target] + found[position:]


def picks_up(full: str, target: str, root: str) -> bool:
    """Whether an Include of `full` (absolute) reads `target`: the same
    path, a file under a directory it names, or a match of its wildcards
    component by component (a directory matched last is read whole)."""
    if not includes.has_wildcard(full):
        if target == full:
            return True
        return target.startswith(full.rstrip("/") + "/") and os.path.isdir(root + full)
    pattern = [part for part in full.split("/") if part]
    parts = [part for part in target.split("/") if part]
    if len(parts) < len(pattern):
        return False
    for wanted, name in zip(pattern, parts):
        if includes.has_wildcard(wanted):
            if not includes.name_matcher(wanted)(name):
                return False
        elif wanted != name:
            return False
    if len(parts) > len(pattern):
        return os.path.isdir(root + "/" + "/".join(parts[:len(pattern)]))
    return True


def reading_includes(config, directory: str) -> list[tuple[str, int, str]]:
    """(file, line, argument) of each active Include that read a file from
    `directory`: where PATH's siblings come from, for a PATH the tree does
    not read."""
    from advisor.config.model import Include

    found: list[tuple[str, int, str]] = []
    stack = [config.raw]
    prefix = directory.rstrip("/") + "/"
    while stack:
        node = stack.pop()
        for child in getattr(node, "children", ()):
            if isinstance(child, Include):
                if child.active and any(path.startswith(prefix) for path in child.files or ()):
                    found.append((child.file, child.line, f"{child.name} {child.raw_args}"))
            stack.append(child)
    return sorted(found)
