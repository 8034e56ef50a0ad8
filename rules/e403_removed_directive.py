"""E403: a directive the target httpd no longer has."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._legacy import mechanical_replacement, removed_directives

DOC = Doc(
    summary="Directive removed in 2.4 (LockFile, AcceptMutex, RewriteLog...) stops httpd from starting",
    what=(
        "Flags active directives that an older httpd had and the target version removed: "
        "LockFile, AcceptMutex, SSLMutex and RewriteLock (now Mutex), RewriteLog and "
        "RewriteLogLevel (now LogLevel rewrite:traceN), the Authz*Authoritative family, and "
        "1.3-era names such as Port and ServerType. Directives in a branch httpd skips (for "
        "example <IfVersion < 2.4>) are not flagged."
    ),
    why=(
        "A 2.2 config carried over to 2.4 fails at the first removed directive with "
        "'Invalid command'; the upgrade then becomes an outage. The list comes from the "
        "difference between httpd's 2.0, 2.2 and 2.4 manuals plus 1.3's removed directives."
    ),
    evidence="httpd 2.4 refuses directives removed since 2.2 (AH00526 'Invalid command'), so the server does not start.",
    bad="LockFile /var/lock/apache2/accept.lock\nRewriteLog /var/log/apache2/rewrite.log\nRewriteLogLevel 3",
    good="Mutex file:/var/lock/apache2 mpm-accept\nLogLevel warn rewrite:trace3",
    fix="Replace each with its 2.4 equivalent (the finding's fix line when mechanical) or delete it.",
    references=(
        "https://httpd.apache.org/docs/2.4/upgrading.html",
        "https://httpd.apache.org/docs/2.4/mod/core.html#mutex",
        "https://httpd.apache.org/docs/2.4/mod/mod_rewrite.html#logging",
    ),
)


# Names a removed httpd directive shares with a module outside httpd that
# still defines it: mpm-itk's AssignUserID was also the 2.0 perchild MPM's.
KEPT_BY_MODULE: dict[str, frozenset[str]] = {
    "mpm_itk_module": frozenset({"assignuserid", "maxclientsvhost", "nicevalue", "limituidrange",
                                 "limitgidrange", "enablecapabilities", "assignuseridexpr",
                                 "assigngroupidexpr"}),
}


def _kept(ctx: LintContext) -> frozenset[str]:
    """The removed names a loaded module defines again."""
    return frozenset().union(*(names for module, names in KEPT_BY_MODULE.items() if ctx.has_module(module)))


def check(ctx: LintContext, report: Report) -> None:
    written = ctx.raw.directives
    # A removed directive is one the target catalog lacks; when every name
    # written is in it, skip reading the older versions' catalogs.
    if all(lname in ctx.catalog for lname in written):
        return
    removed = removed_directives(ctx.facts.version_key)
    for lname in sorted(removed.keys() & written.keys() - _kept(ctx)):
        release, hint = removed[lname]
        for node in written[lname]:
            if not node.active:
                continue
            report(node, f"{node.name} was removed in httpd {release}; httpd "
                         f"{ctx.facts.version_key} refuses to start on it ({hint}).",
                   fix=mechanical_replacement(node.name, node.args))


RULE = Rule(code="E403", slug="removed-directive", severity="error", category="correctness",
            directives=("LockFile", "AcceptMutex", "SSLMutex", "RewriteLock", "RewriteLog",
                        "RewriteLogLevel"), doc=DOC, check=check)
