"""E402: a directive where httpd does not allow it."""

from __future__ import annotations

from itertools import compress
from operator import attrgetter

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule
from advisor.config.model import Include, Node, Section

from advisor.config.catalog import CONDITIONAL_SECTIONS

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
# Where httpd 2.4.71's command tables disagree with the manual's Context line
# (each checked with `apache2 -t` on Debian's build): the contexts httpd takes.
_CONTEXTS_TAKEN = {
    "h2streamtimeout": ("server config", "virtual host"),  # manual: directory too
    "h2proxyrequests": ("server config", "virtual host", "directory"),  # manual: no directory
}
# Documented for the server config only, taken in a <VirtualHost> (RSRC_CONF)
# and never read there: mod_http2 sizes each child's worker pool from the
# main server's values (a host's H2MaxWorkers 64 left the pool at 25-37).
_IGNORED_IN_VHOST = {"h2minworkers", "h2maxworkers", "h2maxworkeridleseconds"}

DOC = Doc(
    summary="Directive in a context where httpd rejects it (or, for mod_http2's worker pool, ignores it)",
    what=(
        "Flags active directives and sections placed where httpd refuses them: a "
        "server-config-only directive (MaxRequestWorkers, Listen, ServerTokens...) in a "
        "<VirtualHost>, a server or vhost directive inside <Directory>/<Location>/<Files>, "
        "a per-directory-only directive (Require, Order, AllowOverride) at server scope, "
        "AllowOverride outside a plain <Directory>, and nested sections httpd forbids. "
        "mod_http2's worker settings (H2MinWorkers, H2MaxWorkers, H2MaxWorkerIdleSeconds) "
        "in a <VirtualHost> are a warning: httpd takes them there and ignores them."
    ),
    why=(
        "httpd checks contexts while reading and stops with 'X cannot occur within "
        "<VirtualHost> section' or 'X not allowed here'; the server does not start. The "
        "contexts come from httpd's manual for the target version; for directives only "
        "documented for directories, httpd still accepts those of the Options, FileInfo and "
        "Indexes override classes at server scope, and so does this rule. Where httpd's "
        "command table disagrees with the manual, the rule follows httpd (2.4.71: "
        "H2StreamTimeout is refused in <Directory> and <Location>, H2ProxyRequests taken "
        "there). mod_http2 starts its worker pool per child from the main server's "
        "settings, so a host's own H2MaxWorkers changes nothing."
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


def _deciding(parent: Section | None) -> Section | None:
    """The section that decides the context of `parent`'s children, or None
    at server scope. Include lines and transparent sections (conditionals,
    method and authz groupings) do not change the context."""
    while parent is not None and not parent.is_root:
        if not isinstance(parent, Include) and parent.name.lower() not in _TRANSPARENT:
            return parent
        parent = parent.parent
    return None


# The kind of context a deciding section makes for what it holds; a plain
# <Directory> is told apart from the other per-directory sections because
# AllowOverride is allowed only there. A name not listed: a context this rule
# does not model ('?').
_SECTION_KIND = {"virtualhost": "virtual host", "directory": "directory",
                 **{name: "directory-like" for name in _DIRECTORY_LIKE - {"directory"}},
                 **{name: "proxy" for name in _PROXY}}


def _kind(parent: Section | None) -> str:
    """The kind of context `parent`'s children are in (see `_SECTION_KIND`)."""
    section = _deciding(parent)
    if section is None:
        return "server config"
    return _SECTION_KIND.get(section.name.lower(), "?")


_KINDS = ("server config", "virtual host", "proxy", "directory", "directory-like")
_EVERYWHERE = {"server config", "virtual host", "directory"}


def _contexts(lname: str, info) -> tuple[str, ...]:
    """The contexts httpd takes the directive in: the manual's, or httpd's own where they differ."""
    return _CONTEXTS_TAKEN.get(lname, info.contexts)


def _allowed(kind: str, lname: str, info) -> bool:
    """Whether httpd accepts the directive in a context of this kind."""
    contexts = _contexts(lname, info)
    override_ok = info.override in _SERVER_OVERRIDES and not info.block and lname not in _PER_DIR_ONLY
    if kind == "server config":
        return "server config" in contexts or override_ok
    if kind == "virtual host":
        return "virtual host" in contexts or override_ok
    if kind == "proxy":
        return "directory" in contexts or "proxy section" in contexts
    # Per-directory: AllowOverride and AllowOverrideList only in a real <Directory>.
    return "directory" in contexts and (kind == "directory" or lname not in _DIRECTORY_ONLY)


class _Kinds(dict):
    """Section -> the kind of context its children are in, worked out (by
    `_kind`) the first time a section is asked for and kept."""

    def __missing__(self, parent: Section | None) -> str:
        kind = self[parent] = _kind(parent)
        return kind


def check(ctx: LintContext, report: Report) -> None:
    table = ctx.catalog
    # A node's context depends only on its parent: decided once per parent.
    # A directive that applies has its effective section as `parent`, which
    # is of the same kind as the section it is written in (the effective
    # tree leaves out only conditionals that hold and Include lines, both
    # transparent here); the others have the raw one. Sections that decide
    # the context do so by name alone: each name's whole list is settled at
    # once, in both trees.
    kinds = _Kinds()
    for tree in (ctx.raw, ctx.effective):
        for lname, sections in tree.sections.items():
            if lname not in _TRANSPARENT:
                kinds.update(dict.fromkeys(sections, _SECTION_KIND.get(lname, "?")))
    kind_of = kinds.__getitem__
    groups = list(ctx.raw.directives.items()) + list(ctx.raw.sections.items())
    for lname, group in groups:
        if lname in _TRANSPARENT:
            continue
        info = table.get(lname)
        if info is None:
            continue
        if _EVERYWHERE <= set(_contexts(lname, info)) and lname not in _DIRECTORY_ONLY:
            continue  # allowed in every context this rule models
        refused = {kind for kind in _KINDS if not _allowed(kind, lname, info)}
        if not refused:
            continue
        # The per-node work in C (a name may occur once per virtual host):
        # each node's parent, its kind, and whether that kind is refused.
        for node in compress(group, map(refused.__contains__, map(kind_of, map(_PARENT, group)))):
            if not node.active:
                continue
            if lname in _IGNORED_IN_VHOST and kind_of(node.parent) == "virtual host":
                report(node, f"{info.name} inside <VirtualHost> is taken and ignored: mod_http2 "
                             "sizes each child's worker pool from the main server's value. Move "
                             "it to server scope.", severity="warning")
                continue
            _report(node, info, report)


_PARENT = attrgetter("parent")


def _report(node: Node, info, report: Report) -> None:
    parent = node.raw_parent or node.parent
    where = _kind(parent)
    contexts = _contexts(node.name.lower(), info)
    label = f"<{info.name}>" if info.block else info.name
    if where == "server config":
        place = "at server scope (outside any <Directory>, <Location> or <VirtualHost>)"
    elif where == "virtual host":
        place = "inside <VirtualHost>"
        if "server config" in contexts:
            place = "inside <VirtualHost>: it is a server-wide setting"
    else:  # a per-directory or proxy section
        section = _deciding(parent)
        place = f"inside <{section.name}>" if section is not None else "here"
    listed = ", ".join(contexts) if contexts else "nowhere"
    report(node, f"{label} is not allowed {place}; httpd refuses to start. Allowed in: {listed}.")


RULE = Rule(code="E402", slug="wrong-context", severity="error", category="correctness",
            directives=(), doc=DOC, check=check)
