"""S509: served trees that accept every HTTP method."""

from __future__ import annotations

from functools import cache

from advisor.config.model import Node, Section
from advisor.lint.context import LintContext, per_argument_list
from advisor.lint.rule import Doc, Report, Rule

from ._served import normalize_dir, owned, sites

DOC = Doc(
    summary="No restriction of HTTP methods (LimitExcept, Require method, AllowMethods) on a served tree",
    what=(
        "In a whole config, notes each DocumentRoot and Alias target that no method "
        "restriction reaches: no <LimitExcept> or <Limit> section, `Require method` or "
        "AllowMethods in a <Directory> that covers it, in a <Location> over its URL, or at "
        "the level of its virtual host or the main server (inherited). Trees whose access "
        "is `Require all denied` are not served and are left alone. Informational."
    ),
    why=(
        "A tree that only serves pages needs GET, HEAD and POST (and OPTIONS for CORS "
        "preflights). Whatever else the handlers behind it accept (PUT and DELETE with "
        "WebDAV, anything a CGI, PHP script or proxied application chooses to honour) is "
        "reachable by every client unless a method list stops it first. Static files "
        "alone answer other methods with 405, which is why this is information rather than "
        "a warning. TRACE is handled by the core before these checks: S503 (TraceEnable "
        "Off) covers it. dev-sec's apache-baseline (apache-10) and CIS's benchmark ask for "
        "an explicit method list."
    ),
    evidence=(
        "CIS Apache HTTP Server 2.4 Benchmark 5.7 (restrict HTTP request methods); dev-sec "
        "apache-baseline apache-10 (<LimitExcept GET POST>)."
    ),
    bad="DocumentRoot /var/www/html\n<Directory /var/www/html>\n    Require all granted\n</Directory>",
    good=(
        "DocumentRoot /var/www/html\n<Directory /var/www/html>\n"
        "    <LimitExcept GET POST HEAD OPTIONS>\n        Require all denied\n    </LimitExcept>\n"
        "</Directory>"
    ),
    fix=(
        "Inside the tree's <Directory>, write `<LimitExcept GET POST HEAD OPTIONS>` with "
        "`Require all denied`, or (httpd 2.4) `Require method GET POST HEAD OPTIONS` next to "
        "its other Require lines; mod_allowmethods' `AllowMethods GET POST OPTIONS` works too."
    ),
    references=(
        "dev-sec apache-baseline apache-10 (Disable insecure HTTP-methods)",
        "CIS Apache HTTP Server 2.4 Benchmark 5.7 (Ensure HTTP request methods are restricted)",
        "https://httpd.apache.org/docs/2.4/mod/core.html#limitexcept",
        "https://httpd.apache.org/docs/2.4/mod/mod_authz_core.html#reqmethod",
        "https://httpd.apache.org/docs/2.4/mod/mod_allowmethods.html",
    ),
)

_SCOPES = ("directory", "directorymatch", "location", "locationmatch", "files", "filesmatch",
           "virtualhost")


def _markers(ctx: LintContext) -> list[Node]:
    """Every node that restricts methods somewhere."""
    # Order does not matter here: asking for two section names at once would
    # sort them by tree position, which costs a walk of the whole tree.
    found: list[Node] = [*ctx.sections("LimitExcept"), *ctx.sections("Limit")]
    restricts = per_argument_list(_restricts_methods)
    for node in ctx.directives("Require"):
        if restricts(node.args):
            found.append(node)
    for node in ctx.directives("AllowMethods"):
        if node.args and node.arg(0).lower() != "reset":
            found.append(node)
    return found


def _restricts_methods(args: list[str]) -> bool:
    words = [arg.lower() for arg in args[:2]]
    return words[:1] == ["method"] or words == ["not", "method"]


def _denies_all(args: list[str]) -> bool:
    return [arg.lower() for arg in args] == ["all", "denied"]


def _scope(node: Node) -> tuple[Section | None, Section | None]:
    """(the <Directory>/<Location>/... that holds the marker or None, its owner:
    the root or a <VirtualHost>)."""
    inner: Section | None = None
    parent = node.parent
    while parent is not None and not parent.is_root:
        if parent.lname == "virtualhost":
            return inner, parent
        if inner is None and parent.lname in _SCOPES:
            inner = parent
        parent = parent.parent
    return inner, parent


def _reaches(inner: Section | None, path: str, url: str | None) -> bool:
    """Whether a restriction held in `inner` applies to the served `path`
    (reached at URL prefix `url`, None for a DocumentRoot)."""
    if inner is None:
        return True  # at server or virtual-host level: everything it serves
    if inner.lname == "directory" and inner.args and inner.args[0] != "~":
        return path.startswith(normalize_dir(inner.args[0]))
    if inner.lname == "location" and inner.args and inner.args[0] != "~":
        prefix = inner.args[0].strip('"')
        return prefix == "/" or (url is not None and url.startswith(prefix))
    return True  # regex and <Files> sections: too dynamic to judge, so no finding


def check(ctx: LintContext, report: Report) -> None:
    if not ctx.complete:
        return  # a fragment's restriction may sit in the main config
    # The restrictions by owner: the main server's reach every site, a
    # virtual host's only its own (one pass, not one per site).
    server_level: list[Section | None] = []
    by_vhost: dict[Section, list[Section | None]] = {}
    for inner, owner in (_scope(node) for node in _markers(ctx)):
        if owner is None:
            continue
        if owner.is_root:
            server_level.append(inner)
        else:
            by_vhost.setdefault(owner, []).append(inner)
    requires = owned(ctx, "Require").get
    denies = per_argument_list(_denies_all)
    # One message per path: hosts often share a tree (and an Alias to the
    # document root repeats it), and the text is the same.
    message_for = cache(_message)
    for site in sites(ctx):
        own = by_vhost.get(site.section) if by_vhost and site.section is not None else None
        visible = server_level + own if own else server_level
        applicable = site.applicable
        for path, origin in site.served_paths():
            if visible:
                url = origin.arg(0) if origin is not None and origin.name.lower() != "documentroot" else None
                if any(_reaches(inner, path, url) for inner in visible):
                    continue
            # The Require that decides access to the path (`deciding`, inline:
            # this runs for every served path of every host).
            decided = None
            for dir_section in applicable(path):
                found = requires(dir_section.section)
                if found:
                    decided = found[-1]
            if decided is not None and denies(decided.args):
                continue
            where = origin if origin is not None else ctx.context_location(site.section)
            report(where, message_for(path))


def _message(path: str) -> str:
    return (f"{path.rstrip('/') or '/'} accepts every HTTP method its handlers honour: no "
            "<LimitExcept>, Require method or AllowMethods reaches it.")


RULE = Rule(code="S509", slug="methods-unrestricted", severity="info", category="security",
            directives=("LimitExcept", "Limit", "Require", "AllowMethods"), doc=DOC, check=check,
            baseline=("apache-10",))
