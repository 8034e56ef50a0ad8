"""Which directory sections apply to a served path, merged as httpd merges them.

httpd sorts non-regex `<Directory>` sections by the number of path
components (shortest first; equal ones keep config order, the main server's
before a virtual host's) and merges them in that order, so the deepest
section that sets a directive decides. Regex sections and `.htaccess` are
out of reach of a static reader and are not modelled.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from advisor.lint.context import LintContext
from advisor.model import Directive, Section


def normalize_dir(path: str) -> str:
    """`/var/www` and `/var/www/` name the same section (httpd appends '/')."""
    path = path.strip().strip('"')
    while "//" in path:
        path = path.replace("//", "/")
    return path if path.endswith("/") else path + "/"


def _depth(path: str) -> int:
    return path.count("/")


@dataclass
class DirSection:
    path: str
    depth: int
    section: Section
    in_vhost: bool
    order: int
    wildcard: bool

    def covers(self, target: str) -> bool:
        """Whether this section applies to `target` (a normalized dir path)."""
        if not self.wildcard:
            return target.startswith(self.path)
        parts = target.split("/")
        prefix = "/".join(parts[: self.depth]) + "/"
        return fnmatch.fnmatchcase(prefix, self.path)


@dataclass
class Site:
    """The main server or one virtual host, with what it serves."""

    section: Section | None
    """The <VirtualHost>, or None for the main server."""
    document_root: str | None
    root_node: Directive | None
    aliases: list[tuple[str, Directive]] = field(default_factory=list)
    dir_groups: tuple["DirIndex", ...] = ()
    """The main server's sections, then (for a vhost) its own."""

    @property
    def label(self) -> str:
        if self.section is None:
            return "the main server"
        return f"<VirtualHost {' '.join(self.section.args)}>"

    def served_paths(self) -> list[tuple[str, Directive | None]]:
        paths: list[tuple[str, Directive | None]] = []
        if self.document_root:
            paths.append((self.document_root, self.root_node))
        paths.extend(self.aliases)
        return paths

    def applicable(self, target: str) -> list[DirSection]:
        found: list[DirSection] = []
        for group in self.dir_groups:
            found.extend(group.covering(target))
        found.sort(key=lambda d: (d.depth, d.in_vhost, d.order))
        return found


@dataclass
class DirIndex:
    """Directory sections by exact path, so finding the ones that cover a
    path costs one lookup per path component, not a scan of every section."""

    by_path: dict[str, list[DirSection]] = field(default_factory=dict)
    wildcards: list[DirSection] = field(default_factory=list)

    def add(self, section: DirSection) -> None:
        if section.wildcard:
            self.wildcards.append(section)
        else:
            self.by_path.setdefault(section.path, []).append(section)

    def covering(self, target: str) -> list[DirSection]:
        found: list[DirSection] = []
        if self.by_path:
            position = 0
            while True:
                position = target.find("/", position) + 1
                if position <= 0:
                    break
                found.extend(self.by_path.get(target[:position], ()))
        found.extend(d for d in self.wildcards if d.covers(target))
        return found


_ALIAS_NAMES = ("alias", "scriptalias")


def _dir_sections_by_owner(ctx: LintContext) -> dict[int, DirIndex]:
    """Non-regex <Directory> sections grouped by owner: id(root) for the main
    server, id(vhost) for a virtual host. One pass over the sections."""
    grouped: dict[int, DirIndex] = {}
    order = ctx.effective.order
    for section in ctx.effective.sections.get("directory", []):
        owner = section.parent
        if owner is None or not section.args or section.args[0] == "~":
            continue
        if not (owner.is_root or owner.lname == "virtualhost"):
            continue
        path = normalize_dir(section.args[0])
        grouped.setdefault(id(owner), DirIndex()).add(
            DirSection(path=path, depth=_depth(path), section=section,
                       in_vhost=not owner.is_root, order=order[section],
                       wildcard=any(c in path for c in "*?[")))
    return grouped


def _aliases(section_children: list) -> list[tuple[str, Directive]]:
    aliases: list[tuple[str, Directive]] = []
    for child in section_children:
        if isinstance(child, Directive) and child.name.lower() in _ALIAS_NAMES and len(child.args) >= 2:
            target = child.args[1]
            if target.startswith("/"):
                aliases.append((normalize_dir(target), child))
    return aliases


def sites(ctx: LintContext) -> list[Site]:
    """The main server and every virtual host, each with its document root
    (inherited from the main server when it sets none), aliases, and the
    directory sections that apply to it. Linear in the config size: server
    sections are shared, a vhost adds only its own."""
    cached = getattr(ctx, "_served_sites", None)
    if cached is not None:
        return cached
    server_root = ctx.server_value("DocumentRoot")
    grouped = _dir_sections_by_owner(ctx)
    main_dirs = grouped.get(id(ctx.config.effective), DirIndex())
    main_aliases = _aliases(ctx.config.effective.children)
    main = Site(None, normalize_dir(server_root.arg(0)) if server_root and server_root.args else None,
                server_root, main_aliases, (main_dirs,))
    result = [main]
    for vhost in ctx.virtual_hosts():
        own_root = ctx.own_value(vhost, "DocumentRoot")
        root_node = own_root or server_root
        document_root = normalize_dir(root_node.arg(0)) if root_node and root_node.args else None
        own_dirs = grouped.get(id(vhost))
        dirs = (main_dirs, own_dirs) if own_dirs else (main_dirs,)
        result.append(Site(vhost, document_root, root_node,
                           main_aliases + _aliases(vhost.children), dirs))
    ctx._served_sites = result  # type: ignore[attr-defined]
    return result


def deciding(site: Site, target: str, *names: str) -> tuple[Directive | None, DirSection | None]:
    """The directive (one of `names`) that decides the value for `target`:
    the last one in the deepest applicable section that sets it."""
    wanted = {n.lower() for n in names}
    decided: tuple[Directive | None, DirSection | None] = (None, None)
    for dir_section in site.applicable(target):
        for child in dir_section.section.children:
            if isinstance(child, Directive) and child.name.lower() in wanted:
                decided = (child, dir_section)
    return decided


def is_served(site: Site, path: str) -> bool:
    """Whether a directory is, contains, or lies inside something the site serves."""
    for served, _node in site.served_paths():
        if served.startswith(path) or path.startswith(served):
            return True
    return False
