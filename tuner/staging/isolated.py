"""A network namespace and a veth link made by the tool for its sandbox.

`staging up --isolated` runs httpd inside a namespace of its own, reached
from this machine over one veth pair: the end here is the clients' side of
the link, the end in the namespace the server's. Because the tool made
both ends, it may put qdiscs on them (`--wan-*`, advisor.tuner.staging.wan); it
never touches an interface it did not make. `staging down` deletes the
namespace, which deletes the pair with it.
"""

from __future__ import annotations

import hashlib
import ipaddress
import shutil
import subprocess
from dataclasses import asdict, dataclass

from advisor.errors import AdvisorError

# 10.254.K.0/30 for K in 0..255, chosen by the sandbox's directory and moved
# on while this machine already uses it.
NETWORK = "10.254.{k}.{host}"
NAME_PREFIX = "apache-advisor-"


@dataclass(frozen=True)
class IsolatedLink:
    netns: str
    client_if: str
    """This machine's end: where the load comes from."""
    server_if: str
    """The end inside the namespace, where httpd listens."""
    client_addr: str
    server_addr: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> "IsolatedLink | None":
        return cls(**data) if data else None


def tag_for(key: str) -> str:
    return hashlib.sha1(key.encode()).hexdigest()[:8]


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise AdvisorError(f"`ip {' '.join(args)}` failed: {said[-1] if said else f'exit {done.returncode}'}",
                           hint="--isolated makes a network namespace and a veth pair: it needs root and iproute2")
    return done


def _used_addresses() -> set[str]:
    out = _ip("-o", "-4", "addr", "show").stdout
    found = set()
    for line in out.splitlines():
        parts = line.split()
        if "inet" in parts:
            found.add(str(ipaddress.ip_interface(parts[parts.index("inet") + 1]).network))
    return found


def create(key: str) -> IsolatedLink:
    """Make the namespace and the link for the sandbox whose directory is `key`."""
    if shutil.which("ip") is None:
        raise AdvisorError("--isolated needs the `ip` command (iproute2)", hint="install iproute2")
    tag = tag_for(key)
    netns = NAME_PREFIX + tag
    if netns in _ip("netns", "list").stdout.split():
        destroy(IsolatedLink(netns, f"aa{tag}c", f"aa{tag}s", "", ""))  # left by a run killed with -9
    used = _used_addresses()
    start = int(tag, 16) % 256
    k = next((c % 256 for c in range(start, start + 256)
              if NETWORK.format(k=c % 256, host=0) + "/30" not in used), None)
    if k is None:
        raise AdvisorError("no free 10.254.K.0/30 network for the isolated sandbox",
                           hint="stop other isolated sandboxes (staging down) first")
    link = IsolatedLink(netns, f"aa{tag}c", f"aa{tag}s", NETWORK.format(k=k, host=1), NETWORK.format(k=k, host=2))
    _ip("netns", "add", netns)
    try:
        _ip("link", "add", link.client_if, "type", "veth", "peer", "name", link.server_if, "netns", netns)
        _ip("addr", "add", f"{link.client_addr}/30", "dev", link.client_if)
        _ip("link", "set", link.client_if, "up")
        _ip("-n", netns, "addr", "add", f"{link.server_addr}/30", "dev", link.server_if)
        _ip("-n", netns, "link", "set", link.server_if, "up")
        _ip("-n", netns, "link", "set", "lo", "up")
    except BaseException:
        destroy(link)
        raise
    return link


def destroy(link: IsolatedLink) -> None:
    """Delete the namespace (and with it the pair); quiet when already gone."""
    _ip("netns", "delete", link.netns, check=False)
    _ip("link", "delete", link.client_if, check=False)


def exists(link: IsolatedLink) -> bool:
    return link.netns in _ip("netns", "list", check=False).stdout.split()
