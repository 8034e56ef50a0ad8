"""Hosts from the admin's Ansible inventory, for `lint --inventory FILE --limit PATTERN`.

With ansible-core installed (`pip install 'apache-advisor[ansible]'`),
Ansible reads the inventory itself: every format and plugin it knows, a
dynamic inventory script, group_vars/ and host_vars/, and `--limit` with its
own pattern code, so the hosts are the ones `ansible-inventory` and
`ansible --limit` name (advisor/commands/inventory_ansible.py). Without it,
our reader takes the static formats, INI and YAML, with group_vars/ and
host_vars/, and reads them and `--limit` as Ansible does
(inventory_static.py, inventory_model.py).

A host's `variables` are its merged variables as a plain dict: the
connection ones (`ansible_host`, `ansible_user`, `ansible_port`,
`ansible_ssh_private_key_file`, `ansible_become*`) and
`apache_advisor_config`, the host's main config when it is not Debian's.
"""

from __future__ import annotations

import os

from advisor.commands.inventory_model import CONFIG_VARIABLE, HostList, InventoryHost
from advisor.errors import UsageError

__all__ = ["CONFIG_VARIABLE", "HostList", "InventoryHost", "limit_hosts", "read_inventory"]


def read_inventory(path: str, use_ansible: bool = True) -> HostList:
    """Every host of the inventory at `path`, in Ansible's order. `use_ansible`
    False reads it with our own reader even when Ansible is installed."""
    from advisor.commands import inventory_ansible

    if use_ansible and inventory_ansible.available():
        if not os.path.exists(path):
            raise UsageError(f"inventory {path} does not exist",
                             hint="pass an Ansible inventory: a file, a directory of them or a script")
        return inventory_ansible.read_with_ansible(path)
    if not os.path.isfile(path):
        raise UsageError(f"inventory {path} does not exist", hint="pass the Ansible inventory file (INI or YAML)")
    from advisor.commands.inventory_static import read_static

    return read_static(path)


def limit_hosts(hosts: list[InventoryHost], limit: str | None, path: str) -> list[InventoryHost]:
    """The hosts an Ansible --limit pattern selects, in inventory order, read
    by the same code that read the inventory."""
    if not limit:
        return hosts
    if isinstance(hosts, HostList):
        names = set(hosts.select(limit))
    else:
        from advisor.commands.inventory_model import StaticInventory

        inventory = StaticInventory(path)
        for host in hosts:
            inventory.add_host(host.name, None)
            for group in sorted(host.groups - {"all"}):
                inventory.add_host(host.name, group)
        inventory.reconcile()
        names = set(inventory.select(limit))
    chosen = [host for host in hosts if host.name in names]
    if not chosen:
        raise UsageError(f"--limit {limit!r} matches no host of {path}",
                         hint=f"name hosts or groups the inventory has; ansible-inventory -i {path} --graph lists them")
    return chosen
