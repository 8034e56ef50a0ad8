"""The staging server a command measures, as `bench` and `tune` both name it.

Either the sandbox of `staging up` (`--workdir`, or the default work
directory), an existing server on this host (`--config` and `--url`, with
its `--reload-cmd`, `--test-cmd` and `--managed` include), or one on another
host reached over SSH (`--host`, with `--ssh-option` and `--identity`; then
`--config` and `--managed` are paths there and the commands run there). One
definition keeps the two commands resolving, checking and pinning a target
the same way. The options are declared here once, and so are the values they
give the commands (`TargetOptions`, `RemoteOptions`, `WanOptions`). Only the
standard library and Typer are imported at module level: the tuner
(requests, psutil) loads when a command calls these functions.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, List, Optional

import typer

from advisor.errors import UsageError

HostOption = Annotated[Optional[str], typer.Option(
    "--host", help="A staging server on another host, over SSH: HOST, USER@HOST or USER@HOST:PORT ([IPv6]:PORT). --config and --managed are "
                   "paths there, --test-cmd/--reload-cmd run there; --url is what to load. Needs --allow-host.")]
SshOptionOption = Annotated[Optional[List[str]], typer.Option(
    "--ssh-option", help="With --host: an ssh -o option, e.g. UserKnownHostsFile=~/.ssh/staging_hosts (repeat).")]
IdentityOption = Annotated[Optional[str], typer.Option(
    "--identity", help="With --host: the private key ssh uses.")]
BecomeOption = Annotated[bool, typer.Option(
    "--become", help="With --host: run every command, file read and write there under `sudo -n` (never asks for a "
                     "password); the ssh user needs NOPASSWD sudo. Load clients run as the ssh user.")]
BecomeUserOption = Annotated[Optional[str], typer.Option(
    "--become-user", help="With --become: the user sudo runs them as (default root).")]
ClientHostOption = Annotated[Optional[List[str]], typer.Option(
    "--client-host", help="A load generator: HOST, USER@HOST[:PORT] over SSH (with --ssh-option and --identity), or local for "
                          "this machine (repeat: each runs httperf --client=I/N with its share, started together, reports merged).")]
WanDelayOption = Annotated[Optional[str], typer.Option(
    "--wan-delay", help="Isolated sandbox (staging up --isolated): delay what the clients send by this much (40ms; netem).")]
WanJitterOption = Annotated[Optional[str], typer.Option("--wan-jitter", help="... with this jitter (5ms).")]
WanLossOption = Annotated[Optional[str], typer.Option("--wan-loss", help="... and drop this share of it (0.1%).")]
WanRateOption = Annotated[Optional[str], typer.Option(
    "--wan-rate", help="Isolated sandbox: hold the link to this rate each way (100mbit; tbf).")]
RttOption = Annotated[Optional[float], typer.Option(
    "--rtt", help="The clients' round-trip time in ms (50): on the isolated sandbox's link netem delays it (measured); "
                  "elsewhere every think time is lengthened by it and the reply time the SLO reads adds the round "
                  "trips the trial counts (TCP, TLS, one per request).")]
# An existing staging server (bench and tune take the same five).
ConfigOption = Annotated[Optional[str], typer.Option(
    "--config", help="Existing staging server: the config it reads (must include the managed file).")]
ReloadCmdOption = Annotated[str, typer.Option("--reload-cmd", help="Existing server: how to reload it.")]
RestartCmdOption = Annotated[Optional[str], typer.Option(
    "--restart-cmd", help="Existing server: how to stop and start it in full (an MPM switch, ServerLimit).")]
TestCmdOption = Annotated[Optional[str], typer.Option(
    "--test-cmd", help="Existing server: config test (default: httpd -t -f CONFIG).")]
UrlOption = Annotated[Optional[str], typer.Option(
    "--url", help="Existing server: the URL to load, e.g. http://127.0.0.1:8080/index.html.")]
ManagedOption = Annotated[Optional[str], typer.Option(
    "--managed", help="Existing server: the managed include (default: beside CONFIG).")]


@dataclass(frozen=True)
class TargetOptions:
    """The staging server the options name: the sandbox in `workdir`, or an
    existing server (`config` and `url`, with how to reload and test it and
    its managed include), here or on `RemoteOptions.host`."""

    workdir: str | None
    config: str | None
    url: str | None
    reload_cmd: str
    test_cmd: str | None
    managed: str | None
    tls: bool = False
    """--tls: load over HTTPS (an existing server's http:// URL becomes https://)."""
    restart_cmd: str | None = None

    @property
    def existing(self) -> bool:
        """An existing server rather than the sandbox."""
        return bool(self.config or self.url)


@dataclass(frozen=True)
class RemoteOptions:
    """The other hosts a command reaches over SSH: the staging server
    (`host`) and the load generators (`client_hosts`), with the ssh options
    and key both use."""

    host: str | None = None
    ssh_options: list[str] | None = None
    identity: str | None = None
    client_hosts: list[str] | None = None
    become: bool = False
    """--become: the staging host's commands run under sudo (the load clients' do not)."""
    become_user: str | None = None

    @property
    def become_as(self) -> str | None:
        """The user the staging host's commands run as through sudo, None without --become."""
        return (self.become_user or "root") if self.become else None

    def check_become(self) -> None:
        """--become and --become-user only where they mean something: UsageError otherwise."""
        if self.become_user is not None and not self.become:
            raise UsageError("--become-user goes with --become", hint="add --become to run the host's commands under sudo")
        if self.become and not self.host:
            raise UsageError("--become goes with --host: it runs the staging host's commands under sudo",
                             hint="name the staging host with --host USER@HOST")
        if self.become_user is not None:
            from advisor.tuner.transport.ssh import check_become_user

            check_become_user(self.become_user)


@dataclass(frozen=True)
class WanOptions:
    """The --wan-* conditions put on the isolated sandbox's link, as given."""

    delay: str | None = None
    jitter: str | None = None
    loss: str | None = None
    rate: str | None = None

    def spec(self):
        """The checked advisor.tuner.staging.wan.WanSpec, or None for no conditions."""
        if self.delay is None and self.jitter is None and self.loss is None and self.rate is None:
            return None  # nothing to check: bench and tune start without the qdisc code
        from advisor.tuner.staging.wan import WanSpec

        return WanSpec.parse(self.delay, self.jitter, self.loss, self.rate)


@dataclass
class ResolvedTarget:
    target: Any
    """An advisor.tuner.staging.target.StagingTarget."""
    work_dir: Optional[Path]
    """The sandbox's work directory (workload files live there); None for an existing server."""


def resolve_target(options: TargetOptions, remote: RemoteOptions | None = None, *,
                   allow_hosts: list[str] | None = None, check_alive: bool = True) -> ResolvedTarget:
    """The target the options name, checked to answer.

    `remote`: the staging host and its ssh options; None when they are not
    the target's (they may be the load clients' alone). `allow_hosts`: when
    given (even empty), a target whose host is not on loopback is refused
    unless its host is in the list. A remote target (`remote.host`) is
    always checked so, its ssh host and its URL's host both.
    """
    from advisor.tuner.staging.existing_server import LocalServerTarget
    from advisor.tuner.staging.sandbox import Sandbox
    from advisor.tuner.staging.target import SandboxTarget

    remote = remote or RemoteOptions()
    if remote.host:
        target = remote_target(options, remote, allow_hosts or [])
        work_dir = None
    elif remote.ssh_options or remote.identity:
        raise UsageError("--ssh-option and --identity go with --host", hint="name the staging host with --host")
    elif options.existing:
        if not (options.config and options.url):
            raise UsageError("an existing staging server needs both --config and --url")
        if allow_hosts is not None:
            check_host(options.url, allow_hosts)
        target = LocalServerTarget(options.config, options.url, options.reload_cmd, options.managed,
                                   options.test_cmd, restart_cmd=options.restart_cmd)
        work_dir = None
    else:
        sandbox = Sandbox(options.workdir)
        target = SandboxTarget(sandbox)
        work_dir = sandbox.work_dir
        if allow_hosts is not None:
            check_host(target.base_url, allow_hosts)
    if options.tls and not target.base_url.lower().startswith("https:"):
        if options.existing:
            target.use_https()
        else:
            from urllib.parse import urlsplit

            from advisor.tuner.measure.tls_probe import probe

            parts = urlsplit(target.base_url)
            # The sandbox serves HTTPS only when started so: this raises the
            # one-line "answers plain HTTP" error (or, oddly, finds TLS there).
            probe(parts.hostname or "127.0.0.1", parts.port or 80, "--tls: " + target.base_url)
            raise UsageError(f"--tls: the sandbox at {target.base_url} was not started with --tls",
                             hint="restart it with `apache-advisor staging up --tls`")
    if check_alive:
        target.check_alive()
    return ResolvedTarget(target, work_dir)


def remote_target(options: TargetOptions, remote: RemoteOptions, allow_hosts: list[str]):
    """A RemoteTarget on `remote.host`, refused before any connection unless both hosts are allowed."""
    import atexit

    from advisor.tuner.staging.remote_target import RemoteTarget
    from advisor.tuner.transport.ssh import HostSpec, SshConnection

    if not (options.config and options.url):
        raise UsageError("a staging server on another host needs --config (its path there) and --url",
                         hint="for example --config /etc/apache2/apache2.conf --url http://staging:80/")
    host = remote.host or ""
    spec = HostSpec.parse(host)
    if not _allowed(spec.host, allow_hosts):
        raise UsageError(f"--host {host} is not on loopback: the tool changes the config of the server there",
                         hint=f"name it with --allow-host {spec.host} if it is a staging server you own")
    check_host(options.url, allow_hosts)
    conn = SshConnection(spec, options=list(remote.ssh_options or []), identity=remote.identity,
                         become=remote.become_as)
    target = RemoteTarget(conn, options.config, options.url, options.reload_cmd, options.managed, options.test_cmd,
                          restart_cmd=options.restart_cmd)
    atexit.register(conn.close)  # else the master connection lingers for ControlPersist seconds
    return target


def parse_load_clients(remote: RemoteOptions) -> list:
    """The --client-host names, checked before anything is touched."""
    remote.check_become()
    load_clients = []
    if remote.client_hosts:
        from advisor.tuner.load.remote_clients import parse_clients

        load_clients = parse_clients(remote.client_hosts)
    if (remote.ssh_options or remote.identity) and not remote.host and not any(not c.local for c in load_clients):
        raise UsageError("--ssh-option and --identity go with --host or --client-host",
                         hint="name the staging host with --host, or a load generator with --client-host")
    return load_clients


def open_load_clients(load_clients: list, target, remote: RemoteOptions):
    """LoadClients for the parsed names (None for none), once the target is
    known: a client on another host cannot load this machine's loopback."""
    if not load_clients:
        return None
    from urllib.parse import urlsplit

    from advisor.tuner.load.remote_clients import LoadClients

    if any(not c.local for c in load_clients) and is_loopback(urlsplit(target.base_url).hostname or ""):
        raise UsageError(f"a load client on another host cannot reach {target.base_url}: it is this machine's "
                         "loopback (there it would load the client itself)",
                         hint="run the server on an address the clients reach, or use --client-host local")
    return LoadClients(load_clients, remote.ssh_options, remote.identity)


def wan_link(spec, target):
    """The link the tool made for the target (`staging up --isolated`), if
    any: the only one WAN conditions (`spec`) may go on."""
    sandbox = getattr(target, "sandbox", None)
    state = sandbox.load_state() if sandbox is not None else None
    link = None
    if state is not None and state.isolated:
        # Imported only for a sandbox in a namespace: the module's address
        # and hashing imports cost a plain sandbox's bench and tune 3 ms.
        from advisor.tuner.staging.isolated import IsolatedLink

        link = IsolatedLink.from_dict(state.isolated)
    if link is None and spec is not None:
        raise UsageError("--wan-* changes qdiscs only on a link the tool made, and this target has none",
                         hint="start the sandbox with `apache-advisor staging up --isolated` and bench or tune it")
    return link


def check_rtt_option(rtt_ms: float | None, wan) -> float:
    """--rtt checked against itself and --wan-delay (`wan`: the WanSpec or
    None), before anything is touched: the round trip in ms, 0 without."""
    from advisor.tuner.load.roundtrips import check_rtt, refuse_rtt_with_wan_delay

    ms = check_rtt(rtt_ms)
    refuse_rtt_with_wan_delay(ms, wan.delay_ms if wan is not None else 0.0)
    return ms


def set_link_for_run(link, wan, rtt_ms: float) -> tuple[str, list[str]]:
    """Before the first trial: the --wan-* conditions and the --rtt round trip
    on the tool's link (`link`, None when there is none). The round trip is
    delayed there by netem when the kernel has it (then measured), else
    added (advisor.tuner.load.roundtrips). (how the RTT reaches the
    figures, lines to print)."""
    from dataclasses import replace

    from advisor.tuner.load.roundtrips import RTT_ADDED, RTT_NONE, RTT_ON_LINK
    from advisor.tuner.staging import wan as wan_qdiscs

    lines: list[str] = []
    how = RTT_NONE
    if rtt_ms > 0 and link is not None:
        try:
            line = wan_qdiscs.set_for_run(link, replace(wan or wan_qdiscs.WanSpec(), delay_ms=rtt_ms))
            how = RTT_ON_LINK
        except wan_qdiscs.NoNetem:
            line = wan_qdiscs.set_for_run(link, wan)
            lines.append(f"rtt: this kernel has no netem, so the {rtt_ms:g} ms round trip is added to the "
                         "figures, not delayed on the link")
            how = RTT_ADDED
    else:
        line = wan_qdiscs.set_for_run(link, wan)
        how = RTT_ADDED if rtt_ms > 0 else RTT_NONE
    if line:
        lines.insert(0, line)
    if how == RTT_ADDED:
        lines.append(f"rtt: {rtt_ms:g} ms added: think times lengthened by {rtt_ms:g} ms on the server's side; "
                     f"the client-perceived reply time adds {rtt_ms:g} ms per TCP connection, TLS handshake round "
                     "trip and request (measured and added parts shown apart)")
    elif how == RTT_ON_LINK:
        lines.append(f"rtt: {rtt_ms:g} ms delayed on the link by netem: the round trips are measured")
    return how, lines


def _allowed(host: str, allowed: list[str]) -> bool:
    return is_loopback(host) or host.lower().strip("[]") in {h.lower().strip("[]") for h in allowed}


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1, or a name every address of which is one of those."""
    import ipaddress
    import socket

    name = host.strip("[]")
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    if name.lower() == "localhost":
        return True
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(name, None)}
    except (OSError, UnicodeError):
        return False
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)


def check_host(url: str, allowed: list[str]) -> None:
    """Refuse a target off this host's loopback unless the admin named its host."""
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    if _allowed(host, allowed):
        return
    raise UsageError(f"the target {url} is not on loopback: tune changes and loads the server it measures",
                     hint=f"name its host with --allow-host {host} if it is a staging server you own")


def place_processes(target, server_cpus: str | None, client_cpus: str | None) -> tuple[list[int] | None, list[int] | None]:
    """Pin the server to `server_cpus` (when given) and choose httperf's cores:
    (server cores, client cores), each None when not pinned."""
    from advisor.tuner.staging.existing_server import pin_tree
    from advisor.tuner.staging.sandbox import parse_cpus
    from advisor.tuner.trial.runner import server_affinity

    if getattr(target, "kind", "") == "remote":
        if server_cpus:
            raise UsageError("--server-cpus pins a server on this machine, not one on --host",
                             hint="pin it on the host itself (taskset there), and leave --server-cpus out")
        return None, parse_cpus(client_cpus)  # this machine's cores are all the load's
    pid = target.server_pid()
    wanted_server = parse_cpus(server_cpus)
    if wanted_server and pid:
        pin_tree(pid, wanted_server)
        target.pin_cpus = wanted_server  # pinned again after a full restart (tune --restart-cmd)
    actual_server = server_affinity(pid) or wanted_server
    client = parse_cpus(client_cpus) or default_client_cpus(actual_server)
    return actual_server, client


def default_client_cpus(server_cpus: list[int] | None) -> list[int] | None:
    """The cores the server does not use, if there are any."""
    if not server_cpus:
        return None
    rest = [c for c in range(os.cpu_count() or 1) if c not in server_cpus]
    return rest or None


