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
from advisor.config.model import Directive, Section


_NORMALIZED: dict[str, str] = {}


def normalize_dir(path: str) -> str:
    """`/var/www` and `/var/www/` name the same section (httpd appends '/').
    Remembered: thousands of hosts often repeat one document root."""
    found = _NORMALIZED.get(path)
    if found is None:
        if len(_NORMALIZED) > 65536:
            _NORMALIZED.clear()
        found = _NORMALIZED[path] = _normalize_dir(path)
    return found


def _normalize_dir(path: str) -> str:
    path = path.strip().strip('"')
    while "//" in path:
        path = path.replace("//", "/")
    return path if path.endswith("/") else path + "/"


@dataclass(slots=True)
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


@dataclass(slots=True)
class Site:
    """The main server or one virtual host, with what it serves."""

    section: Section | None
    """The <VirtualHost>, or None for the main server."""
    document_root: str | None
    root_node: Directive | None
    aliases: list[tuple[str, Directive]] = field(default_factory=list)
    dir_groups: tuple["DirIndex", ...] = ()
    """The main server's sections, then (for a vhost) its own."""
    cache: dict = field(default_factory=dict, repr=False)
    """Answers of `applicable` by path: shared by every site with the same
    `dir_groups` (every vhost without <Directory> of its own shares the
    main server's), else the site's own."""
    _served: list[tuple[str, Directive | None]] | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        if self.section is None:
            return "the main server"
        return f"<VirtualHost {' '.join(self.section.args)}>"

    def served_paths(self) -> list[tuple[str, Directive | None]]:
        """The document root, then the alias targets; made once per site
        (four rules ask), and not to be changed by the caller."""
        paths = self._served
        if paths is None:
            paths = []
            if self.document_root:
                paths.append((self.document_root, self.root_node))
            paths.extend(self.aliases)
            self._served = paths
        return paths

    def applicable(self, target: str) -> list[DirSection]:
        found = self.cache.get(target)
        if found is not None:
            return found
        found = []
        prefixes = None
        absolute = target[:1] == "/"
        for group in self.dir_groups:
            few = group.few
            if few is not None:
                # A host's own one or two sections: a scan costs less than
                # a lookup per path component. (For an absolute target, a
                # section path covers it exactly when it is one of
                # `_prefixes`: both end with '/'.)
                if absolute:
                    for dir_section in few:
                        if target.startswith(dir_section.path):
                            found.append(dir_section)
                else:
                    if prefixes is None:
                        prefixes = _prefixes(target)
                    found.extend(d for d in few if d.path in prefixes)
                continue
            if prefixes is None:
                prefixes = _prefixes(target)
            found.extend(group.covering(target, prefixes))
        if len(found) > 1:
            found.sort(key=_applying_order)
        self.cache[target] = found
        return found


def _applying_order(dir_section: DirSection) -> tuple[int, bool, int]:
    return (dir_section.depth, dir_section.in_vhost, dir_section.order)


def _prefixes(target: str) -> list[str]:
    """'/a/b/' -> ['/', '/a/', '/a/b/']"""
    parts = target.split("/")[1:-1]
    prefixes = ["/"]
    current = "/"
    for part in parts:
        current += part + "/"
        prefixes.append(current)
    return prefixes


@dataclass(slots=True)
class DirIndex:
    """Directory sections by exact path, so finding the ones that cover a
    path costs one lookup per path component, not a scan of every section."""

    by_path: dict[str, list[DirSection]] = field(default_factory=dict)
    wildcards: list[DirSection] = field(default_factory=list)
    few: list[DirSection] | None = None
    """All the sections, when they are few and none is a wildcard (see
    `index_of`): `Site.applicable` scans them instead."""

    def add(self, section: DirSection) -> None:
        if section.wildcard:
            self.wildcards.append(section)
        else:
            self.by_path.setdefault(section.path, []).append(section)

    @property
    def empty(self) -> bool:
        return not (self.few or self.by_path or self.wildcards)

    def covering(self, target: str, prefixes: list[str]) -> list[DirSection]:
        found: list[DirSection] = []
        by_path = self.by_path
        if by_path:
            for prefix in prefixes:
                hit = by_path.get(prefix)
                if hit:
                    found.extend(hit)
        if self.wildcards:
            found.extend(d for d in self.wildcards if d.covers(target))
        return found


def index_of(sections: list[DirSection]) -> DirIndex:
    """The index of one owner's sections (in file order)."""
    if len(sections) <= _FEW:
        for dir_section in sections:
            if dir_section.wildcard:
                break
        else:
            # A host's own one or two sections (the usual case, once per
            # virtual host): kept as they are, no index to build (nor its
            # tables: a few-section index never adds to them).
            return DirIndex(_NO_PATHS, _NO_WILDCARDS, sections)
    index = DirIndex({}, [])
    for dir_section in sections:
        index.add(dir_section)
    if not index.wildcards and len(index.by_path) <= _FEW:
        index.few = sections
    return index


_NO_PATHS: dict[str, list[DirSection]] = {}
_NO_WILDCARDS: list[DirSection] = []


# Up to this many paths, a scan of the sections beats a lookup per path
# component of the target (a document root is often five or six deep).
_FEW = 3

_ALIAS_NAMES = ("alias", "scriptalias")


def _dir_sections_by_owner(ctx: LintContext) -> dict[Section, DirIndex]:
    """Non-regex <Directory> sections grouped by owner: the root for the main
    server, the <VirtualHost> for a virtual host. One pass over the sections.
    (Keyed by the section itself, not its id: nodes hash by identity, and an
    id is a new int object per call, 20,000 of them here.)"""
    grouped: dict[Section, list[DirSection]] = {}
    # Whether a section spelling names a <VirtualHost>: asked once per spelling.
    is_vhost: dict[str, bool] = {}
    # Each written path's (normal form, depth, whether it has wildcards):
    # worked out once per path, which hosts often share.
    shapes: dict[str, tuple[str, int, bool]] = {}
    make = DirSection
    # The index lists sections in file order, so a section's position in its
    # list sorts like its position in the whole tree, without building the
    # tree-wide order map.
    for position, section in enumerate(ctx.effective.sections.get("directory", [])):
        args = section.args
        owner = section.parent
        if owner is None or not args or args[0] == "~":
            continue
        if owner.is_root:
            in_vhost = False
        else:
            in_vhost = is_vhost.get(owner.name)
            if in_vhost is None:
                in_vhost = is_vhost[owner.name] = owner.name.lower() == "virtualhost"
            if not in_vhost:
                continue
        shape = shapes.get(args[0])
        if shape is None:
            path = normalize_dir(args[0])
            shape = shapes[args[0]] = (path, path.count("/"), "*" in path or "?" in path or "[" in path)
        dir_section = make(shape[0], shape[1], section, in_vhost, position, shape[2])
        # (A get, not try/except: most owners, virtual hosts, hold one.)
        found = grouped.get(owner)
        if found is None:
            grouped[owner] = [dir_section]
        else:
            found.append(dir_section)
    return {key: index_of(sections) for key, sections in grouped.items()}


def _by_owner(ctx: LintContext, *names: str) -> dict[Section, list[Directive]]:
    """Directives with these names grouped by their parent section."""
    grouped: dict[Section, list[Directive]] = {}
    for node in ctx.directives(*names):
        # (A get, not setdefault: most sections hold one, so most lists are new.)
        key = node.parent
        found = grouped.get(key)
        if found is None:
            grouped[key] = [node]
        else:
            found.append(node)
    return grouped


def _aliases(nodes: list[Directive]) -> list[tuple[str, Directive]]:
    aliases: list[tuple[str, Directive]] = []
    for node in nodes:
        if len(node.args) >= 2 and node.args[1].startswith("/"):
            aliases.append((normalize_dir(node.args[1]), node))
    return aliases


def sites(ctx: LintContext) -> list[Site]:
    """The main server and every virtual host, each with its document root
    (inherited from the main server when it sets none), aliases, and the
    directory sections that apply to it. Linear in the config size: server
    sections are shared, a vhost adds only its own."""
    cached = ctx.shared.get("served_sites")
    if cached is not None:
        return cached
    server_root = ctx.server_value("DocumentRoot")
    grouped = _dir_sections_by_owner(ctx)
    roots = _by_owner(ctx, "DocumentRoot")
    alias_nodes = _by_owner(ctx, *_ALIAS_NAMES)
    root = ctx.config.effective
    main_dirs = grouped.get(root) or DirIndex()
    main_aliases = _aliases(alias_nodes.get(root, []))
    shared: dict = {}
    main_only = (main_dirs,)
    main_root = normalize_dir(server_root.args[0]) if server_root is not None and server_root.args else None
    result = [Site(None, main_root, server_root, main_aliases, main_only, shared)]
    main_has_dirs = not main_dirs.empty
    site = Site
    append = result.append
    # (Lookups bound once: this runs once per virtual host.)
    own_roots_of, own_dirs_of, own_aliases_of = roots.get, grouped.get, alias_nodes.get
    for vhost in ctx.virtual_hosts():
        own_roots = own_roots_of(vhost)
        if own_roots is None:
            root_node, document_root = server_root, main_root
        else:
            root_node = own_roots[-1]
            document_root = normalize_dir(root_node.args[0]) if root_node.args else None
        own_dirs = own_dirs_of(vhost)
        if own_dirs is None:
            dirs, cache = main_only, shared
        else:
            dirs, cache = ((main_dirs, own_dirs) if main_has_dirs else (own_dirs,)), {}
        own_aliases = own_aliases_of(vhost)
        append(site(vhost, document_root, root_node,
                    main_aliases + _aliases(own_aliases) if own_aliases else main_aliases, dirs, cache))
    ctx.shared["served_sites"] = result
    return result


def owned(ctx: LintContext, *names: str) -> dict[Section, list[Directive]]:
    """`_by_owner` computed once per run for each set of names."""
    cache = ctx.shared.setdefault("served_owned", {})
    key = tuple(sorted(name.lower() for name in names))
    if key not in cache:
        cache[key] = _by_owner(ctx, *names)
    return cache[key]


def deciding(grouped: dict[Section, list[Directive]], site: Site,
             target: str) -> tuple[Directive | None, DirSection | None]:
    """The directive that decides the value for `target`: the last one in the
    deepest applicable section that sets it. `grouped` is `owned(ctx, names)`."""
    decided: tuple[Directive | None, DirSection | None] = (None, None)
    for dir_section in site.applicable(target):
        found = grouped.get(dir_section.section)
        if found:
            decided = (found[-1], dir_section)
    return decided


def is_served(site: Site, path: str) -> bool:
    """Whether a directory is, contains, or lies inside something the site serves."""
    for served, _node in site.served_paths():
        if served.startswith(path) or path.startswith(served):
            return True
    return False


def _slash_prefixes(path: str) -> list[str]:
    """Each leading part of `path` that ends with '/': '/a/b/' -> '/', '/a/', '/a/b/'."""
    return [path[:end + 1] for end, character in enumerate(path) if character == "/"]


class ServedAnywhere:
    """`is_served` for all the given sites at once. A directory of the main
    server is tested against every site; with its own <Directory> per
    virtual host, scanning the sites would cost sections x sites. Served
    paths end with '/' (normalize_dir), so "one starts with the other" is a
    set lookup over the components of either."""

    def __init__(self, sites: list[Site]) -> None:
        self.served: set[str] = set()
        self.leading: set[str] = set()
        """Every '/'-ended leading part of a served path."""
        for site in sites:
            for served, _node in site.served_paths():
                self.served.add(served)
                self.leading.update(_slash_prefixes(served))
        self.unusual = [served for served in self.served if not served.endswith("/")]

    def covers(self, path: str) -> bool:
        """Whether `path` is, contains, or lies inside a served path."""
        if not path.endswith("/") or self.unusual:
            return any(served.startswith(path) or path.startswith(served) for served in self.served)
        return path in self.leading or any(prefix in self.served for prefix in _slash_prefixes(path))
