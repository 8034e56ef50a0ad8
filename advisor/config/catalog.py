"""httpd's directives, as its manual documents them (packaged from ../shared/data).

Used to spell directive names the way httpd prints them, to answer
`<IfDirective>`, and by the correctness rules (unknown directive, context).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
import os

# Sections whose only job is to decide whether their content is read.
CONDITIONAL_SECTIONS = frozenset(
    {"ifmodule", "ifdefine", "ifversion", "iffile", "ifdirective", "ifsection"}
)
# Runtime conditionals: httpd keeps them in its tree and evaluates per request.
RUNTIME_CONDITIONALS = frozenset({"if", "elseif", "else"})

# Directives httpd executes while reading the files and leaves out of its
# parse tree (EXEC_ON_READ), so they never appear in `-D DUMP_CONFIG`.
# Found by feeding each one to httpd 2.4 and reading its dump.
READ_TIME_DIRECTIVES = frozenset(
    {
        "include",
        "includeoptional",
        "loadmodule",
        "loadfile",
        "serverroot",
        "define",
        "undefine",
        "defaultruntimedir",
        "macro",
        "use",
        "undefmacro",
    }
) | CONDITIONAL_SECTIONS


# Package data sits beside the code (importlib.resources would cost a few
# milliseconds of start-up for the same answer).
_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


@dataclass(frozen=True)
class DirectiveInfo:
    name: str
    module: str
    modules: tuple[str, ...]
    syntax: str
    default: str | None
    contexts: tuple[str, ...]
    override: str | None
    status: str
    block: bool
    alias_of: str | None = None


@lru_cache(maxsize=1)
def _raw_catalog() -> dict:
    with open(os.path.join(_DATA, "directives.json"), encoding="utf-8") as handle:
        return json.load(handle)


def version_key(version: str | tuple[int, ...]) -> str:
    """Map any 2.x.y version to the catalog that documents it."""
    if isinstance(version, tuple):
        major, minor = version[0], version[1]
    else:
        parts = version.split(".")
        major, minor = int(parts[0]), int(parts[1]) if len(parts) > 1 else 4
    if (major, minor) >= (2, 3):
        return "2.4"
    if (major, minor) >= (2, 1):
        return "2.2"
    return "2.0"


@lru_cache(maxsize=8)
def directives(version: str = "2.4") -> dict[str, DirectiveInfo]:
    """Directives of one httpd version keyed by lower-case name."""
    table = _raw_catalog()[version_key(version)]
    return {
        key: DirectiveInfo(
            name=entry["name"],
            module=entry["module"],
            modules=tuple(entry["modules"]),
            syntax=entry["syntax"],
            default=entry["default"],
            contexts=tuple(entry["contexts"]),
            override=entry["override"],
            status=entry["status"],
            block=entry["block"],
            alias_of=entry.get("alias_of"),
        )
        for key, entry in table.items()
    }


def lookup(name: str, version: str = "2.4") -> DirectiveInfo | None:
    return directives(version).get(name.lower())


@lru_cache(maxsize=1)
def spellings() -> dict[str, str]:
    """Lower-case name -> httpd 2.4's spelling."""
    with open(os.path.join(_DATA, "names-2.4.json"), encoding="utf-8") as handle:
        return {name.lower(): name for name in json.load(handle)}


def canonical_name(name: str) -> str:
    """The spelling httpd 2.4 prints: its command table's, or the name as written."""
    return spellings().get(name.lower(), name)


def module_source_name(module: str) -> str:
    """The manual names modules `mod_alias`, `core`, `prefork`...; httpd's
    `<IfModule>` knows them as `mod_alias.c`, `core.c`, `prefork.c` (and
    mod_ldap as `util_ldap.c`: the package's own name wins)."""
    if module.endswith(".c"):
        return module
    if module.startswith("mod_"):
        from advisor.config.modules import STOCK

        stock = STOCK.shared.get(f"{module[4:]}_module")
        if stock is not None and stock[0] == f"{module}.so":
            return stock[1]
    return f"{module}.c"
