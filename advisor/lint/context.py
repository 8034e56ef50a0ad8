"""What a rule sees: the config, an index of its directives, and host facts.

The engine walks each tree once and indexes nodes by lower-case name, so a
rule asks for "every MaxRequestWorkers" in O(matches) instead of rescanning
the tree. That keeps `lint` linear in the size of the config however many
rules run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from heapq import merge
from typing import Any, Callable, Iterable, Iterator, TypeVar

from advisor.config import catalog
from advisor.config.model import Config, Directive, Include, Node, Section
from advisor.config.modules import DEBIAN_BUILTINS
from advisor.lint.tls_profile import DEFAULT_TLS_PROFILE, TlsProfile, profile


@dataclass
class HostFacts:
    """What the rules know about the machine and the httpd that runs the config."""

    apache_version: tuple[int, int, int]
    mpm: str | None
    ram: int | None = None
    ram_source: str = ""
    """Where `ram` came from: `--ram`, the config file, or this host."""
    worker_memory: int | None = None
    worker_memory_source: str = ""
    expected_clients: int | None = None
    os_reserve: int | None = None
    """Memory left to the OS and other services; None: the rule's default."""
    per_connection: int | None = None
    document_set: int | None = None
    fpm: Any = None
    """advisor.config.fpm_pools.FpmSetup: the php-fpm pools the tree hands
    PHP to, read with --fpm-config (or from /etc on this host); None if none."""
    fpm_memory: dict[str, tuple[int, str]] = field(default_factory=dict)
    """Memory of one php-fpm child per pool name (bytes, where it came from);
    a pool not named here gets the rules' default."""
    live: dict | None = None
    """A snapshot of the running host (advisor.lint.host.collect_live_facts):
    its httpd processes, modes of the files read and written, the server
    account. None unless the host was read live (`--host`, `--live`,
    `--live-facts`): the live-host rules (S513-S518) say nothing then."""
    tls_profile: str = DEFAULT_TLS_PROFILE
    """The Mozilla TLS profile the TLS rules hold the config to
    (advisor.lint.tls_profile): `--tls-profile` or the settings file."""
    tls_profile_source: str = "the default"

    @property
    def version_key(self) -> str:
        return catalog.version_key(self.apache_version)

    @property
    def version_text(self) -> str:
        return ".".join(str(part) for part in self.apache_version)


@dataclass
class TreeIndex:
    """Nodes of one tree by lower-case name, each list in file order."""

    root: Section = field(repr=False)
    directives: dict[str, list[Directive]] = field(default_factory=dict)
    sections: dict[str, list[Section]] = field(default_factory=dict)
    ordered: bool = True
    top: dict[str, list[Directive]] = field(default_factory=dict)
    """Directives directly under the root (the main server in the effective tree)."""
    _all_nodes: list[Node] | None = None
    _order: dict[Node, int] | None = None

    @classmethod
    def build(cls, root: Section, with_order: bool = True) -> "TreeIndex":
        """One pass over the tree. This loop runs once per node of a
        30,000-line config, twice per lint (effective and raw tree), and is
        most of the engine's own cost. Hence: a `for` over each child list
        (an explicit stack of iterators, not recursion, so nesting depth
        costs nothing), one `lower()` per distinct spelling instead of per
        node, and nothing kept that no rule reads (the flat node list is
        made on demand by `all_nodes`)."""
        index = cls(root)
        for child in root.children:
            if type(child) is Directive:
                index.top.setdefault(child.name.lower(), []).append(child)
        directives: dict[str, list[Directive]] = {}
        sections: dict[str, list[Section]] = {}
        # Spelling as written -> its list in `directives` / `sections`: the
        # same few hundred spellings repeat over every virtual host.
        directive_lists: dict[str, list[Directive]] = {}
        section_lists: dict[str, list[Section]] = {}
        directive_type = Directive
        include_type = Include
        stack: list[Iterator[Node]] = []
        children: Iterator[Node] = iter(root.children)
        while True:
            for node in children:
                # try/except rather than .get(): a hit, nearly every node,
                # then costs a subscript instead of a method call.
                if type(node) is directive_type:
                    try:
                        directive_lists[node.name].append(node)  # type: ignore[arg-type]
                    except KeyError:
                        found = directives.setdefault(node.name.lower(), [])
                        directive_lists[node.name] = found
                        found.append(node)  # type: ignore[arg-type]
                    continue
                if type(node) is not include_type:
                    try:
                        section_lists[node.name].append(node)  # type: ignore[arg-type]
                    except KeyError:
                        held = sections.setdefault(node.name.lower(), [])
                        section_lists[node.name] = held
                        held.append(node)  # type: ignore[arg-type]
                if node.children:  # type: ignore[attr-defined]
                    # Descend; this level's iterator resumes after the section.
                    stack.append(children)
                    children = iter(node.children)  # type: ignore[attr-defined]
                    break
            else:
                if not stack:
                    break
                children = stack.pop()
        index.directives = directives
        index.sections = sections
        index.ordered = with_order
        return index

    @classmethod
    def shared_with(cls, root: Section, raw: "TreeIndex", sections: list[Section]) -> "TreeIndex":
        """The index of an effective tree built while reading, without a walk
        of it: its directives are the raw tree's that have a `raw_parent`
        (each list keeps the raw tree's order, which is the effective tree's:
        conditionals and Include lines are spliced in place), its sections
        the copies the reader made, in the order it made them (`sections`:
        `Config.effective_sections`). Equal to `build(root)`: a test holds
        them to it."""
        index = cls(root)
        for child in root.children:
            if type(child) is Directive:
                index.top.setdefault(child.name.lower(), []).append(child)
        directives: dict[str, list[Directive]] = {}
        for lname, nodes in raw.directives.items():
            applied = [node for node in nodes if node.raw_parent is not None]
            if applied:
                directives[lname] = applied
        by_name: dict[str, list[Section]] = {}
        by_spelling: dict[str, list[Section]] = {}
        for section in sections:
            try:
                by_spelling[section.name].append(section)
            except KeyError:
                held = by_name.setdefault(section.name.lower(), [])
                by_spelling[section.name] = held
                held.append(section)
        index.directives = directives
        index.sections = by_name
        return index

    @property
    def all_nodes(self) -> list[Node]:
        """Every node in file order, Include lines too (the raw tree's extent
        map). Made on first use: only merging lists of several names and
        files with suppression comments need it."""
        if self._all_nodes is None:
            self._all_nodes = list(self.root.walk())
        return self._all_nodes

    @property
    def order(self) -> dict[Node, int]:
        """Position of each node in file order; built on first use, since
        most runs never need to merge lists of different names."""
        if self._order is None:
            self._order = {node: position for position, node in enumerate(self.all_nodes)}
        return self._order

    def named(self, names: Iterable[str]) -> list[Directive]:
        lists = [self.directives.get(name.lower(), []) for name in names]
        lists = [found for found in lists if found]
        if not lists:
            return []
        if len(lists) == 1:
            return list(lists[0])
        if not self.ordered:  # raw-tree lookups: order does not matter
            return [node for found in lists for node in found]
        order = self.order
        return list(merge(*lists, key=order.__getitem__))


_Verdict = TypeVar("_Verdict")


def per_argument_list(judge: Callable[[list[str]], _Verdict]) -> Callable[[list[str]], _Verdict]:
    """`judge` of a directive's arguments, remembered per argument list. The
    reader gives the lines of one text one shared `args` list, and the model
    keeps every list for the run, so a list's id names it: the `Require all
    granted` of each of 20,000 hosts is judged once, not once per host."""
    verdicts: dict[int, _Verdict] = {}

    def verdict(args: list[str]) -> _Verdict:
        try:
            return verdicts[id(args)]
        except KeyError:
            found = verdicts[id(args)] = judge(args)
            return found

    return verdict


def is_server_scope(node: Node) -> bool:
    """In the effective tree: directly under the root (the main server)."""
    parent = node.parent
    return parent is not None and parent.is_root


def enclosing_vhost(node: Node) -> Section | None:
    parent = node.parent
    while parent is not None and not parent.is_root:
        if parent.lname == "virtualhost":
            return parent
        parent = parent.parent
    return None


class LintContext:
    """Everything a rule may read. Built once per config by the engine."""

    def __init__(self, config: Config, facts: HostFacts, wants_edits: bool = True) -> None:
        self.config = config
        self.facts = facts
        self._wants_edits = wants_edits
        self.edits_declined = 0
        """How often a rule asked `wants_edits` and was told no: the engine
        names the rules that did (LintResult.edits_left_out), so a save that
        adds the edits later runs only them again."""
        self.raw = TreeIndex.build(config.raw, with_order=False)
        if config.effective_sections is not None:
            # Built while reading: its directives are the raw tree's (no second walk).
            self.effective = TreeIndex.shared_with(config.effective, self.raw, config.effective_sections)
        else:
            self.effective = TreeIndex.build(config.effective)
        self.catalog = catalog.directives(facts.version_key)
        self.shared: dict[str, Any] = {}
        """Computations several rules use (the served sites), made once per run."""
        self.suppression_state: Any = None
        """Set by the engine before the post rules (A001, A002) run."""
        self.notes: list[str] = []
        """What a rule tells the reader besides its findings: a fact it needed
        and did not have, when the config shows it would have mattered (S519:
        HTTP/2 offered, httpd's patch level unknown). The engine adds them to
        the run's notes."""

    @property
    def wants_edits(self) -> bool:
        """Whether findings carry their mechanical edit (`fix`, SARIF, the
        result cache need it; a text or JSON report does not show it). Only
        a rule about to make an edit asks."""
        if not self._wants_edits:
            self.edits_declined += 1
        return self._wants_edits

    @wants_edits.setter
    def wants_edits(self, wanted: bool) -> None:
        self._wants_edits = wanted

    # ---- facts -----------------------------------------------------------

    @property
    def mpm(self) -> str | None:
        return self.facts.mpm

    @property
    def version(self) -> tuple[int, int, int]:
        return self.facts.apache_version

    def at_least(self, major: int, minor: int, patch: int = 0) -> bool:
        return self.facts.apache_version >= (major, minor, patch)

    @property
    def tls_profile(self) -> TlsProfile:
        """The TLS expectations of this run (Mozilla's profile by name)."""
        return profile(self.facts.tls_profile)

    def has_module(self, *names: str) -> bool:
        """True when any of the names (identifier or source name) is loaded."""
        modules = self.config.modules
        return any(name in modules for name in names)

    @property
    def modules_known(self) -> bool:
        """Whether the module list is worth trusting: the config (or the
        command line) loaded something beyond httpd's compiled-in modules.
        A lone vhost file linted on its own loads nothing."""
        return len(self.config.module_order) > len(DEBIAN_BUILTINS)

    @property
    def complete(self) -> bool:
        """Whether this looks like a whole server config rather than a
        fragment: only then is a value nobody wrote httpd's default for this
        server (a vhost file's missing ServerTokens is set elsewhere)."""
        return self.modules_known

    # ---- effective tree queries -----------------------------------------

    def directives(self, *names: str) -> list[Directive]:
        """Effective directives with any of these names, in file order."""
        return self.effective.named(names)

    def server(self, *names: str) -> list[Directive]:
        top = self.effective.top
        lists = [top[name.lower()] for name in names if name.lower() in top]
        if not lists:
            return []
        if len(lists) == 1:
            return list(lists[0])
        return list(merge(*lists, key=self.effective.order.__getitem__))

    def server_value(self, *names: str) -> Directive | None:
        """What httpd applies at server scope: the last one read wins."""
        found = self.server(*names)
        return found[-1] if found else None

    def sections(self, *names: str) -> list[Section]:
        found: list[Section] = []
        for name in names:
            found.extend(self.effective.sections.get(name.lower(), []))
        if len(names) > 1:
            found.sort(key=self.effective.order.__getitem__)
        return found

    def virtual_hosts(self) -> list[Section]:
        return list(self.effective.sections.get("virtualhost", []))

    @staticmethod
    def own_value(section: Section, *names: str) -> Directive | None:
        """The last directive with one of these names directly in `section`."""
        wanted = {name.lower() for name in names}
        found = None
        for child in section.children:
            if isinstance(child, Directive) and child.name.lower() in wanted:
                found = child
        return found

    # ---- raw tree queries ------------------------------------------------

    def raw_directives(self, *names: str, active_only: bool = True) -> list[Directive]:
        found = self.raw.named(names)
        return [d for d in found if d.active] if active_only else found

    def load_module_line(self, module_id: str) -> Directive | None:
        for node in self.raw.directives.get("loadmodule", []):
            if node.active and node.args and node.args[0] == module_id:
                return node
        return None

    # ---- catalog -----------------------------------------------------------

    def info(self, name: str) -> catalog.DirectiveInfo | None:
        return self.catalog.get(name.lower())

    def spelling(self, modern: str, legacy: str) -> str:
        """The name the target httpd knows: MaxRequestWorkers for 2.4,
        MaxClients for 2.2."""
        info = self.catalog.get(modern.lower())
        return modern if info is not None and info.alias_of is None else legacy

    # ---- where to point ------------------------------------------------------

    def main_location(self) -> tuple[str, int]:
        return self.config.main_location()

    def context_location(self, section: Section | None) -> tuple[str, int]:
        """For a value nobody wrote: the enclosing context, else the main file."""
        if section is not None and not section.is_root:
            return section.file, section.line
        return self.main_location()
