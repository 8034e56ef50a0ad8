"""S514: the ServerRoot or config directory not root's alone."""

from __future__ import annotations

import posixpath

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._live import mode_text, owner_text, snapshot, stat_of

DOC = Doc(
    summary="The ServerRoot or config directory is not root:root, or is writable by its group or others",
    what=(
        "On a host read live, checks the ServerRoot httpd reports and the directory of the main "
        "config: owner and group root, no write bit for the group or others."
    ),
    why=(
        "Whoever can write in the config directory can add a file that an Include picks up, or "
        "replace one, and httpd's parent reads it as root at the next reload: a path to root. "
        "dev-sec's apache-baseline and CIS's Apache benchmark both want the configuration owned "
        "by root and closed to other accounts. A hardening measure with no performance claim."
    ),
    evidence="dev-sec apache-baseline apache-04: the config directory is owned by root:root and "
             "not open to others; CIS Apache HTTP Server 2.4 Benchmark, section 3 (ownership and "
             "permissions of the Apache directories).",
    bad="drwxrwxr-x root:adm /etc/apache2",
    good="drwxr-xr-x root:root /etc/apache2",
    fix="chown root:root and chmod go-w the ServerRoot and the config directory.",
    references=(
        "dev-sec apache-baseline apache-04 (Check Apache config folder owner, group and permissions)",
        "CIS Apache HTTP Server 2.4 Benchmark, section 3 (Minimize Privileges)",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    live = snapshot(ctx)
    if live is None:
        return
    run = live.get("run") or {}
    directories = []
    for path in (run.get("ServerRoot"), posixpath.dirname(run.get("config") or "")):
        if path and path not in directories:
            directories.append(path)
    for path in directories:
        found = stat_of(live, path)
        if found is None:
            continue
        uid, gid, mode, _ = found
        if uid != 0 or gid != 0 or mode & 0o022:
            report(ctx.main_location(),
                   f"{path} is {owner_text(uid, gid)} {mode_text(mode)} on this host: the config directory "
                   "should be root:root and writable by root alone.",
                   fix=f"chown root:root {path}; chmod go-w {path}")


RULE = Rule(code="S514", slug="config-dir-permissions", severity="warning", category="security",
            directives=("ServerRoot",), doc=DOC, check=check, baseline=("apache-04",))
