"""MPM settings as httpd resolves them: what is written, else the MPM's default.

The manual says "See usage for details" for most MPM defaults, so the values
httpd 2.4 compiles in (server/mpm/*/…c, `DEFAULT_*`) are kept here.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.lint.context import LintContext
from advisor.lint.values import parse_int
from advisor.config.model import Directive

THREADED = ("worker", "event")

# httpd 2.4's compiled-in defaults (also 2.2's, where the names existed).
DEFAULTS: dict[str, dict[str, int]] = {
    "prefork": {
        "startservers": 5, "minspareservers": 5, "maxspareservers": 10,
        "serverlimit": 256, "maxrequestworkers": 256, "maxconnectionsperchild": 0,
    },
    "worker": {
        "startservers": 3, "minsparethreads": 75, "maxsparethreads": 250,
        "threadsperchild": 25, "serverlimit": 16, "threadlimit": 64,
        "maxrequestworkers": 400, "maxconnectionsperchild": 0,
    },
    "event": {
        "startservers": 3, "minsparethreads": 75, "maxsparethreads": 250,
        "threadsperchild": 25, "serverlimit": 16, "threadlimit": 64,
        "maxrequestworkers": 400, "maxconnectionsperchild": 0,
    },
}

# Hard ceilings compiled into httpd 2.4 (MAX_SERVER_LIMIT, MAX_THREAD_LIMIT).
HARD_SERVER_LIMIT = {"prefork": 200000, "worker": 20000, "event": 20000}
HARD_THREAD_LIMIT = {"worker": 20000, "event": 100000}

# Old spellings httpd 2.4 still accepts for the same setting.
ALIASES = {
    "maxrequestworkers": ("MaxRequestWorkers", "MaxClients"),
    "maxconnectionsperchild": ("MaxConnectionsPerChild", "MaxRequestsPerChild"),
}

_ALIAS_KEY = {name.lower(): key for key, names in ALIASES.items() for name in names}


def canonical_key(lname: str) -> str:
    """`maxclients` and `maxrequestworkers` are one setting: key them alike."""
    return _ALIAS_KEY.get(lname, lname)


# Which MPM directives each MPM's command table has (httpd 2.4).
MPM_DIRECTIVES = {
    "prefork": {"startservers", "minspareservers", "maxspareservers", "serverlimit",
                "maxrequestworkers", "maxclients"},
    "worker": {"startservers", "minsparethreads", "maxsparethreads", "threadsperchild",
               "threadlimit", "serverlimit", "maxrequestworkers", "maxclients"},
    "event": {"startservers", "minsparethreads", "maxsparethreads", "threadsperchild",
              "threadlimit", "serverlimit", "maxrequestworkers", "maxclients",
              "asyncrequestworkerfactor"},
}
# Directives that only some MPMs define; the rest of mpm_common (Listen,
# MaxConnectionsPerChild, PidFile...) every Unix MPM has.
MPM_SPECIFIC = set().union(*MPM_DIRECTIVES.values())


@dataclass(frozen=True)
class Setting:
    name: str
    """The canonical spelling (MaxRequestWorkers)."""
    value: int | None
    """None when the written value is not a number (httpd refuses it)."""
    node: Directive | None
    """The directive that sets it, or None for httpd's default."""

    @property
    def is_default(self) -> bool:
        return self.node is None

    def describe(self) -> str:
        if self.node is None:
            return f"{self.name} {self.value} (httpd's default)"
        return f"{self.name} {self.value}"


def setting(ctx: LintContext, key: str, canonical: str | None = None) -> Setting:
    """The server-scope value httpd uses for an MPM directive (lower-case key)."""
    names = ALIASES.get(key, (canonical or key,))
    node = ctx.server_value(*names)
    label = canonical or names[0]
    if node is not None:
        return Setting(label, parse_int(node.arg(0)), node)
    default = DEFAULTS.get(ctx.mpm or "", {}).get(key)
    return Setting(label, default, None)


def pool(ctx: LintContext) -> dict[str, Setting]:
    """The sizing settings of the loaded MPM, keyed by lower-case name."""
    mpm = ctx.mpm or ""
    names = {
        "startservers": "StartServers",
        "minspareservers": "MinSpareServers",
        "maxspareservers": "MaxSpareServers",
        "minsparethreads": "MinSpareThreads",
        "maxsparethreads": "MaxSpareThreads",
        "threadsperchild": "ThreadsPerChild",
        "threadlimit": "ThreadLimit",
        "serverlimit": "ServerLimit",
        "maxrequestworkers": "MaxRequestWorkers",
    }
    wanted = MPM_DIRECTIVES.get(mpm, set())
    return {key: setting(ctx, key, label) for key, label in names.items() if key in wanted}


def effective_workers(ctx: LintContext) -> int | None:
    """MaxRequestWorkers after httpd's own corrections (see C203)."""
    settings = pool(ctx)
    if "maxrequestworkers" not in settings:
        return None
    workers = settings["maxrequestworkers"].value
    server_limit = settings["serverlimit"].value
    if workers is None or server_limit is None:
        return workers
    if ctx.mpm in THREADED:
        threads = settings["threadsperchild"].value
        thread_limit = settings["threadlimit"].value
        if threads is None or thread_limit is None or threads < 1:
            return workers
        threads = min(threads, thread_limit)
        workers = min(workers, server_limit * threads)
        if workers < threads:
            workers = threads
        workers -= workers % threads
        return workers
    return min(workers, server_limit)


def processes_for(ctx: LintContext, workers: int) -> int:
    """Child processes needed for `workers` workers: one per worker for
    prefork; ceil(workers / ThreadsPerChild) for worker and event."""
    if ctx.mpm in THREADED:
        threads = setting(ctx, "threadsperchild", "ThreadsPerChild").value or 25
        threads = max(1, threads)
        return -(-workers // threads)
    return workers
