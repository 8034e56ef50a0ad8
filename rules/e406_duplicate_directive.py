"""E406: a single-valued directive set twice in one context."""

from __future__ import annotations

import re
from functools import lru_cache
from operator import attrgetter

from advisor.config import catalog
from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._mpm import canonical_key

# Single-valued directives whose manual syntax does not make that obvious.
CURATED = {
    "documentroot", "servername", "serveradmin", "serverroot", "pidfile", "errorlog", "user",
    "group", "servertokens", "traceenable", "allowoverride", "sslprotocol", "sslcertificatechainfile",
    "sslsessioncache", "defaultruntimedir", "coredumpdirectory", "scoreboardfile",
    "accessfilename", "usecanonicalname", "protocols", "sslcompression", "sslsessiontickets",
    "maxrequestworkers", "maxclients", "serverlimit", "threadlimit", "threadsperchild",
    "startservers", "minspareservers", "maxspareservers", "minsparethreads", "maxsparethreads",
    "maxconnectionsperchild", "maxrequestsperchild", "listenbacklog", "timeout",
    "keepalivetimeout", "maxkeepaliverequests", "limitrequestbody", "limitrequestfields",
    "limitrequestfieldsize", "limitrequestline", "asyncrequestworkerfactor",
}
# Look repeated by design, or accumulate, although their syntax takes one word.
NEVER = {"include", "includeoptional", "loadmodule", "loadfile", "listen", "define", "undefine",
         "serveralias", "directoryindex", "logformat", "options", "header", "requestheader",
         "sslcertificatefile", "sslcertificatekeyfile", "sslciphersuite", "loglevel", "mutex",
         "require", "fileetag", "addtype", "addhandler", "addoutputfilter", "setenv",
         "passenv", "unsetenv", "sslopensslconfcmd", "action", "use"}
_TYPED = {"number", "seconds", "bytes", "n", "duration", "size", "integer", "milliseconds",
          "time[s|ms]", "factor", "float", "length", "num[ms]", "level", "levels"}
_ALTERNATIVES = re.compile(r"^\[?[A-Za-z0-9.\-\[\]]+(\|[A-Za-z0-9.\-\[\]:]+)+\]?$")

DOC = Doc(
    summary="Same single-valued directive twice in one context: the first one is dead",
    what=(
        "Flags a single-valued directive (a flag, a number, a path such as DocumentRoot or "
        "ServerName, MPM limits, timeouts) written twice in the same context after "
        "conditionals are resolved, for example KeepAliveTimeout in apache2.conf and again "
        "in a conf.d file. The finding points at the dead first line and names the one "
        "that wins. MaxClients and MaxRequestWorkers count as the same directive."
    ),
    why=(
        "httpd keeps the last value read and says nothing, so the first line documents a "
        "setting the server does not have. That is how a tuning change 'does nothing': the "
        "admin edits the first occurrence while an include read later overrides it. The "
        "measured settings this tool checks (MaxRequestsPerChild halving the peak, Arlitt & "
        "Williamson 2004, sec. 5.1.3) only help if the value that applies is the one you "
        "read."
    ),
    evidence=(
        "httpd applies the last of several single-valued directives in one context; "
        "Arlitt & Williamson (2004, sec. 5.1.3) show such a value can halve the peak, so the "
        "line that counts must be the one you see."
    ),
    bad="KeepAliveTimeout 5\n# ... 200 lines later, or in an included file:\nKeepAliveTimeout 15",
    good="KeepAliveTimeout 5",
    fix=(
        "Delete the dead line (the fix is an empty replacement) or merge the two into the one that should win. "
        "A drop-in that overrides on purpose (a tuned include read last) says so before its own line: "
        "`# apache-advisor: disable=E406 -- reason` there silences the finding on the line it overrides."
    ),
    references=(
        "https://httpd.apache.org/docs/2.4/configuring.html",
        "Arlitt & Williamson 2004, sec. 5.1.3",
    ),
)


@lru_cache(maxsize=4096)
def is_single_valued(key: str, version_key: str) -> bool:
    """Whether a directive (lower-case name) takes one value that a later line
    replaces. Asked per name written rather than for the whole catalog: a
    config uses a few dozen of its hundreds of directives."""
    if key in NEVER:
        return False
    if key in CURATED:
        return True
    info = catalog.directives(version_key).get(key)
    if info is None or info.block:
        return False
    parts = info.syntax.split(None, 1)
    if len(parts) != 2 or " " in parts[1].strip() or "..." in parts[1]:
        return False
    argument = parts[1].strip()
    return argument.lower() in _TYPED or _ALTERNATIVES.match(argument) is not None


def check(ctx: LintContext, report: Report) -> None:
    version_key = ctx.facts.version_key
    present = {lname for lname in ctx.effective.directives if is_single_valued(lname, version_key)}
    # One pass per canonical name; only aliases (MaxClients/MaxRequestWorkers)
    # need their lists merged in file order.
    by_key: dict[str, list[str]] = {}
    for lname in present:
        by_key.setdefault(canonical_key(lname), []).append(lname)
    for names in by_key.values():
        nodes = ctx.directives(*names)
        parents = list(map(_PARENT, nodes))
        if len(set(parents)) == len(parents):
            continue  # once per context (the usual case, one per vhost): nothing repeated
        last: dict[int, object] = {}
        for node in nodes:
            parent = node.parent
            if parent is None:
                continue
            previous = last.get(id(parent))
            last[id(parent)] = node
            if previous is not None:
                _report(report, previous, node)


_PARENT = attrgetter("parent")


def _report(report: Report, previous, node) -> None:
    same = [a.lower() for a in previous.args] == [a.lower() for a in node.args]
    later = f"{node.file}:{node.line}" if node.file != previous.file else f"line {node.line}"
    if same:
        report(previous, f"{previous.name} {previous.raw_args} is repeated at {later} with the "
                         "same value; this line is redundant.", fix="", severity="info")
    else:
        report(previous, f"{previous.name} {previous.raw_args} is dead: {node.name} "
                         f"{node.raw_args} at {later} overrides it in the same context.", fix="",
               related=(node.file, node.line))


RULE = Rule(code="E406", slug="duplicate-directive", severity="warning", category="correctness",
            directives=(), doc=DOC, check=check)
