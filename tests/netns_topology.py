"""A private test network: one server namespace, two client namespaces, an sshd in each.

Layout (K is chosen per run so that two runs, or a leftover, do not clash):

    root namespace  aa<tag>h 10.203.K.2 ─┐
    client ns 1     eth0     10.203.K.11 ─┼─ bridge br0 in the server ns, 10.203.K.1
    client ns 2     eth0     10.203.K.12 ─┘

Every namespace reaches every other over one bridge, so the tool (in the
root namespace) can ssh into the server and into both clients, and a client
can load the server. Each namespace runs its own sshd (Debian's
openssh-server) with host keys made for this run in a temporary directory;
one user key, also made here, is the only authorized key: for root and for
the deploy users of LOGIN_USERS, who exist only in the sshds' own mount
namespaces (login_users_setup). Each sshd
also listens on port 2200, where sessions get a PATH without python3. Addresses exist
only inside these namespaces and on the root end of one veth pair, which
goes with the topology.

`Topology.close()` ends every process it started and every process left in
its namespaces, deletes the links and the namespaces, and checks that none
of them is left. It runs even when building failed half-way.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import shlex
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"
NEEDED_TOOLS = ("ip", "ssh", "ssh-keygen")
NO_PYTHON_PORT = 2200  # each sshd also listens here, with a PATH that holds no python3
_BUILT = 0  # topologies built by this process: part of the names


@dataclass(frozen=True)
class LoginUser:
    """A user the hosts' sshds let in with the run's key (root's sshd logins
    aside), and the sudoers rule it has there (None: none)."""

    name: str
    uid: int
    sudo: str | None


# Issue 59's deploy users: one whose sudo asks nothing, one whose sudo wants a password.
LOGIN_USERS = (LoginUser("deploy", 4591, "ALL=(ALL:ALL) NOPASSWD: ALL"),
               LoginUser("pwdeploy", 4592, "ALL=(ALL:ALL) ALL"))


class TopologyUnavailable(RuntimeError):
    """What the machine lacks to build the topology (the test fails or skips with it)."""


@dataclass
class Node:
    role: str  # "server", "client1", "client2"
    netns: str
    addr: str
    host_key: Path
    sshd: subprocess.Popen | None = None


@dataclass
class Topology:
    tag: str
    prefix: str  # "10.203.K"
    work: Path  # keys, sshd configs, known_hosts
    server: Node
    clients: list[Node]
    root_addr: str
    root_link: str
    user_key: Path
    known_hosts: Path
    _created_ns: list[str] = field(default_factory=list)
    _root_link_made: bool = False

    @property
    def nodes(self) -> list[Node]:
        return [self.server, *self.clients]

    @property
    def namespaces(self) -> list[str]:
        return [node.netns for node in self.nodes]

    def ssh_options(self) -> list[str]:
        """`-o` values that make ssh trust this run's host keys and nothing else."""
        return [f"UserKnownHostsFile={self.known_hosts}", "StrictHostKeyChecking=yes",
                "GlobalKnownHostsFile=/dev/null", "LogLevel=ERROR"]

    def ssh_argv(self, node: Node) -> list[str]:
        """A plain ssh command line into `node` (no multiplexing): for checks."""
        argv = ["ssh", "-F", "none", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-i", str(self.user_key)]
        for option in self.ssh_options():
            argv += ["-o", option]
        return argv + [f"root@{node.addr}"]

    def exec_in(self, node: Node, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", node.netns, *argv], capture_output=True, text=True,
                              timeout=timeout)

    # -- teardown --------------------------------------------------------------
    def close(self) -> list[str]:
        """Remove everything; returns what could not be removed (empty when clean)."""
        for node in self.nodes:
            _stop(node.sshd)
            node.sshd = None
        for netns in self._created_ns:
            _kill_namespace_processes(netns)
        if self._root_link_made:
            subprocess.run(["ip", "link", "del", self.root_link], capture_output=True, timeout=30)
        for netns in self._created_ns:
            subprocess.run(["ip", "netns", "del", netns], capture_output=True, timeout=30)
        return self.leftovers()

    def leftovers(self) -> list[str]:
        left = [f"namespace {ns}" for ns in self._created_ns if ns in list_namespaces()]
        if self._root_link_made and Path(f"/sys/class/net/{self.root_link}").exists():
            left.append(f"link {self.root_link}")
        left += [f"process {pid}" for pid in processes_mentioning(str(self.work))]
        return left


def list_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line holds `text` (this run's work dir)."""
    found = []
    needle = text.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if needle in cmdline and state != "Z":
            found.append(int(entry))
    return found


def check_requirements() -> None:
    """Raise TopologyUnavailable naming what is missing."""
    if os.geteuid() != 0:
        raise TopologyUnavailable("network namespaces need root (ip netns add)")
    missing = [tool for tool in NEEDED_TOOLS if shutil.which(tool) is None]
    if not os.access(SSHD, os.X_OK):
        missing.append(f"{SSHD} (openssh-server)")
    if missing:
        raise TopologyUnavailable(f"missing {', '.join(missing)}; .ci/install installs them")


def build(work: Path) -> Topology:
    """Create the namespaces, the bridge, the links and the sshds.

    On any failure everything made so far is removed and TopologyUnavailable
    says which step failed and why.
    """
    check_requirements()
    global _BUILT
    _BUILT += 1
    tag = f"{os.getpid() % 100000:05d}{_BUILT}"
    prefix = f"10.203.{_free_subnet(int(tag))}"
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o700)
    topo = Topology(
        tag=tag, prefix=prefix, work=work,
        server=Node("server", f"aa-srv-{tag}", f"{prefix}.1", work / "server_host_key"),
        clients=[Node(f"client{i}", f"aa-cl{i}-{tag}", f"{prefix}.{10 + i}", work / f"client{i}_host_key")
                 for i in (1, 2)],
        root_addr=f"{prefix}.2", root_link=f"aa{tag}h",
        user_key=work / "user_key", known_hosts=work / "known_hosts",
    )
    return set_up(topo, (_build_network, _start_sshds), "the test network")


def set_up(net, steps, what: str):
    """Run the build `steps` on `net` (a Topology or a fleet); on any failure
    take down what was made, and a failure of the machine (a command, the
    kernel, a timeout) becomes TopologyUnavailable with what was left behind."""
    try:
        for step in steps:
            step(net)
    except BaseException as exc:
        left = net.close()
        if isinstance(exc, (subprocess.CalledProcessError, OSError, TimeoutError)):
            detail = exc.stderr.strip() if isinstance(exc, subprocess.CalledProcessError) and exc.stderr else str(exc)
            raise TopologyUnavailable(f"cannot build {what}: {detail}"
                                      + (f" (left behind: {', '.join(left)})" if left else "")) from exc
        raise
    return net


@contextmanager
def held(build, what: str):
    """A fixture's network: built (a machine that cannot skips, and FAILS
    under CI with the reason), yielded, and taken down even after a failure,
    nothing left behind."""
    import pytest

    try:
        net = build()
    except TopologyUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    try:
        yield net
    finally:
        left = net.close()
        assert not left, f"{what} left {left} behind"


def _sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True, timeout=30)


def _free_subnet(seed: int) -> int:
    """A third octet no address of this host uses yet."""
    seed = seed // 7  # pid-based: spread over the range
    used = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, timeout=30).stdout
    for step in range(250):
        octet = (seed + step) % 250 + 1
        if f" 10.203.{octet}." not in used:
            return octet
    raise TopologyUnavailable("every 10.203.x.0/24 subnet is in use on this host")


def _build_network(topo: Topology) -> None:
    for netns in topo.namespaces:
        _sh("ip", "netns", "add", netns)
        topo._created_ns.append(netns)
        _sh("ip", "-n", netns, "link", "set", "lo", "up")
    srv = topo.server.netns
    _sh("ip", "-n", srv, "link", "add", "br0", "type", "bridge")
    _sh("ip", "-n", srv, "addr", "add", f"{topo.server.addr}/24", "dev", "br0")
    _sh("ip", "-n", srv, "link", "set", "br0", "up")
    # The root namespace's leg: created here, its peer moved into the server ns.
    _sh("ip", "link", "add", topo.root_link, "type", "veth", "peer", "name", "port0", "netns", srv)
    topo._root_link_made = True
    _sh("ip", "addr", "add", f"{topo.root_addr}/24", "dev", topo.root_link)
    _sh("ip", "link", "set", topo.root_link, "up")
    _attach(srv, "port0")
    for index, client in enumerate(topo.clients, start=1):
        # Made inside the server ns, one end moved into the client ns: no name in the root ns.
        _sh("ip", "-n", srv, "link", "add", f"port{index}", "type", "veth", "peer", "name", "eth0",
            "netns", client.netns)
        _attach(srv, f"port{index}")
        _sh("ip", "-n", client.netns, "addr", "add", f"{client.addr}/24", "dev", "eth0")
        _sh("ip", "-n", client.netns, "link", "set", "eth0", "up")


def _attach(netns: str, port: str) -> None:
    _sh("ip", "-n", netns, "link", "set", port, "master", "br0")
    _sh("ip", "-n", netns, "link", "set", port, "up")


def _keygen(path: Path, comment: str) -> None:
    for old in (path, Path(str(path) + ".pub")):
        old.unlink(missing_ok=True)  # ssh-keygen would ask before overwriting
    _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path))


def _start_sshds(topo: Topology) -> None:
    _keygen(topo.user_key, f"apache-advisor-test-{topo.tag}")
    authorized = topo.work / "authorized_keys"
    authorized.write_text(Path(str(topo.user_key) + ".pub").read_text())
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    known = []
    for node in topo.nodes:
        _keygen(node.host_key, f"{node.role}-{topo.tag}")
        key_type, key = Path(str(node.host_key) + ".pub").read_text().split()[:2]
        known.append(f"{node.addr},[{node.addr}]:{NO_PYTHON_PORT} {key_type} {key}\n")
        config = topo.work / f"sshd_{node.role}.conf"
        config.write_text(
            f"ListenAddress {node.addr}\nPort 22\nPort {NO_PYTHON_PORT}\nHostKey {node.host_key}\n"
            f"PidFile {topo.work / f'sshd_{node.role}.pid'}\n"
            f"AuthorizedKeysFile {authorized} /home/%u/.ssh/authorized_keys\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "UsePAM no\nStrictModes no\nPrintMotd no\nLogLevel ERROR\n"
            # One multiplexed connection carries many sessions (httperf, sampler, commands).
            "MaxSessions 64\nMaxStartups 64\n"
            # A second port whose sessions find no python3: the remote target's error for that.
            # (A forced command, since the login shell's profile may set PATH again.)
            f"Match LocalPort {NO_PYTHON_PORT}\n"
            '    ForceCommand env PATH=/nonexistent /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n'

        )
        sshd = shlex.join([SSHD, "-D", "-e", "-f", str(config)])
        script = f"{_cgroup_mounts()}{login_users_setup(topo.work, LOGIN_USERS, authorized)}exec {sshd}"
        node.sshd = subprocess.Popen(["ip", "netns", "exec", node.netns, "sh", "-c", script],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(topo.work / f"sshd_{node.role}.log", "wb"))
    topo.known_hosts.write_text("".join(known))
    for node in topo.nodes:
        _wait_listening(node, topo.work / f"sshd_{node.role}.log")


def login_users_setup(work: Path, users, authorized: Path) -> str:
    """Shell, run as root in an sshd's own mount namespace before it starts,
    that gives that namespace `users`: copies of this machine's passwd,
    shadow, group and sudoers.d with them added, bind-mounted over the real
    ones, and a tmpfs /home with each one's authorized_keys (sshd reads that
    file as the user, who may not enter `work`). This machine's own files are
    never written, and it all goes with the namespace."""
    users = list(users)
    if not users:
        return ""
    etc = work / "login-etc"
    if not etc.exists():
        staged = work / "login-etc.new"
        shutil.rmtree(staged, ignore_errors=True)
        staged.mkdir()
        for name in ("passwd", "shadow", "group"):
            shutil.copy2(f"/etc/{name}", staged / name)
            original = os.stat(f"/etc/{name}")
            os.chown(staged / name, original.st_uid, original.st_gid)
        with open(staged / "passwd", "a") as passwd, open(staged / "shadow", "a") as shadow, \
                open(staged / "group", "a") as group:
            for user in users:
                passwd.write(f"{user.name}:x:{user.uid}:{user.uid}::/home/{user.name}:/bin/sh\n")
                shadow.write(f"{user.name}:*:19000:0:99999:7:::\n")  # no password, not locked (sshd lets a key in)
                group.write(f"{user.name}:x:{user.uid}:\n")
        shutil.copytree("/etc/sudoers.d", staged / "sudoers.d", symlinks=True)
        rules = staged / "sudoers.d" / "apache-advisor-test"
        rules.write_text("".join(f"{user.name} {user.sudo}\n" for user in users if user.sudo))
        os.chmod(rules, 0o440)
        staged.rename(etc)
    steps = [f"mount --bind {shlex.quote(str(etc / name))} /etc/{name}" for name in ("passwd", "shadow", "group")]
    steps += [f"mount --bind {shlex.quote(str(etc / 'sudoers.d'))} /etc/sudoers.d",
              "mount -t tmpfs -o mode=755 tmpfs /home"]
    for user in users:
        ssh_dir = f"/home/{user.name}/.ssh"
        steps += [f"mkdir -p {ssh_dir}", f"cp {shlex.quote(str(authorized))} {ssh_dir}/authorized_keys",
                  f"chown -R {user.uid}:{user.uid} /home/{user.name}", f"chmod 700 {ssh_dir}"]
    return " && ".join(steps) + " || { echo 'cannot set up the login users' >&2; exit 1; }\n"


def _cgroup_mounts() -> str:
    """Shell commands that mount this machine's cgroup hierarchies again.

    `ip netns exec` gives the command a fresh /sys for its namespace, without
    the cgroup mounts: a real staging host has them, and the remote target
    reads the httpd's CPU quota and its throttling there. Mounting a v1
    hierarchy with the same options attaches the same one.
    """
    steps = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) < 4 or not fields[1].startswith("/sys/fs/cgroup"):
            continue
        kind, where, options = fields[2], fields[1], fields[3]
        if kind == "tmpfs" and where == "/sys/fs/cgroup":
            steps.append("mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup")
        elif kind == "cgroup":
            wanted = ",".join(o for o in options.split(",") if o not in ("rw", "relatime", "nosuid", "nodev", "noexec"))
            steps.append(f"mkdir -p {shlex.quote(where)} && mount -t cgroup -o {shlex.quote(wanted)} cgroup {shlex.quote(where)}")
        elif kind == "cgroup2":
            steps.append(f"mkdir -p {shlex.quote(where)} && mount -t cgroup2 cgroup2 {shlex.quote(where)}")
    return "".join(f"{step} 2>/dev/null; " for step in steps)


def _wait_listening(node: Node, log: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if node.sshd is not None and node.sshd.poll() is not None:
            raise TopologyUnavailable(f"sshd in {node.netns} exited: {log.read_text(errors='replace').strip()[-300:]}")
        try:
            with socket.create_connection((node.addr, 22), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TopologyUnavailable(f"sshd in {node.netns} did not listen on {node.addr}:22 within {timeout:.0f} s")


def _stop(process: subprocess.Popen | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


def _kill_namespace_processes(netns: str) -> None:
    """Whatever still runs in a namespace this topology made (sshd's session
    children, a server a test forgot): it was started for this test."""
    for _ in range(3):
        out = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True, timeout=30).stdout
        pids = [int(p) for p in out.split() if p.isdigit() and int(p) != os.getpid()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
