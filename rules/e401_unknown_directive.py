"""E401: a directive httpd does not know."""

from __future__ import annotations


from functools import lru_cache

from advisor.config import catalog
from advisor.config.modules import STOCK
from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._legacy import removed_directives
from ._mpm import MPM_SPECIFIC

DEPRECATED_ACCESS = {"order", "allow", "deny", "satisfy"}  # E404's

DOC = Doc(
    summary="Unknown directive, or one whose module is not loaded (with 'did you mean')",
    what=(
        "Flags active directives and sections that httpd's manual does not list for the "
        "target version (suggesting the closest known name), and known directives whose "
        "module is not loaded; httpd refuses both with 'Invalid command'. When a third-party "
        "module the catalog does not cover is loaded, an unknown name is reported as info: "
        "it may be that module's (every module httpd 2.4 ships, with or without directives, "
        "is known from Debian's apache2 package). Removed directives are E403's, MPM "
        "directives E405's."
    ),
    why=(
        "httpd stops at the first invalid command: `apachectl configtest` fails and a reload "
        "leaves the old config running, or a restart leaves no server at all. A typo found "
        "before deploying costs nothing; found by a failed reload it costs an outage. The "
        "directive catalog is built from httpd's own manual for 2.0, 2.2 and 2.4 (721 "
        "directives for 2.4)."
    ),
    evidence=(
        "httpd refuses to start on an invalid command (AH00526 'Invalid command ..., perhaps "
        "misspelled or defined by a module not included in the server configuration')."
    ),
    bad="KeepAliveTimout 5\nRewriteEngine On   # mod_rewrite not loaded",
    good="KeepAliveTimeout 5\nLoadModule rewrite_module modules/mod_rewrite.so\nRewriteEngine On",
    fix=(
        "Correct the spelling, load the module that provides the directive, or wrap "
        "optional parts in <IfModule>."
    ),
    references=(
        "https://httpd.apache.org/docs/2.4/mod/directives.html",
        "https://httpd.apache.org/docs/2.4/mod/core.html#ifmodule",
    ),
)


@lru_cache(maxsize=4)
def _catalog_modules(version_key: str) -> frozenset[str]:
    names: set[str] = set()
    for info in catalog.directives(version_key).values():
        names.add(info.module)
        names.update(info.modules)
    return frozenset(names)


def _module_name(module_id: str) -> str:
    stem = module_id[:-7] if module_id.endswith("_module") else module_id
    return f"mod_{stem}"


def _third_party(ctx: LintContext) -> list[str]:
    """Loaded modules that are not httpd's own: neither in the package's list
    of the modules httpd ships (with or without directives) nor named by the
    manual's directive catalog."""
    known = _catalog_modules(ctx.facts.version_key)
    stock = STOCK.ids
    return [m for m in ctx.config.module_order
            if m not in stock and not m.startswith("mpm_") and _module_name(m) not in known]


def _loaded(ctx: LintContext, info: catalog.DirectiveInfo) -> bool:
    for module in info.modules or (info.module,):
        if module in ("core", "http_core", "mpm_common") or ctx.has_module(catalog.module_source_name(module)):
            return True
    return False


@lru_cache(maxsize=4)
def _spellings(version_key: str) -> tuple[list[str], dict[str, str]]:
    table = catalog.directives(version_key)
    return list(table), {key: info.name for key, info in table.items()}


@lru_cache(maxsize=1024)
def suggestion(name: str, version_key: str) -> str | None:
    """The catalog's closest spelling, asked once per name written: difflib
    against every directive costs 1.5-5 ms a call, and a tree
    repeats the same unknown name in every virtual host."""
    import difflib

    keys, names = _spellings(version_key)
    close = difflib.get_close_matches(name.lower(), keys, n=1, cutoff=0.75)
    return names[close[0]] if close else None


def check(ctx: LintContext, report: Report) -> None:
    # Decide once per distinct name, then visit only the nodes of the names
    # that are wrong: a 30,000-line tree has a few hundred distinct names.
    table = ctx.catalog
    version_key = ctx.facts.version_key
    # Made only when some name is not in the catalog: it reads the catalogs
    # of older httpd versions, a few milliseconds a known-only tree never needs.
    removed: dict[str, tuple[str, str]] | None = None
    third_party: list[str] | None = None
    modules_known = ctx.modules_known
    groups = list(ctx.raw.directives.items()) + list(ctx.raw.sections.items())
    for lname, group in groups:
        # Most names are known and allowed: settle that before looking at
        # the (possibly thousands of) nodes.
        info = table.get(lname)
        if info is not None:
            if not modules_known or info.status == "MPM" or lname in MPM_SPECIFIC \
                    or lname in DEPRECATED_ACCESS or _loaded(ctx, info):
                continue
        else:
            if removed is None:
                removed = removed_directives(version_key)
            if lname in removed:
                continue
        nodes = [node for node in group if node.active]
        if not nodes:
            continue
        if info is not None:
            modules = " or ".join(info.modules or (info.module,))
            for node in nodes:
                report(node, f"{info.name} belongs to {modules}, which is not loaded: httpd "
                             "refuses it as an invalid command. Load the module or wrap the "
                             "lines in <IfModule>.")
            continue
        if third_party is None:
            third_party = _third_party(ctx)
        for node in nodes:
            _unknown(ctx, report, node, lname, version_key, third_party)


def _unknown(ctx: LintContext, report: Report, node, lname: str, version_key: str,
             third_party: list[str]) -> None:
    is_section = hasattr(node, "children")
    display = f"<{node.name}>" if is_section else node.name
    hint = suggestion(node.name, version_key)
    if third_party:
        owner = next((m for m in third_party
                      if lname.startswith(m[:-7].rstrip("0123456789").lower())), None)
        if owner or hint is None:
            # Most likely the third-party module's own directive.
            source = (f"module {owner}" if owner else
                      f"one of the third-party modules loaded ({', '.join(third_party)})")
            report(node, f"{display} is not an httpd {version_key} directive; it may come from "
                         f"{source}, which the catalog does not cover.", severity="info")
            return
    other = [key for key in ("2.4", "2.2") if key != version_key and lname in catalog.directives(key)]
    if other:
        message = f"{display} does not exist in httpd {version_key} (it is a {other[0]} directive)."
    else:
        message = f"unknown directive {display}: httpd refuses to start."
    if hint:
        message += f" Did you mean {hint}?"
    fix = f"{hint} {node.raw_args}".rstrip() if hint and not is_section else None
    report(node, message, fix=fix)


RULE = Rule(code="E401", slug="unknown-directive", severity="error", category="correctness",
            directives=(), doc=DOC, check=check)
