"""S512: a host whose requests leave no access log, or whose error log is discarded."""

from __future__ import annotations

from functools import cache

from advisor.config.model import Directive, Section
from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._served import owned

TRADE_OFF = ("Trade-off: P106 (performance) counts the cost of an unbuffered log (about "
             "-10 %); keep the log and buffer or pipe it rather than drop it.")

_DISCARD = ("/dev/null", '"/dev/null"', "|/bin/true", "|cat >/dev/null")

DOC = Doc(
    summary="A host with no access log in effect, or its error log sent to /dev/null",
    what=(
        "In a whole config, flags each virtual host (and the main server when there is no "
        "virtual host) that has no access log in effect: no CustomLog or TransferLog of its "
        "own, none in the main server for it to inherit, and no GlobalLog. Also flags an "
        "access or error log in effect that goes to /dev/null. A virtual host linted alone "
        "is judged only on the logs it writes, since the main config may hold the rest. "
        "One side of a trade-off with P106."
    ),
    why=(
        "Without an access log nothing records who asked for what: an intrusion, a scan or "
        "a leak can be neither noticed nor reconstructed, and the error log alone does not "
        "name most requests. mod_log_config gives a virtual host the main server's logs "
        "only when it has none of its own, so a vhost without CustomLog in a config whose "
        "main server logs nothing is silent. dev-sec's apache-baseline (apache-14) asks "
        "every site for a CustomLog and CIS's benchmark for a configured access log. "
        "Logging has a price, which P106 (performance) reports: Arlitt & Williamson (2004, "
        "sec. 5.1.2) measured about -10 % peak throughput for a 74-byte access log. The "
        "answer to that cost is a cheaper log (BufferedLogs, a piped logger, skipping static "
        "assets), not none: `--profile security` keeps this rule, `--profile performance` "
        "keeps P106, the default profile shows both and each names the other."
    ),
    evidence=(
        "CIS Apache HTTP Server 2.4 Benchmark 6.3 (configure the server access log); dev-sec "
        "apache-baseline apache-14 (CustomLog in every site)."
    ),
    bad="<VirtualHost *:80>\n    ServerName shop.example\n    DocumentRoot /var/www/shop\n</VirtualHost>",
    good=(
        "<VirtualHost *:80>\n    ServerName shop.example\n    DocumentRoot /var/www/shop\n"
        "    CustomLog ${APACHE_LOG_DIR}/shop-access.log combined\n</VirtualHost>"
    ),
    fix=(
        "Give the host a CustomLog (or one in the main server that every host without its "
        "own inherits, or a GlobalLog), written to a real file or a piped logger. To pay "
        "less for it, add BufferedLogs On rather than dropping it."
    ),
    references=(
        "dev-sec apache-baseline apache-14 (Enable Apache Logging)",
        "CIS Apache HTTP Server 2.4 Benchmark 6.3 (Ensure the server access log is configured correctly)",
        "Arlitt & Williamson 2004, sec. 5.1.2 (logging client requests): the cost side, rule P106",
        "https://httpd.apache.org/docs/2.4/mod/mod_log_config.html#customlog",
        "https://httpd.apache.org/docs/2.4/logs.html#virtualhost",
    ),
)


def _discards(node: Directive) -> bool:
    return bool(node.args) and node.arg(0).strip().lower() in _DISCARD


def check(ctx: LintContext, report: Report) -> None:
    complete = ctx.complete
    global_logs = [node for node in ctx.server("GlobalLog") if not _discards(node)]
    server_logs = ctx.server("CustomLog", "TransferLog")
    server_error = ctx.server_value("ErrorLog")
    vhosts = ctx.virtual_hosts()
    # Each host's own logs from the index (grouped by the section holding
    # them), not from a scan of every host's children.
    access_by_parent = owned(ctx, "CustomLog", "TransferLog")
    error_by_parent = owned(ctx, "ErrorLog")
    hosts: list[tuple[Section | None, list[Directive], Directive | None]] = []
    if not vhosts:
        hosts.append((None, server_logs, server_error))
    nothing: list[Directive] = []
    for vhost in vhosts:
        own_logs = access_by_parent.get(vhost)
        own_error = error_by_parent.get(vhost)
        if not complete and not own_logs and not own_error:
            continue  # a fragment: the main config may give it both
        hosts.append((vhost, own_logs or (server_logs if complete else nothing),
                      own_error[-1] if own_error else server_error))
    # The hosts that inherit share the main server's logs: those are judged
    # once, not once per host.
    server_kept = [node for node in server_logs if not _discards(node)]
    server_error_dropped = server_error is not None and _discards(server_error)
    # Made once for each address and set of problems: a mass-hosting tree's
    # hosts mostly share both (one `*:80`, the same missing log).
    message_for = cache(_message)
    for section, logs, error in hosts:
        problems = []
        where = None
        if not global_logs:
            kept = server_kept if logs is server_logs else [node for node in logs if not _discards(node)]
            if logs and not kept:
                problems.append("its access log goes to /dev/null")
                where = logs[-1]
            elif not logs and complete:
                problems.append("it has no access log (none of its own, none in the main "
                                "server to inherit, no GlobalLog)")
        if error is not None and (server_error_dropped if error is server_error else _discards(error)):
            problems.append("its error log goes to /dev/null")
            where = where or error
        if not problems:
            continue
        location = where if where is not None else ctx.context_location(section)
        report(location, message_for(None if section is None else tuple(section.args), tuple(problems)))


def _message(address: tuple[str, ...] | None, problems: tuple[str, ...]) -> str:
    label = "the main server" if address is None else f"<VirtualHost {' '.join(address)}>"
    return f"{label}: {' and '.join(problems)}; its requests leave no audit trail. {TRADE_OFF}"


RULE = Rule(code="S512", slug="no-access-log", severity="warning", category="security",
            directives=("CustomLog", "TransferLog", "GlobalLog", "ErrorLog"), doc=DOC, check=check,
            baseline=("apache-14",), trade_off="P106")
