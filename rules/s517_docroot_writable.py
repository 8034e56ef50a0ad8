"""S517: a DocumentRoot the server's own account can write."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._live import at_directive, mode_text, owner_text, snapshot, stat_of

DOC = Doc(
    summary="A DocumentRoot is writable by the server's user or group (or by everyone)",
    what=(
        "On a host read live, checks every DocumentRoot (the main server's as httpd reports it, "
        "and each one written in the files read): flagged when the User httpd runs as owns it "
        "with write permission, its Group has write permission on it, or others do."
    ),
    why=(
        "A flaw in a script or module lets an attacker act as the server's account; if that "
        "account can write the files it serves, the flaw becomes a defaced site or a web shell "
        "that stays. CIS's Apache benchmark section 3 keeps web content out of the server "
        "account's and group's write reach. A hardening measure with no performance claim."
    ),
    evidence="CIS Apache HTTP Server 2.4 Benchmark, section 3: the web content (DocumentRoot) is not "
             "writable by the Apache user or group.",
    bad="drwxrwxr-x root:www-data /var/www/html",
    good="drwxr-xr-x root:root /var/www/html",
    fix="Give the content to a deploy account: chown root:root (or deploy:deploy) and chmod go-w the DocumentRoot.",
    references=(
        "CIS Apache HTTP Server 2.4 Benchmark, section 3 (Minimize Privileges)",
        "https://httpd.apache.org/docs/2.4/misc/security_tips.html",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    live = snapshot(ctx)
    if live is None:
        return
    run = live.get("run") or {}
    uid, gid = run.get("uid"), run.get("gid")
    for root in run.get("DocumentRoot") or []:
        found = stat_of(live, root)
        if found is None:
            continue
        owner, group, mode, _ = found
        who = []
        if uid is not None and owner == uid and mode & 0o200:
            who.append(f"its owner, the server's user {run.get('User') or uid}")
        if gid is not None and group == gid and mode & 0o020:
            who.append(f"the server's group {run.get('Group') or gid}")
        if mode & 0o002:
            who.append("everyone")
        if who:
            report(at_directive(ctx, "DocumentRoot", root),
                   f"the DocumentRoot {root} is {owner_text(owner, group)} {mode_text(mode)} on this host: "
                   f"writable by {' and '.join(who)}.",
                   fix=f"chown root:root {root}; chmod go-w {root}")


RULE = Rule(code="S517", slug="docroot-writable", severity="warning", category="security",
            directives=("DocumentRoot", "User", "Group"), doc=DOC, check=check)
