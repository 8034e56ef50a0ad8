"""Whether a directive written to the managed include is the one httpd applies.

A trial writes its directives to the managed include and claims to measure
them. httpd applies the last value it reads at server scope, and a virtual
host's own value over the server's for the requests it serves. So a line
read after the managed include (an `instrument.conf` included below it), or
a `<VirtualHost>` of the host and port the trial's URL reaches that sets
the same directive, wins over the trial's value: the trial would measure
the config's value under the trial's name.

`find_overrides` answers that with the config model, before any load and
without writing anything: it walks the raw tree in httpd's reading order
(through includes and the conditionals that held), finds the last Include
that reads the managed file, and reports every later server-scope line
that sets one of the trial's directives, and the reached virtual host's own
value. The sandbox's compensation include (the tool's own, recomputed after
each change) is left out by the caller.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import os
import posixpath
import socket
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable
from urllib.parse import urlsplit

from advisor.config.catalog import canonical_name, lookup
from advisor.config.model import Config, Directive, Include, Section
from advisor.errors import ConfigError

# Directives that add to what came before instead of replacing it: a later
# line does not take the trial's value away.
ADDITIVE = frozenset({
    "alias", "aliasmatch", "scriptalias", "scriptaliasmatch", "redirect", "redirectmatch", "customlog",
    "transferlog", "logformat", "header", "requestheader", "setenv", "setenvif", "setenvifnocase", "passenv",
    "unsetenv", "addtype", "addhandler", "addoutputfilter", "addoutputfilterbytype", "addencoding", "addcharset",
    "addlanguage", "removehandler", "removetype", "listen", "loadmodule", "loadfile", "include", "includeoptional",
    "define", "undefine", "errordocument", "browsermatch", "browsermatchnocase", "directoryindex", "require",
    "allow", "deny", "rewriterule", "rewritecond", "proxypass", "proxypassreverse", "namevirtualhost",
})


@dataclass(frozen=True)
class Override:
    """A line that wins over the trial's value of `name`."""

    name: str
    """The directive as the trial writes it."""
    file: str
    line: int
    text: str
    """The overriding line: `MaxRequestWorkers 257`."""
    vhost: str | None = None
    """`<VirtualHost *:8080>` when the line sits in the virtual host the URL reaches."""

    def what(self) -> str:
        """Why the trial's value would not apply (without the place)."""
        if self.vhost:
            return (f"{self.text} in the {self.vhost} that the trial's URL reaches overrides the managed "
                    f"include's {self.name} (a virtual host's own value wins for its requests)")
        return f"{self.text}, read after the managed include, overrides its {self.name}"

    def fix(self) -> str:
        """What the admin can do about it."""
        where = f"remove it from that virtual host" if self.vhost else "remove that line or move it above the managed include"
        return f"{where}, or leave {self.name} out of the trial"


def directive_key(name: str) -> str:
    """One key for a directive and its aliases (MaxClients is MaxRequestWorkers)."""
    info = lookup(name)
    if info is not None and info.alias_of:
        name = info.alias_of
    return canonical_name(name).lower()


def directive_names(directives: Iterable[str]) -> list[str]:
    """The names of `directives` ("MaxRequestWorkers 2" lines) that a later line can override."""
    names: list[str] = []
    for text in directives:
        words = text.strip().split(None, 1)
        if not words or words[0].startswith(("#", "<")):
            continue
        if words[0].lower() not in ADDITIVE and words[0] not in names:
            names.append(words[0])
    return names


def find_overrides(cfg: Config, managed: str, names: Iterable[str], url: str | None,
                   skip: str | None = None, same_host: bool = True) -> list[Override]:
    """Lines of `cfg` that win over the managed include's value of each of `names`.

    `managed`: the managed include's path (as the config names files, a
    host path for a remote tree). `skip`: a file whose lines are the tool's
    own and follow the trial (the sandbox's compensation include).
    `same_host`: the tree's paths are this machine's (symbolic links are
    resolved here). Raises
    ConfigError when no line of the config reads the managed include at all.
    """
    wanted = {directive_key(n): n for n in names if n.lower() not in ADDITIVE}
    if not wanted:
        return []
    managed = posixpath.normpath(managed)
    order = _reading_order(cfg.raw)
    last = None
    for index, node in enumerate(order):
        if isinstance(node, Include) and _reads(node, managed, cfg.server_root, same_host):
            last = index
    if last is None:
        raise ConfigError(f"no line of the config reads the managed include {managed}, so no trial's "
                          "directive would apply", file=cfg.main_file,
                          hint=f"add `IncludeOptional {managed}` as its last line")
    found: dict[str, Override] = {}
    for node in order[last + 1:]:
        if type(node) is not Directive or node.file in (managed, skip):
            continue
        key = directive_key(node.name)
        if key in wanted and node.at_server_scope:
            found[key] = Override(wanted[key], node.file, node.line, f"{node.name} {node.raw_args}".strip())
    vhost = reached_vhost(cfg, url) if url else None
    if vhost is not None:
        label = f"<VirtualHost {' '.join(vhost.args)}>"
        for node in vhost.own_directives():
            key = directive_key(node.name)
            if key in wanted and node.file != skip:
                found[key] = Override(wanted[key], node.file, node.line, f"{node.name} {node.raw_args}".strip(),
                                      vhost=label)
    return [found[key] for key in wanted if key in found]


def _reading_order(root: Section) -> list:
    """The raw tree's active nodes in the order httpd reads them (an Include
    before the lines it pulls in; a context section before its content)."""
    out: list = []
    stack = [iter(root.children)]
    while stack:
        node = next(stack[-1], None)
        if node is None:
            stack.pop()
            continue
        if not node.active:
            continue
        out.append(node)
        if isinstance(node, Section) and node.lname != "macro":  # a macro's body applies where it is used
            stack.append(iter(node.children))
    return out


def _reads(include: Include, managed: str, server_root: str, same_host: bool) -> bool:
    """Does this Include line read the managed file (now, or once it exists)?"""
    if managed in (posixpath.normpath(f) for f in include.files):
        return True
    if same_host and include.files and os.path.exists(managed):
        real = os.path.realpath(managed)
        if any(os.path.realpath(f) == real for f in include.files):
            return True
    if not include.args:
        return False
    pattern = include.args[0]
    if not posixpath.isabs(pattern):
        pattern = posixpath.join(server_root, pattern)
    pattern = posixpath.normpath(pattern)
    if pattern == managed:
        return True
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(managed, pattern) and pattern.count("/") == managed.count("/")
    return posixpath.dirname(managed) == pattern  # Include of a whole directory


# ---- which virtual host a URL reaches ----------------------------------------------


def reached_vhost(cfg: Config, url: str) -> Section | None:
    """The `<VirtualHost>` that serves `url`, by httpd's rules: the address and
    port the connection reaches (an exact address before `*`, `*` before
    `_default_`), then among those the one whose ServerName or ServerAlias is
    the URL's host, else the first of them. None: the main server serves it."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    addresses = _addresses(host)
    exact, wildcard, default = [], [], []
    for vhost in cfg.virtual_hosts():
        if not vhost.at_server_scope:
            continue
        kinds = {_match(arg, addresses, port) for arg in vhost.args}
        if "exact" in kinds:
            exact.append(vhost)
        elif "wildcard" in kinds:
            wildcard.append(vhost)
        elif "default" in kinds:
            default.append(vhost)
    candidates = exact or wildcard or default
    for vhost in candidates:
        if host and host in _names(vhost):
            return vhost
        if any(fnmatch.fnmatchcase(host, alias) for alias in _names(vhost) if any(c in alias for c in "*?")):
            return vhost
    return candidates[0] if candidates else None


@lru_cache(maxsize=4096)
def _addresses(host: str) -> frozenset[str]:
    """The addresses a name stands for (a tree of named virtual hosts asks for each once)."""
    try:
        return frozenset({str(ipaddress.ip_address(host)), host})
    except ValueError:
        pass
    found = {host}
    try:
        found |= {info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
    except (OSError, UnicodeError):
        pass
    return frozenset(found)


def _match(arg: str, addresses: frozenset[str], port: int) -> str | None:
    """How `<VirtualHost arg>` matches a connection to `addresses`:`port`."""
    text = arg.strip().lower()
    if text.startswith("["):  # [::1]:80
        address, _, rest = text[1:].partition("]")
        wanted_port = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        address, wanted_port = text.split(":")
    else:
        address, wanted_port = text, ""
    if wanted_port not in ("", "*") and wanted_port != str(port):
        return None
    if address == "*":
        return "wildcard"
    if address == "_default_":
        return "default"
    return "exact" if address in addresses or _addresses(address) & addresses else None


def _names(vhost: Section) -> list[str]:
    names: list[str] = []
    for node in vhost.own_directives("ServerName", "ServerAlias"):
        for arg in node.args:
            name = arg.lower().split("://", 1)[-1]
            names.append(name.rsplit(":", 1)[0] if name.count(":") == 1 else name)
    return names


# ---- for a staging target ------------------------------------------------------------


def target_overrides(target, directives: Iterable[str], cfg: Config | None = None) -> list[Override]:
    """The lines of `target`'s config that win over `directives` written to its
    managed include (advisor.tuner.staging.target.StagingTarget). `cfg`: the
    config in use, when the caller has read it already (it is read once)."""
    names = directive_names(directives)
    if not names:
        return []
    if cfg is None:
        cfg = read_target_config(target)
        if cfg is None:
            return []
    managed = str(target.managed_path)
    if getattr(target, "on_this_machine", True):
        managed = os.path.abspath(managed)
    sandbox = getattr(target, "sandbox", None)
    skip = str(sandbox.instrument_path) if sandbox is not None else None
    return find_overrides(cfg, managed, names, target.base_url, skip=skip,
                          same_host=getattr(target, "on_this_machine", True))


def read_target_config(target) -> Config | None:
    """The config the target's server reads, by the config model (None: not known)."""
    from advisor.config.loader import load_config

    loaded = getattr(target, "loaded_config", None)
    if loaded is not None:
        return loaded()  # a remote tree: copied once, shared with the pool check
    source = target.config_source()
    return None if source is None else load_config(*source)


def refuse_overridden(target, directives: Iterable[str], cfg: Config | None = None) -> None:
    """ConfigError on the first directive of `directives` a line of the config overrides."""
    found = target_overrides(target, directives, cfg)
    if found:
        first = found[0]
        raise ConfigError(f"{first.what()}: the trial would measure that value, not its own",
                          file=target.where(first.file), line=first.line, hint=first.fix())
