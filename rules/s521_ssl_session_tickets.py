"""S521: TLS session tickets left on, so one key long-lived in memory opens every session."""

from __future__ import annotations

from advisor.config.model import Directive
from advisor.lint.context import LintContext
from advisor.lint.edits import add_directive, set_value
from advisor.lint.rule import Doc, Report, Rule

from ._tls import (Setting, TlsHost, has_session_cache, is_on, noting_assumed_version, setting, ssl_absent,
                   tickets_off, tls_hosts, who)
from .s505_ssl_protocol import DEFAULT_24, admitted

FIX = "SSLSessionTickets off"

# Server-scope mod_ssl lines the new `SSLSessionTickets off` goes after, in
# order of preference: Debian's ssl.conf holds the first ones, inside its
# <IfModule mod_ssl.c>, so the new line stays where mod_ssl is loaded.
_ANCHORS = ("sslsessioncachetimeout", "sslsessioncache", "sslprotocol", "sslciphersuite",
            "sslhonorcipherorder", "sslpassphrasedialog", "sslrandomseed")

DOC = Doc(
    summary="TLS session tickets on (httpd's default): one long-lived key undoes forward secrecy",
    what=(
        "For each server with SSLEngine on, reads the SSLSessionTickets in effect (its own, "
        "else the main server's, else httpd's default: on, since 2.4.11 when the directive "
        "came). Flags an explicit `SSLSessionTickets on`, and once per tree the TLS hosts that "
        "run with the default, pointing at the first host's SSLEngine line. "
        "`SSLOpenSSLConfCmd Options -SessionTicket` counts as off. A host with "
        "SSLSessionTicketKeyFile is left alone (its keys are rotated by whoever writes that "
        "file), and so is a host whose SSLProtocol admits TLS 1.3 alone. The default is only "
        "claimed for a whole config, not a lone file."
    ),
    why=(
        "A session ticket is the session's master secret encrypted with a key the server holds "
        "in memory; mod_ssl makes that key at start and keeps it until httpd restarts. TLS 1.2 "
        "sends the ticket in clear text, so whoever obtains the key later (a memory dump, a "
        "compromised host) can decrypt every recorded TLS 1.2 connection that got or used a "
        "ticket: the ephemeral key exchange no longer protects past traffic. (TLS 1.3 "
        "resumption mixes in a fresh key exchange, psk_dhe_ke, which is why a TLS 1.3-only "
        "host is left alone.) mod_ssl's own documentation warns that tickets without restarts "
        "at a suitable frequency (e.g. daily) compromise forward secrecy, and Mozilla's generator "
        "writes `SSLSessionTickets off` in all three profiles. With tickets off, resumption "
        "goes through the server's session cache instead, and on one server that costs nothing "
        "measurable. Measured on the sandbox (docs/bench.md, 'The session cache and tickets'; "
        "bench/tls_resumption.py: prefork held to half a core, ECDSA P-256, httpd 2.4.71 with "
        "OpenSSL 3.0, resumptions counted by OpenSSL's s_time and s_client, the server's CPU "
        "from its cgroup, medians of 5 interleaved rounds): with an shmcb cache, every offered "
        "session resumed with tickets off as with tickets on, in TLS 1.2 and 1.3, and a "
        "resumption cost the server 0.60 ms per reply with tickets off against 0.55 ms with "
        "them (TLS 1.2), 1.11 against 1.01 ms (TLS 1.3), differences within the rounds' spread "
        "(0.52-0.61 against 0.49-0.62 ms). Without a cache, tickets off resumed nothing (P115). "
        "Tickets matter for speed only where no cache is shared, several servers behind one "
        "name."
    ),
    evidence=(
        "mod_ssl docs (SSLSessionTickets): tickets without regular restarts compromise perfect "
        "forward secrecy; RFC 5077 sec. 5 (stolen tickets, ticket key management); Mozilla "
        "Server Side TLS: SSLSessionTickets off in every profile."
    ),
    bad="SSLEngine on\n# SSLSessionTickets not set: on",
    good="SSLSessionCache shmcb:${APACHE_RUN_DIR}/ssl_scache(512000)\nSSLSessionTickets off",
    fix=(
        "Write `SSLSessionTickets off` at server scope (Debian: in mods-available/ssl.conf "
        "beside SSLSessionCache) and keep a session cache so that resumption still works. "
        "A cluster that must share tickets keeps them with SSLSessionTicketKeyFile and "
        "rotates that file daily."
    ),
    references=(
        "https://httpd.apache.org/docs/2.4/mod/mod_ssl.html#sslsessiontickets",
        "RFC 5077, 'TLS Session Resumption without Server-Side State', sec. 5 (security considerations)",
        "RFC 8446, 'TLS 1.3', sec. 2.2 and 4.2.9 (resumption with psk_dhe_ke)",
        "Mozilla SSL Configuration Generator, Apache (https://ssl-config.mozilla.org/)",
        "docs/bench.md, 'The session cache and tickets' (bench/tls_resumption.py): server CPU per "
        "resumption with tickets on and off beside a session cache",
    ),
)


def _anchor(ctx: LintContext) -> Directive | None:
    top = ctx.effective.top
    for name in _ANCHORS:
        found = top.get(name)
        if found:
            return found[-1]
    return None


def _tls13_only(protocols: Setting, host: TlsHost, verdicts: dict[int, bool]) -> bool:
    """Whether the host's SSLProtocol admits TLS 1.3 and nothing older."""
    node = protocols.of(host.vhost)
    args = node.args if node is not None else DEFAULT_24
    verdict = verdicts.get(id(args))
    if verdict is None:
        verdict = verdicts[id(args)] = admitted(args) == {"tlsv1.3"}
    return verdict


def check(ctx: LintContext, report: Report) -> None:
    report = noting_assumed_version(ctx, report, "S521", "2.4.11")
    if ssl_absent(ctx) or not ctx.at_least(2, 4, 11):
        return
    explicit: dict[Directive, list[str]] = {}
    defaulted: list[TlsHost] = []
    verdicts: dict[int, bool] = {}
    tickets, key_file = setting(ctx, "SSLSessionTickets"), setting(ctx, "SSLSessionTicketKeyFile")
    protocols = setting(ctx, "SSLProtocol")
    for host in tls_hosts(ctx):
        if tickets_off(ctx, host) is not None or key_file.of(host.vhost) is not None:
            continue
        if _tls13_only(protocols, host, verdicts):
            continue
        node = tickets.of(host.vhost)
        if node is None:
            defaulted.append(host)
        elif is_on(node):
            explicit.setdefault(node, []).append(host.label)
    cache_note = ("" if has_session_cache(ctx) else
                  " Add an SSLSessionCache too: with tickets off and no cache nothing resumes (P115).")
    for node, labels in explicit.items():
        report(node, f"SSLSessionTickets on for {who(labels)}: the ticket key lives until httpd "
                     "restarts, and whoever obtains it can decrypt the recorded TLS 1.2 sessions that "
                     f"carried a ticket (forward secrecy lost).{cache_note}",
               fix=FIX, edit=set_value(ctx, node, "off"))
    if defaulted and ctx.complete:
        first = defaulted[0]
        report(first.engine, f"SSLSessionTickets is on by default (not written anywhere) for "
                             f"{who([host.label for host in defaulted])}: the ticket key lives until "
                             "httpd restarts, and whoever obtains it can decrypt the recorded TLS 1.2 "
                             f"sessions that carried a ticket (forward secrecy lost).{cache_note}",
               fix=FIX, edit=add_directive(ctx, FIX, after=_anchor(ctx)))


RULE = Rule(code="S521", slug="ssl-session-tickets", severity="warning", category="security",
            directives=("SSLSessionTickets", "SSLOpenSSLConfCmd", "SSLEngine"), doc=DOC, check=check,
            fixable=True)
