"""P109: .htaccess lookups on every request."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._served import deciding, owned, sites

DOC = Doc(
    summary="AllowOverride other than None on / or on a DocumentRoot",
    what=(
        "Flags the AllowOverride that decides the value for `/` or for a DocumentRoot (the "
        "deepest <Directory> covering it) when it is not None. Before httpd 2.3.9 the "
        "default was All, so for a 2.2 target an unwritten AllowOverride is flagged too."
    ),
    why=(
        "When overrides are allowed httpd looks for an .htaccess file in the directory of "
        "every request and in each of its parents, on every request: one open() attempt "
        "per path component, found or not. Hu, Nanda & Yang (1999) measured Apache already "
        "spending 35-50 % of its CPU in system calls; Almeida et al. (sec. 4.2) found fixed "
        "per-request costs dominate for files under about 30 KB. Allowing overrides on / "
        "also lets any directory on the disk change the server's behaviour."
    ),
    evidence=(
        "Hu, Nanda & Yang (1999): Apache spent 35-50 % of its CPU in system calls; "
        "AllowOverride adds an .htaccess open() per directory level to every request."
    ),
    bad="<Directory /var/www/html>\n    AllowOverride All\n</Directory>",
    good=(
        "<Directory />\n    AllowOverride None\n</Directory>\n<Directory /var/www/html>\n"
        "    AllowOverride None\n    # what .htaccess did, written here once\n</Directory>"
    ),
    fix=(
        "Set AllowOverride None and move the .htaccess rules into the <Directory> section "
        "of the main config. If an application needs .htaccess, allow only the override "
        "types it needs, on its own directory, not on / or the whole DocumentRoot."
    ),
    references=(
        "Hu, Nanda & Yang 1999, IPCCC'99 (CPU time in system calls)",
        "Almeida et al., sec. 4.2 (fixed per-request costs)",
        "https://httpd.apache.org/docs/2.4/howto/htaccess.html#when",
        "https://httpd.apache.org/docs/2.4/mod/core.html#allowoverride",
    ),
)


def _allows(args: list[str] | tuple[str, ...]) -> bool:
    return not (len(args) == 1 and args[0].lower() == "none")


def check(ctx: LintContext, report: Report) -> None:
    old_default_all = not ctx.at_least(2, 3, 9)
    # Judge each distinct argument list once: a big tree repeats "None" per vhost.
    if not old_default_all and not any(_allows(args) for args in
                                       {tuple(node.args) for node in ctx.directives("AllowOverride")}):
        return  # nothing allows overrides anywhere: no need to resolve each site
    reported_default = False
    grouped = owned(ctx, "AllowOverride")
    for site in sites(ctx):
        targets = [("/", "/")]
        if site.document_root:
            targets.append((site.document_root, f"DocumentRoot {site.document_root.rstrip('/') or '/'}"))
        for path, label in targets:
            node, _section = deciding(grouped, site, path)
            if node is not None:
                if _allows(node.args):
                    report(node, f"AllowOverride {' '.join(node.args)} applies to {label}: httpd "
                                 "looks for .htaccess in every directory level of every request "
                                 "there.", fix="AllowOverride None")
            elif old_default_all and not reported_default:
                reported_default = True
                report(ctx.context_location(site.section),
                       f"AllowOverride is All for {label}: httpd's default before 2.3.9, not "
                       "written anywhere; every request looks for .htaccess files.",
                       fix="AllowOverride None")


RULE = Rule(code="P109", slug="allowoverride-not-none", severity="warning", category="performance",
            directives=("AllowOverride", "DocumentRoot"), doc=DOC, check=check)
