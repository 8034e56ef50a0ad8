"""The configuration model: a tree of sections and directives with their origin.

Two views of one configuration are public API:

* the *raw tree* (`Config.raw`): everything that is written, every branch of
  every conditional, with `Include` nodes holding the files they pulled in;
* the *effective tree* (`Config.effective`): what httpd applies, shaped like
  httpd's own parse tree: conditionals that held are spliced away, false
  branches are gone, and the read-time directives httpd consumes while reading
  (Include, LoadModule, Define, ServerRoot...) are absent.

Every node knows its file, the physical line where it starts (`line`) and the
line where httpd considers it to be (`end_line`: httpd reports the last
physical line of a directive continued with a backslash).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import Iterator


@dataclass(eq=False, slots=True)
class Node:
    name: str
    """The directive name as written, without `<` for sections."""
    args: list[str]
    """Arguments split as httpd's ap_getword_conf splits them (quotes removed)."""
    raw_args: str
    """The argument text httpd keeps after `${VAR}` expansion (a section's
    keeps its closing `>`, as in httpd's dump)."""
    file: str
    line: int
    end_line: int
    active: bool = True
    """False when an enclosing conditional is false: httpd never applies it."""
    parent: Section | None = field(default=None, repr=False)
    raw: Node | None = field(default=None, repr=False)
    """In the effective tree: the raw-tree node this one is a copy of. None
    for a node of the raw tree, and for a directive both trees hold (see
    `raw_parent`)."""
    expansion: tuple[str, int] | None = field(default=None, repr=False)
    """For a node that a mod_macro `Use` produced: httpd's name for the
    expansion (`macro 'm' (defined on line 3 of "f") used on line 9 of "f"`)
    and the line within it. `file`/`line` point at the macro body line."""
    raw_parent: Section | None = field(default=None, repr=False)
    """For a directive that both trees hold: its parent in the raw tree
    (`parent` is its parent in the effective tree). The effective tree built
    while reading (`LoadOptions.effective`) holds each applied directive of
    the raw tree itself instead of a copy: a copy is a second object per
    line, about 0.4 s on 20,000 virtual hosts. None for every other node,
    whose one parent is `parent`. Sections are always copied (their
    children differ between the trees), so above a directive's raw parent
    the raw chain is plain `parent` links."""

    @property
    def lname(self) -> str:
        return self.name.lower()

    @property
    def canonical_name(self) -> str:
        from advisor.config.catalog import canonical_name

        return canonical_name(self.name)

    def enclosing(self) -> list[Section]:
        """Enclosing sections, innermost first, excluding the root, along
        `parent`: in the effective tree for a directive both trees hold (see
        `raw_enclosing` for where it is written)."""
        return _sections_from(self.parent)

    def raw_enclosing(self) -> list[Section]:
        """Enclosing sections as written in the raw tree (conditionals
        included, Include lines not), innermost first, excluding the root:
        for a node of either tree."""
        node = self.raw if self.raw is not None else self
        return _sections_from(node.raw_parent if node.raw_parent is not None else node.parent)

    def enclosing_names(self) -> list[str]:
        return [s.lname for s in self.enclosing()]

    def in_section(self, *names: str) -> bool:
        wanted = {n.lower() for n in names}
        return any(s.lname in wanted for s in self.enclosing())

    @property
    def at_server_scope(self) -> bool:
        """True when no context section (VirtualHost, Directory...) encloses it.

        Conditionals do not count: in the effective tree they are gone, and in
        the raw tree `<IfModule>` does not change the context.
        """
        from advisor.config.catalog import CONDITIONAL_SECTIONS

        return all(s.lname in CONDITIONAL_SECTIONS for s in self.enclosing())

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    def arg(self, index: int, default: str = "") -> str:
        return self.args[index] if index < len(self.args) else default


def _sections_from(parent: Section | None) -> list[Section]:
    """`parent` and the sections above it, innermost first, up to the root
    (excluded). An Include line is transparent: it does not change the
    context."""
    chain: list[Section] = []
    while parent is not None and not parent.is_root:
        if not isinstance(parent, Include):
            chain.append(parent)
        parent = parent.parent
    return chain


@dataclass(eq=False, slots=True)
class Directive(Node):
    pass


@dataclass(eq=False, slots=True)
class Section(Node):
    children: list[Node] = field(default_factory=list)
    close_line: int | None = None
    is_root: bool = False

    def walk(self) -> Iterator[Node]:
        """Every node below this one, depth first in file order."""
        for child in self.children:
            yield child
            if isinstance(child, Section):
                yield from child.walk()

    def directives(self, *names: str) -> Iterator[Directive]:
        """Directives below this section, recursively, optionally by name."""
        wanted = {n.lower() for n in names}
        for node in self.walk():
            if isinstance(node, Directive) and (not wanted or node.lname in wanted):
                yield node

    def sections(self, *names: str) -> Iterator[Section]:
        wanted = {n.lower() for n in names}
        for node in self.walk():
            if isinstance(node, Section) and (not wanted or node.lname in wanted):
                yield node

    def own_directives(self, *names: str) -> Iterator[Directive]:
        """Direct children only (no recursion)."""
        wanted = {n.lower() for n in names}
        for node in self.children:
            if isinstance(node, Directive) and (not wanted or node.lname in wanted):
                yield node

    @property
    def section_args(self) -> list[str]:
        return self.args


@dataclass(eq=False, slots=True)
class Include(Section):
    """An Include/IncludeOptional line in the raw tree; its children are the
    nodes of the files it pulled in, in httpd's order."""

    files: list[str] = field(default_factory=list)


@dataclass
class Diagnostic:
    """Something httpd would warn about while reading (not fatal)."""

    file: str
    line: int
    message: str


@dataclass
class Config:
    main_file: str
    server_root: str
    raw: Section
    files: list[str]
    """Every file read, in the order httpd reads them."""
    sources: dict[str, str]
    """Each file's text as read (comments included: suppression markers live
    there), so nothing downstream needs to read a file again."""
    modules: set[str]
    """Loaded module identifiers (`rewrite_module`) and source names (`mod_rewrite.c`)."""
    module_order: list[str]
    """Module identifiers in load order: built-ins first, then LoadModule order."""
    mpm: str | None
    """`prefork`, `worker`, `event`, ... or None when no MPM is loaded."""
    defines: dict[str, str | None]
    apache_version: tuple[int, int, int]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    _effective: Section | None = field(default=None, repr=False)
    effective_sections: list[Section] | None = field(default=None, repr=False)
    """When the effective tree was built while reading (`LoadOptions.effective`):
    its sections in the order a walk meets them; its directives are then the
    raw tree's directives that have a `raw_parent`. None otherwise."""

    @property
    def effective(self) -> Section:
        """The effective tree, built on first use (dumping does not need it)."""
        if self._effective is None:
            self._effective = effective_tree(self.raw)
        return self._effective

    # ---- convenience queries on the effective tree -------------------------

    def has_module(self, name: str) -> bool:
        return name in self.modules

    def server_directives(self, *names: str) -> list[Directive]:
        """Effective directives of the main server (outside any context section)."""
        return [d for d in self.effective.directives(*names) if d.at_server_scope]

    def server_value(self, name: str) -> Directive | None:
        """The directive httpd applies at server scope for a single-valued
        directive: the last one read wins."""
        found = self.server_directives(name)
        return found[-1] if found else None

    def virtual_hosts(self) -> list[Section]:
        return list(self.effective.sections("VirtualHost"))

    def main_location(self) -> tuple[str, int]:
        """Where to point a finding about a value nobody wrote (httpd's default)."""
        return self.main_file, 1


# ---- the effective view -------------------------------------------------------


def effective_tree(raw: Section) -> Section:
    """What httpd keeps after reading: active nodes only, with conditionals
    and Include lines replaced by what they let in."""
    from advisor.config.catalog import CONDITIONAL_SECTIONS, READ_TIME_DIRECTIVES

    skipped = READ_TIME_DIRECTIVES - CONDITIONAL_SECTIONS
    root = Section(name="", args=[], raw_args="", file=raw.file, line=0, end_line=0,
                   is_root=True, raw=raw)
    collecting = gc.isenabled()
    gc.disable()  # as in load_config: every copy lives as long as the model
    try:
        _copy_children(raw, root, skipped, CONDITIONAL_SECTIONS, {})
    finally:
        if collecting:
            gc.enable()
    return root


def _copy_children(source: Section, target: Section, skipped: frozenset[str] | set[str],
                   conditionals: frozenset[str] | set[str], dropped: dict[str, bool]) -> None:
    """`dropped`: directive spelling -> whether httpd consumes it while
    reading, decided once per spelling (a large tree repeats a few hundred)."""
    append = target.children.append
    for child in source.children:
        if not child.active:
            continue
        if type(child) is Directive:
            name = child.name
            drop = dropped.get(name)
            if drop is None:
                drop = dropped[name] = name.lower() in skipped
            if drop:
                continue
            copy: Node = Directive(child.name, child.args, child.raw_args, child.file, child.line,
                                   child.end_line, True, target, child, child.expansion)
        elif isinstance(child, Include) or child.name.lower() in conditionals:
            _copy_children(child, target, skipped, conditionals, dropped)  # type: ignore[arg-type]
            continue
        elif child.name.lower() in skipped:  # <Macro>: its body applies where it is used
            continue
        else:
            section = Section(child.name, child.args, child.raw_args, child.file, child.line,
                              child.end_line, True, target, child, child.expansion,
                              close_line=child.close_line)  # type: ignore[call-arg]
            _copy_children(child, section, skipped, conditionals, dropped)  # type: ignore[arg-type]
            copy = section
        append(copy)
