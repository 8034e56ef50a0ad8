"""P115: mod_ssl serving TLS without a session cache: a reconnect is a full handshake."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._tls import TlsHost, session_cache_line, socache_missing, ssl_absent, tickets_off, tls_hosts, who

FIX = "SSLSessionCache shmcb:/var/run/apache2/ssl_scache(512000)"

DOC = Doc(
    summary="TLS hosts without a usable SSLSessionCache: reconnecting clients cannot resume",
    what=(
        "When a server has SSLEngine on, reads SSLSessionCache (a server-wide setting) and "
        "flags `none` (when no earlier line set a cache: mod_ssl's `none` leaves an earlier "
        "line's cache in effect), a cache type whose socache module is not loaded (httpd refuses that "
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
        "handshake again: a fresh key exchange plus a certificate signature. Measured on the "
        "sandbox (docs/bench.md, 'The session cache and tickets'; bench/tls_resumption.py: "
        "prefork held to half a core, ECDSA P-256, httpd 2.4.71 with OpenSSL 3.0, OpenSSL's "
        "s_time and s_client as clients counting which connections resumed, the server's CPU "
        "from its cgroup, medians of 5 interleaved rounds): with tickets off and no cache, none "
        "of 25 chained reconnects resumed in TLS 1.2 or 1.3, and a returning client cost a full "
        "handshake, 1.16 ms of server CPU per reply in TLS 1.2 and 1.29 ms in TLS 1.3, against "
        "0.60 and 1.11 ms resumed from an shmcb cache. Half a core would then serve about 430 "
        "returning TLS 1.2 connections a second instead of 840. TLS 1.3 saves less by resuming "
        "(15 to 23 %), since its resumption still makes a key exchange. Arlitt & Williamson "
        "(2004, sec. 5.1.6) found the per-connection cost large even without TLS: 7,300 "
        "replies/s at one 1 KB request per connection, 9,600 at two."
    ),
    evidence=(
        "bench/tls_resumption.py (docs/bench.md): with no cache and tickets off nothing resumed, "
        "and server CPU per reply was 1.16 ms (TLS 1.2) and 1.29 ms (TLS 1.3) against 0.60 and "
        "1.11 ms resumed from shmcb (prefork at half a core, ECDSA P-256, 5 rounds). Arlitt & "
        "Williamson (2004, sec. 5.1.6): 7,300 replies/s at one request per connection, 9,600 at "
        "two."
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
        "docs/bench.md, 'The session cache and tickets' (bench/tls_resumption.py): handshakes and "
        "server CPU per reply with the cache and tickets on and off",
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
    cache = session_cache_line(ctx)
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
