"""Which modules httpd has, and the names `<IfModule>` knows them by.

httpd answers `<IfModule X>` (case-sensitively) when X is a loaded module's
identifier (`rewrite_module`, the first argument of LoadModule) or its source
file name (`mod_rewrite.c`, the name compiled into the module).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from advisor.errors import ConfigError


class StockModules(NamedTuple):
    """Every module httpd 2.4 ships in Debian's package (data/modules-2.4.json,
    written from the installed package by advisor.config.modules_build).
    A NamedTuple: making a dataclass costs ~1 ms of every command's start."""

    package: str
    version: str
    """The package version the facts were read from."""
    builtin: tuple[tuple[str, str], ...]
    """(identifier, source name) compiled into the binary, in `apache2 -l` order."""
    shared: dict[str, tuple[str, str]]
    """identifier -> (shared object's file name, source name)."""

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(module_id for module_id, _ in self.builtin) | frozenset(self.shared)


def _read_stock() -> StockModules:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "modules-2.4.json")
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    return StockModules(
        package=data["package"], version=data["version"],
        builtin=tuple((module_id, source) for module_id, source in data["builtin"]),
        shared={module_id: (file, source) for module_id, file, source in data["shared"]},
    )


STOCK = _read_stock()

# `apache2 -l` on Debian's apache2 2.4: compiled into the binary, always there.
DEBIAN_BUILTINS = STOCK.builtin

# MPMs are compiled from files named after the MPM, not mod_mpm_*.c.
_MPM_SOURCES = {
    "mpm_prefork_module": "prefork.c",
    "mpm_worker_module": "worker.c",
    "mpm_event_module": "event.c",
    "mpm_itk_module": "mpm_itk.c",
    "mpm_winnt_module": "mpm_winnt.c",
    "mpm_netware_module": "mpm_netware.c",
    "mpm_mpmt_os2_module": "mpmt_os2.c",
}
_MPM_BY_SOURCE = {source: module_id for module_id, source in _MPM_SOURCES.items()}

# Older configs name the MPM by its 2.0/2.2 source file too.
MPM_NAMES = {
    "mpm_prefork_module": "prefork",
    "mpm_worker_module": "worker",
    "mpm_event_module": "event",
    "mpm_itk_module": "itk",
    "mpm_winnt_module": "winnt",
    "mpm_netware_module": "netware",
    "mpm_mpmt_os2_module": "mpmt_os2",
}


def source_name(module_id: str, path: str | None = None) -> str:
    """The `.c` name httpd knows a module by, from its identifier (and the
    shared object it came from, when the identifier says too little)."""
    if module_id in _MPM_SOURCES:
        return _MPM_SOURCES[module_id]
    stock = STOCK.shared.get(module_id)
    if stock is not None and (path is None or os.path.basename(path) == stock[0]):
        return stock[1]  # httpd's own module: its name as the package builds it
    if path:
        base = os.path.basename(path)
        if base.startswith("mod_") and base.endswith(".so"):
            return base[:-3] + ".c"
    stem = module_id[: -len("_module")] if module_id.endswith("_module") else module_id
    return f"mod_{stem}.c"


def module_id_from_name(name: str) -> str:
    """Identifier for a name given on the command line (`rewrite`,
    `mod_rewrite`, `mod_rewrite.c`, `rewrite_module`, `prefork`)."""
    if name in _MPM_BY_SOURCE:
        return _MPM_BY_SOURCE[name]
    if name in ("prefork", "worker", "event", "itk"):
        return f"mpm_{name}_module"
    if name.endswith("_module"):
        return name
    stem = name[:-2] if name.endswith(".c") else name
    stem = stem[4:] if stem.startswith("mod_") else stem
    if stem.startswith("mpm_") and f"{stem}_module" in _MPM_SOURCES:
        return f"{stem}_module"
    return f"{stem}_module"


@dataclass
class ModuleSet:
    ids: list[str] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    """Identifiers and source names together: what `<IfModule>` tests."""

    @classmethod
    def with_builtins(cls) -> "ModuleSet":
        modules = cls()
        for module_id, source in DEBIAN_BUILTINS:
            modules.add(module_id, source)
        return modules

    def add(self, module_id: str, source: str | None = None) -> bool:
        """Record a module; False when it was loaded already."""
        if module_id in self.names:
            return False
        self.ids.append(module_id)
        self.names.add(module_id)
        self.names.add(source or source_name(module_id))
        return True

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def mpms(self) -> list[str]:
        return [MPM_NAMES[m] for m in self.ids if m in MPM_NAMES]


_LISTED_MODULE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(?:\((?:static|shared)\))?\s*$")


def parse_module_listing(path: str) -> list[str]:
    """Module identifiers from a saved `apachectl -M` (or `httpd -M`) output."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read module list: {exc.strerror}", path, None,
                          "save the output of `apachectl -M` to this file") from None
    found: list[str] = []
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.endswith(":") or text.startswith(("AH", "[")):
            continue  # the "Loaded Modules:" header and httpd's warnings
        match = _LISTED_MODULE.match(text)
        if not match:
            raise ConfigError(f"not a line of `apachectl -M` output: {text[:60]!r}", path, number)
        found.append(match.group(1))
    return found
