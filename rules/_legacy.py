"""Directives that httpd removed or renamed, and what replaced them.

Shared by E401 (which must not call them unknown), E403 (removed) and E404
(deprecated but still accepted).
"""

from __future__ import annotations

import os

from advisor.config import catalog

# Gone before 2.0: httpd 1.3's own directives (not in any 2.x catalog).
REMOVED_IN_2_0 = {
    "servertype": "remove it (httpd 2 always runs standalone)",
    "port": "use Listen",
    "bindaddress": "use Listen ADDRESS:PORT",
    "addmodule": "remove it (LoadModule is enough)",
    "clearmodulelist": "remove it",
    "accessconfig": "use Include",
    "resourceconfig": "use Include",
    "agentlog": "use CustomLog with %{User-agent}i",
    "refererlog": "use CustomLog with %{Referer}i",
    "refererignore": "use a conditional CustomLog",
    "fancyindexing": "use IndexOptions FancyIndexing",
}

# What to write instead of a directive removed in 2.4 (the rest: remove it).
REPLACED_IN_2_4 = {
    "lockfile": "use Mutex (e.g. `Mutex file:/var/lock/apache2 mpm-accept`)",
    "acceptmutex": "use Mutex MECHANISM mpm-accept",
    "sslmutex": "use Mutex MECHANISM ssl-cache",
    "rewritelock": "use Mutex file:DIR rewrite-map",
    "rewritelog": "use LogLevel rewrite:traceN; mod_rewrite logs to the error log",
    "rewriteloglevel": "use LogLevel rewrite:traceN",
    "dumpiologlevel": "use LogLevel dumpio:trace7",
    "maxrequestsperthread": "remove it",
    "win32disableacceptex": "use AcceptFilter http none",
    "authzldapauthoritative": "remove it; combine providers with <RequireAny>/<RequireAll>",
    "authzdbmauthoritative": "remove it; combine providers with <RequireAny>/<RequireAll>",
    "authzgroupfileauthoritative": "remove it; combine providers with <RequireAny>/<RequireAll>",
    "authzuserauthoritative": "remove it; combine providers with <RequireAny>/<RequireAll>",
    "authzownerauthoritative": "remove it; combine providers with <RequireAny>/<RequireAll>",
    "authzdefaultauthoritative": "remove it; combine providers with <RequireAny>/<RequireAll>",
    "authdefaultauthoritative": "remove it",
    "mcachesize": "use mod_cache_socache (CacheSocache)",
    "cookielog": "use CustomLog with %{cookie}n",
}


def removed_directives(version_key: str) -> dict[str, tuple[str, str]]:
    """Lower-case name -> (release that removed it, what to do), for names the
    target version no longer knows."""
    target = catalog.directives(version_key)
    found: dict[str, tuple[str, str]] = {}
    for name, hint in REMOVED_IN_2_0.items():
        if hint and name not in target:
            found[name] = ("2.0", hint)
    # (older catalog, release that dropped what it has and the next lacks)
    steps = {"2.4": (("2.2", "2.4"), ("2.0", "2.2")), "2.2": (("2.0", "2.2"),), "2.0": ()}
    for old, release in steps[version_key]:
        for name in catalog.directives(old):
            if name not in target and name not in found:
                found[name] = (release, REPLACED_IN_2_4.get(name, "remove it"))
    return found


def mechanical_replacement(name: str, args: list[str]) -> str | None:
    """The line to write instead, when the translation is mechanical."""
    lname = name.lower()
    first = args[0] if args else ""
    if lname == "lockfile" and first:
        return f"Mutex file:{os.path.dirname(first) or '.'} mpm-accept"
    if lname == "acceptmutex" and first:
        return f"Mutex {first} mpm-accept"
    if lname == "sslmutex" and first:
        mechanism = first if ":" not in first or first.startswith(("file:", "sem", "flock:", "fcntl:")) else "default"
        if mechanism.startswith(("file:", "flock:", "fcntl:")):
            kind, _, path = mechanism.partition(":")
            mechanism = f"{kind}:{os.path.dirname(path) or '.'}"
        return f"Mutex {mechanism} ssl-cache"
    if lname == "rewritelock" and first:
        return f"Mutex file:{os.path.dirname(first) or '.'} rewrite-map"
    if lname == "rewriteloglevel" and first.isdigit():
        level = int(first)
        return f"LogLevel rewrite:trace{min(level, 8)}" if level > 0 else ""
    if lname in ("rewritelog", "servertype", "addmodule", "clearmodulelist", "maxrequestsperthread") \
            or lname.endswith("authoritative"):
        return ""
    if lname == "port" and first.isdigit():
        return f"Listen {first}"
    return None
