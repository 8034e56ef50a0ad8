"""S523: SSLProtocol that leaves TLS 1.3 out on an httpd that speaks it."""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.edits import set_value
from advisor.lint.rule import Doc, Report, Rule

from ._tls import noting_assumed_version, ssl_absent
from .s505_ssl_protocol import admitted, problem

DOC = Doc(
    summary="SSLProtocol leaves TLSv1.3 out (e.g. `SSLProtocol TLSv1.2`) on httpd 2.4.36 or later",
    what=(
        "Evaluates each SSLProtocol line as mod_ssl does and flags one that admits some "
        "version but not TLSv1.3, on httpd 2.4.36 or later (mod_ssl's TLSv1.3 came with the "
        "2.4.36 changes, first released as 2.4.37 in October 2018; the rule assumes the "
        "OpenSSL 1.1.1 or later that distributions build those versions with). A line that also admits a version the TLS profile refuses is S505's alone: "
        "S505's fix writes the profile's full list, TLSv1.3 included, and two fixes of one "
        "line would collide. The version comes from --apache-version, the settings file or "
        "the live host; without one, the newest 2.4 is assumed."
    ),
    why=(
        "TLS 1.3 (RFC 8446) completes a full handshake in one round trip where TLS 1.2 needs "
        "two, offers only AEAD suites with forward secrecy, and encrypts the certificate. RFC 9325 (BCP 195) says implementations should support "
        "TLS 1.3 and prefer it, and Mozilla's modern, intermediate and old profiles all "
        "include it. A line written when TLSv1.2 was the newest version keeps every client "
        "on the older protocol and its extra round trip (50 ms per new connection for a "
        "visitor 50 ms away). Nothing breaks, so this is information."
    ),
    evidence=(
        "RFC 9325 (BCP 195) sec. 3.1.1: support TLS 1.3 and prefer it; RFC 8446: one round "
        "trip for a full handshake; Mozilla Server Side TLS: TLSv1.3 in every profile."
    ),
    bad="SSLProtocol TLSv1.2",
    good="SSLProtocol -all +TLSv1.2 +TLSv1.3",
    fix=("Add `+TLSv1.3` to the line (`SSLProtocol TLSv1.2` becomes `SSLProtocol TLSv1.2 +TLSv1.3`), "
         "or drop the `-TLSv1.3` that takes it out."),
    references=(
        "RFC 9325, 'Recommendations for Secure Use of TLS and DTLS' (BCP 195), sec. 3.1.1",
        "RFC 8446, 'The Transport Layer Security (TLS) Protocol Version 1.3'",
        "https://httpd.apache.org/docs/2.4/mod/mod_ssl.html#sslprotocol",
        "Mozilla Server Side TLS guidelines (https://wiki.mozilla.org/Security/Server_Side_TLS)",
    ),
)


def _with_tls13(args: list[str]) -> str:
    """The arguments with TLSv1.3 in: a `-TLSv1.3` dropped, else `+TLSv1.3` added."""
    kept = [word for word in args if word.lower() != "-tlsv1.3"]
    if "tlsv1.3" not in admitted(kept):
        kept.append("+TLSv1.3")
    return " ".join(kept)


def check(ctx: LintContext, report: Report) -> None:
    report = noting_assumed_version(ctx, report, "S523", "2.4.36")
    if ssl_absent(ctx) or not ctx.at_least(2, 4, 36):
        return
    tls = ctx.tls_profile
    verdicts: dict[tuple[str, ...], bool] = {}
    for node in ctx.directives("SSLProtocol"):
        key = tuple(node.args)  # per value: a file the reader split alone has lists of its own
        lacking = verdicts.get(key)
        if lacking is None:
            versions = admitted(node.args)
            lacking = verdicts[key] = (bool(versions) and "tlsv1.3" not in versions
                                       and problem(node.args, tls) is None)
        if not lacking:
            continue
        value = _with_tls13(node.args)
        report(node, f"SSLProtocol {' '.join(node.args)} leaves TLSv1.3 out: every client stays on an "
                     "older protocol and its two-round-trip handshake.",
               fix=f"SSLProtocol {value}", edit=set_value(ctx, node, value))


RULE = Rule(code="S523", slug="tls13-off", severity="info", category="security",
            directives=("SSLProtocol",), doc=DOC, check=check, fixable=True,
            tls_profiles=(
                ("modern", "TLSv1.3 is the only version: a line without it admits TLSv1.2, which "
                           "S505 flags (its fix writes `-all +TLSv1.3`)."),
                ("intermediate", "TLSv1.2 with TLSv1.3: a line that admits TLSv1.2 alone is flagged here."),
                ("old", "TLSv1 to TLSv1.3: a line that leaves TLSv1.3 out is flagged here."),
            ))
