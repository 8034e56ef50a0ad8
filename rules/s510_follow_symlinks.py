"""S510: FollowSymLinks without the owner check on a served tree."""

from __future__ import annotations

from functools import cache

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._served import sites
from .p110_symlink_checks import options_resolver

TRADE_OFF = ("Trade-off: P110 (performance) asks for the opposite, because the owner check "
             "costs an lstat() per path component; --profile security or performance picks one.")

DOC = Doc(
    summary="FollowSymLinks without SymLinksIfOwnerMatch on a DocumentRoot or Alias target",
    what=(
        "Flags each DocumentRoot and Alias target whose Options in effect (the <Directory> "
        "sections that cover it merged as httpd merges them, the virtual host's and the "
        "main server's Options, and httpd's default FollowSymLinks since 2.3.11 in a whole "
        "config) follow symbolic links without checking who owns them. Informational, and "
        "one side of a trade-off with P110."
    ),
    why=(
        "With FollowSymLinks, anyone who can create a link inside the tree can publish any "
        "file the server's user may read: /etc/passwd, another site's configuration with "
        "its database password, a private key readable by www-data. SymLinksIfOwnerMatch "
        "(or -FollowSymLinks) stops that, which is what dev-sec's apache-baseline (apache-11) "
        "asks for the trees in alias.conf and CIS's benchmark for the web root's Options. "
        "The check is not free: httpd then lstat()s every component of every requested path "
        "and cannot cache the answer, the cost P110 (performance) reports (Hu, Nanda & Yang "
        "1999 measured 35-50 % of Apache's CPU in system calls). The two rules give opposite "
        "advice on purpose: on a tree written only by trusted deployers the links are no "
        "threat and speed wins; on shared hosting, uploads or user content the owner check "
        "is worth its cost. `--profile security` keeps this rule, `--profile performance` "
        "keeps P110, the default profile shows both and each names the other."
    ),
    evidence=(
        "CIS Apache HTTP Server 2.4 Benchmark 5.2 (restrict Options on the web root); dev-sec "
        "apache-baseline apache-11 (-FollowSymLinks or +SymLinksIfOwnerMatch in alias.conf)."
    ),
    bad="<Directory /var/www/html>\n    Options FollowSymLinks\n</Directory>",
    good="<Directory /var/www/html>\n    Options -FollowSymLinks +SymLinksIfOwnerMatch\n</Directory>",
    fix=(
        "Where people or programs you do not trust can write the tree, use "
        "`Options -FollowSymLinks +SymLinksIfOwnerMatch` (or no symlink option at all). Where "
        "only trusted deployers write it, keep FollowSymLinks for speed and select rules by "
        "`--profile performance`, or silence this finding with a reason."
    ),
    references=(
        "dev-sec apache-baseline apache-11 (Disable Apache's follows Symbolic Links for directories in alias.conf)",
        "CIS Apache HTTP Server 2.4 Benchmark 5.2 (Ensure Options for the web root directory are restricted)",
        "Hu, Nanda & Yang 1999, IPCCC'99 (system-call share of CPU): the cost side, rule P110",
        "https://httpd.apache.org/docs/2.4/mod/core.html#options",
        "https://httpd.apache.org/docs/2.4/misc/security_tips.html",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    resolve = options_resolver(ctx)
    default_follows = ctx.at_least(2, 3, 11)
    # Each message made once per path: hosts often share a tree.
    written, by_default = cache(_written), cache(_by_default)
    for site in sites(ctx):
        judged = None
        for path, origin in site.served_paths():
            if path == judged:
                # An Alias to the document root (or the same target twice):
                # the same Options, so the same finding as just reported, or
                # none; only a finding at the path's own line (no Options
                # line decides it) differs by place.
                continue
            options, last = resolve(site, path)
            if "followsymlinks" not in options or "symlinksifownermatch" in options:
                continue
            if last is not None:
                judged = path
                report(last, written(path))
            elif default_follows and ctx.complete:
                where = origin if origin is not None else ctx.context_location(site.section)
                report(where, by_default(path))


def _written(path: str) -> str:
    return (f"Options leave {path.rstrip('/') or '/'} following symbolic links of any owner: a link "
            f"planted in the tree publishes what it points to. {TRADE_OFF}")


def _by_default(path: str) -> str:
    return (f"{path.rstrip('/') or '/'} follows symbolic links of any owner (httpd's default Options "
            f"FollowSymLinks; nothing written changes it). {TRADE_OFF}")


RULE = Rule(code="S510", slug="follow-symlinks", severity="info", category="security",
            directives=("Options",), doc=DOC, check=check, baseline=("apache-11",),
            trade_off="P110")
