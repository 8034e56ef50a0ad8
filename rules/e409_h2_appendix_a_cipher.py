"""E409: a host offering h2 over TLS 1.2 whose cipher order can pick a suite HTTP/2 forbids."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.config.model import Directive, Section
from advisor.lint.context import LintContext
from advisor.lint.edits import set_value
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import parse_flag

from ._ciphers import Cipher, admitted
from ._http2 import ProtocolOffer, http2_loaded, offer_name, protocol_offers
from .s505_ssl_protocol import DEFAULT_24
from .s505_ssl_protocol import admitted as protocols_admitted

ALLOWED_FIRST = "ECDHE+AESGCM:ECDHE+CHACHA20"
"""What the fix puts in front: every ECDHE suite with AES-GCM or ChaCha20-Poly1305."""

CERTIFICATE_KEYS = ("RSA", "ECDSA")
"""The certificate kinds a server holds; a suite is usable only with its own kind."""

DOC = Doc(
    summary=("h2 over TLS 1.2 with a cipher order that can pick a suite RFC 7540's Appendix A "
             "forbids"),
    what=(
        "For each server and virtual host that offers h2 over TLS (Protocols with h2 in "
        "effect, SSLEngine on, mod_http2 loaded, an MPM that runs HTTP/2) and admits TLS 1.2 "
        "(SSLProtocol in effect: its own, else the main server's, else httpd's `all -SSLv3`), "
        "reads the TLS 1.2 SSLCipherSuite in effect (its own, else the main server's) in "
        "OpenSSL's order and flags it when: with SSLHonorCipherOrder on, a suite listed in "
        "RFC 7540's Appendix A comes before the first suite HTTP/2 allows (the server takes "
        "its first suite the client also offers); or, whatever SSLHonorCipherOrder says, no "
        "allowed suite is listed at all. HTTP/2 allows (EC)DHE key exchange with AES-GCM, "
        "AES-CCM or ChaCha20-Poly1305; every other TLS 1.2 suite (CBC, RC4, RSA key "
        "exchange, anonymous, PSK) is on the list. With SSLHonorCipherOrder off (httpd's "
        "default) and an allowed suite listed, the client's order decides, and browsers put "
        "ECDHE with AES-GCM or ChaCha20 first, so the rule says nothing. Only suites a TLS "
        "client can be given are counted: RC4, single DES and export suites (gone from "
        "OpenSSL 1.1.0 and later), NULL, anonymous, PSK, SRP and DSS suites are skipped. "
        "The certificate's key is not known to lint: the order is read for an RSA and for "
        "an ECDSA certificate, and a finding that holds for one kind only names it. TLS "
        "1.3 suites (SSLCipherSuite TLSv1.3) are never on the list."
    ),
    why=(
        "httpd chooses the application protocol (ALPN: h2) and OpenSSL chooses the cipher "
        "suite independently, in the same handshake. RFC 7540 sec. 9.2.2 says HTTP/2 over "
        "TLS 1.2 should not use the suites of its Appendix A and lets either end treat one "
        "as a connection error of type INADEQUATE_SECURITY; RFC 9113 sec. 9.2.2 keeps the "
        "rule and the list. Browsers do so: a page whose connection got, say, "
        "ECDHE-RSA-AES128-SHA256 over h2 does not load, although the same browser offered "
        "that suite for HTTP/1.1 sites. mod_http2 does the same on its side "
        "(H2ModernTLSOnly, on by default). The server's order decides only with "
        "SSLHonorCipherOrder on: then a CBC or RSA key exchange suite listed first (the "
        "BEAST-era lists that put ECDHE-RSA-AES128-SHA256 or AES128-SHA first did so on "
        "purpose) is exactly what a TLS 1.2 client gets. Clients that speak TLS 1.3 never "
        "use these suites; the clients limited to TLS 1.2 are the ones that fail."
    ),
    evidence=(
        "RFC 9113 sec. 9.2.2 and Appendix A (as RFC 7540 sec. 9.2.2): TLS 1.2 suites without "
        "an ephemeral key exchange or an AEAD cipher may end an HTTP/2 connection with "
        "INADEQUATE_SECURITY."
    ),
    bad=(
        "Protocols h2 http/1.1\nSSLHonorCipherOrder on\n"
        "SSLCipherSuite ECDHE-RSA-AES128-SHA256:AES128-GCM-SHA256:RC4:HIGH:!MD5:!aNULL:!EDH"
    ),
    good=(
        "Protocols h2 http/1.1\nSSLHonorCipherOrder off\n"
        "SSLCipherSuite ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
        "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
        "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
    ),
    fix=(
        f"Put the suites HTTP/2 allows first: `SSLCipherSuite {ALLOWED_FIRST}:` followed by "
        "the list as it was (the fix writes that), or better, Mozilla's intermediate list "
        "with SSLHonorCipherOrder off. Where only TLS 1.3 clients matter, `SSLProtocol -all "
        "+TLSv1.3` ends the question."
    ),
    references=(
        "RFC 9113, HTTP/2, sec. 9.2.2 and Appendix A (TLS 1.2 cipher suites)",
        "RFC 7540, HTTP/2, sec. 9.2.2 and Appendix A (TLS 1.2 Cipher Suite Black List)",
        "https://httpd.apache.org/docs/2.4/mod/mod_http2.html#h2moderntlsonly",
        "https://httpd.apache.org/docs/2.4/mod/mod_ssl.html#sslhonorcipherorder",
        "https://ssl-config.mozilla.org/",
    ),
)


@dataclass(frozen=True)
class Pick:
    """What the server's order gives a client with one kind of certificate."""

    key: str
    """RSA or ECDSA."""
    prohibited: Cipher | None
    """The first usable suite, when Appendix A lists it."""
    allowed: Cipher | None
    """The first usable suite HTTP/2 allows, None when there is none."""


def _usable(cipher: Cipher, key: str) -> bool:
    """A suite a TLS 1.2 client can be given with a `key` certificate: not one
    OpenSSL 1.1.0 and later no longer build (RC4, DES, export), nor one no
    browser offers (NULL, anonymous, PSK, SRP)."""
    if cipher.export or cipher.enc in ("RC4", "DES", "NULL") or cipher.kx in ("PSK", "SRP"):
        return False
    return cipher.auth == key


def picks(spec: str) -> list[Pick]:
    """The server's order read once per certificate kind the list can serve."""
    ciphers = admitted(spec)
    found = []
    for key in CERTIFICATE_KEYS:
        usable = [cipher for cipher in ciphers if _usable(cipher, key)]
        if not usable:
            continue
        allowed = next((cipher for cipher in usable if cipher.http2_prohibited is None), None)
        first = usable[0]
        found.append(Pick(key, first if first.http2_prohibited else None, allowed))
    return found


def failing(spec: str, honored: bool) -> list[Pick]:
    """The certificate kinds for which a TLS 1.2 client can get a listed suite."""
    return [pick for pick in picks(spec)
            if pick.prohibited is not None and (honored or pick.allowed is None)]


@dataclass(frozen=True)
class Host:
    """One server offering h2 over TLS, with the lines that decide its suites."""

    label: str
    suite: tuple[Directive, str] | None
    honored: bool
    versions: set[str]


def _tls12_suite(nodes: list[Directive]) -> tuple[Directive, str] | None:
    """The last line that sets the TLS 1.2 list: `SSLCipherSuite SPEC` or
    `SSLCipherSuite SSL SPEC` (a TLSv1.3 line sets the other list)."""
    for node in reversed(nodes):
        words = node.args
        if len(words) == 1 or (len(words) >= 2 and words[0].lower() == "ssl"):
            return node, words[-1] if len(words) == 1 else words[1]
    return None


def _own(section: Section, lname: str) -> list[Directive]:
    return [child for child in section.children
            if isinstance(child, Directive) and child.lname == lname]


def _host(ctx: LintContext, offer: ProtocolOffer) -> Host:
    def in_effect(name: str) -> list[Directive]:
        own = _own(offer.vhost, name.lower()) if offer.vhost is not None else []
        return own or ctx.server(name)

    suite = None
    if offer.vhost is not None:
        suite = _tls12_suite(_own(offer.vhost, "sslciphersuite"))
    suite = suite or _tls12_suite(ctx.server("SSLCipherSuite"))
    honor = in_effect("SSLHonorCipherOrder")
    protocol = in_effect("SSLProtocol")
    versions = protocols_admitted(protocol[-1].args if protocol else DEFAULT_24)
    return Host(offer_name(offer), suite, bool(honor) and parse_flag(honor[-1].arg(0)) is True,
                versions)


def _h2_hosts(ctx: LintContext) -> list[Host]:
    """The servers that negotiate h2 over TLS 1.2."""
    if ctx.modules_known and not ctx.has_module("ssl_module", "mod_ssl.c"):
        return []
    if not http2_loaded(ctx) or ctx.mpm == "prefork":
        return []  # h2 is never negotiated then (E408's finding)
    hosts = []
    for offer in protocol_offers(ctx):
        if not (offer.h2 and offer.tls):
            continue
        host = _host(ctx, offer)
        if "tlsv1.2" in host.versions:
            hosts.append(host)
    return hosts


def _message(labels: list[str], honored: bool, found: list[Pick], all_kinds: int,
             tls13: bool) -> str:
    who = labels[0] if len(labels) == 1 else f"{labels[0]} and {len(labels) - 1} more"
    offers = "offers" if len(labels) == 1 else "offer"
    pick = found[0]
    bad = pick.prohibited
    assert bad is not None
    which = f"with an {pick.key} certificate, " if len(found) < all_kinds else ""
    if honored and pick.allowed is not None:
        text = (f"SSLCipherSuite puts {bad.name} ({bad.http2_prohibited}) ahead of "
                f"{pick.allowed.name}, the first suite HTTP/2 allows, and {who} {offers} h2 "
                f"over TLS 1.2 with SSLHonorCipherOrder on: {which}a TLS 1.2 client that "
                f"offers {bad.name} gets it")
    else:
        text = (f"SSLCipherSuite admits no TLS 1.2 suite HTTP/2 allows (ECDHE or DHE with "
                f"AES-GCM, AES-CCM or ChaCha20-Poly1305) for {who}, which {offers} h2 over "
                f"TLS 1.2: {which}a TLS 1.2 client gets a suite such as {bad.name} "
                f"({bad.http2_prohibited})")
    text += (", and the HTTP/2 connection then fails with INADEQUATE_SECURITY (RFC 9113 "
             "sec. 9.2.2, Appendix A).")
    if tls13:
        text += " Clients that speak TLS 1.3 are not affected; those limited to TLS 1.2 are."
    return text


def check(ctx: LintContext, report: Report) -> None:
    # (cipher line, honour order, TLS 1.3 too) -> the hosts that share it
    uses: dict[tuple[int, bool, bool], tuple[Directive, str, list[str]]] = {}
    for host in _h2_hosts(ctx):
        if host.suite is None:
            continue  # OpenSSL's DEFAULT: ECDHE with AES-GCM first
        node, spec = host.suite
        entry = uses.setdefault((id(node), host.honored, "tlsv1.3" in host.versions),
                                (node, spec, []))
        entry[2].append(host.label)
    for (_, honored, tls13), (node, spec, labels) in uses.items():
        found = failing(spec, honored)
        if not found:
            continue
        message = _message(labels, honored, found, len(picks(spec)), tls13)
        fixed = f"{ALLOWED_FIRST}:{spec}"
        if failing(fixed, honored) or any(pick.allowed is None for pick in picks(fixed)):
            report(node, message)
            continue
        value = f'"{fixed}"' if " " in fixed else fixed
        if len(node.args) >= 2:
            value = f"{node.args[0]} {value}"
        report(node, message, fix=f"SSLCipherSuite {value}", edit=set_value(ctx, node, value))


RULE = Rule(code="E409", slug="h2-appendix-a-cipher", severity="warning", category="correctness",
            directives=("SSLCipherSuite", "SSLHonorCipherOrder", "SSLProtocol", "Protocols",
                        "SSLEngine"),
            doc=DOC, check=check, fixable=True)
