"""An Ansible inventory as our own reader holds it: groups, hosts, variables, and
Ansible's host patterns over them.

This is the reading used when Ansible is not installed (advisor/commands/
inventory.py picks). It follows what ansible-core does with the same files, so
that a fleet gets the same hosts and variables either way: the groups a host
belongs to and their depth below `all`, the order variables are merged in
(VariableManager's default precedence), and how `--limit` patterns pick hosts
(InventoryManager's). tests/test_inventory_ansible*.py hold both readings
against `ansible-inventory` on the same files.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from typing import Callable

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


class HostList(list):
    """An inventory's hosts in Ansible's order, with the inventory's own way of
    reading a host pattern: `select(pattern)` gives the names --limit keeps."""

    def __init__(self, hosts: list[InventoryHost], select: Callable[[str], list[str]]):
        super().__init__(hosts)
        self.select = select


@dataclass
class StaticGroup:
    name: str
    hosts: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)
    variables: dict = field(default_factory=dict)
    priority: int = 1


# Ansible gives a pattern to its glob matcher unless it holds one of these.
_GLOB_MARKS = (".", "?", "*", "[")
_SUBSCRIPT = re.compile(r"^(.+)\[(?:(-?[0-9]+)|([0-9]+)([:-])([0-9]*))\]$")
# One address, host or IP with an optional port: Ansible does not split it at its colons.
_ONE_ADDRESS = re.compile(r"(?:[A-Za-z0-9_.-]|\[[^\]]*\])+(?::[0-9]+)?|[0-9A-Fa-f:]*::[0-9A-Fa-f:.]*"
                          r"|(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}")
_PATTERN_WORD = re.compile(r"(?:[^\s:\[\]]|\[[^\]]*\])+")


def split_pattern(pattern: str) -> list[str]:
    """`web:&prod,db` -> its single patterns. A comma splits; without one, a
    colon does too, unless the whole text reads as one address (a host with a
    port, an IPv6 address or a range), as Ansible's split_host_pattern does."""
    if "," in pattern:
        parts = pattern.split(",")
    elif _ONE_ADDRESS.fullmatch(pattern):
        parts = [pattern]
    else:
        parts = _PATTERN_WORD.findall(pattern)
    return [part.strip() for part in parts if part.strip()]


class StaticInventory:
    """Groups and hosts in the order Ansible creates them."""

    def __init__(self, path: str):
        self.path = path
        self.groups: dict[str, StaticGroup] = {"all": StaticGroup("all"), "ungrouped": StaticGroup("ungrouped")}
        self.host_vars: dict[str, dict] = {}
        # group_vars/ and host_vars/ beside the file, read by inventory_static.
        self.group_files: dict[str, dict] = {}
        self.host_files: dict[str, dict] = {}

    def group(self, name: str) -> StaticGroup:
        if name not in self.groups:
            self.groups[name] = StaticGroup(name)
        return self.groups[name]

    def add_host(self, name: str, group: str | None, port: int | None = None) -> None:
        if name not in self.host_vars:
            self.host_vars[name] = {"ansible_port": port} if port else {}
        if group is not None:
            members = self.group(group).hosts
            if name not in members:
                members.append(name)

    def set_group_variable(self, group: str, key: str, value) -> None:
        if key == "ansible_group_priority":  # Ansible keeps it as the group's rank, not as a variable
            try:
                self.group(group).priority = int(value)
            except (TypeError, ValueError):
                raise ConfigError(f"ansible_group_priority of group {group} is not a number: {value!r}", self.path,
                                  None, "give it an integer") from None
            return
        self.group(group).variables[key] = value

    def add_child(self, parent: str, child: str, line: int | None = None) -> None:
        if child == parent or parent in self.descendants(child):
            raise ConfigError(f"adding group {child!r} as child to {parent!r} makes a loop", self.path, line,
                              "remove one of the two children: entries")
        if child not in self.group(parent).children:
            self.group(parent).children.append(child)
            self.group(child).parents.append(parent)

    def reconcile(self) -> None:
        """What Ansible does once a source is read: groups without a parent go
        under `all`; a host in no group goes to `ungrouped`, and leaves it when
        it is in another group."""
        for name, group in list(self.groups.items()):
            if name != "all" and not group.parents:
                self.add_child("all", name)
        ungrouped = self.groups["ungrouped"]
        direct: dict[str, set[str]] = {}
        for name, group in self.groups.items():
            for host in group.hosts:
                direct.setdefault(host, set()).add(name)
        for host in self.host_vars:
            others = direct.get(host, set()) - {"all", "ungrouped"}
            if others and host in ungrouped.hosts:
                ungrouped.hosts.remove(host)
            elif not others and host not in ungrouped.hosts:
                ungrouped.hosts.append(host)

    # -- what a host is ----------------------------------------------------------
    def descendants(self, name: str) -> list[str]:
        """The group and the groups below it, level by level."""
        order, level, seen = [name], list(self.group(name).children) if name in self.groups else [], {name}
        while level:
            fresh = [g for g in dict.fromkeys(level) if g not in seen]
            seen.update(fresh)
            order.extend(fresh)
            level = [child for g in fresh for child in self.groups[g].children]
        return order

    def group_hosts(self, name: str) -> list[str]:
        found: dict[str, None] = {}
        for group in self.descendants(name):
            found.update(dict.fromkeys(self.groups[group].hosts))
        return list(found)

    def depths(self) -> dict[str, int]:
        """Each group's longest path below `all`: Ansible merges shallow groups first."""
        depth: dict[str, int] = {}

        def of(name: str) -> int:
            if name not in depth:
                parents = self.groups[name].parents
                depth[name] = max((of(p) + 1 for p in parents), default=0)
            return depth[name]

        for name in self.groups:
            of(name)
        return depth

    def host_groups(self) -> dict[str, list[str]]:
        """Each host -> every group it is in, directly or through a child."""
        found: dict[str, list[str]] = {host: [] for host in self.host_vars}
        for name in self.groups:
            for host in self.group_hosts(name):
                found[host].append(name)
        return found

    def variables(self, host: str, groups: list[str], depth: dict[str, int]) -> dict:
        """The host's variables in VariableManager's default order: `all`'s,
        the other groups' (shallow first), group_vars/all, the other groups'
        group_vars/ files, the host's own, its host_vars/ file."""
        ranked = sorted((g for g in groups if g != "all"), key=lambda g: (depth[g], self.groups[g].priority, g))
        merged = dict(self.groups["all"].variables)
        for group in ranked:
            merged.update(self.groups[group].variables)
        merged.update(self.group_files.get("all", {}))
        for group in ranked:
            merged.update(self.group_files.get(group, {}))
        merged.update(self.host_vars[host])
        merged.update(self.host_files.get(host, {}))
        return merged

    def hosts(self) -> HostList:
        depth = self.depths()
        memberships = self.host_groups()
        result = [InventoryHost(name, self.variables(name, memberships[name], depth), set(memberships[name]) | {"all"})
                  for name in self.group_hosts("all")]
        return HostList(result, self.select)

    # -- host patterns -------------------------------------------------------------
    def _match_names(self, names, pattern: str) -> list[str]:
        try:
            compiled = re.compile(pattern[1:] if pattern.startswith("~") else fnmatch.translate(pattern))
        except re.error as exc:
            raise UsageError(f"bad --limit pattern {pattern!r}: {exc}") from None
        return [name for name in names if compiled.match(name)]

    def _one_pattern(self, pattern: str) -> list[str]:
        text = pattern[1:] if pattern[:1] in "&!" else pattern
        subscript = None
        match = None if text.startswith("~") else _SUBSCRIPT.match(text)
        if match:
            text, index, start, _sep, end = match.groups()
            subscript = (int(index), None) if index else (int(start), int(end) if end else -1)
        groups = self._match_names(self.groups, text)
        found = [host for group in groups for host in self.group_hosts(group)]
        if not groups or text.startswith("~") or any(mark in text for mark in _GLOB_MARKS):
            found.extend(self._match_names(self.host_vars, text))
        if found and subscript:
            start_at, end_at = subscript
            try:
                if end_at:
                    found = found[start_at:(len(found) - 1 if end_at == -1 else end_at) + 1]
                else:
                    found = [found[start_at]]
            except IndexError:
                raise UsageError(f"no host at the subscript of --limit pattern {pattern!r}",
                                 hint="count from 0 within the group") from None
        return found

    def select(self, limit: str) -> list[str]:
        """The host names `ansible all --limit LIMIT` runs on, in inventory order."""
        patterns = split_pattern(limit)
        regular = [p for p in patterns if p[0] not in "&!"] or ["all"]
        ordered = regular + [p for p in patterns if p[0] == "&"] + [p for p in patterns if p[0] == "!"]
        chosen: list[str] = []
        for pattern in ordered:
            if pattern in self.host_vars:
                chosen.append(pattern)
                continue
            matched = self._one_pattern(pattern)
            if pattern[0] == "!":
                chosen = [h for h in chosen if h not in set(matched)]
            elif pattern[0] == "&":
                chosen = [h for h in chosen if h in set(matched)]
            else:
                chosen.extend(h for h in matched if h not in chosen)
        kept = set(chosen)
        return [name for name in self.group_hosts("all") if name in kept]
