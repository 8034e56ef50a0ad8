"""Hosts from the admin's Ansible inventory, for `lint --inventory FILE --limit PATTERN`.

With Ansible installed, its own inventory library reads the file (every
format and plugin it knows). Without it, this module reads the two formats
Ansible documents for static inventories, INI and YAML: groups, `:children`
and `children:`, `:vars` and `vars:`, host ranges like `web[01:20]`, and the
connection variables `ansible_host`, `ansible_user`, `ansible_port` and
`ansible_ssh_private_key_file` (and their older `ansible_ssh_*` spellings).
`apache_advisor_config` names a host's main config when it is not Debian's.

`--limit` follows Ansible's host patterns: names, groups, `all` or `*`,
shell globs, `~regex`, joined by `,` or `:`, with `&group` (also in) and
`!group` (not in).
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field

from advisor.errors import ConfigError, UsageError

CONFIG_VARIABLE = "apache_advisor_config"


@dataclass
class InventoryHost:
    name: str
    variables: dict = field(default_factory=dict)
    groups: set[str] = field(default_factory=set)

    def connection(self) -> tuple[str, str | None, int | None, str | None, str | None]:
        """(address, user, port, private key, main config)."""
        v = self.variables
        address = str(v.get("ansible_host") or v.get("ansible_ssh_host") or self.name)
        user = v.get("ansible_user") or v.get("ansible_ssh_user")
        port = v.get("ansible_port") or v.get("ansible_ssh_port")
        key = v.get("ansible_ssh_private_key_file") or v.get("ansible_private_key_file")
        config = v.get(CONFIG_VARIABLE)
        return (address, str(user) if user else None, int(port) if port else None,
                os.path.expanduser(str(key)) if key else None, str(config) if config else None)


@dataclass
class _Group:
    hosts: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    variables: dict = field(default_factory=dict)


class Inventory:
    """Groups and hosts, as Ansible's static inventory holds them."""

    def __init__(self, path: str):
        self.path = path
        self.groups: dict[str, _Group] = {"all": _Group(), "ungrouped": _Group()}
        self.host_vars: dict[str, dict] = {}
        self.order: list[str] = []

    def group(self, name: str) -> _Group:
        return self.groups.setdefault(name, _Group())

    def add_host(self, group: str, name: str, variables: dict) -> None:
        if name not in self.host_vars:
            self.host_vars[name] = {}
            self.order.append(name)
        self.host_vars[name].update(variables)
        members = self.group(group).hosts
        if name not in members:
            members.append(name)

    # -- what a host is ----------------------------------------------------------
    def _ancestry(self) -> dict[str, int]:
        """Each group's depth below `all` (parents' vars apply before children's)."""
        depth = {"all": 0}
        changed = True
        for _ in range(len(self.groups) + 1):  # bounded: a cycle stops here
            if not changed:
                break
            changed = False
            for name, group in self.groups.items():
                for child in group.children:
                    wanted = depth.get(name, 1) + 1
                    if depth.get(child, 0) < wanted and child != "all":
                        depth[child] = wanted
                        changed = True
        return depth

    def members(self, group: str, seen: set[str] | None = None) -> set[str]:
        seen = seen if seen is not None else set()
        if group in seen or group not in self.groups:
            return set()
        seen.add(group)
        if group == "all":
            return set(self.order)
        found = set(self.groups[group].hosts)
        for child in self.groups[group].children:
            found |= self.members(child, seen)
        return found

    def hosts(self) -> list[InventoryHost]:
        depth = self._ancestry()
        membership = {name: self.members(name) for name in self.groups}
        result = []
        for name in self.order:
            groups = {group for group, hosts in membership.items() if name in hosts} | {"all"}
            variables: dict = {}
            for group in sorted(groups, key=lambda g: (depth.get(g, 1), g)):
                variables.update(self.groups[group].variables)
            variables.update(self.host_vars[name])
            result.append(InventoryHost(name, variables, groups))
        return result


def _scalar(text: str):
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


_RANGE = re.compile(r"\[([0-9a-z]+):([0-9a-z]+)(?::(\d+))?\]")


def expand_range(name: str, where: str) -> list[str]:
    """`web[01:03]` -> web01, web02, web03 (Ansible's host ranges)."""
    match = _RANGE.search(name)
    if not match:
        return [name]
    start, end, step = match.group(1), match.group(2), int(match.group(3) or 1)
    head, tail = name[:match.start()], name[match.end():]
    if start.isdigit() and end.isdigit():
        width = len(start) if start.startswith("0") else 0
        values = [str(n).zfill(width) for n in range(int(start), int(end) + 1, step)]
    elif len(start) == 1 and len(end) == 1 and start.isalpha() and end.isalpha():
        values = [chr(c) for c in range(ord(start), ord(end) + 1, step)]
    else:
        raise ConfigError(f"bad host range in {name!r}", where, None, "write it like web[01:20] or db-[a:f]")
    if len(values) > 100000:
        raise ConfigError(f"host range {name!r} is too large", where, None, "split it")
    return [expanded for value in values for expanded in expand_range(head + value + tail, where)]


def _parse_ini(path: str, text: str) -> Inventory:
    import shlex

    inventory = Inventory(path)
    section, kind = "ungrouped", "hosts"
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            match = re.fullmatch(r"\[([^\]:\s]+)(?::(children|vars|hosts))?\]\s*(?:[#;].*)?", line)
            if not match:
                raise ConfigError(f"not an inventory section header: {line[:60]!r}", path, number,
                                  "write [group], [group:children] or [group:vars]")
            section, kind = match.group(1), match.group(2) or "hosts"
            inventory.group(section)
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise ConfigError(f"cannot split the line: {exc}", path, number, "check its quotes") from None
        if not words:
            continue
        if kind == "vars":
            key, sep, value = line.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"expected key=value in [{section}:vars], got {line[:60]!r}", path, number,
                                  "write one variable a line, like ansible_user=deploy")
            inventory.group(section).variables[key.strip()] = _scalar(value)
        elif kind == "children":
            if len(words) != 1:
                raise ConfigError(f"expected one group name in [{section}:children], got {line[:60]!r}", path,
                                  number, "list one child group a line")
            children = inventory.group(section).children
            inventory.group(words[0])
            if words[0] not in children:
                children.append(words[0])
        else:
            variables = {}
            for word in words[1:]:
                key, sep, value = word.partition("=")
                if not sep or not key:
                    raise ConfigError(f"expected key=value after the host name, got {word[:60]!r}", path, number,
                                      "write host variables like ansible_host=10.0.0.5")
                variables[key] = value
            for name in expand_range(words[0], f"{path}:{number}"):
                inventory.add_host(section, name, variables)
    return inventory


def _parse_yaml(path: str, text: str) -> Inventory:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ConfigError(f"{problem}", path, mark.line + 1 if mark else None,
                          "check the indentation and colons (Ansible's YAML inventory format)") from None
    inventory = Inventory(path)
    if data is None:
        return inventory
    if not isinstance(data, dict):
        raise ConfigError("a YAML inventory is a mapping of group names", path, 1,
                          "start with `all:` and put hosts under `hosts:`")

    def walk(name: str, body, trail: tuple[str, ...]) -> None:
        if name in trail:
            raise ConfigError(f"group {name} is its own child", path, None, "remove the loop in children:")
        inventory.group(name)
        if body is None:
            return
        if not isinstance(body, dict):
            raise ConfigError(f"group {name} must be a mapping (hosts:, children:, vars:)", path, None,
                              "indent its hosts under `hosts:`")
        unknown = set(body) - {"hosts", "children", "vars"}
        if unknown:
            raise ConfigError(f"group {name} has {', '.join(sorted(map(str, unknown)))}: not hosts, children or vars",
                              path, None, "put hosts under `hosts:` and groups under `children:`")
        variables = body.get("vars") or {}
        if not isinstance(variables, dict):
            raise ConfigError(f"vars of group {name} must be a mapping", path, None, "write key: value lines")
        inventory.group(name).variables.update(variables)
        hosts = body.get("hosts") or {}
        if not isinstance(hosts, dict):
            raise ConfigError(f"hosts of group {name} must be a mapping", path, None,
                              "write each host as `name:` (a colon after it)")
        for host, host_vars in hosts.items():
            if host_vars is not None and not isinstance(host_vars, dict):
                raise ConfigError(f"variables of host {host} must be a mapping", path, None, "write key: value lines")
            for expanded in expand_range(str(host), path):
                inventory.add_host(name, expanded, dict(host_vars or {}))
        children = body.get("children") or {}
        if not isinstance(children, dict):
            raise ConfigError(f"children of group {name} must be a mapping", path, None,
                              "write each child group as `name:`")
        for child, child_body in children.items():
            if str(child) not in inventory.group(name).children:
                inventory.group(name).children.append(str(child))
            walk(str(child), child_body, trail + (name,))

    for name, body in data.items():
        walk(str(name), body, ())
    return inventory


def _with_ansible(path: str) -> list[InventoryHost] | None:
    """Ansible's own reading, when Ansible is installed (None otherwise, and
    when it found no host: a file it could not parse gets our reader's
    file:line error)."""
    try:
        from ansible.inventory.manager import InventoryManager  # type: ignore[import-not-found]
        from ansible.parsing.dataloader import DataLoader  # type: ignore[import-not-found]
        from ansible.vars.manager import VariableManager  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        loader = DataLoader()
        manager = InventoryManager(loader=loader, sources=[path])
        variables = VariableManager(loader=loader, inventory=manager)
        hosts = []
        for host in manager.get_hosts("all"):
            # The variables as a play would see them: group precedence, host_vars/, group_vars/.
            merged = dict(variables.get_vars(host=host, include_hostvars=False))
            hosts.append(InventoryHost(host.name, merged, {g.name for g in host.get_groups()} | {"all"}))
    except Exception as exc:  # noqa: BLE001 - AnsibleError and its kin, as one line
        raise UsageError(f"Ansible cannot read inventory {path}: {str(exc).splitlines()[0] if str(exc) else exc!r}",
                         hint="check it with ansible-inventory -i FILE --list") from None
    return hosts or None


def read_inventory(path: str) -> list[InventoryHost]:
    """Every host of the inventory at `path`, in file order."""
    if not os.path.isfile(path):
        raise UsageError(f"inventory {path} does not exist", hint="pass the Ansible inventory file (INI or YAML)")
    found = _with_ansible(path)
    if found is not None:
        return found
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read inventory {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if path.endswith((".yml", ".yaml")) or re.match(r"\s*(---|[A-Za-z0-9_.-]+:\s*$)", text):
        return _parse_yaml(path, text).hosts()
    return _parse_ini(path, text).hosts()


def _matches(host: InventoryHost, pattern: str) -> bool:
    if pattern in ("all", "*"):
        return True
    if pattern.startswith("~"):
        try:
            return re.search(pattern[1:], host.name) is not None
        except re.error as exc:
            raise UsageError(f"bad --limit regular expression {pattern!r}: {exc}") from None
    if pattern in host.groups or pattern == host.name:
        return True
    return fnmatch.fnmatchcase(host.name, pattern) or any(fnmatch.fnmatchcase(g, pattern) for g in host.groups)


def limit_hosts(hosts: list[InventoryHost], limit: str | None, path: str) -> list[InventoryHost]:
    """The hosts an Ansible --limit pattern selects, in inventory order."""
    if not limit:
        return hosts
    parts = [part.strip() for part in re.split(r"[,:](?![^\[]*\])", limit) if part.strip()]
    included = [p for p in parts if not p.startswith(("!", "&"))] or ["all"]
    required = [p[1:] for p in parts if p.startswith("&")]
    excluded = [p[1:] for p in parts if p.startswith("!")]
    chosen = [h for h in hosts if any(_matches(h, p) for p in included)
              and all(_matches(h, p) for p in required) and not any(_matches(h, p) for p in excluded)]
    if not chosen:
        raise UsageError(f"--limit {limit!r} matches no host of {path}",
                         hint="name hosts or groups the inventory has (ansible-inventory --graph lists them)")
    return chosen
