"""P110: symlink checks on every path component."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._served import Site, owned, sites

# httpd's OPT_ALL: everything but MultiViews and SymLinksIfOwnerMatch.
_ALL = {"indexes", "includes", "followsymlinks", "execcgi"}
_KNOWN = _ALL | {"symlinksifownermatch", "multiviews", "includesnoexec"}

DOC = Doc(
    summary="SymLinksIfOwnerMatch, or FollowSymLinks missing, on a served tree",
    what=(
        "Flags the Options that leave a DocumentRoot or Alias target with "
        "SymLinksIfOwnerMatch, or without FollowSymLinks, after merging the <Directory> "
        "sections that cover it the way httpd does."
    ),
    why=(
        "Without FollowSymLinks, or with SymLinksIfOwnerMatch, httpd must lstat() every "
        "component of every requested path to check for links (and the link's owner), "
        "and cannot cache the answer. Hu, Nanda & Yang (1999) measured 35-50 % of Apache's "
        "CPU in system calls; extra calls per request land there. The check is a security "
        "measure on shared hosts where users can plant links, which is why the rule is "
        "informational: keep it where users you do not trust write the tree. S510 (security) "
        "gives the opposite advice for that reason; `--profile performance` keeps this rule, "
        "`--profile security` keeps S510, the default profile shows both and each names the "
        "other."
    ),
    evidence=(
        "Hu, Nanda & Yang (1999): 35-50 % of Apache's CPU went to system calls; "
        "SymLinksIfOwnerMatch adds an lstat() per path component to every request."
    ),
    bad="<Directory /var/www/html>\n    Options SymLinksIfOwnerMatch\n</Directory>",
    good="<Directory /var/www/html>\n    Options FollowSymLinks\n</Directory>",
    fix=(
        "Use `Options FollowSymLinks` (or `+FollowSymLinks -SymLinksIfOwnerMatch`) on trees "
        "that only trusted users write."
    ),
    references=(
        "Hu, Nanda & Yang 1999, IPCCC'99 (system-call share of CPU)",
        "https://httpd.apache.org/docs/2.4/misc/perf-tuning.html#symlinks",
        "S510 follow-symlinks: the security side of this trade-off",
        "https://httpd.apache.org/docs/2.4/mod/core.html#options",
    ),
)


_LOWERED: dict[tuple[str, ...], list[str]] = {}


def _lowered(args: tuple[str, ...] | list[str]) -> list[str]:
    """Lower-cased arguments; thousands of hosts repeat a few Options lines."""
    key = tuple(args)
    found = _LOWERED.get(key)
    if found is None:
        if len(_LOWERED) > 4096:
            _LOWERED.clear()
        found = _LOWERED[key] = [arg.lower() for arg in key]
    return found


def apply_options(current: set[str] | frozenset[str], node) -> set[str]:
    """httpd's Options merge: signed options adjust, unsigned ones replace."""
    args = _lowered(node.args)
    if args and all(arg[:1] in "+-" for arg in args):
        result = set(current)
        for arg in args:
            name = arg[1:]
            names = _ALL if name == "all" else {name}
            if arg[0] == "+":
                result |= names
            else:
                result -= names
        return result
    result: set[str] = set()
    for arg in args:
        name = arg.lstrip("+-")
        if name == "all":
            result |= _ALL
        elif name == "none":
            result = set()
        elif name in _KNOWN:
            result.add(name)
    return result


def options_resolver(ctx: LintContext, grouped=None):
    """A function of (site, path) giving the Options that apply there and the
    directive that last changed them. What every site starts from (httpd's
    default and the main server's Options) is worked out once, not per path."""
    if grouped is None:
        grouped = owned(ctx, "Options")
    start = ctx.shared.get("options_start")
    if start is None:
        options = frozenset({"followsymlinks"} if ctx.at_least(2, 3, 11) else _ALL)
        server = ctx.server_value("Options")
        start = ctx.shared["options_start"] = (
            (frozenset(apply_options(set(options), server)), server) if server is not None else (options, None))
    merged = ctx.shared.setdefault("options_merged", {})
    own_lines = grouped.get

    def resolve(site: Site, path: str):
        options, last = start
        if site.section is not None:
            own = own_lines(site.section)
            if own:
                options, last = _merged(merged, options, own[-1]), own[-1]
        for dir_section in site.applicable(path):
            for node in own_lines(dir_section.section, ()):
                options, last = _merged(merged, options, node), node
        return options, last

    return resolve


def _merged(known: dict, options: frozenset[str], node) -> frozenset[str]:
    """`apply_options`, remembered for each (options, arguments) pair: the
    hosts of a large tree merge the same few Options lines again and again.
    The arguments are known by their list's id, as in `per_argument_list`."""
    key = (options, id(node.args))
    found = known.get(key)
    if found is None:
        found = known[key] = frozenset(apply_options(options, node))
    return found


def _harmless(written: tuple[str, ...]) -> bool:
    """Options arguments that can neither drop FollowSymLinks nor add
    SymLinksIfOwnerMatch, whatever they are merged onto."""
    args = [arg.lower() for arg in written]
    if "symlinksifownermatch" in args or "+symlinksifownermatch" in args:
        return False
    if args and all(arg.startswith("+") for arg in args):
        return True
    keeps = any(arg in ("followsymlinks", "+followsymlinks", "all", "+all") for arg in args)
    return keeps and "-followsymlinks" not in args


def check(ctx: LintContext, report: Report) -> None:
    # Judge each distinct argument list once: thousands of virtual hosts
    # usually repeat a handful of Options lines.
    if ctx.at_least(2, 3, 11) and all(_harmless(args) for args in
                                      {tuple(node.args) for node in ctx.directives("Options")}):
        return  # the default has FollowSymLinks and nothing written takes it away
    resolve = options_resolver(ctx)
    for site in sites(ctx):
        for path, _origin in site.served_paths():
            options, last = resolve(site, path)
            if last is None:
                continue
            if "symlinksifownermatch" in options:
                problem = "SymLinksIfOwnerMatch"
            elif "followsymlinks" not in options:
                problem = "no FollowSymLinks"
            else:
                continue
            report(last, f"Options leave {path.rstrip('/') or '/'} with {problem}: httpd "
                         "lstat()s every path component of every request there. Trade-off: S510 (security) "
                         "wants the owner check where untrusted users write the tree; --profile "
                         "performance or security picks one.")


RULE = Rule(code="P110", slug="symlink-checks", severity="info", category="performance",
            directives=("Options",), doc=DOC, check=check, trade_off="S510")
