"""E411: OCSP stapling on for a TLS host with no SSLStaplingCache: httpd does not start."""

from __future__ import annotations

from advisor.config.model import Directive
from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._tls import is_on, setting, ssl_absent, tls_hosts, who

FIX = "SSLStaplingCache shmcb:/var/run/apache2/ssl_stapling(32768)"

DOC = Doc(
    summary="SSLUseStapling on for a TLS host but no SSLStaplingCache: httpd refuses to start",
    what=(
        "For each server with SSLEngine on, reads the SSLUseStapling in effect (its own, else "
        "the main server's) and, when it is on while no SSLStaplingCache is set at server "
        "scope (the only place httpd takes it), flags the SSLUseStapling line. A cache whose "
        "path is relative (Mozilla's generator writes `shmcb:logs/ssl_stapling(32768)`) is not "
        "flagged: shmcb uses anonymous shared memory where the system has it, and on this "
        "machine httpd 2.4.71 started with that line under a ServerRoot that has no logs/."
    ),
    why=(
        "mod_ssl keeps the OCSP responses it staples in the stapling cache and checks for one "
        "when it initialises: without it httpd stops at start with AH01958 'SSLStapling: no "
        "stapling cache available' and AH02312 'Fatal error initialising mod_ssl'. "
        "`apache2 -t` does not catch it (its check ends before mod_ssl initialises), so the "
        "error shows at the next restart, with the old server already stopped. Checked on "
        "this machine with httpd 2.4.71: the config test said 'Syntax OK', the start failed. "
        "Stapling on a host without SSLEngine on is ignored and not flagged."
    ),
    evidence=(
        "httpd 2.4.71 on this machine: `SSLUseStapling on` without SSLStaplingCache passed "
        "`apache2 -t` and failed to start with AH01958; mod_ssl docs: SSLStaplingCache is "
        "required for stapling."
    ),
    bad="SSLUseStapling on\n<VirtualHost *:443>\n    SSLEngine on\n</VirtualHost>",
    good="SSLUseStapling on\nSSLStaplingCache shmcb:${APACHE_RUN_DIR}/ssl_stapling(32768)",
    fix=(
        "Add `SSLStaplingCache shmcb:PATH(32768)` at server scope, outside any <VirtualHost> "
        "(mod_socache_shmcb loaded), or drop SSLUseStapling (see E412 for certificates that "
        "carry no OCSP address)."
    ),
    references=(
        "https://httpd.apache.org/docs/2.4/mod/mod_ssl.html#sslstaplingcache",
        "https://httpd.apache.org/docs/2.4/mod/mod_ssl.html#sslusestapling",
        "RFC 6066 sec. 8 (certificate status request: OCSP stapling)",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    # A lone file (modules unknown) may include into a config that sets the cache.
    if ssl_absent(ctx) or not ctx.complete or ctx.server_value("SSLStaplingCache") is not None:
        return
    if not any(is_on(node) for node in ctx.directives("SSLUseStapling")):
        return  # no server staples: no host to look at
    stapling: dict[Directive, list[str]] = {}
    use_stapling = setting(ctx, "SSLUseStapling")
    for host in tls_hosts(ctx):
        node = use_stapling.of(host.vhost)
        if is_on(node):
            stapling.setdefault(node, []).append(host.label)  # type: ignore[arg-type]
    for node, labels in stapling.items():
        report(node, f"SSLUseStapling on for {who(labels)} and no SSLStaplingCache at server scope: "
                     "httpd passes `-t` but refuses to start (AH01958 'no stapling cache available').",
               fix=FIX)


RULE = Rule(code="E411", slug="ssl-stapling-no-cache", severity="error", category="correctness",
            directives=("SSLUseStapling", "SSLStaplingCache", "SSLEngine"), doc=DOC, check=check)
