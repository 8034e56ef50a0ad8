"""`lint --host` and `lint --inventory`: a fleet of hosts in network namespaces
(tests/fleet_topology.py), each with its own sshd and its own /etc/apache2,
read over SSH as its own httpd reads it.

web1 and web2 share one tree (event MPM); web3 runs prefork, so its event
block is E405 there alone; web4 sets ServerTokens Prod, so S501
misses it; web5 is an address with no sshd; `bad` has a tree its httpd
refuses.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, SARIF_SCHEMA, assert_one_line_error
from test_bench_support import cli

pytestmark = pytest.mark.netns

TUNING = ("# the same on every host: for the event MPM\n<IfModule mpm_event_module>\n    ServerLimit 32\n"
          "    ThreadsPerChild 25\n</IfModule>\n")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    import fleet_topology
    import netns_topology

    work = tmp_path_factory.mktemp("fleet")
    run, run_open, docroot = work / "run", work / "run-open", work / "www-prod"
    for directory in (run, run_open, docroot):
        directory.mkdir()
    os.chmod(run_open, 0o777)  # web4's PidFile and Mutex directory: anyone may write there (S516)
    os.chown(docroot, 0, 33)
    os.chmod(docroot, 0o775)  # web4's DocumentRoot: www-data's group may write it (S517)
    trees = {}
    for name, mpm in (("shared", "event"), ("prefork", "prefork"), ("prod", "event"), ("broken", "event")):
        tree = fleet_topology.debian_tree(work / f"tree-{name}", run_open if name == "prod" else run, mpm=mpm)
        (tree / "conf-enabled" / "tuning.conf").write_text(TUNING)
        os.chmod(tree / "apache2.conf", 0o640)  # the near miss of S515: root:root 0640
        trees[name] = tree
    (trees["prod"] / "conf-enabled" / "zz-prod.conf").write_text(f"ServerTokens Prod\nDocumentRoot {docroot}\n")
    (trees["broken"] / "conf-enabled" / "zz-bad.conf").write_text("# a typo\nKeepAliveTimeout five\n")
    os.chmod(trees["prefork"] / "apache2.conf", 0o644)  # readable by others (S515)
    os.chmod(trees["prod"], 0o775)  # a group-writable config directory (S514)
    # Near miss of S513: a root parent, www-data children (one on web1, three on web2: how many
    # children run changes with the load, and does not split the identical pair).
    quiet_child = fleet_topology.fake_httpd(work, child_user="33")
    quiet_children = fleet_topology.fake_httpd(work, child_user="33", children=3)
    root_child = fleet_topology.fake_httpd(work, child_user=None)  # S513: a child left as root
    login = fleet_topology.passwd_with_shell(work, "www-data", "/bin/bash")  # S518
    hosts = [("web1", trees["shared"], quiet_child), ("web2", trees["shared"], quiet_children),
             ("web3", trees["prefork"], root_child), ("web4", trees["prod"], login), ("bad", trees["broken"])]
    with netns_topology.held(lambda: fleet_topology.build(work / "net", hosts), "the test fleet") as topo:
        yield topo


def _ssh(topo) -> list[str]:
    args = []
    for option in topo.ssh_options():
        args += ["--ssh-option", option]
    return args


def ini_inventory(topo, path: Path) -> Path:
    lines = ["[web]"]
    lines += [f"{name} ansible_host={topo.node(name).addr}" for name in ("web1", "web2")]
    lines += ["", "[edge]", f"web3 ansible_host={topo.node('web3').addr}",
              f"web4 ansible_host={topo.node('web4').addr} ansible_port=22",
              f"web5 ansible_host={topo.hub_addr}  # nothing listens there",
              "", "[fleet:children]", "web", "edge",
              "", "[fleet:vars]", "ansible_user=root", f"ansible_ssh_private_key_file={topo.user_key}",
              "", "[broken]", f"bad ansible_host={topo.node('bad').addr} ansible_user=root "
                              f"ansible_ssh_private_key_file={topo.user_key}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def yaml_inventory(topo, path: Path) -> Path:
    import yaml

    data = {"all": {"children": {
        "fleet": {
            "vars": {"ansible_user": "root", "ansible_ssh_private_key_file": str(topo.user_key)},
            "children": {
                "web": {"hosts": {name: {"ansible_host": topo.node(name).addr} for name in ("web1", "web2")}},
                "edge": {"hosts": {"web3": {"ansible_host": topo.node("web3").addr},
                                   "web4": {"ansible_host": topo.node("web4").addr, "ansible_port": 22},
                                   "web5": {"ansible_host": topo.hub_addr}}},
            }},
        "broken": {"hosts": {"bad": {"ansible_host": topo.node("bad").addr, "ansible_user": "root",
                                     "ansible_ssh_private_key_file": str(topo.user_key)}}},
    }}}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _by_host(findings: list[dict]) -> dict[str, set[str]]:
    codes: dict[str, set[str]] = {}
    for finding in findings:
        for host in finding["hosts"]:
            codes.setdefault(host, set()).add(finding["code"])
    return codes


def test_ini_inventory_findings_per_host_and_the_identical_pair(fleet, tmp_path):
    inventory = ini_inventory(fleet, tmp_path / "hosts.ini")
    result = cli("lint", "--inventory", str(inventory), "--limit", "fleet", "--format", "json", *_ssh(fleet),
                 "--isolated", check=False)
    # web5 is unreachable: one line, and the exit code says a host failed.
    assert result.returncode == 1, result.stderr
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("apache-advisor: web5: ssh to root@"), result.stderr
    assert "host unreachable" in errors[0]
    findings = json.loads(result.stdout)
    codes = _by_host(findings)
    assert set(codes) == {"web1", "web2", "web3", "web4"}
    # The identical pair is one group: every finding of it names both, once.
    pair = [f for f in findings if f["host"] in ("web1", "web2")]
    assert pair and all(f["hosts"] == ["web1", "web2"] and f["host"] == "web1" for f in pair)
    # Per host: the prefork host alone has E405 (its -M says prefork), web4 alone lacks S501.
    assert "E405" in codes["web3"] and "P113" in codes["web3"]
    assert not {"E405", "P113"} & (codes["web1"] | codes["web4"])
    assert "S501" in codes["web1"] and "S501" in codes["web3"] and "S501" not in codes["web4"]
    e405 = next(f for f in findings if f["code"] == "E405")
    assert e405["file"] == "/etc/apache2/conf-enabled/tuning.conf" and e405["line"] == 3


def test_yaml_inventory_text_report_names_hosts_and_sums_up(fleet, tmp_path):
    inventory = yaml_inventory(fleet, tmp_path / "hosts.yml")
    result = cli("lint", "--inventory", str(inventory), "--limit", "web:edge:!web5", *_ssh(fleet), "--isolated",
                 "--jobs", "2", check=False)
    assert result.returncode == 1 and result.stderr == "", result.stderr  # warnings found; every host read
    out = result.stdout
    assert "== web1, web2: identical trees, linted once ==" in out
    assert "web3:/etc/apache2/conf-enabled/tuning.conf" in out
    assert "Fleet: 4 of 4 hosts linted (3 distinct trees)." in out
    # The memory rules know each host's RAM: read there, not here.
    assert "RAM " in out and " read on web3" in out
    summary = out.split("Fleet:", 1)[1]
    assert "  S501 warning: 3 hosts: web1, web2, web3\n" in summary
    assert "  E405 warning: 1 host: web3\n" in summary or "  E405 error: 1 host: web3\n" in summary


def test_sarif_locations_name_the_host(fleet, tmp_path):
    import jsonschema

    inventory = ini_inventory(fleet, tmp_path / "hosts.ini")
    result = cli("lint", "--inventory", str(inventory), "--limit", "web3,web4", "--format", "sarif",
                 *_ssh(fleet), "--isolated", check=False)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, json.loads(SARIF_SCHEMA.read_text()))
    uris = {location["physicalLocation"]["artifactLocation"]["uri"]
            for result_ in document["runs"][0]["results"] for location in result_["locations"]}
    assert "ssh://web3/etc/apache2/conf-enabled/tuning.conf" in uris
    assert {uri.split("/")[2] for uri in uris} == {"web3", "web4"}


def test_host_option_reads_one_host(fleet):
    node = fleet.node("web3")
    result = cli("lint", "--host", f"root@{node.addr}", "--identity", str(fleet.user_key), *_ssh(fleet),
                 "--isolated", "--select", "E405", check=False)
    assert result.returncode == 1, result.stderr
    assert f"root@{node.addr}:/etc/apache2/conf-enabled/tuning.conf" in result.stdout


def test_a_host_whose_httpd_refuses_its_config_is_host_file_line(fleet, tmp_path):
    inventory = ini_inventory(fleet, tmp_path / "hosts.ini")
    result = cli("lint", "--inventory", str(inventory), "--limit", "broken", *_ssh(fleet), "--isolated",
                 check=False)
    assert_one_line_error(result, "bad:/etc/apache2/conf-enabled/zz-bad.conf:2: ", "KeepAliveTimeout")


def test_no_host_linted_is_exit_2(fleet, tmp_path):
    inventory = ini_inventory(fleet, tmp_path / "hosts.ini")
    result = cli("lint", "--inventory", str(inventory), "--limit", "web5", *_ssh(fleet), "--isolated", check=False)
    assert_one_line_error(result, "web5: ssh to root@", "host unreachable")


def test_bad_inventories_and_limits_are_one_line(tmp_path):
    ini = tmp_path / "broken.ini"
    ini.write_text("[web]\nweb1 ansible_host=10.0.0.1\n[edge\nweb2\n")
    # Ansible (the 'ansible' extra, installed where the suite runs) reads
    # inventories and its message is given at the line; our reader's own
    # messages, with Ansible hidden, are test_inventory_bad_input's.
    assert_one_line_error(cli("lint", "--inventory", str(ini), check=False),
                          f"{ini}:3: ", "ini inventory plugin cannot parse it")
    bad_vars = tmp_path / "vars.ini"
    bad_vars.write_text("[web]\nweb1\n[web:vars]\nansible_user\n")
    assert_one_line_error(cli("lint", "--inventory", str(bad_vars), check=False), f"{bad_vars}:4: ",
                          "Expected key=value")
    yml = tmp_path / "broken.yml"
    yml.write_text("all:\n  hosts:\n    web1:\n   web2: {}\n")
    assert_one_line_error(cli("lint", "--inventory", str(yml), check=False), f"{yml}:4: ")
    good = tmp_path / "good.ini"
    good.write_text("[web]\nweb[1:3] ansible_host=10.0.0.1\n")
    assert_one_line_error(cli("lint", "--inventory", str(good), "--limit", "db*", check=False),
                          "--limit 'db*' matches no host of")
    assert_one_line_error(cli("lint", "--limit", "web", "/etc/apache2/apache2.conf", check=False),
                          "--limit go with --host or --inventory")
    assert_one_line_error(cli("lint", "--inventory", str(tmp_path / "none.ini"), check=False),
                          "inventory", "does not exist")


def test_inventory_reader_groups_children_and_variables(tmp_path):
    from advisor.commands.inventory import limit_hosts, read_inventory

    ini = tmp_path / "hosts"
    ini.write_text("top\n[web]\nweb[01:03] ansible_port=2222\n[db]\ndb1 ansible_user=pg\n"
                   "[prod:children]\nweb\ndb\n[prod:vars]\nansible_user=deploy\n[all:vars]\nansible_user=nobody\n")
    hosts = read_inventory(str(ini))
    assert [h.name for h in hosts] == ["top", "web01", "web02", "web03", "db1"]
    by_name = {h.name: h.connection() for h in hosts}
    assert by_name["web02"][:3] == ("web02", "deploy", 2222)  # the child group's vars beat all's
    assert by_name["db1"][1] == "pg"  # a host's own vars beat its groups'
    assert by_name["top"][1] == "nobody"
    assert [h.name for h in limit_hosts(hosts, "prod:&web:!web02", str(ini))] == ["web01", "web03"]
    assert [h.name for h in limit_hosts(hosts, "~^web0[23]$,top", str(ini))] == ["top", "web02", "web03"]


LIVE = {"S513", "S514", "S515", "S516", "S517", "S518"}


def test_live_host_checks_fire_on_their_host_and_not_on_the_near_misses(fleet, tmp_path):
    inventory = ini_inventory(fleet, tmp_path / "hosts.ini")
    result = cli("lint", "--inventory", str(inventory), "--limit", "web:edge:!web5", "--format", "json",
                 "--select", ",".join(sorted(LIVE)), *_ssh(fleet), "--isolated", check=False)
    assert result.returncode == 1 and result.stderr == "", result.stderr
    findings = json.loads(result.stdout)
    codes = _by_host(findings)
    # web3: a root child under a root parent, a main config readable by others.
    assert codes.get("web3") == {"S513", "S515"}
    # web4: a group-writable config directory, a PidFile and Mutex in a 0777 directory,
    # a DocumentRoot its group www-data may write, and www-data with a login shell.
    assert codes.get("web4") == {"S514", "S516", "S517", "S518"}
    # web1 and web2: a root parent with a www-data child, root:root 0640, 0755 directories.
    assert "web1" not in codes and "web2" not in codes
    s516 = sorted(f["message"] for f in findings if f["code"] == "S516")
    assert len(s516) == 2 and all("run-open" in message and "0777" in message for message in s516)
    s517 = next(f for f in findings if f["code"] == "S517")
    assert "www-prod" in s517["message"] and s517["file"] == "/etc/apache2/conf-enabled/zz-prod.conf"


def test_a_saved_snapshot_that_is_not_json_is_one_line(tmp_path):
    snapshot = tmp_path / "host.json"
    snapshot.write_text("{not json")
    conf = REPO / "corpus" / "rules" / "S513" / "root_child.conf"
    assert_one_line_error(cli("lint", "--isolated", "--live-facts", str(snapshot), str(conf), check=False),
                          f"--live-facts {snapshot} is not JSON")
    assert_one_line_error(cli("lint", "--isolated", "--live-facts", str(tmp_path / "none.json"), str(conf),
                              check=False), "cannot read --live-facts")


def test_a_host_without_python3_is_one_line(netns_topology):
    import netns_topology as topology_module

    topo = netns_topology
    host = f"root@{topo.server.addr}:{topology_module.NO_PYTHON_PORT}"
    args = ["lint", "--host", host, "--identity", str(topo.user_key), "--isolated"]
    for option in topo.ssh_options():
        args += ["--ssh-option", option]
    assert_one_line_error(cli(*args, check=False), f"python3 not found on {host}", "apt-get install")


@pytest.mark.parametrize("args,fragment", [
    (["--host", "web1", "--jobs", "0"], "--jobs must be at least 1, got 0"),
    (["--host", "web1:99999"], "bad port in --host 'web1:99999'"),
    (["--host", "web1", "relative.conf"], "PATH 'relative.conf' must be an absolute path on the host"),
    (["--host", "web1", "--statistics"], "--statistics does not go with --host or --inventory"),
    (["--host", "web1", "--identity", "/nonexistent/key"], "identity file not found: /nonexistent/key"),
    (["--host", "web1", "--limit", "web"], "--limit goes with --inventory"),
])
def test_bad_fleet_options_are_one_line_before_any_connection(args, fragment):
    assert_one_line_error(cli("lint", "--isolated", *args, check=False), fragment)
