"""S519: HTTP/2 offered by an httpd release with a known HTTP/2 denial of service."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._http2 import ProtocolOffer, http2_loaded, offer_name, protocol_offers

Version = tuple[int, int, int]

# `--apache-version 2.4` (the default) reads as (2, 4, 999): "the newest 2.4"
# (advisor.config.conditions.parse_version). That says nothing of the patch
# level a server runs, so the rule cannot tell an affected release from a fixed one.
UNKNOWN_PATCH = 999


@dataclass(frozen=True)
class Advisory:
    """One entry of httpd's own advisories (httpd.apache.org/security/vulnerabilities_24.html)."""

    cve: str
    first: Version
    """The first release affected."""
    last: Version
    """The last release affected; the next release has the fix."""
    what: str

    def affects(self, version: Version) -> bool:
        return self.first <= version <= self.last

    @property
    def fixed_in(self) -> str:
        return f"{self.last[0]}.{self.last[1]}.{self.last[2] + 1}"


# The advisories that httpd itself files as a denial of service (or a crash)
# through HTTP/2 requests to a server that offers h2 or h2c, ranges as httpd
# states them. Older ones (CVE-2016-8740 ... CVE-2021-41524) hit releases
# before 2.4.58, which CVE-2023-45802 already names. Left out on purpose:
# CVE-2025-49630 (mod_proxy_http2, a proxy to an HTTP/2 back end, not what
# Protocols offers), CVE-2023-44487 (Rapid Reset: httpd filed CVE-2023-45802
# for its share), and the memory-safety bugs in mod_http2 that the advisories
# do not call a denial of service (CVE-2026-23918, -48913, -57941).
ADVISORIES: tuple[Advisory, ...] = (
    Advisory("CVE-2023-43622", (2, 4, 55), (2, 4, 57),
             "a connection opened with an initial window size of 0 holds a worker indefinitely"),
    Advisory("CVE-2023-45802", (2, 4, 17), (2, 4, 57),
             "memory of reset streams kept until the connection closes"),
    Advisory("CVE-2024-27316", (2, 4, 17), (2, 4, 58),
             "headers past the limit buffered without bound (CONTINUATION flood)"),
    Advisory("CVE-2024-36387", (2, 4, 55), (2, 4, 59),
             "a WebSocket upgrade over HTTP/2 crashes the process (null pointer)"),
    Advisory("CVE-2025-53020", (2, 4, 17), (2, 4, 63),
             "memory released late: a client makes it grow"),
    Advisory("CVE-2026-49975", (2, 4, 17), (2, 4, 67),
             "compressed headers expand into allocations that flow control keeps alive"),
)


def advisories_for(version: Version) -> list[Advisory]:
    """The HTTP/2 denial-of-service advisories that name this release."""
    return [advisory for advisory in ADVISORIES if advisory.affects(version)]


DOC = Doc(
    summary="HTTP/2 offered by an httpd release with a known HTTP/2 denial of service",
    what=(
        "With mod_http2 loaded under a threaded MPM (prefork never negotiates HTTP/2), takes "
        "each Protocols line that lets a client speak HTTP/2 (h2 on a TLS server, h2c on a "
        "clear-text one) and compares the httpd version (`--apache-version 2.4.NN`, or what "
        "the host's httpd -v says in fleet lint) with httpd's own advisories of HTTP/2 denial "
        "of service: CVE-2023-43622, CVE-2023-45802, CVE-2024-27316, CVE-2024-36387, "
        "CVE-2025-53020 and CVE-2026-49975 (affected 2.4.17 to 2.4.67, fixed in 2.4.68). "
        "Without a patch level (`--apache-version 2.4`, the default) it stays silent and "
        "says so in a note when HTTP/2 is offered."
    ),
    why=(
        "Each of these lets one client, with one connection and no credentials, make the "
        "server hold memory or workers until it runs out: streams reset faster than their "
        "memory is freed (CVE-2023-45802), header blocks continued without end "
        "(CVE-2024-27316), a flow-control window of zero that never lets a response finish "
        "(CVE-2023-43622, CVE-2026-49975). RFC 9113 section 10.5 warns that HTTP/2's state "
        "per connection is what such attacks spend. The fix is in the release; no directive "
        "of these versions closes them all. A distribution may carry the fix under the old "
        "number (Debian's 2.4.67-1~deb12u3 fixed CVE-2026-49975), which a version number "
        "cannot show, so the finding is a warning to check, not an error."
    ),
    evidence=(
        "httpd's advisories: CVE-2023-45802 affects 2.4.17-2.4.57 (fixed 2.4.58), "
        "CVE-2024-27316 2.4.17-2.4.58 (fixed 2.4.59), CVE-2026-49975 2.4.17-2.4.67 (fixed "
        "2.4.68); RFC 9113 section 10.5 (denial-of-service considerations)."
    ),
    bad="# httpd 2.4.57\nLoadModule http2_module modules/mod_http2.so\nProtocols h2 http/1.1",
    good="# httpd 2.4.68 or later\nLoadModule http2_module modules/mod_http2.so\nProtocols h2 http/1.1",
    fix=(
        "Upgrade httpd to 2.4.68 or later, or to your distribution's build that carries "
        "these fixes (its changelog names the CVEs). Until then, taking h2 and h2c off the "
        "Protocols line closes the HTTP/2 attacks."
    ),
    references=(
        "https://httpd.apache.org/security/vulnerabilities_24.html",
        "CVE-2023-45802, CVE-2024-27316, CVE-2023-43622, CVE-2024-36387, CVE-2025-53020, CVE-2026-49975",
        "RFC 9113, section 10.5 (Denial-of-Service Considerations)",
        "https://httpd.apache.org/docs/2.4/mod/mod_http2.html",
    ),
)


def negotiated(offer: ProtocolOffer) -> bool:
    """A client can speak HTTP/2 here: h2 (ALPN) needs TLS, h2c needs clear text."""
    return (offer.h2 and offer.tls) or (offer.h2c and not offer.tls)


def _exposed(ctx: LintContext) -> list[list[ProtocolOffer]]:
    """The servers that negotiate HTTP/2, grouped by the Protocols line they use."""
    if not http2_loaded(ctx) or ctx.mpm == "prefork":
        return []
    by_line: dict[int, list[ProtocolOffer]] = {}
    for offer in protocol_offers(ctx):
        if offer.line is not None and negotiated(offer):
            by_line.setdefault(id(offer.line), []).append(offer)
    return list(by_line.values())


def check(ctx: LintContext, report: Report) -> None:
    major, minor, patch = ctx.version
    if (major, minor) != (2, 4):
        return
    exposed = _exposed(ctx)
    if not exposed:
        return
    if patch == UNKNOWN_PATCH:
        ctx.notes.append("S519 skipped: HTTP/2 is offered but httpd's patch level is unknown "
                         "(pass --apache-version 2.4.NN, or lint the host with --host)")
        return
    found = advisories_for(ctx.version)
    if not found:
        return
    names = ", ".join(advisory.cve for advisory in found)
    fixed = max(found, key=lambda advisory: advisory.last).fixed_in
    for offers in exposed:
        offers.sort(key=lambda offer: offer.vhost is None)  # virtual hosts first: clients meet them
        first = offers[0]
        who = offer_name(first) + (f" and {len(offers) - 1} more" if len(offers) > 1 else "")
        spoken = "h2" if first.tls else "h2c"
        report(first.line,
               f"httpd {ctx.facts.version_text} speaks HTTP/2 ({spoken}) with {who}, and httpd's "
               f"advisories list denials of service over HTTP/2 in this release: {names}. "
               f"Upgrade to {fixed} or later (or a distribution build that carries the fixes); "
               "until then, taking h2 and h2c off this line closes them.",
               fix=f"Upgrade httpd to {fixed} or later; meanwhile drop h2 and h2c from Protocols.")


RULE = Rule(code="S519", slug="h2-dos-version", severity="warning", category="security",
            directives=("Protocols", "LoadModule"), doc=DOC, check=check)
