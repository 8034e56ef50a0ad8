#!/usr/bin/env python3
"""A dynamic inventory: prints the fleet as Ansible's script plugin wants it."""
import json
import sys

FLEET = {
    "web": {"hosts": ["dyn-web1", "dyn-web2"], "vars": {"ansible_user": "deploy"}},
    "db": {"hosts": ["dyn-db1"], "children": []},
    "prod": {"children": ["web", "db"], "vars": {"ansible_become": True, "ansible_become_method": "sudo",
                                                 "ansible_ssh_private_key_file": "/srv/keys/fleet"}},
    "_meta": {"hostvars": {
        "dyn-web1": {"ansible_host": "192.0.2.21", "ansible_port": 2201},
        "dyn-web2": {"ansible_host": "192.0.2.22"},
        "dyn-db1": {"ansible_host": "192.0.2.31", "ansible_become_user": "postgres",
                    "apache_advisor_config": "/etc/httpd/conf/httpd.conf"},
    }},
}

if len(sys.argv) > 1 and sys.argv[1] == "--list":
    print(json.dumps(FLEET))
elif len(sys.argv) > 2 and sys.argv[1] == "--host":
    print(json.dumps(FLEET["_meta"]["hostvars"].get(sys.argv[2], {})))
else:
    sys.exit("usage: inventory.py --list | --host NAME")
