"""A private fleet: N hosts, each a network namespace with its own sshd and its own /etc/apache2.

    root namespace  ff<tag>h 10.204.K.2 ─┐
    hub namespace   br0      10.204.K.1 ─┤  (no sshd: a host that refuses connections)
    host i          eth0     10.204.K.(10+i) ─┘

Each host's sshd runs in a mount namespace of its own (`ip netns exec` makes
one) where a directory of this run is bind-mounted over /etc/apache2: the
host's httpd (Debian's apache2 of this machine) reads that tree and no
other. Hosts given the same directory have identical trees. The keys and
teardown are those of tests/netns_topology.py, whose helpers this reuses.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import netns_topology as base

SUBNET_BASE = "10.204"


@dataclass
class FleetNode:
    name: str
    netns: str
    addr: str
    tree: Path
    host_key: Path
    setup: str = ""
    """Shell run as root in the host's own mount and PID namespaces before its
    sshd starts: bind mounts, processes the host should show."""
    sshd: subprocess.Popen | None = None
    root_login: bool = True
    """False: its sshd says PermitRootLogin no, as hardened hosts do (issue 59)."""


@dataclass
class Fleet:
    tag: str
    prefix: str
    work: Path
    hub: str
    hub_addr: str
    root_link: str
    user_key: Path
    known_hosts: Path
    nodes: list[FleetNode] = field(default_factory=list)
    users: tuple = ()
    """netns_topology.LoginUser: the deploy users every host has besides root."""
    cpu_group: "CpuGroup | None" = None
    """Where every host's sshd runs, with all it starts: their CPU read exactly."""
    _created_ns: list[str] = field(default_factory=list)
    _root_link_made: bool = False

    def ssh_options(self) -> list[str]:
        return [f"UserKnownHostsFile={self.known_hosts}", "StrictHostKeyChecking=yes",
                "GlobalKnownHostsFile=/dev/null", "LogLevel=ERROR"]

    def node(self, name: str) -> FleetNode:
        return next(node for node in self.nodes if node.name == name)

    def close(self) -> list[str]:
        # Everything in the namespaces first: the sshd is PID 1 of its host's PID
        # namespace, and `unshare` waits for it rather than pass on a SIGTERM.
        for netns in self._created_ns:
            base._kill_namespace_processes(netns)
        for node in self.nodes:
            base._stop(node.sshd)
            node.sshd = None
        if self._root_link_made:
            subprocess.run(["ip", "link", "del", self.root_link], capture_output=True, timeout=30)
        for netns in self._created_ns:
            subprocess.run(["ip", "netns", "del", netns], capture_output=True, timeout=30)
        left = [f"namespace {ns}" for ns in self._created_ns if ns in base.list_namespaces()]
        if self._root_link_made and Path(f"/sys/class/net/{self.root_link}").exists():
            left.append(f"link {self.root_link}")
        left += [f"process {pid}" for pid in base.processes_mentioning(str(self.work))]
        return left


def debian_tree(target: Path, run_dir: Path, mpm: str = "event") -> Path:
    """A copy of this machine's /etc/apache2 whose envvars point at `run_dir`,
    with `mpm` the MPM enabled."""
    shutil.copytree("/etc/apache2", target, symlinks=True)
    envvars = target / "envvars"
    text = envvars.read_text()
    text += (f"\nexport APACHE_RUN_DIR={run_dir}\nexport APACHE_PID_FILE={run_dir}/apache2.pid\n"
             f"export APACHE_LOCK_DIR={run_dir}\nexport APACHE_LOG_DIR={run_dir}\n")
    envvars.write_text(text)
    enabled = target / "mods-enabled"
    for old in enabled.glob("mpm_*"):
        old.unlink()
    for suffix in ("load", "conf"):
        if (target / "mods-available" / f"mpm_{mpm}.{suffix}").exists():
            (enabled / f"mpm_{mpm}.{suffix}").symlink_to(f"../mods-available/mpm_{mpm}.{suffix}")
    return target


def build(work: Path, trees: list[tuple], subnet_base: str = SUBNET_BASE, *, users=(),
          root_refused=(), cpu_group: "CpuGroup | None" = None) -> Fleet:
    """Hosts named and given trees by `trees` [(name, directory[, setup shell])],
    with the login `users` (netns_topology.LoginUser) besides root; the hosts
    named in `root_refused` refuse root's login; every sshd (and so every
    session, python3 and httpd it starts) in `cpu_group` when given.
    Everything made is removed again when building fails half-way."""
    base.check_requirements()
    if len(trees) > 200:
        raise base.TopologyUnavailable("at most 200 hosts")
    base._BUILT += 1
    tag = f"{os.getpid() % 100000:05d}{base._BUILT}"
    used = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, timeout=30).stdout
    octet = next((o for o in ((int(tag) // 7 + step) % 250 + 1 for step in range(250))
                  if f" {subnet_base}.{o}." not in used), None)
    if octet is None:
        raise base.TopologyUnavailable(f"every {subnet_base}.x.0/24 subnet is in use")
    prefix = f"{subnet_base}.{octet}"
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o700)
    fleet = Fleet(tag=tag, prefix=prefix, work=work, hub=f"ff-hub-{tag}", hub_addr=f"{prefix}.1",
                  root_link=f"ff{tag}h", user_key=work / "user_key", known_hosts=work / "known_hosts",
                  users=tuple(users), cpu_group=cpu_group)
    for index, (name, tree, *setup) in enumerate(trees, start=1):
        fleet.nodes.append(FleetNode(name, f"ff-{index}-{tag}", f"{prefix}.{10 + index}", tree,
                                     work / f"{name}_host_key", setup[0] if setup else "",
                                     root_login=name not in root_refused))
    return base.set_up(fleet, (_network, _sshds), "the test fleet")


def _network(fleet: Fleet) -> None:
    sh = base._sh
    sh("ip", "netns", "add", fleet.hub)
    fleet._created_ns.append(fleet.hub)
    sh("ip", "-n", fleet.hub, "link", "set", "lo", "up")
    sh("ip", "-n", fleet.hub, "link", "add", "br0", "type", "bridge")
    sh("ip", "-n", fleet.hub, "addr", "add", f"{fleet.hub_addr}/24", "dev", "br0")
    sh("ip", "-n", fleet.hub, "link", "set", "br0", "up")
    sh("ip", "link", "add", fleet.root_link, "type", "veth", "peer", "name", "port0", "netns", fleet.hub)
    fleet._root_link_made = True
    sh("ip", "addr", "add", f"{fleet.prefix}.2/24", "dev", fleet.root_link)
    sh("ip", "link", "set", fleet.root_link, "up")
    base._attach(fleet.hub, "port0")
    for index, node in enumerate(fleet.nodes, start=1):
        sh("ip", "netns", "add", node.netns)
        fleet._created_ns.append(node.netns)
        sh("ip", "-n", node.netns, "link", "set", "lo", "up")
        sh("ip", "-n", fleet.hub, "link", "add", f"port{index}", "type", "veth", "peer", "name", "eth0",
           "netns", node.netns)
        base._attach(fleet.hub, f"port{index}")
        sh("ip", "-n", node.netns, "addr", "add", f"{node.addr}/24", "dev", "eth0")
        sh("ip", "-n", node.netns, "link", "set", "eth0", "up")


def _sshds(fleet: Fleet) -> None:
    base._keygen(fleet.user_key, f"apache-advisor-fleet-{fleet.tag}")
    authorized = fleet.work / "authorized_keys"
    authorized.write_text(Path(str(fleet.user_key) + ".pub").read_text())
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    known = []
    for node in fleet.nodes:
        base._keygen(node.host_key, f"{node.name}-{fleet.tag}")
        key_type, key = Path(str(node.host_key) + ".pub").read_text().split()[:2]
        known.append(f"{node.addr} {key_type} {key}\n")
        config = fleet.work / f"sshd_{node.name}.conf"
        config.write_text(
            f"ListenAddress {node.addr}\nPort 22\nHostKey {node.host_key}\n"
            f"PidFile {fleet.work / f'sshd_{node.name}.pid'}\n"
            f"AuthorizedKeysFile {authorized}{' /home/%u/.ssh/authorized_keys' if fleet.users else ''}\n"
            f"PermitRootLogin {'prohibit-password' if node.root_login else 'no'}\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "UsePAM no\nStrictModes no\nPrintMotd no\nLogLevel ERROR\nMaxSessions 16\nMaxStartups 64\n")
        sshd = shlex.join([base.SSHD, "-D", "-e", "-f", str(config)])
        mount = f"mount --bind {shlex.quote(str(node.tree))} /etc/apache2 && "
        # A PID namespace of its own too: the host's process table holds its
        # sshd and what `setup` starts, not this machine's other httpds.
        users = base.login_users_setup(fleet.work, fleet.users, authorized)
        script = f"{mount}{users}{node.setup}\nexec {sshd}"
        namespaced = ["ip", "netns", "exec", node.netns, "unshare", "--pid", "--fork", "--mount-proc",
                      "--kill-child", "sh", "-c", script]
        node.sshd = subprocess.Popen(_in_group(fleet.cpu_group) + namespaced,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(fleet.work / f"sshd_{node.name}.log", "wb"))
    fleet.known_hosts.write_text("".join(known))
    for node in fleet.nodes:
        base._wait_listening(node, fleet.work / f"sshd_{node.name}.log")  # type: ignore[arg-type]


@dataclass
class CpuGroup:
    """A cgroup that only counts CPU time (no limit): cgroup v2's cpu.stat, which
    every v2 group has without a controller enabled, else v1's cpuacct. Time of
    processes that have exited is kept, so one reading after a run holds all
    the run's processes, daemonised ones included."""

    path: Path
    version: int

    @classmethod
    def create(cls, name: str) -> "CpuGroup":
        for root, version in ((Path("/sys/fs/cgroup"), 2), (Path("/sys/fs/cgroup/unified"), 2),
                              (Path("/sys/fs/cgroup/cpuacct"), 1), (Path("/sys/fs/cgroup/cpu,cpuacct"), 1)):
            marker = root / ("cgroup.procs" if version == 2 else "cpuacct.usage")
            if version == 2 and not (root / "cgroup.controllers").exists():
                continue
            if marker.exists():
                path = root / name
                path.mkdir()
                return cls(path, version)
        raise base.TopologyUnavailable("no cgroup v2 hierarchy nor v1 cpuacct to count CPU time in")

    def usage_s(self) -> float:
        from advisor.tuner.measure.cgroup import read_usage

        used = read_usage(str(self.path), self.version)
        if used is None:
            raise RuntimeError(f"cannot read the CPU time of {self.path}")
        return used

    def pids(self) -> list[int]:
        return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]

    def remove(self) -> None:
        """Delete the group; processes still in it are killed first (they were started for it)."""
        import signal
        import time

        if not self.path.exists():
            return
        if self.version == 2 and (self.path / "cgroup.kill").exists():
            (self.path / "cgroup.kill").write_text("1")
        else:
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.path.rmdir()


def _in_group(group: CpuGroup | None) -> list[str]:
    """A command prefix that moves the shell into `group`, then execs the rest."""
    if group is None:
        return []
    return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(group.path / "cgroup.procs")]


def fake_httpd(work: Path, child_user: str | None, children: int = 1) -> str:
    """Setup shell that starts an `apache2` parent (a copy of dash) as root with
    `children` `apache2` children (copies of sleep), run as root or as
    `child_user`: what the live checks see of a running server's processes."""
    parent, child = work / "fake-parent" / "apache2", work / "fake-child" / "apache2"
    for path, source in ((parent, "/bin/dash"), (child, "/bin/sleep")):
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, path)
    # Until the fleet is torn down (close() kills what its namespaces run):
    # a fixed 600 s ran out when the `netns` worker built the fleet, waited
    # out the `load` tests (19 minutes) and then ran the live checks.
    run_child = shlex.quote(str(child)) + " infinity"
    if child_user:
        run_child = f"setpriv --reuid={child_user} --regid={child_user} --clear-groups {run_child}"
    inner = shlex.quote(f"{run_child} & " * max(1, children) + "wait")
    return f"({shlex.quote(str(parent))} -c {inner} &)\n"


def plain_root_home(work: Path) -> str:
    """Setup shell that gives root an empty home on the host: bash, run by sshd,
    sources ~/.bashrc for every command, and this machine's (pyenv's init)
    costs a session about 0.1 s of CPU and puts pyenv's python3 first on PATH,
    where a Debian host runs /usr/bin/python3."""
    home = work / "plain-root-home"
    home.mkdir(mode=0o700, exist_ok=True)
    return f"mount --bind {shlex.quote(str(home))} /root\n"


def passwd_with_shell(work: Path, user: str, shell: str) -> str:
    """Setup shell that shows the host a /etc/passwd where `user` logs in with `shell`."""
    lines = []
    for line in Path("/etc/passwd").read_text().splitlines():
        fields = line.split(":")
        if len(fields) == 7 and fields[0] == user:
            fields[6] = shell
        lines.append(":".join(fields))
    copy = work / f"passwd-{user}-{Path(shell).name}"
    copy.write_text("\n".join(lines) + "\n")
    return f"mount --bind {shlex.quote(str(copy))} /etc/passwd\n"
