"""Which servers speak TLS, and the mod_ssl settings each one runs with (TLS rules).

mod_ssl's per-server directives (SSLEngine, SSLSessionTickets,
SSLUseStapling, SSLCertificateFile...) follow httpd's server merge: a
virtual host that does not set one runs with the main server's. The
module-wide ones (SSLSessionCache, SSLStaplingCache) exist only at server
scope. The TLS hosts are worked out once per run and shared: on a tree of
20,000 virtual hosts each rule then costs one pass over them, not one scan
of the tree per host.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.config.model import Directive, Section
from advisor.lint.context import LintContext
from advisor.lint.values import names_a_cache, session_cache_in_effect

from ._served import owned

SSL_MODULES = ("ssl_module", "mod_ssl.c")

# The socache provider each SSLSessionCache / SSLStaplingCache type needs.
SOCACHE_MODULES = {
    "shmcb": ("socache_shmcb_module", "mod_socache_shmcb.c"),
    "dbm": ("socache_dbm_module", "mod_socache_dbm.c"),
    "memcache": ("socache_memcache_module", "mod_socache_memcache.c"),
    "redis": ("socache_redis_module", "mod_socache_redis.c"),
    "dc": ("socache_dc_module", "mod_socache_dc.c"),
}


def ssl_absent(ctx: LintContext) -> bool:
    """mod_ssl is known not to be loaded (a lone fragment's modules are unknown)."""
    return ctx.modules_known and not ctx.has_module(*SSL_MODULES)


def is_on(node: Directive | None) -> bool:
    return node is not None and bool(node.args) and node.args[0].lower() == "on"


@dataclass(frozen=True, slots=True)
class TlsHost:
    """The main server or a virtual host with `SSLEngine on` in effect."""

    vhost: Section | None
    engine: Directive
    """The `SSLEngine on` it runs with (its own or the main server's)."""

    @property
    def label(self) -> str:
        if self.vhost is None:
            return "the main server"
        return f"<VirtualHost {' '.join(self.vhost.args)}>"


def tls_hosts(ctx: LintContext) -> list[TlsHost]:
    """The main server (when it has SSLEngine on) and every virtual host
    with SSLEngine on, its own or inherited, in file order."""
    cached = ctx.shared.get("tls_hosts")
    if cached is not None:
        return cached
    engines = by_owner(ctx, "SSLEngine")
    root = ctx.config.effective
    server_list = engines.get(root)
    server_engine = server_list[-1] if server_list else None
    hosts: list[TlsHost] = []
    if is_on(server_engine):
        hosts.append(TlsHost(None, server_engine))  # type: ignore[arg-type]
    for vhost in ctx.virtual_hosts():
        own = engines.get(vhost)
        engine = own[-1] if own else server_engine
        if engine is not None and is_on(engine):
            hosts.append(TlsHost(vhost, engine))
    ctx.shared["tls_hosts"] = hosts
    return hosts


def by_owner(ctx: LintContext, name: str) -> dict[Section, list[Directive]]:
    """The directives `name` (spelled as the callers spell it) grouped by
    their section: `_served.owned`, looked up here by the name alone, since
    the TLS rules ask once or more per host of trees of 20,000 hosts."""
    cache = ctx.shared.get("tls_by_owner")
    if cache is None:
        cache = ctx.shared["tls_by_owner"] = {}
    grouped = cache.get(name)
    if grouped is None:
        grouped = cache[name] = owned(ctx, name)
    return grouped


@dataclass(frozen=True, slots=True)
class Setting:
    """One per-server directive as every server runs with it."""

    grouped: dict[Section, list[Directive]]
    server: Directive | None
    """The main server's last one (what a host without its own inherits)."""

    def of(self, host: Section | None) -> Directive | None:
        """The host's own last one, else the main server's (None: httpd's default)."""
        if host is not None:
            own = self.grouped.get(host)
            if own:
                return own[-1]
        return self.server


def setting(ctx: LintContext, name: str) -> Setting:
    """`name` resolved for every server, made once per run and name."""
    cache = ctx.shared.get("tls_settings")
    if cache is None:
        cache = ctx.shared["tls_settings"] = {}
    found = cache.get(name)
    if found is None:
        grouped = by_owner(ctx, name)
        server = grouped.get(ctx.config.effective)
        found = cache[name] = Setting(grouped, server[-1] if server else None)
    return found


def in_effect(ctx: LintContext, host: Section | None, name: str) -> Directive | None:
    """The per-server directive `name` a server runs with: the virtual
    host's own last one, else the main server's (None: httpd's default)."""
    return setting(ctx, name).of(host)


def who(labels: list[str]) -> str:
    """'the main server', '<VirtualHost *:443>', '<VirtualHost a:443> and 3 more'."""
    if len(labels) == 1:
        return labels[0]
    return f"{labels[0]} and {len(labels) - 1} more"


def tickets_off(ctx: LintContext, host: TlsHost) -> Directive | None:
    """The line that turns session tickets off for this host
    (`SSLSessionTickets off`, or `SSLOpenSSLConfCmd Options -SessionTicket`,
    whose lists the virtual hosts add to the main server's), or None. Worked
    out once per host and run: S521 and P115 both ask for every TLS host."""
    cache = ctx.shared.get("tls_tickets_off")
    if cache is None:
        cache = ctx.shared["tls_tickets_off"] = {}
    try:
        return cache[host.vhost]
    except KeyError:
        found = cache[host.vhost] = _tickets_off(ctx, host)
        return found


def _tickets_off(ctx: LintContext, host: TlsHost) -> Directive | None:
    node = in_effect(ctx, host.vhost, "SSLSessionTickets")
    if node is not None and node.args and node.args[0].lower() == "off":
        return node
    commands = by_owner(ctx, "SSLOpenSSLConfCmd")
    lists = [commands.get(ctx.config.effective, [])]
    if host.vhost is not None:
        lists.append(commands.get(host.vhost, []))
    for nodes in lists:
        for command in nodes:
            if (len(command.args) >= 2 and command.args[0].lower() == "options"
                    and "-sessionticket" in command.args[1].lower().replace(" ", "").split(",")):
                return command
    return None


def session_cache_line(ctx: LintContext) -> Directive | None:
    """The SSLSessionCache line whose cache httpd uses (SSLSessionCache is
    server-wide: every active line is the server's)."""
    return session_cache_in_effect(ctx.raw_directives("SSLSessionCache"))


def has_session_cache(ctx: LintContext) -> bool:
    line = session_cache_line(ctx)
    return line is not None and names_a_cache(line)


def socache_missing(ctx: LintContext, node: Directive) -> tuple[str, ...] | None:
    """For an SSLSessionCache/SSLStaplingCache line whose provider's module is
    not loaded: that module's names (httpd then refuses the line); else None."""
    if not node.args or not ctx.modules_known:
        return None
    kind = node.args[0].split(":", 1)[0].lower()
    modules = SOCACHE_MODULES.get(kind)
    if modules is None or ctx.has_module(*modules):
        return None
    return modules



def noting_assumed_version(ctx: LintContext, report, code: str, since: str):
    """`report`, which on a version-gated rule's first finding on an unknown
    patch level (the gate took the newest 2.4) adds one note to the run."""
    from .s519_h2_dos_version import UNKNOWN_PATCH

    noted = False

    def reporting(*args, **kwargs) -> None:
        nonlocal noted
        if not noted and ctx.version[2] == UNKNOWN_PATCH:
            ctx.notes.append(f"{code} assumed httpd {since} or later (the patch level is unknown): give "
                             "--apache-version, set it in the settings file, or lint the live host")
        noted = True
        report(*args, **kwargs)

    return reporting
