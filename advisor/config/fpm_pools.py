"""php-fpm pools as part of the config: the pools the Apache tree hands PHP to.

Two halves, both read here so that rules and `capacity` never open a file:

* the Apache side: where the effective tree sends requests to php-fpm
  through mod_proxy_fcgi (`SetHandler "proxy:unix:/run/php/x.sock|fcgi://h"`,
  `ProxyPass`/`ProxyPassMatch ... fcgi://host:port/...` or `unix:...|fcgi://`),
  with the worker parameters (`enablereuse`, `max`) given on that line or by
  `ProxySet` in the matching `<Proxy>` section;
* the php-fpm side: its INI files (`[global]`, one `[name]` section per pool,
  `include=` globs, `;` and `#` comments, `$pool` in values), each setting
  kept with its file:line, php-fpm's defaults for what is not written.

Pools are matched to the Apache side by address: the socket path, or the TCP
port and host (a pool listening on a bare port or 0.0.0.0 takes any host).

Bad input stops the command with one line: a pool file that does not parse
(file:line), a pool without `pm` or `pm.max_children` (php-fpm refuses to
start without them), and a socket in the Apache tree that no pool read
listens on (at the Apache line). A TCP address on another host with no
matching pool is left alone: that php-fpm runs elsewhere.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

from advisor.errors import ConfigError

# Where distributions keep pool files (Debian and Ubuntu; RHEL, Fedora, SUSE).
DEFAULT_POOL_GLOBS = ("/etc/php/*/fpm/pool.d/*.conf", "/etc/php-fpm.d/*.conf")
# php-fpm's defaults (the PHP manual's FPM configuration page): listen.backlog
# 511 on Linux, pm.max_requests and request_terminate_timeout 0 (off).
DEFAULT_LISTEN_BACKLOG = 511
FPM_DEFAULTS = {"pm.max_requests": "0", "listen.backlog": str(DEFAULT_LISTEN_BACKLOG),
                "request_terminate_timeout": "0"}
PM_STYLES = ("static", "dynamic", "ondemand")
# mod_proxy's default port for fcgi:// (ap_proxy_port_of_scheme).
FCGI_DEFAULT_PORT = 8000
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "ip6-localhost"}
_ANY_HOSTS = {"", "0.0.0.0", "::", "*"}


@dataclass
class FpmValue:
    """One setting of a pool: its text and where it was written ('' and 0 for a default)."""

    text: str
    file: str = ""
    line: int = 0

    @property
    def written(self) -> bool:
        return bool(self.file)

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file else "php-fpm's default"


@dataclass
class FpmPool:
    name: str
    file: str
    line: int
    """Where its `[name]` section first opens."""
    settings: dict[str, FpmValue] = field(default_factory=dict)

    def value(self, key: str) -> FpmValue | None:
        found = self.settings.get(key)
        if found is not None:
            return found
        if key == "pm.start_servers" and self.pm == "dynamic":
            low, high = self.number("pm.min_spare_servers"), self.number("pm.max_spare_servers")
            if low is not None and high is not None:
                return FpmValue(str(low + (high - low) // 2))
        default = FPM_DEFAULTS.get(key)
        return FpmValue(default) if default is not None else None

    def number(self, key: str) -> int | None:
        found = self.value(key)
        if found is None:
            return None
        text = found.text.strip()
        # request_terminate_timeout takes a unit: s, m, h, d.
        scale = {"s": 1, "m": 60, "h": 3600, "d": 86400}.get(text[-1:].lower(), None) if text else None
        if scale is not None:
            text = text[:-1]
        try:
            return int(text) * (scale or 1)
        except ValueError:
            raise ConfigError(f"{key} = {found.text!r} is not a whole number", found.file or self.file,
                              found.line or self.line, "write a number") from None

    @property
    def pm(self) -> str:
        return self.settings["pm"].text.strip().lower()

    @property
    def max_children(self) -> int:
        return self.number("pm.max_children") or 0

    @property
    def listen_backlog(self) -> int:
        backlog = self.number("listen.backlog")
        return DEFAULT_LISTEN_BACKLOG if backlog is None or backlog < 0 else backlog

    @property
    def listen(self) -> str:
        return self.settings["listen"].text.strip()

    @property
    def address(self) -> tuple[str, str, int]:
        return listen_address(self.listen)

    def summary(self) -> dict:
        """The settings the rules and `capacity` use, with where each came from."""
        keys = ("listen", "pm", "pm.max_children", "pm.start_servers", "pm.min_spare_servers",
                "pm.max_spare_servers", "pm.max_requests", "listen.backlog", "request_terminate_timeout")
        out = {}
        for key in keys:
            found = self.value(key)
            if found is not None:
                out[key] = {"value": found.text, "where": found.where()}
        return out


@dataclass
class FpmHandoff:
    """A line of the Apache tree that sends requests to php-fpm."""

    address: tuple[str, str, int]
    """('unix', path, 0) or ('tcp', host, port)."""
    text: str
    file: str
    line: int
    directive: str
    params: dict[str, FpmValue] = field(default_factory=dict)
    """Worker parameters (`enablereuse`, `max`...), lower-case keys."""
    pool: FpmPool | None = None

    @property
    def enablereuse(self) -> bool:
        found = self.params.get("enablereuse")
        return found is not None and found.text.lower() == "on"

    @property
    def max_connections(self) -> int | None:
        found = self.params.get("max")
        if found is None:
            return None
        try:
            return int(found.text)
        except ValueError:
            raise ConfigError(f"max={found.text!r} is not a whole number", found.file, found.line,
                              "write max=N") from None


@dataclass
class FpmSetup:
    pools: list[FpmPool] = field(default_factory=list)
    handoffs: list[FpmHandoff] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    """The pool files read."""

    def used_pools(self) -> list[FpmPool]:
        """Pools some handoff reaches, each once, in the order read."""
        seen = {id(h.pool) for h in self.handoffs if h.pool is not None}
        return [pool for pool in self.pools if id(pool) in seen]

    def handoffs_to(self, pool: FpmPool) -> list[FpmHandoff]:
        return [h for h in self.handoffs if h.pool is pool]


# ---- addresses ----------------------------------------------------------------


def listen_address(text: str) -> tuple[str, str, int]:
    """A pool's `listen`: '/path' -> unix; 'host:port', '[v6]:port', 'port' -> tcp."""
    text = text.strip().strip('"')
    if text.startswith("/") or "/" in text and ":" not in text:
        return "unix", os.path.normpath(text), 0
    host, _, port = text.rpartition(":")
    host = host.strip("[]")
    try:
        return "tcp", host.lower(), int(port)
    except ValueError:
        return "unix", os.path.normpath(text), 0


def proxy_address(url: str) -> tuple[str, str, int] | None:
    """The php-fpm address of a mod_proxy URL, or None when it is not fcgi."""
    url = url.strip().strip('"')
    lowered = url.lower()
    if lowered.startswith("proxy:"):
        url, lowered = url[6:], lowered[6:]
    if lowered.startswith("unix:"):
        path, _, rest = url[5:].partition("|")
        if not rest.lower().startswith("fcgi://"):
            return None
        return "unix", os.path.normpath(path), 0
    if not lowered.startswith("fcgi://"):
        return None
    authority = url[7:].split("/", 1)[0]
    if authority.startswith("["):
        host, _, port = authority[1:].partition("]")
        port = port.lstrip(":")
    else:
        host, _, port = authority.partition(":")
    try:
        return "tcp", host.lower(), int(port) if port else FCGI_DEFAULT_PORT
    except ValueError:
        return None


def _same_address(apache: tuple[str, str, int], pool: tuple[str, str, int]) -> bool:
    if apache[0] != pool[0]:
        return False
    if apache[0] == "unix":
        return apache[1] == pool[1]
    if apache[2] != pool[2]:
        return False
    return (pool[1] in _ANY_HOSTS or apache[1] == pool[1]
            or (apache[1] in _LOCAL_HOSTS and pool[1] in _LOCAL_HOSTS))


# ---- the Apache side ----------------------------------------------------------


def _params(words: list[str], file: str, line: int) -> dict[str, FpmValue]:
    params = {}
    for word in words:
        key, sign, value = word.partition("=")
        if sign:
            params[key.strip().lower()] = FpmValue(value.strip(), file, line)
    return params


def find_handoffs(cfg) -> list[FpmHandoff]:
    """Every place the effective tree sends requests to php-fpm. Nothing
    without mod_proxy_fcgi loaded; otherwise one walk of the tree."""
    if "proxy_fcgi_module" not in cfg.modules:
        return []
    from advisor.config.model import Directive, Section

    found: list[FpmHandoff] = []
    proxy_sets: dict[tuple[str, str, int], dict[str, FpmValue]] = {}
    for node in cfg.effective.walk():
        name = node.lname
        if type(node) is Section:
            if name == "proxy" and node.args:
                address = proxy_address(node.args[0])
                if address is not None:
                    for directive in node.own_directives("ProxySet"):
                        proxy_sets.setdefault(address, {}).update(
                            _params(directive.args, directive.file, directive.line))
            continue
        if type(node) is not Directive:
            continue
        if name == "sethandler":
            if node.args and node.args[0].lower().startswith("proxy:"):
                address = proxy_address(node.args[0])
                if address is not None:
                    found.append(FpmHandoff(address, node.args[0], node.file, node.line, node.name))
        elif name in ("proxypass", "proxypassmatch"):
            # ProxyPass [path] URL [key=value...]; inside <Location> the path is implied.
            for position, word in enumerate(node.args[:2]):
                address = proxy_address(word)
                if address is not None:
                    found.append(FpmHandoff(address, word, node.file, node.line, node.name,
                                            _params(node.args[position + 1:], node.file, node.line)))
                    break
    for handoff in found:
        for key, value in proxy_sets.get(handoff.address, {}).items():
            handoff.params.setdefault(key, value)
    return found


# ---- the php-fpm side -----------------------------------------------------------


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _read_ini(path: str, pools: dict[str, FpmPool], files: list[str], recorder=None, depth: int = 0) -> None:
    path = os.path.abspath(path)
    if depth > 8:
        raise ConfigError("include= nests more than 8 deep", path, None, "look for an include loop")
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or "not UTF-8 text"
        raise ConfigError(f"cannot read this php-fpm file: {reason}", path, None,
                          "give a readable pool file with --fpm-config") from None
    files.append(path)
    if recorder is not None:
        recorder.looked_at(path)  # lint's result cache: the pools are inputs too
    section: str | None = None
    for number, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text or text[0] in ";#":
            continue
        if text.startswith("["):
            if not text.endswith("]") or len(text) < 3:
                raise ConfigError(f"section header {text[:40]!r} is not '[name]'", path, number,
                                  "write [global] or [poolname]")
            section = text[1:-1].strip()
            if section.lower() != "global" and section not in pools:
                pools[section] = FpmPool(section, path, number)
            continue
        key, sign, value = text.partition("=")
        key = key.strip()
        if not sign or not key or " " in key:
            raise ConfigError(f"{text[:40]!r} is not 'name = value'", path, number,
                              "php-fpm's INI syntax: one name = value a line, ; for comments")
        value = _unquote(value.split(" ;", 1)[0])
        if key == "include":
            pattern = value if os.path.isabs(value) else os.path.join(os.path.dirname(path), value)
            if recorder is not None:
                recorder.looked_at(os.path.dirname(pattern))
            for included in sorted(glob.glob(pattern)):
                _read_ini(included, pools, files, recorder, depth + 1)
            continue
        if section is None or section.lower() == "global":
            continue  # global settings: none of them sizes a pool
        pool = pools[section]
        pool.settings[key.lower()] = FpmValue(value.replace("$pool", section), path, number)


def _check_pool(pool: FpmPool) -> None:
    for key in ("listen", "pm", "pm.max_children"):
        if key not in pool.settings:
            raise ConfigError(f"pool [{pool.name}] sets no {key} (php-fpm refuses to start without it)",
                              pool.file, pool.line, f"add {key} = ... to the pool")
    if pool.pm not in PM_STYLES:
        where = pool.settings["pm"]
        raise ConfigError(f"pm = {where.text!r} is not static, dynamic or ondemand", where.file, where.line)
    if pool.max_children <= 0:
        where = pool.settings["pm.max_children"]
        raise ConfigError("pm.max_children must be at least 1", where.file, where.line)
    for key in ("pm.start_servers", "pm.min_spare_servers", "pm.max_spare_servers", "pm.max_requests",
                "listen.backlog", "request_terminate_timeout"):
        pool.number(key)  # a word where a number belongs: one line, at its file:line


def pool_files(paths: list[str], recorder=None) -> list[str]:
    """The files `--fpm-config` names (a directory: its *.conf), else the
    distributions' default locations that exist on this host."""
    if not paths:
        found: list[str] = []
        for pattern in DEFAULT_POOL_GLOBS:
            found.extend(sorted(glob.glob(pattern)))
        return found
    files = []
    for path in paths:
        if recorder is not None:
            recorder.looked_at(os.path.abspath(path))
        if os.path.isdir(path):
            files.extend(sorted(glob.glob(os.path.join(path, "*.conf"))))
        elif os.path.exists(path):
            files.append(path)
        else:
            raise ConfigError("--fpm-config: no such file or directory", path, None,
                              "name php-fpm.conf, a pool file or a pool.d directory")
    return files


def read_pools(files: list[str], recorder=None) -> tuple[list[FpmPool], list[str]]:
    pools: dict[str, FpmPool] = {}
    read: list[str] = []
    for path in files:
        if os.path.abspath(path) not in read:
            _read_ini(path, pools, read, recorder)
    for pool in pools.values():
        _check_pool(pool)
    return list(pools.values()), read


def read_fpm(cfg, paths: list[str], look_in_defaults: bool, recorder=None) -> FpmSetup | None:
    """The Apache tree's handoffs matched to pools; None when the tree hands
    nothing to php-fpm or no pool file is known (then the rules have nothing
    to size). `paths`: --fpm-config; without it the default locations, when
    `look_in_defaults` (linting this host's own config). `recorder`
    (advisor.config.inputs.InputRecorder) learns every pool file and
    directory read, so that lint's cache sees a change to them."""
    if not paths and not look_in_defaults:
        return None
    handoffs = find_handoffs(cfg)
    if not handoffs:
        return None
    files = pool_files(paths, recorder)
    if not files:
        return None
    pools, read = read_pools(files, recorder)
    for handoff in handoffs:
        handoff.pool = next((pool for pool in pools if _same_address(handoff.address, pool.address)), None)
        if handoff.pool is not None:
            continue
        kind, host, _port = handoff.address
        if kind == "tcp" and host not in _LOCAL_HOSTS:
            continue  # a php-fpm on another host: its pool files are not here
        listening = ", ".join(f"[{p.name}] {p.listen}" for p in pools) or "none"
        raise ConfigError(f"{handoff.text} reaches no php-fpm pool read (pools: {listening})",
                          handoff.file, handoff.line,
                          "give the pool's file with --fpm-config, or fix the socket path")
    return FpmSetup(pools, handoffs, read)


# ---- running children -----------------------------------------------------------

# A php-fpm child without opcache or a framework loaded: about 20-40 MiB of
# PSS; a typical CMS child holds more. Used when nothing is measured or given.
DEFAULT_CHILD_BYTES = 48 * 1024 * 1024


def measure_children(pool_names: list[str]) -> dict[str, tuple[int, str]]:
    """Mean PSS of the running children of each named pool (their argv[0] is
    'php-fpm: pool NAME'), as `--reserve-process` measures services: PSS
    splits shared pages (the interpreter, opcache's shared memory) between
    the processes that map them, so a pool's sum counts them once."""
    import psutil

    wanted = set(pool_names)
    sizes: dict[str, list[int]] = {}
    methods: dict[str, set[str]] = {}
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        cmdline = proc.info.get("cmdline") or []
        if not cmdline or not cmdline[0].startswith("php-fpm: pool "):
            continue
        name = cmdline[0][len("php-fpm: pool "):].strip()
        if name not in wanted:
            continue
        try:
            try:
                size, method = int(proc.memory_full_info().pss), "PSS"
            except (psutil.AccessDenied, AttributeError):
                size, method = int(proc.memory_info().rss), "RSS"
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        sizes.setdefault(name, []).append(size)
        methods.setdefault(name, set()).add(method)
    return {name: (sum(found) // len(found),
                   f"measured: mean {'/'.join(sorted(methods[name]))} of {len(found)} running children")
            for name, found in sizes.items()}
