"""Our reader of Ansible's static inventories, for when Ansible is not installed.

It takes the two formats Ansible documents for static inventories, INI and
YAML, and the `group_vars/` and `host_vars/` directories beside the file, and
reads them as ansible-core's `ini` and `yaml` inventory plugins and its
`host_group_vars` vars plugin do: INI values are Python literals where they
parse as one (`ansible_port=2222` is a number, `x="a b"` a string), a host
may carry its port (`web1:2222`), ranges expand (`web[01:20]`, `db-[a:f]`,
`[1:9:2]`), a group named under `:children` must be declared somewhere in
the file, and a vars file is `NAME`, `NAME.yml`, `NAME.yaml` or `NAME.json`,
or a directory `NAME/` whose files are read in name order.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import string
import warnings

from advisor.commands.inventory_model import HostList, StaticInventory
from advisor.errors import ConfigError

_SECTION = re.compile(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$")
_GROUP_NAME = re.compile(r"^([^:\]\s]+)\s*(?:#.*)?$")
_HOST_PORT = re.compile(r"^((?:[^:\[\]]|\[[^\]]*\])+):([0-9]+)$")
_BRACKETED_V6 = re.compile(r"^\[([0-9A-Fa-f:.]+)\](?::([0-9]+))?$")
_VARS_EXTENSIONS = ("", ".yml", ".yaml", ".json")
_RANGE_LIMIT = 100000


def expand_range(name: str, path: str, line: int | None = None) -> list[str]:
    """`web[01:03]` -> web01, web02, web03; letters run through a-z then A-Z
    as Ansible's ranges do; a leading zero pads to the start's width."""
    if "[" not in name:
        return [name]
    head, _, rest = name.partition("[")
    bounds_text, closed, tail = rest.partition("]")
    bounds = bounds_text.split(":")
    if not closed or len(bounds) not in (2, 3):
        raise ConfigError(f"bad host range in {name!r}", path, line, "write it like web[01:20] or db-[a:f]")
    start, end = bounds[0] or "0", bounds[1]
    step_text = bounds[2] if len(bounds) == 3 else "1"
    if not end or not step_text.isdigit() or int(step_text) < 1:
        raise ConfigError(f"bad host range in {name!r}: it needs an end and a positive step", path, line,
                          "write it like web[01:20] or web[1:9:2]")
    step = int(step_text)
    if start in string.ascii_letters and end in string.ascii_letters:
        first, last = string.ascii_letters.index(start), string.ascii_letters.index(end)
        if first > last:
            raise ConfigError(f"host range {name!r} ends before it starts", path, line, "put the smaller bound first")
        values = list(string.ascii_letters[first:last + 1:step])
    elif start.isdigit() and end.isdigit():
        width = len(start) if start.startswith("0") and len(start) > 1 else 0
        if width and len(end) != width:
            raise ConfigError(f"host range {name!r}: a zero-padded start needs an end of the same width", path, line,
                              "write both bounds with the same number of digits")
        values = [str(n).zfill(width) for n in range(int(start), int(end) + 1, step)]
    else:
        raise ConfigError(f"bad host range in {name!r}", path, line, "write it like web[01:20] or db-[a:f]")
    if len(values) > _RANGE_LIMIT:
        raise ConfigError(f"host range {name!r} is too large", path, line, "split it")
    return [host for value in values for host in expand_range(head + value + tail, path, line)]


def host_pattern(text: str, path: str, line: int | None) -> tuple[list[str], int | None]:
    """A host entry -> its names and the port written after them (`web1:2222`)."""
    bracketed = _BRACKETED_V6.match(text)
    if bracketed:
        return [bracketed.group(1)], int(bracketed.group(2)) if bracketed.group(2) else None
    with_port = _HOST_PORT.match(text)
    if with_port:
        return expand_range(with_port.group(1), path, line), int(with_port.group(2))
    if text.endswith(":"):
        raise ConfigError(f"host {text!r} ends with ':', which only a port may follow", path, line,
                          "write the port after the colon or remove the colon")
    return expand_range(text, path, line), None


def _plain_literal(value):
    """What Ansible keeps of a Python literal in an INI value: lists for
    tuples and sets, text for bytes, complex numbers and `...`."""
    if isinstance(value, (list, tuple, set)):
        return [_plain_literal(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain_literal(item) for key, item in value.items()}
    if value is ...:
        return "..."
    if isinstance(value, complex):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value


def ini_value(text: str):
    """An INI value as Ansible reads it: a Python literal when it is one, else the text."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    return _plain_literal(value)


class _IniReader:
    """One pass over an INI inventory, as ansible-core's ini plugin reads it."""

    def __init__(self, path: str):
        self.path = path
        self.inventory = StaticInventory(path)
        # Groups named before they are declared: name -> (line, state, parents).
        self.pending: dict[str, tuple[int, str, list[str]]] = {}

    def error(self, message: str, number: int, hint: str) -> ConfigError:
        return ConfigError(message, self.path, number, hint)

    def section(self, group: str, kind: str, number: int) -> None:
        if kind not in ("hosts", "children", "vars"):
            raise self.error(f"section [{group}:{kind}] has unknown type {kind!r}", number,
                             "write [group], [group:children] or [group:vars]")
        if group not in self.inventory.groups:
            if kind == "vars" and group not in self.pending:
                self.pending[group] = (number, "vars", [])
            self.inventory.group(group)
        if group in self.pending and kind != "vars":
            _, state, parents = self.pending.pop(group)
            for parent in parents if state == "children" else []:
                self.inventory.add_child(parent, group, number)

    def host_line(self, group: str, line: str, number: int) -> None:
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise self.error(f"cannot split the host line: {exc}", number, "check its quotes") from None
        names, port = host_pattern(words[0], self.path, number)
        variables = {}
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if not sep:
                raise self.error(f"expected key=value after the host name, got {word[:60]!r}", number,
                                 "write host variables like ansible_host=10.0.0.5")
            variables[key] = ini_value(value)
        for name in names:
            self.inventory.add_host(name, group, port)
            self.inventory.host_vars[name].update(variables)

    def child_line(self, group: str, line: str, number: int) -> None:
        match = _GROUP_NAME.match(line)
        if not match:
            raise self.error(f"expected a group name in [{group}:children], got {line[:60]!r}", number,
                             "list one child group a line")
        child = match.group(1)
        if child in self.inventory.groups:
            self.inventory.add_child(group, child, number)
        elif child in self.pending:
            self.pending[child][2].append(group)
        else:
            self.pending[child] = (number, "children", [group])

    def read(self, text: str) -> StaticInventory:
        group, kind = "ungrouped", "hosts"
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            match = _SECTION.match(line)
            if match:
                group, kind = match.group(1), match.group(2) or "hosts"
                self.section(group, kind, number)
            elif line.startswith("[") and line.endswith("]"):
                raise self.error(f"not an inventory section header: {line[:60]!r}", number,
                                 "write [group], [group:children] or [group:vars], without spaces")
            elif kind == "hosts":
                self.host_line(group, line, number)
            elif kind == "vars":
                key, sep, value = line.partition("=")
                if not sep:
                    raise self.error(f"expected key=value in [{group}:vars], got {line[:60]!r}", number,
                                     "write one variable a line, like ansible_user=deploy")
                self.inventory.set_group_variable(group, key.strip(), ini_value(value.strip()))
            else:
                self.child_line(group, line, number)
        for name, (number, state, parents) in self.pending.items():
            if state == "vars":
                raise self.error(f"section [{name}:vars] is for group {name!r}, which the file never declares",
                                 number, f"declare it with [{name}] or under a [parent:children]")
            raise self.error(f"section [{parents[-1]}:children] names group {name!r}, which the file never declares",
                             number, f"declare it with [{name}] (it may be empty)")
        return self.inventory


def _yaml_load(path: str, text: str):
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ConfigError(f"{problem}", path, mark.line + 1 if mark else None,
                          "check the indentation and colons") from None


def _yaml_group(inventory: StaticInventory, name: str, body) -> None:
    """One group of a YAML inventory; like Ansible's yaml plugin, keys other
    than vars, children and hosts, and groups that are not mappings, are skipped."""
    inventory.group(name)
    if not isinstance(body, dict):
        return
    for section in ("vars", "children", "hosts"):
        value = body.get(section)
        if isinstance(value, str):
            body[section] = {value: None}
        elif value is not None and not isinstance(value, dict):
            raise ConfigError(f"{section} of group {name} must be a mapping", inventory.path, None,
                              f"write each entry of {section}: as `name:` on its own line")
    for key, value in body.items():
        if not value or key not in ("vars", "children", "hosts"):
            continue
        if key == "vars":
            for variable, setting in value.items():
                inventory.set_group_variable(name, str(variable), setting)
        elif key == "children":
            for child, child_body in value.items():
                _yaml_group(inventory, str(child), child_body)
                inventory.add_child(name, str(child))
        else:
            for pattern, host_vars in value.items():
                if not isinstance(pattern, str):
                    raise ConfigError(f"host {pattern!r} of group {name} is not a name", inventory.path, None,
                                      "put quotes around host names that look like numbers")
                if host_vars is not None and not isinstance(host_vars, dict):
                    raise ConfigError(f"variables of host {pattern} must be a mapping", inventory.path, None,
                                      "write key: value lines under it")
                names, port = host_pattern(pattern, inventory.path, None)
                for host in names:
                    inventory.add_host(host, name, port)
                    inventory.host_vars[host].update(host_vars or {})


def parse_yaml(path: str, text: str) -> StaticInventory:
    data = _yaml_load(path, text)
    inventory = StaticInventory(path)
    if data is None:
        return inventory
    if not isinstance(data, dict):
        raise ConfigError("a YAML inventory is a mapping of group names", path, 1,
                          "start with `all:` and put hosts under `hosts:`")
    if data.get("plugin"):
        raise ConfigError("this is an inventory plugin's configuration, which only Ansible reads", path, None,
                          "install ansible-core: pip install 'apache-advisor[ansible]'")
    for name, body in data.items():
        _yaml_group(inventory, str(name), body)
    return inventory


def vars_files(directory: str, name: str) -> list[str]:
    """The files host_group_vars reads for `name` under group_vars/ or host_vars/."""
    base = os.path.join(directory, name)
    for extension in _VARS_EXTENSIONS:
        candidate = base + extension
        if os.path.isdir(candidate):
            return _dir_files(candidate)
        if os.path.exists(candidate):
            return [candidate]
    return []


def _dir_files(directory: str) -> list[str]:
    found = []
    for entry in sorted(os.listdir(directory)):
        if entry.startswith(".") or entry.endswith("~"):
            continue
        full = os.path.join(directory, entry)
        extension = os.path.splitext(entry)[1]
        if os.path.isdir(full) and not extension:
            found.extend(_dir_files(full))
        elif os.path.isfile(full) and extension in _VARS_EXTENSIONS:
            found.append(full)
    return found


def _read_vars(files: list[str]) -> dict:
    merged: dict = {}
    for path in files:
        try:
            with open(path, encoding="utf-8") as handle:
                data = _yaml_load(path, handle.read())
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read vars file: {getattr(exc, 'strerror', None) or exc}", path, None) from None
        if not data:
            continue
        if not isinstance(data, dict):
            raise ConfigError("a vars file holds a mapping of variables", path, 1, "write key: value lines")
        merged.update(data)
    return merged


def add_vars_directories(inventory: StaticInventory) -> None:
    """group_vars/ and host_vars/ beside the inventory file."""
    base = os.path.realpath(os.path.dirname(os.path.abspath(inventory.path)))
    for kind, names, target in (("group_vars", inventory.groups, inventory.group_files),
                                ("host_vars", inventory.host_vars, inventory.host_files)):
        directory = os.path.join(base, kind)
        if not os.path.isdir(directory):
            continue
        for name in names:
            files = vars_files(directory, name)
            if files:
                target[name] = _read_vars(files)


def looks_like_yaml(path: str, text: str) -> bool:
    return path.endswith((".yml", ".yaml", ".json")) or re.match(r"\s*(---|\{|[A-Za-z0-9_.-]+:\s*(#.*)?$)", text) is not None


def _starts_with_shebang(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(2) == b"#!"
    except OSError:
        return False


def read_static(path: str) -> HostList:
    """Every host of the static inventory at `path`, with its merged variables."""
    if os.access(path, os.X_OK) and _starts_with_shebang(path):
        raise ConfigError("this inventory is a script (a dynamic inventory), which only Ansible runs", path, None,
                          "install ansible-core: pip install 'apache-advisor[ansible]'")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read inventory: {getattr(exc, 'strerror', None) or exc}", path, None) from None
    inventory = parse_yaml(path, text) if looks_like_yaml(path, text) else _IniReader(path).read(text)
    inventory.reconcile()
    add_vars_directories(inventory)
    return inventory.hosts()
