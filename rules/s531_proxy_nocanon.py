"""S531: ProxyPass ... nocanon hands the backend the raw path."""

from __future__ import annotations

import os

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from .e415_proxy_without_reverse import by_owner, proxy_routes, server_label

DOC = Doc(
    summary="ProxyPass/ProxyPassMatch with nocanon: the backend gets the path as the client wrote it",
    what=(
        "Flags each ProxyPass and ProxyPassMatch line with the `nocanon` keyword, and says so "
        "when the same server also has `AllowEncodedSlashes NoDecode`, which lets encoded "
        "slashes through to the backend as well."
    ),
    why=(
        "mod_proxy normally canonicalises the URL it forwards: it decodes what needs no "
        "encoding and re-encodes the rest, so the backend reads the same path that httpd's "
        "<Location> rules, Require lines and rewrites were matched against. `nocanon` sends "
        "the client's bytes instead; the manual warns that this removes the proxy's "
        "protection of the backend against URL-based attacks. A backend that decodes again "
        "or reads path parameters (%252e%252e/, ..;/) can then reach a path the proxy would "
        "have refused; httpd's own advisory CVE-2024-38473 (2.4.59 and earlier) is that "
        "class of flaw, a forwarded URL whose encoding the backend read differently, past "
        "the proxy's authentication. With `AllowEncodedSlashes NoDecode` an encoded slash "
        "passes as well, so what the proxy sees as one path segment the backend may split "
        "in two. Some applications ask for nocanon and NoDecode (Jenkins documents both); "
        "keep them to that application's path."
    ),
    evidence=(
        "httpd's mod_proxy manual (ProxyPass, nocanon): it may affect the security of the "
        "backend; CVE-2024-38473 was a URL read differently by proxy and backend; RFC 3986 "
        "section 6 (URI normalisation)."
    ),
    bad="AllowEncodedSlashes NoDecode\nProxyPass / http://127.0.0.1:8080/ nocanon",
    good=("ProxyPass / http://127.0.0.1:8080/\n"
          "# or, where the application needs raw paths, only there:\n"
          "<Location /job/>\n    ProxyPass http://127.0.0.1:8080/job/ nocanon\n</Location>"),
    fix=(
        "Drop `nocanon` unless the backend needs raw paths; where it does, limit it to that "
        "application's path, keep the backend patched, and let it do its own access checks "
        "rather than trust the proxy's <Location> rules."
    ),
    references=(
        "https://httpd.apache.org/docs/2.4/mod/mod_proxy.html#proxypass (nocanon)",
        "https://httpd.apache.org/docs/2.4/mod/core.html#allowencodedslashes",
        "https://httpd.apache.org/security/vulnerabilities_24.html (CVE-2024-38473)",
        "RFC 3986, section 6 (Normalization and Comparison)",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    root = ctx.config.effective
    slashes = by_owner(ctx, "AllowEncodedSlashes")
    for route in proxy_routes(ctx):
        node = route.node
        if node.lname == "rewriterule" or not any(arg.lower() == "nocanon" for arg in node.args[1:]):
            continue
        decides = (slashes.get(route.owner) or slashes.get(root) or [None])[-1]
        message = (f"{node.name} to {route.url} in {server_label(ctx, route.owner)} uses nocanon: the "
                   "backend receives the path as the client sent it, not the canonical path httpd's "
                   "own rules matched, and may read it as another path.")
        if decides is not None and decides.arg(0).lower() == "nodecode":
            where = (f"line {decides.line}" if decides.file == node.file
                     else f"{os.path.basename(decides.file)}:{decides.line}")
            message += f" With AllowEncodedSlashes NoDecode ({where}) encoded slashes reach it too."
        report(node, message + " Drop nocanon unless this application needs raw paths.")


RULE = Rule(code="S531", slug="proxy-nocanon", severity="warning", category="security",
            directives=("ProxyPass", "ProxyPassMatch", "AllowEncodedSlashes"), doc=DOC, check=check)
