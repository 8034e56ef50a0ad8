"""S506: server-status / server-info readable by anyone."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule
from advisor.config.model import Section

_HANDLERS = {"server-status": ("status_module", "mod_status.c"),
             "server-info": ("info_module", "mod_info.c")}

DOC = Doc(
    summary="server-status or server-info handler without an access restriction",
    what=(
        "Flags `SetHandler server-status` or `server-info` in a section that neither it nor "
        "an enclosing or covering <Location> restricts: no Require other than `all "
        "granted`, no `Allow from` a specific host, no authentication."
    ),
    why=(
        "server-status shows every client address and request URL being served (with "
        "ExtendedStatus), and server-info shows the whole configuration, module list and "
        "file paths. Open to the world they hand an attacker the map. CIS's Apache "
        "benchmark requires restricting them. A security measure with no performance claim."
    ),
    evidence="CIS Apache HTTP Server 2.4 Benchmark: restrict access to server-status and server-info to administrators.",
    bad="<Location /server-status>\n    SetHandler server-status\n</Location>",
    good="<Location /server-status>\n    SetHandler server-status\n    Require local\n</Location>",
    fix="Add `Require local` (or `Require ip <admin network>`) to the section.",
    references=(
        "CIS Apache HTTP Server 2.4 Benchmark (mod_status / mod_info access)",
        "https://httpd.apache.org/docs/2.4/mod/mod_status.html",
        "https://httpd.apache.org/docs/2.4/mod/mod_info.html",
    ),
)


def _restricts(section: Section) -> bool | None:
    """True: restricted; False: explicitly open; None: says nothing."""
    verdict: bool | None = None
    for child in section.children:
        lname = child.name.lower()
        if isinstance(child, Section):
            if lname in ("requireall", "requireany", "limit", "limitexcept"):
                inner = _restricts(child)
                if inner is not None:
                    verdict = inner if verdict is None else (verdict or inner)
            continue
        words = [arg.lower() for arg in child.args]
        if lname == "require":
            if words[:2] == ["all", "granted"]:
                if section.lname != "requireall":
                    return False  # implicit RequireAny: one granted opens it
                continue
            verdict = True
        elif lname == "allow" and words[:1] == ["from"]:
            if "all" in words[1:]:
                return False
            verdict = True
        elif lname == "deny" and words[:2] == ["from", "all"]:
            verdict = True if verdict is None else verdict
        elif lname in ("authtype",):
            verdict = True if verdict is None else verdict
    return verdict


class _Locations:
    """The <Location> sections of each server (main or virtual host), by the
    path prefix they cover: finding those that cover a section costs one
    lookup per component of its path, not a scan of every <Location> of the
    tree (a status page in each of 20,000 virtual hosts)."""

    def __init__(self, ctx: LintContext) -> None:
        self.position: dict[int, int] = {}
        self.by_prefix: dict[tuple[int, str], list[Section]] = {}
        self.roots: dict[int, list[Section]] = {}
        for position, other in enumerate(ctx.sections("Location")):
            if not other.args:
                continue
            self.position[id(other)] = position
            owner = id(other.parent)
            prefix = other.args[0].rstrip("/") + "/"
            self.by_prefix.setdefault((owner, prefix), []).append(other)
            if other.args[0] == "/":
                self.roots.setdefault(owner, []).append(other)

    def covering(self, section: Section) -> list[Section]:
        """<Location> sections of the same server whose path covers this one,
        in file order."""
        if section.lname != "location" or not section.args:
            return []
        path = section.args[0]
        owner = id(section.parent)
        found = {id(other): other for other in self.roots.get(owner, ())}
        for end, character in enumerate(path):
            if character == "/":
                for other in self.by_prefix.get((owner, path[:end + 1]), ()):
                    found[id(other)] = other
        found.pop(id(section), None)
        return sorted(found.values(), key=lambda other: self.position[id(other)])


def check(ctx: LintContext, report: Report) -> None:
    locations: _Locations | None = None
    for node in ctx.directives("SetHandler"):
        handler = node.arg(0).lower()
        if handler not in _HANDLERS:
            continue
        if ctx.modules_known and not ctx.has_module(*_HANDLERS[handler]):
            continue
        section = node.parent
        if section is None:
            continue
        verdict = None if section.is_root else _restricts(section)
        if verdict is None and not section.is_root:
            if locations is None:
                locations = _Locations(ctx)
            for other in locations.covering(section):
                inherited = _restricts(other)
                if inherited is not None:
                    verdict = inherited
        if verdict:
            continue
        where = "the whole server" if section.is_root else f"<{section.name} {' '.join(section.args)}>"
        report(node, f"SetHandler {node.arg(0)} in {where} has no access restriction: anyone can "
                     f"read {'live requests and client addresses' if handler == 'server-status' else 'the whole configuration'}.",
               fix="Require local")


RULE = Rule(code="S506", slug="status-handler-open", severity="warning", category="security",
            directives=("SetHandler", "Require", "Allow"), doc=DOC, check=check)
