"""S518: the server's account can log in."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._live import at_directive, snapshot

NO_LOGIN = ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false", "/usr/bin/false", "/dev/null")

DOC = Doc(
    summary="The account httpd runs as has a login shell, or its password is not locked",
    what=(
        "On a host read live, reads the User account's entry: its shell must be nologin or false, "
        "and (when the ssh user can read /etc/shadow) its password field locked (`!` or `*`)."
    ),
    why=(
        "The server's account exists only to own the children's privileges; nobody should log in "
        "with it. A login shell or a usable password turns a leaked password or a web shell into "
        "an interactive session. CIS's Apache benchmark section 3 asks for an invalid shell and a "
        "locked account. A hardening measure with no performance claim."
    ),
    evidence="CIS Apache HTTP Server 2.4 Benchmark, section 3: the Apache user account has an invalid "
             "shell and is locked.",
    bad="www-data:x:33:33::/var/www:/bin/bash",
    good="www-data:x:33:33::/var/www:/usr/sbin/nologin (password field !* in /etc/shadow)",
    fix="usermod -s /usr/sbin/nologin USER; passwd -l USER",
    references=(
        "CIS Apache HTTP Server 2.4 Benchmark, section 3 (Minimize Privileges)",
        "https://httpd.apache.org/docs/2.4/mod/mod_unixd.html#user",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    live = snapshot(ctx)
    if live is None:
        return
    account = live.get("account") or {}
    name = account.get("name")
    if not name or name == "root":
        return  # S507 speaks of root
    shell = account.get("shell")
    if shell and shell not in NO_LOGIN:
        report(at_directive(ctx, "User"), f"the server's account {name} has the login shell {shell} on this host.",
               fix=f"usermod -s /usr/sbin/nologin {name}")
    if account.get("locked") is False:
        report(at_directive(ctx, "User"), f"the server's account {name} has a password that is not locked on this host.",
               fix=f"passwd -l {name}")


RULE = Rule(code="S518", slug="server-account-login", severity="warning", category="security",
            directives=("User",), doc=DOC, check=check)
