"""S513: httpd children running as root on the live host."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._live import at_directive, snapshot

DOC = Doc(
    summary="An httpd child process runs as root on the host (only the parent should)",
    what=(
        "On a host read live (`lint --host`, `--live`), counts the httpd processes whose parent "
        "is the httpd parent and whose real user is root. The parent needs root to bind ports 80 "
        "and 443 and open the logs; every child that serves requests should have switched to the "
        "User account. Says nothing when the host was not read live or no httpd runs."
    ),
    why=(
        "A child that stays root serves requests, runs CGI and module code with every privilege of "
        "the machine: one flaw in a module becomes a root compromise. A root child usually means a "
        "module or wrapper that skips the switch to User (or User root compiled in). dev-sec's "
        "apache-baseline requires that at most one httpd process runs as root. A hardening measure "
        "with no performance claim."
    ),
    evidence="dev-sec apache-baseline apache-03: only the parent httpd process may run as root; CIS "
             "Apache HTTP Server 2.4 Benchmark, section 3: the server runs as a non-root account.",
    bad="ps shows apache2 children with user root",
    good="one apache2 process as root (the parent); its children as www-data",
    fix="Find what starts the children as root (User directive, an itk/peruser MPM, a wrapper) and "
        "let them switch to the unprivileged User.",
    references=(
        "dev-sec apache-baseline apache-03 (Only one httpd process runs as root)",
        "https://httpd.apache.org/docs/2.4/mod/mod_unixd.html#user",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    live = snapshot(ctx)
    if live is None:
        return
    processes = live.get("processes") or {}
    children = int(processes.get("children_as_root") or 0)
    if children > 0:
        report(at_directive(ctx, "User"),
               f"{children} httpd child process{'es run' if children > 1 else ' runs'} as root on this host: "
               "only the parent should.",
               fix="let the children switch to the unprivileged User")


RULE = Rule(code="S513", slug="children-as-root", severity="error", category="security",
            directives=("User",), doc=DOC, check=check, baseline=("apache-03",))
