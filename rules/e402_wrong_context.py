"""E402: a directive where httpd does not allow it."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule
from advisor.model import Node, Section

from advisor.catalog import CONDITIONAL_SECTIONS

# Sections that change the context to per-directory.
_DIRECTORY_LIKE = {"directory", "directorymatch", "location", "locationmatch", "files",
                   "filesmatch", "if", "elseif", "else"}
_PROXY = {"proxy", "proxymatch"}
# Sections that keep their parent's context (method and authz groupings).
_TRANSPARENT = {"limit", "limitexcept", "requireall", "requireany", "requirenone"} | CONDITIONAL_SECTIONS
# At server and vhost scope httpd allows RSRC_CONF plus the per-directory
# override classes Options, FileInfo and Indexes (never AuthConfig or Limit).
_SERVER_OVERRIDES = {"FileInfo", "Options", "Indexes", "All"}
# Directives whose handlers reject anything but a real <Directory>.
_DIRECTORY_ONLY = {"allowoverride", "allowoverridelist"}
_PER_DIR_ONLY = {"rewritebase"}

DOC = Doc(
    summary="Directive in a context where httpd rejects it",
    what=(
        "Flags active directives and sections placed where httpd refuses them: a "
        "server-config-only directive (MaxRequestWorkers, Listen, ServerTokens...) in a "
        "<VirtualHost>, a server or vhost directive inside <Directory>/<Location>/<Files>, "
        "a per-directory-only directive (Require, Order, AllowOverride) at server scope, "
        "AllowOverride outside a plain <Directory>, and nested sections httpd forbids."
    ),
    why=(
        "httpd checks contexts while reading and stops with 'X cannot occur within "
        "<VirtualHost> section' or 'X not allowed here'; the server does not start. The "
        "contexts come from httpd's manual for the target version; for directives only "
        "documented for directories, httpd still accepts those of the Options, FileInfo and "
        "Indexes override classes at server scope, and so does this rule."
    ),
    evidence=(
        "httpd refuses to start on a directive outside its allowed context (AH00526 "
        "'... cannot occur within <VirtualHost> section' / '... not allowed here')."
    ),
    bad="<VirtualHost *:80>\n    MaxRequestWorkers 50\n</VirtualHost>",
    good="MaxRequestWorkers 50\n<VirtualHost *:80>\n    ServerName example.org\n</VirtualHost>",
    fix="Move the directive to a context the manual lists for it (see its 'Context' line).",
    references=(
        "https://httpd.apache.org/docs/2.4/mod/directive-dict.html#Context",
        "https://httpd.apache.org/docs/2.4/sections.html",
    ),
)


def _context(node: Node) -> tuple[str, Section | None] | None:
    """('server config' | 'virtual host' | 'directory' | 'proxy', section), or
    None when an enclosing section is one this rule does not model."""
    parent = node.parent
    while parent is not None and not parent.is_root:
        if hasattr(parent, "files"):  # Include line: transparent
            parent = parent.parent
            continue
        lname = parent.name.lower()
        if lname in _TRANSPARENT:
            parent = parent.parent
            continue
        if lname == "virtualhost":
            return "virtual host", parent
        if lname in _DIRECTORY_LIKE:
            return "directory", parent
        if lname in _PROXY:
            return "proxy", parent
        return None
    return "server config", None


_EVERYWHERE = {"server config", "virtual host", "directory"}


def check(ctx: LintContext, report: Report) -> None:
    table = ctx.catalog
    # A node's context depends only on its parent: decide it once per parent.
    kinds: dict[int, str] = {}
    groups = list(ctx.raw.directives.items()) + list(ctx.raw.sections.items())
    for lname, group in groups:
        if lname in _TRANSPARENT:
            continue
        info = table.get(lname)
        if info is None:
            continue
        contexts = set(info.contexts)
        if _EVERYWHERE <= contexts and lname not in _DIRECTORY_ONLY:
            continue  # allowed in every context this rule models
        allowed_kinds = {kind for kind in ("server config", "virtual host") if kind in contexts}
        for node in group:
            if not node.active:
                continue
            parent = node.parent
            kind = kinds.get(id(parent))
            if kind is None:
                found = _context(node)
                kind = kinds[id(parent)] = found[0] if found else "?"
            if kind in allowed_kinds or kind == "?":
                continue
            _check_node(node, lname, info, report)


def _check_node(node, lname: str, info, report: Report) -> None:
    found = _context(node)
    if found is None:
        return
    where, section = found
    contexts = info.contexts
    label = f"<{info.name}>" if info.block else info.name
    override_ok = info.override in _SERVER_OVERRIDES and not info.block and lname not in _PER_DIR_ONLY
    if where == "server config":
        allowed = "server config" in contexts or override_ok
        place = "at server scope (outside any <Directory>, <Location> or <VirtualHost>)"
    elif where == "virtual host":
        allowed = "virtual host" in contexts or override_ok
        place = "inside <VirtualHost>"
        if not allowed and "server config" in contexts:
            place = "inside <VirtualHost>: it is a server-wide setting"
    elif where == "proxy":
        allowed = "directory" in contexts or "proxy section" in contexts
        place = f"inside <{section.name}>" if section is not None else "here"
    else:
        allowed = "directory" in contexts
        if allowed and lname in _DIRECTORY_ONLY and section is not None and section.name.lower() != "directory":
            allowed = False
        place = f"inside <{section.name}>" if section is not None else "here"
    if allowed:
        return
    listed = ", ".join(contexts) if contexts else "nowhere"
    report(node, f"{label} is not allowed {place}; httpd refuses to start. Allowed in: {listed}.")


RULE = Rule(code="E402", slug="wrong-context", severity="error", category="correctness",
            directives=(), doc=DOC, check=check)
