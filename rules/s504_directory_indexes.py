"""S504: directory listings on served trees."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._served import ServedAnywhere, is_served, normalize_dir, sites
from .p110_symlink_checks import apply_options

DOC = Doc(
    summary="Options Indexes on a served tree: directory listings",
    what=(
        "Flags Options that turn Indexes on (Indexes, +Indexes, All) for a directory that is "
        "served (a DocumentRoot or Alias target, or a directory that contains or lies in "
        "one), for a <Location>, or for a whole server or virtual host, when mod_autoindex "
        "is loaded."
    ),
    why=(
        "With Indexes, any directory without an index file is listed: backups, .git "
        "remnants, uploads and configuration copies become browsable. CIS's Apache "
        "benchmark recommends removing Indexes. A hardening measure with no performance "
        "claim."
    ),
    evidence="CIS Apache HTTP Server 2.4 Benchmark: disable directory listings (remove Options Indexes).",
    bad="<Directory /var/www/>\n    Options Indexes FollowSymLinks\n</Directory>",
    good="<Directory /var/www/>\n    Options FollowSymLinks\n</Directory>",
    fix="Remove Indexes from Options (or write -Indexes); list only directories that are meant to be browsed.",
    references=(
        "CIS Apache HTTP Server 2.4 Benchmark (directory listing)",
        "dev-sec apache-baseline apache-12 (Disable Directory Listing for directories in alias.conf)",
        "https://httpd.apache.org/docs/2.4/mod/core.html#options",
        "https://httpd.apache.org/docs/2.4/mod/mod_autoindex.html",
    ),
)


def _turns_on(node) -> bool:
    return "indexes" in apply_options(set(), node)


def _fix(node) -> str | None:
    args = node.args
    if all(arg[:1] in "+-" for arg in args):
        kept = [arg for arg in args if arg.lower() != "+indexes"] + ["-Indexes"]
        return "Options " + " ".join(kept)
    kept = [arg for arg in args if arg.lower() != "indexes"]
    if any(arg.lower() == "all" for arg in kept):
        return None
    return "Options " + (" ".join(kept) if kept else "None")


def check(ctx: LintContext, report: Report) -> None:
    if ctx.modules_known and not ctx.has_module("autoindex_module", "mod_autoindex.c"):
        return
    served_sites = sites(ctx)
    by_vhost = {id(site.section): site for site in served_sites if site.section is not None}
    anywhere: ServedAnywhere | None = None  # made when the main server lists a directory
    for node in ctx.directives("Options"):
        if not _turns_on(node):
            continue
        parent = node.parent
        if parent is None:
            continue
        lname = parent.lname
        if lname == "directory" and parent.args and parent.args[0] != "~":
            path = normalize_dir(parent.args[0])
            owner = parent.parent
            if owner is None:
                continue
            if owner.is_root:
                if anywhere is None:
                    anywhere = ServedAnywhere(served_sites)
                if not anywhere.covers(path):
                    continue
            elif id(owner) not in by_vhost or not is_served(by_vhost[id(owner)], path):
                continue
            where = path.rstrip("/") or "/"
        elif parent.is_root:
            where = "the main server"
        elif lname == "virtualhost":
            where = f"<VirtualHost {' '.join(parent.args)}>"
        else:
            where = f"<{parent.name} {' '.join(parent.args)}>"
        report(node, f"Options {' '.join(node.args)} lists the contents of every directory "
                     f"without an index file under {where}.", fix=_fix(node))


RULE = Rule(code="S504", slug="directory-listing", severity="warning", category="security",
            directives=("Options",), doc=DOC, check=check, baseline=("apache-12",))
