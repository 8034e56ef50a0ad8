"""RAM and CPUs from the cgroup's limits, not the machine's (issue 30).

The first tests make a real memory cgroup limited to 512 MiB (v2's
memory.max, or v1's memory.limit_in_bytes where the memory controller is
mounted as v1, as on this machine), run `capacity` and `lint` inside it, and
check that they size for 512 MiB and name the file. The others read trees
of cgroup files a test writes (APACHE_ADVISOR_CGROUP_ROOT): the v2 layout
on a v1 machine, a limit on a parent group, and a garbled limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import SAMPLES, assert_one_line_error

MIB = 1024 * 1024
LIMIT = 512 * MIB
CLI = [sys.executable, "-m", "advisor"]
DEBIAN = str(SAMPLES / "debian" / "apache2.conf")
ROOT = Path("/sys/fs/cgroup")
# 400 prefork children of 12 MiB (C201's default) need about 5 GiB: they fit
# in this machine's RAM, not in 512 MiB.
PREFORK_400 = ("LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so\n"
               "ServerName limits.test\nServerLimit 400\nMaxRequestWorkers 400\n")


def _memory_group() -> tuple[Path, str]:
    """A fresh cgroup limited to LIMIT bytes, and its limit file's name."""
    name = f"advisor-test-{uuid.uuid4().hex[:8]}"
    v2_controllers = ROOT / "cgroup.controllers"
    if v2_controllers.exists() and "memory" in v2_controllers.read_text().split():
        subtree = ROOT / "cgroup.subtree_control"
        if "memory" not in subtree.read_text().split():
            subtree.write_text("+memory")
        group, file = ROOT / name, "memory.max"
    elif (ROOT / "memory" / "memory.limit_in_bytes").exists():
        group, file = ROOT / "memory" / name, "memory.limit_in_bytes"
    else:
        pytest.fail("no memory cgroup controller on this machine (v2 or v1)")
    group.mkdir()
    (group / file).write_text(str(LIMIT))
    return group, file


@pytest.fixture
def memory_group():
    if os.geteuid() != 0:
        pytest.fail("making a cgroup needs root")
    group, file = _memory_group()
    try:
        yield group, file
    finally:
        group.rmdir()  # its only process has exited


def run_in(group: Path | None, args: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the CLI; inside `group` when given (the shell moves itself in, then execs)."""
    command = [*CLI, *args]
    if group is not None:
        command = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(group / "cgroup.procs"), *command]
    full_env = {**os.environ, "APACHE_ADVISOR_NO_CACHE": "1", **(env or {})}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=full_env)


def test_capacity_sizes_for_the_cgroup_limit(memory_group):
    group, file = memory_group
    result = run_in(group, ["capacity", DEBIAN, "--no-measure", "--connection-memory", "64K", "--format", "json"])
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    memory = report["memory"]
    assert memory["ram"]["bytes"] == LIMIT
    limit = memory["limits"][0]
    assert limit["resource"] == "memory" and limit["file"] == str(group / file)
    assert limit["origin"] in ("cgroup v1", "cgroup v2") and "this tool" in limit["whose"]
    # The reserve is the group's own, not the host's: the kernel's memory is
    # not charged to a cgroup (the host's 256 MiB + 2 % would take half the pod).
    assert memory["os_reserve"]["bytes"] == int(32 * MIB + 0.02 * LIMIT)
    assert "cgroup" in memory["os_reserve"]["source"]
    fitted = report["recommendations"]["prefork"]
    assert fitted["total_bytes"] <= LIMIT
    # The same command outside the group sizes for the machine (about 24 GiB here).
    outside = json.loads(run_in(None, ["capacity", DEBIAN, "--no-measure", "--connection-memory", "64K",
                                       "--format", "json"]).stdout)
    assert outside["memory"]["ram"]["bytes"] > 4 * LIMIT
    assert outside["recommendations"]["prefork"]["max_request_workers"] > 4 * fitted["max_request_workers"]
    text = run_in(group, ["capacity", DEBIAN, "--no-measure"])
    assert text.returncode == 0 and "512 MiB" in text.stdout and "limit of this tool" in text.stdout


def test_ram_option_still_wins_inside_the_group(memory_group):
    group, _ = memory_group
    result = run_in(group, ["capacity", DEBIAN, "--no-measure", "--ram", "2G", "--format", "json"])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["memory"]["ram"] == {"bytes": 2 << 30, "source": "--ram", "name": ""}


def test_c201_fires_inside_the_group_and_names_the_file(memory_group, tmp_path):
    group, file = memory_group
    conf = tmp_path / "httpd.conf"
    conf.write_text(PREFORK_400)
    args = ["lint", "--isolated", "--live", "--select", "C201", "--format", "json", "--fail-on", "never", str(conf)]
    inside = run_in(group, args)
    assert inside.returncode == 0, inside.stderr
    findings = json.loads(inside.stdout)
    assert [f["code"] for f in findings] == ["C201"]
    message = findings[0]["message"]
    assert "RAM is 512 MiB" in message and str(group / file) in message
    outside = run_in(None, args)
    assert outside.returncode == 0 and json.loads(outside.stdout) == []
    # A pool that fits the pod with the group's own reserve is no finding
    # (the host's 512 MiB reserve would have left it no room at all).
    small = tmp_path / "small.conf"
    small.write_text(PREFORK_400.replace("400", "30"))  # 30 x 12 MiB + 42 MiB: fits in 512 MiB
    fits = run_in(group, ["lint", "--isolated", "--live", "--select", "C201", "--format", "json", "--fail-on",
                          "never", str(small)])
    assert fits.returncode == 0 and json.loads(fits.stdout) == [], fits.stdout


# ---- cgroup trees written by the test ---------------------------------------


def _own_groups() -> list[tuple[str, str]]:
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    return [(parts[1], parts[2].rstrip("/")) for parts in (line.split(":", 2) for line in lines)]


def fake_tree(root: Path, own: str, parent: str | None = None) -> Path:
    """A cgroup mount under `root` mirroring this process's groups: `own` in
    its own group's memory file, `parent` in the file of the group above it.
    v2 files go in root/ (as a pure v2 host), v1 in root/memory/."""
    for controllers, path in _own_groups():
        if controllers == "":
            mount, name = root, "memory.max"
            (root / "cgroup.controllers").write_text("cpu memory\n")
        elif "memory" in controllers.split(","):
            mount, name = root / "memory", "memory.limit_in_bytes"
        else:
            continue
        group = mount / path.lstrip("/")
        group.mkdir(parents=True, exist_ok=True)
        if parent is not None and group == mount:
            (group / name).write_text(parent + "\n")  # the root: no group above it
            continue
        (group / name).write_text(own + "\n")
        if parent is not None:
            (group.parent / name).write_text(parent + "\n")
    return root


def test_a_limit_on_a_parent_group_applies(tmp_path):
    """The process's own group says 'max' (v2) or LONG_MAX (v1); 512 MiB on
    the group above it wins. On this machine the v2 group is the root, so
    the walk up is exercised on the v1 side."""
    from advisor.config import host_limits

    fake_tree(tmp_path, "max", parent=str(LIMIT))
    os.environ[host_limits.CGROUP_ROOT_ENV] = str(tmp_path)
    try:
        found = host_limits.effective_memory(64 << 30, os.getpid(), "this test")
    finally:
        del os.environ[host_limits.CGROUP_ROOT_ENV]
    assert found.value == LIMIT and found.origin.startswith("cgroup")
    assert found.file.startswith(str(tmp_path))


def test_a_garbled_limit_is_one_line_exit_2(tmp_path):
    fake_tree(tmp_path, "lots")
    result = run_in(None, ["capacity", DEBIAN, "--no-measure"], env={"APACHE_ADVISOR_CGROUP_ROOT": str(tmp_path)})
    assert_one_line_error(result, str(tmp_path), "'lots' is not a number", "--ram SIZE")
    conf = tmp_path / "httpd.conf"
    conf.write_text(PREFORK_400)
    linted = run_in(None, ["lint", "--isolated", "--live", "--select", "C201", str(conf)],
                    env={"APACHE_ADVISOR_CGROUP_ROOT": str(tmp_path)})
    assert_one_line_error(linted, "'lots' is not a number")
    # --ram needs no cgroup: the same tree does not stop it.
    given = run_in(None, ["capacity", DEBIAN, "--no-measure", "--ram", "2G"],
                   env={"APACHE_ADVISOR_CGROUP_ROOT": str(tmp_path)})
    assert given.returncode == 0, given.stderr


def test_cpu_quota_and_cpuset_lower_the_cpu_count(tmp_path):
    from advisor.config import host_limits

    for controllers, path in _own_groups():
        if controllers == "":
            (tmp_path / "cgroup.controllers").write_text("cpu cpuset\n")
            group = tmp_path / path.lstrip("/")
            group.mkdir(parents=True, exist_ok=True)
            (group / "cpu.max").write_text("150000 100000\n")
            (group / "cpuset.cpus.effective").write_text("0-2,5\n")
    os.environ[host_limits.CGROUP_ROOT_ENV] = str(tmp_path)
    try:
        found = host_limits.cpu_limit(os.getpid(), "this test", host_cpus=8)
    finally:
        del os.environ[host_limits.CGROUP_ROOT_ENV]
    assert found.value == 1.5 and found.file.endswith("cpu.max")
    assert host_limits.parse_cpu_list("0-2,5", "x") == 4
