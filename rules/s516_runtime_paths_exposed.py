"""S516: PID file, scoreboard, mutex or core dump directory open to others."""

from __future__ import annotations

import posixpath

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._live import at_directive, inside, mode_text, owner_text, snapshot, stat_of

DOC = Doc(
    summary="PID file, scoreboard, Mutex or core dump directory writable by others, or under a DocumentRoot",
    what=(
        "On a host read live, checks the directories httpd names for its PID file, its scoreboard "
        "file, its Mutex files (`-D DUMP_RUN_CFG`) and its CoreDumpDirectory: none may be writable "
        "by the group or others, nor lie under a DocumentRoot; a core dump directory must also be "
        "closed to others (no read, write or search for them)."
    ),
    why=(
        "An account that can write beside the PID file can make `apachectl stop` signal another "
        "process; one that can replace the scoreboard or a mutex file can stall or crash the "
        "server; a core dump holds the memory of a child (keys, cookies, passwords) and must not "
        "be readable by others or served. CIS's Apache benchmark section 3 sets these locations. "
        "A hardening measure with no performance claim."
    ),
    evidence="CIS Apache HTTP Server 2.4 Benchmark, section 3: the core dump directory, lock file, "
             "PID file and scoreboard file locations (secured, outside the DocumentRoot).",
    bad="PidFile /tmp/apache2.pid   (/tmp is writable by everyone)",
    good="PidFile ${APACHE_PID_FILE}   (/var/run/apache2, root:root 0755)",
    fix="Keep these files in a root-owned directory no other account can write, outside every DocumentRoot.",
    references=(
        "CIS Apache HTTP Server 2.4 Benchmark, section 3 (Minimize Privileges)",
        "https://httpd.apache.org/docs/2.4/mod/mpm_common.html#pidfile",
    ),
)

_WHAT = {"PidFile": "the PID file", "ScoreBoardFile": "the scoreboard file", "Mutex": "the Mutex directory",
         "CoreDumpDirectory": "the core dump directory"}


def check(ctx: LintContext, report: Report) -> None:
    live = snapshot(ctx)
    if live is None:
        return
    run = live.get("run") or {}
    roots = [root for root in run.get("DocumentRoot") or [] if root != "/"]
    places: list[tuple[str, str, str]] = []  # (directive, the path it names, the directory to check)
    for name in ("PidFile", "ScoreBoardFile"):
        if run.get(name):
            places.append((name, run[name], posixpath.dirname(run[name])))
    for directory in run.get("Mutex") or []:
        places.append(("Mutex", directory, directory))
    if run.get("CoreDumpDirectory"):
        places.append(("CoreDumpDirectory", run["CoreDumpDirectory"], run["CoreDumpDirectory"]))
    for name, path, directory in places:
        where = at_directive(ctx, name)
        served = next((root for root in roots if inside(path, root)), None)
        if served:
            report(where, f"{_WHAT[name]} {path} lies under the DocumentRoot {served}: it can be requested.",
                   fix=f"move {_WHAT[name]} out of {served}")
            continue
        found = stat_of(live, directory)
        if found is None:
            continue
        uid, gid, mode, _ = found
        loose = mode & 0o022 or (name == "CoreDumpDirectory" and mode & 0o007)
        if loose:
            report(where, f"{_WHAT[name]} is in {directory}, {owner_text(uid, gid)} {mode_text(mode)} on this host: "
                          "other accounts can write there" + (" or read it" if mode & 0o004 else "") + ".",
                   fix=f"use a root-owned directory: chmod go-w{',o-rx' if name == 'CoreDumpDirectory' else ''} "
                       f"{directory}, or move it")


RULE = Rule(code="S516", slug="runtime-paths-exposed", severity="warning", category="security",
            directives=("PidFile", "ScoreBoardFile", "Mutex", "CoreDumpDirectory"), doc=DOC, check=check)
