"""Ansible's own reading of an inventory, when ansible-core is installed
(`pip install 'apache-advisor[ansible]'`).

Its InventoryManager reads the source with the plugins Ansible enables (INI,
YAML, scripts, plugin configurations...), its VariableManager merges each
host's variables as `ansible-inventory --list` shows them (group_vars/ and
host_vars/ included), and its own pattern code reads `--limit`. A source no
plugin can read is one line: the message of the plugin the file is meant
for, at the file and line Ansible points at.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import warnings
from typing import Any, Iterator

from advisor.commands.inventory_model import HostList, InventoryHost
from advisor.errors import ConfigError, UsageError



def check_hint(path: str) -> str:
    return f"ansible-inventory -i {path} --list shows how Ansible reads it"


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Ansible prints its warnings (a source it could not parse, a pattern
    that matched nothing) on stderr in many lines; apache-advisor says what
    matters in one, so they are held back while Ansible works."""
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()), \
            contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def available() -> bool:
    try:
        with quiet():
            import ansible.inventory.manager  # noqa: F401  # type: ignore[import-not-found]
    except ImportError:
        return False
    return True


def _plain(value: Any) -> Any:
    """Ansible's values as the builtin types they wrap (2.19 tags each value
    with where it came from); anything else, a vaulted secret say, as it is."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _where(exc: BaseException, path: str) -> tuple[str, int | None]:
    """The file and line Ansible's error points at: the origin ansible-core
    2.19 tags errors with, older releases' `ansible_pos`, or a `file:line:`
    their messages start with."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 20:
        seen += 1
        origin = getattr(current, "obj", None)
        line = getattr(origin, "line_num", None)
        if line and getattr(origin, "path", None):
            return str(origin.path), int(line)
        position = getattr(origin, "ansible_pos", None)
        if position and position[1]:
            return str(position[0]), int(position[1])
        prefix = re.match(r"(/[^:\n]+):(\d+):", str(current))
        if prefix:
            return prefix.group(1), int(prefix.group(2))
        current = current.__cause__ or current.__context__
    return path, None


def _track_ini_line(plugin: Any) -> dict:
    """ansible-core 2.19's ini plugin counts lines as it reads but drops the
    count from the error it raises; keep the line it stopped at."""
    seen: dict = {}
    inner = getattr(plugin, "_parse", None)
    if not callable(inner) or not hasattr(plugin, "_origin"):
        return seen

    def tracked(lines):
        try:
            return inner(lines)
        except Exception:
            seen["line"] = getattr(getattr(plugin, "_origin", None), "line_num", None)
            raise

    plugin._parse = tracked
    return seen


def _meant_for(path: str, names: list[str]) -> list[str]:
    """The enabled plugins in the order their error says most about the file."""
    if os.access(path, os.X_OK):
        first = ["script"]
    elif path.endswith((".yml", ".yaml", ".json")):
        first = ["yaml", "auto"]
    elif path.endswith(".toml"):
        first = ["toml"]
    else:
        first = ["ini"]
    return [name for name in first if name in names] + [name for name in names if name not in first]


def parse_error(path: str) -> ConfigError:
    """Why no plugin read `path`: the plugin the file is meant for, run alone
    again, and its message at its file and line."""
    import ansible.constants as C  # type: ignore[import-not-found]
    from ansible.inventory.data import InventoryData  # type: ignore[import-not-found]
    from ansible.parsing.dataloader import DataLoader  # type: ignore[import-not-found]
    from ansible.plugins.loader import inventory_loader  # type: ignore[import-not-found]

    for name in _meant_for(path, list(C.INVENTORY_ENABLED)):
        plugin = inventory_loader.get(name)
        try:
            if plugin is None or not plugin.verify_file(path):
                continue
        except Exception:  # noqa: BLE001 - a plugin that cannot tell is one that does not want the file
            continue
        seen = _track_ini_line(plugin) if name.endswith("ini") else {}
        try:
            plugin.parse(InventoryData(), DataLoader(), path, cache=False)
        except Exception as exc:  # noqa: BLE001 - AnsibleError and what plugins let through, as one line
            where, line = _where(exc, path)
            message = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(".")
            return ConfigError(f"Ansible's {name} inventory plugin cannot parse it: {message}", where,
                               line or seen.get("line"), check_hint(path))
    return ConfigError("Ansible found no inventory plugin that reads this file", path, None,
                       "write it as an INI or YAML inventory, or make a dynamic inventory script executable")


def _as_given(where: str | None, source: str, path: str) -> str | None:
    """The inventory's name as the admin wrote it, where Ansible gives its absolute path."""
    return path if where == source else where


def _manager_class(base: type) -> type:
    class RecordingManager(base):  # type: ignore[misc, valid-type]
        """InventoryManager that remembers the sources no plugin could read
        (Ansible itself only warns about them)."""

        unparsed: list[str]

        def parse_source(self, source, cache=False):
            parsed = super().parse_source(source, cache=cache)
            if not parsed:
                self.unparsed = [*getattr(self, "unparsed", []), source]
            return parsed

    return RecordingManager


def read_with_ansible(path: str) -> HostList:
    """Every host of the inventory at `path` as Ansible reads it."""
    with quiet():
        import ansible.constants as C  # type: ignore[import-not-found]
        from ansible.errors import AnsibleError  # type: ignore[import-not-found]
        from ansible.inventory.manager import InventoryManager  # type: ignore[import-not-found]
        from ansible.parsing.dataloader import DataLoader  # type: ignore[import-not-found]
        from ansible.vars.manager import VariableManager  # type: ignore[import-not-found]

        source = os.path.abspath(path)
        loader = DataLoader()
        try:
            manager = _manager_class(InventoryManager)(loader=loader, sources=[source])
            if getattr(manager, "unparsed", None):
                raise parse_error(manager.unparsed[0])
            variables = VariableManager(loader=loader, inventory=manager)
            hosts = []
            for host in manager.get_hosts("all"):
                # What ansible-inventory --list shows: the merged variables less Ansible's own.
                merged = variables.get_vars(host=host, include_hostvars=False, stage="all")
                kept = {key: _plain(value) for key, value in merged.items() if key not in C.INTERNAL_STATIC_VARS}
                hosts.append(InventoryHost(host.name, kept, {g.name for g in host.get_groups()} | {"all"}))
        except AnsibleError as exc:
            where, line = _where(exc, source)
            message = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ConfigError(f"Ansible cannot read the inventory: {message}", _as_given(where, source, path), line,
                              check_hint(path)) from None
        except ConfigError as exc:
            exc.file = _as_given(exc.file, source, path)
            exc.hint = check_hint(path)
            raise

    def select(limit: str) -> list[str]:
        with quiet():
            try:
                manager.subset(limit)
                return [host.name for host in manager.get_hosts("all")]
            except AnsibleError as exc:
                message = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise UsageError(f"--limit {limit!r}: {message}", hint="write an Ansible host pattern") from None
            finally:
                manager.subset(None)

    return HostList(hosts, select)
