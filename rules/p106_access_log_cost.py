"""P106: the per-request cost of access logging."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import parse_flag

DOC = Doc(
    summary="Unbuffered access log written on every request",
    what=(
        "Notes each CustomLog or TransferLog that writes every request straight to a file: "
        "not piped, not conditional (env= or expr=), with BufferedLogs off. Informational: "
        "logs are usually worth their cost, but the cost is real and can be cut."
    ),
    why=(
        "Arlitt & Williamson (2004, sec. 5.1.2) measured a 74-byte-per-request access log "
        "lowering Apache's peak from 5,700 to 5,200 replies/s (about -10 %) on a fast disk, "
        "and expected more with richer formats or slower disks. Almeida et al. (sec. 4.2) "
        "found updating the log took about 23 ms per connection out of a fixed cost of about "
        "25 ms, dominating every other cost for files under about 30 KB, because of lock "
        "contention on the log file's inode. The log is also the audit trail S512 (security) "
        "asks every host to keep, so the advice is to make it cheaper, never to drop it; "
        "`--profile performance` keeps this rule, `--profile security` keeps S512, the "
        "default profile shows both and each names the other."
    ),
    evidence=(
        "Arlitt & Williamson (2004, sec. 5.1.2): a 74-byte access log cut the peak from 5,700 "
        "to 5,200 replies/s (about -10 %); Almeida et al. (sec. 4.2) measured ~23 ms of log "
        "update per connection."
    ),
    bad='CustomLog /var/log/apache2/access.log combined',
    good=(
        'BufferedLogs On\n'
        'SetEnvIf Request_URI "\\.(css|js|png|jpg|gif|ico|woff2?)$" static_asset\n'
        'CustomLog /var/log/apache2/access.log combined env=!static_asset'
    ),
    fix=(
        "Turn on BufferedLogs (mod_log_config), skip static assets with env=!VAR, or send "
        "the log through a pipe (`CustomLog \"|/usr/bin/rotatelogs ...\"`) so that another "
        "process does the writing."
    ),
    references=(
        "Arlitt & Williamson 2004, sec. 5.1.2 (logging client requests)",
        "Almeida et al., sec. 4.2 (latency: logging time)",
        "https://httpd.apache.org/docs/2.4/mod/mod_log_config.html#bufferedlogs",
        "S512 no-access-log: the security side of this trade-off",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    buffered = ctx.server_value("BufferedLogs")
    if buffered is not None and parse_flag(buffered.arg(0)) is True:
        return
    for node in ctx.directives("CustomLog", "TransferLog"):
        if not node.args:
            continue
        target = node.args[0]
        if target.startswith("|") or target == "/dev/null":
            continue  # another process writes it, or nothing does (S512's concern)
        if any(arg.startswith(("env=", "expr=")) for arg in node.args[1:]):
            continue
        report(node, f"{node.name} writes every request to {target} unbuffered; an access log "
                     "measured about -10 % at 74 bytes per request. Consider BufferedLogs On, "
                     "env=!static_asset for static files, or a piped log. Trade-off: S512 (security) "
                     "needs the log as an audit trail; make it cheaper, do not drop it.")


RULE = Rule(code="P106", slug="access-log-cost", severity="info", category="performance",
            directives=("CustomLog", "TransferLog", "BufferedLogs"), doc=DOC, check=check,
            trade_off="S512")
