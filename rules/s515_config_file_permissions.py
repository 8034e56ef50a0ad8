"""S515: config files not root's alone; the main config readable by others."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._live import mode_text, owner_text, snapshot, stat_of

DOC = Doc(
    summary="A config file not root's alone, or the main config looser than root:root 0640",
    what=(
        "On a host read live: the main config must be root:root with mode 0640 or stricter (no "
        "execute bit, no write for the group, nothing for others); every other file httpd reads "
        "must be owned by root and writable by no group or other account."
    ),
    why=(
        "The parent httpd reads every config file as root; a file another account can write is a "
        "way to run code as root at the next reload. The main config often names the paths of "
        "keys, passwords files and internal hosts, so dev-sec also closes it to others. A "
        "hardening measure with no performance claim."
    ),
    evidence="dev-sec apache-baseline apache-05: the Apache config files are owned by root:root and "
             "at most mode 0640; CIS Apache HTTP Server 2.4 Benchmark, section 3 (permissions of "
             "the Apache directories and files).",
    bad="-rw-r--r-- root:root /etc/apache2/apache2.conf",
    good="-rw-r----- root:root /etc/apache2/apache2.conf",
    fix="chown root:root and chmod 0640 the main config; chmod go-w every file it includes.",
    references=(
        "dev-sec apache-baseline apache-05 (Check Apache config file owner, group and permissions)",
        "CIS Apache HTTP Server 2.4 Benchmark, section 3 (Minimize Privileges)",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    live = snapshot(ctx)
    if live is None:
        return
    main = (live.get("run") or {}).get("config")
    found = stat_of(live, main)
    if found is not None:
        uid, gid, mode, _ = found
        if uid != 0 or gid != 0 or mode & 0o137:
            report(ctx.main_location(),
                   f"the main config {main} is {owner_text(uid, gid)} {mode_text(mode)} on this host: "
                   "it should be root:root 0640 or stricter.",
                   fix=f"chown root:root {main}; chmod 0640 {main}")
    for path in live.get("files") or []:
        found = stat_of(live, path)
        if path == main or found is None or found[3]:
            continue
        uid, gid, mode, _ = found
        if uid != 0 or mode & 0o022:
            report((path, 1), f"{path} is {owner_text(uid, gid)} {mode_text(mode)} on this host: a file httpd "
                              "reads as root should be owned by root and writable by root alone.",
                   fix=f"chown root {path}; chmod go-w {path}")


RULE = Rule(code="S515", slug="config-file-permissions", severity="warning", category="security",
            directives=(), doc=DOC, check=check, baseline=("apache-05",))
