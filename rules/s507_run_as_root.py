"""S507: the server's children run as root (User) or in group root (Group)."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

DOC = Doc(
    summary="User root or Group root: the children that serve requests run with root's rights",
    what=(
        "Flags `User root` (or `User #0`) as an error and `Group root` (or `Group #0`) as a "
        "warning, judged on the value in effect at server scope after Debian's envvars are "
        "applied (`User ${APACHE_RUN_USER}` is read as the user envvars exports)."
    ),
    why=(
        "httpd starts as root only to bind ports and open logs, then its children switch to "
        "User and Group and serve every request under them. With root there, any flaw in "
        "a module, a CGI or a PHP script hands the attacker the whole machine. httpd "
        "itself refuses `User root` unless built with BIG_SECURITY_HOLE: Debian's 2.4 "
        "stops at `apache2 -t` with a syntax error (AH00526) on the User line, so the "
        "error is about a config that does not start. Group root does not stop httpd but "
        "gives every child read and often write access to files owned by group root. "
        "dev-sec's apache-baseline (apache-06) and CIS's benchmark ask for a dedicated "
        "unprivileged account."
    ),
    evidence=(
        "CIS Apache HTTP Server 2.4 Benchmark 3.1 (run as a non-root user); dev-sec "
        "apache-baseline apache-06; httpd refuses User root (AH00526)."
    ),
    bad="User root\nGroup root",
    good="User www-data\nGroup www-data",
    fix=(
        "Run the children as an unprivileged account that owns nothing it serves "
        "(Debian: `www-data`, set in /etc/apache2/envvars as APACHE_RUN_USER/APACHE_RUN_GROUP)."
    ),
    references=(
        "dev-sec apache-baseline apache-06 (User and group should be set properly)",
        "CIS Apache HTTP Server 2.4 Benchmark 3.1 (Ensure the Apache web server runs as a non-root user)",
        "https://httpd.apache.org/docs/2.4/mod/mod_unixd.html#user",
        "https://httpd.apache.org/docs/2.4/mod/mod_unixd.html#group",
    ),
)


def _is_root(value: str) -> bool:
    return value.strip().strip('"').lower() in ("root", "#0")


def check(ctx: LintContext, report: Report) -> None:
    user = ctx.server_value("User")
    if user is not None and user.args and _is_root(user.arg(0)):
        report(user, f"User {user.arg(0)}: every child serves requests as root; httpd refuses "
                     "this at start-up (AH00526) unless built with BIG_SECURITY_HOLE.",
               severity="error")
    group = ctx.server_value("Group")
    if group is not None and group.args and _is_root(group.arg(0)):
        report(group, f"Group {group.arg(0)}: every child serves requests with root's group, "
                      "reaching files owned by group root.", severity="warning")


RULE = Rule(code="S507", slug="run-as-root", severity="error", category="security",
            directives=("User", "Group"), doc=DOC, check=check, baseline=("apache-06",))
