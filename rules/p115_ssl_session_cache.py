"""P115: mod_ssl serving TLS without a session cache: a reconnect is a full handshake."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._tls import TlsHost, socache_missing, ssl_absent, tickets_off, tls_hosts, who

FIX = "SSLSessionCache shmcb:/var/run/apache2/ssl_scache(512000)"

DOC = Doc(
    summary="TLS hosts without a usable SSLSessionCache: reconnecting clients cannot resume",
    what=(
        "When a server has SSLEngine on, reads SSLSessionCache (a server-wide setting) and "
        "flags `none`, a cache type whose socache module is not loaded (httpd refuses that "
        "line), and, in a whole config, no SSLSessionCache at all, saying when the line that "
        "sets one sits in a section httpd skips (an <IfModule> of a socache module that is "
        "not loaded). A warning when a TLS host has session tickets off (then nothing "
        "resumes); information while tickets are on, since they then carry resumption alone "
        "and S521 asks to turn them off."
    ),
    why=(
        "A client that reconnects (a new connection after the keep-alive timeout, a second "
        "connection of the same browser, another prefork child) offers its earlier session; "
        "without a server-side cache and without tickets, the server can only make a full "
        "handshake again: a fresh key exchange plus a certificate signature. Checked on this "
        "machine (httpd 2.4.71, OpenSSL 3.0): with tickets off and no cache neither TLS 1.2 "
        "nor TLS 1.3 sessions resumed; with an shmcb cache both did. What a handshake costs "
        "the server was measured in issue 27 (docs/bench.md, 'HTTPS'): the sandbox's prefork "
        "with its stock pool on one core and httperf on the other, a 1 KB file at 300 "
        "replies/s for 5 s after the warm-up, TLS 1.3, ECDSA P-256, single runs, the server's "
        "CPU time divided by its replies: 0.66 ms with one request, so one full handshake, per "
        "connection against 0.22 ms with five requests per connection; with sessions "
        "resumed from the cache (tickets off) 0.57 ms against 0.63 ms never resumed, and "
        "with RSA-2048, whose signature resumption saves, 0.66 ms against 0.96 ms. Arlitt & "
        "Williamson (2004, sec. 5.1.6) found the per-connection cost large even without "
        "TLS: 7,300 replies/s at one 1 KB request per connection, 9,600 at two."
    ),
    evidence=(
        "Issue 27 (docs/bench.md): server CPU per reply 0.66 ms at one request per "
        "connection (a full TLS 1.3 handshake each) against 0.22 ms at five; RSA-2048 "
        "sessions 0.66 ms resumed from the cache against 0.96 ms never resumed. Arlitt & "
        "Williamson (2004, sec. 5.1.6): 7,300 replies/s at one request per connection, "
        "9,600 at two."
    ),
    bad="SSLSessionCache none",
    good=("LoadModule socache_shmcb_module modules/mod_socache_shmcb.so\n"
          "SSLSessionCache shmcb:${APACHE_RUN_DIR}/ssl_scache(512000)\nSSLSessionCacheTimeout 300"),
    fix=(
        "Load mod_socache_shmcb and set `SSLSessionCache shmcb:PATH(512000)` at server scope "
        "(Debian's ssl.conf does, with `a2enmod ssl` enabling socache_shmcb); shmcb needs no "
        "directory on Linux, where it uses anonymous shared memory."
    ),
    references=(
        "https://httpd.apache.org/docs/2.4/mod/mod_ssl.html#sslsessioncache",
        "docs/bench.md, 'HTTPS' (issue 27): server CPU per reply with and without reconnects",
        "Arlitt & Williamson 2004, sec. 5.1.6 (persistent connections)",
    ),
)


def _skipped_line(ctx: LintContext) -> str:
    """' (the SSLSessionCache at FILE:LINE sits in a section httpd skips)', or ''."""
    for node in ctx.raw_directives("SSLSessionCache", active_only=False):
        if not node.active:
            return f" (the SSLSessionCache at {node.file}:{node.line} sits in a section httpd skips)"
    return ""


def check(ctx: LintContext, report: Report) -> None:
    if ssl_absent(ctx):
        return
    hosts = tls_hosts(ctx)
    if not hosts:
        return
    without_tickets: list[TlsHost] = [host for host in hosts if tickets_off(ctx, host) is not None]
    if without_tickets:
        severity = "warning"
        outcome = (f"with session tickets off for {who([h.label for h in without_tickets])}, no "
                   "reconnecting client resumes: every new connection is a full handshake")
    else:
        severity = "info"
        outcome = ("resumption rests on session tickets alone, which S521 asks to turn off; "
                   "a client without a ticket makes a full handshake on every new connection")
    cache = ctx.server_value("SSLSessionCache")
    if cache is None:
        if ctx.complete:
            report(hosts[0].engine, f"No SSLSessionCache in effect{_skipped_line(ctx)}: {outcome}.",
                   fix=FIX, severity=severity)
        return
    kind = cache.args[0].lower() if cache.args else ""
    if kind in ("none", "nonenotnull"):
        report(cache, f"SSLSessionCache {cache.args[0]}: {outcome}.", fix=FIX, severity=severity)
        return
    # The socache providers are modules of their own since 2.4 (2.2's mod_ssl had them built in).
    missing = socache_missing(ctx, cache) if ctx.facts.version_key == "2.4" else None
    if missing:
        report(cache, f"SSLSessionCache {kind.split(':')[0]}: needs {missing[0]}, which is not loaded: "
                      "httpd refuses this line and does not start.",
               fix=f"LoadModule {missing[0]} before this line", severity="error")


RULE = Rule(code="P115", slug="ssl-session-cache-missing", severity="warning", category="performance",
            directives=("SSLSessionCache", "SSLSessionTickets", "SSLEngine"), doc=DOC, check=check)
