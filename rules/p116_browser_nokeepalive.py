"""P116: an old default that turns keep-alive off for clients claiming to be Internet Explorer."""

from __future__ import annotations

import re

from advisor.config.model import Directive
from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

# What such patterns meet today: the User-Agent strings of the browsers they
# were written for, and the ones that still send "MSIE" (crawlers, scanners
# and monitoring tools copy old IE strings; IE 11 in compatibility view).
_AGENTS = (
    ("Internet Explorer 6", "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)"),
    ("Internet Explorer 8", "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; Trident/4.0)"),
    ("Internet Explorer 10", "Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.1; Trident/6.0)"),
    ("Internet Explorer 11 in compatibility view",
     "Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 10.0; WOW64; Trident/7.0)"),
    ("Chrome", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
               "Chrome/131.0.0.0 Safari/537.36"),
    ("Firefox", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"),
)

DOC = Doc(
    summary="BrowserMatch \"MSIE [2-6]\" nokeepalive: keep-alive off for clients that send an IE User-Agent",
    what=(
        "Flags BrowserMatch, BrowserMatchNoCase and SetEnvIf(NoCase) User-Agent lines that "
        "set `nokeepalive` with a pattern that matches a User-Agent still sent today: "
        "Internet Explorer 6 to 10, IE 11 in compatibility view (and the crawlers and "
        "scanners that copy those strings), or a current browser. Debian's and RHEL's old "
        "ssl.conf wrote `BrowserMatch \"MSIE [2-6]\" nokeepalive ssl-unclean-shutdown "
        "downgrade-1.0 force-response-1.0` (earlier `MSIE [2-5]`, and Apache 2.0's "
        "`SetEnvIf User-Agent \".*MSIE.*\"`). A pattern only an extinct client sends "
        "(`\"Mozilla/2\"`, `\"MSIE 4\\.0b2;\"`) costs nothing and is not flagged, nor is "
        "`\"MSIE [17-9]\" ssl-unclean-shutdown`, which leaves keep-alive alone."
    ),
    why=(
        "The lines worked around bugs of Internet Explorer 5 and 6 with SSL keep-alive, "
        "browsers gone for over a decade. What still matches pays: every request closes its "
        "connection, so the next one opens a new TCP connection and, over TLS, a new "
        "handshake; downgrade-1.0 and force-response-1.0 also answer in HTTP/1.0. Arlitt & "
        "Williamson (2004, sec. 5.1.6) measured what reuse saves on a 1 KB file: 7,300 "
        "replies/s at one request per connection, 9,600 at two and 11,200 at eight. Over "
        "TLS it costs more: issue 27 measured 0.66 ms of server CPU per reply at one request "
        "per connection against 0.22 ms at five (docs/bench.md)."
    ),
    evidence=(
        "Arlitt & Williamson (2004, sec. 5.1.6): 7,300 replies/s at one request per "
        "connection, 9,600 at two, 11,200 at eight; issue 27 (docs/bench.md): 0.66 ms "
        "server CPU per TLS reply at one request per connection against 0.22 ms at five."
    ),
    bad='BrowserMatch "MSIE [2-6]" nokeepalive ssl-unclean-shutdown downgrade-1.0 force-response-1.0',
    good="# (nothing: current browsers need no workaround)",
    fix="Delete the line (and its `MSIE [17-9]` companion if only old IE needed it).",
    references=(
        "Arlitt & Williamson 2004, sec. 5.1.6 (persistent connections)",
        "https://httpd.apache.org/docs/2.4/env.html#special (nokeepalive, downgrade-1.0, force-response-1.0)",
        "https://httpd.apache.org/docs/2.4/mod/mod_setenvif.html#browsermatch",
        "docs/bench.md, 'HTTPS' (issue 27)",
    ),
)


def _pattern_and_variables(node: Directive) -> tuple[str, list[str]] | None:
    """(pattern, variables) of a line that tests the User-Agent, else None."""
    args = node.args
    if node.lname in ("browsermatch", "browsermatchnocase"):
        return (args[0], args[1:]) if len(args) >= 2 else None
    if len(args) >= 3 and args[0].lower() == "user-agent":
        return args[1], args[2:]
    return None


def _matched(pattern: str, nocase: bool) -> list[str]:
    """The clients of `_AGENTS` whose User-Agent the pattern matches."""
    try:
        compiled = re.compile(pattern, re.IGNORECASE if nocase else 0)
    except re.error:
        return []
    return [name for name, agent in _AGENTS if compiled.search(agent)]


def _clients(node: Directive) -> list[str]:
    """The clients of today a nokeepalive line matches ([] for any other line)."""
    found = _pattern_and_variables(node)
    if found is None:
        return []
    pattern, variables = found
    if not any(word.lower().split("=", 1)[0] == "nokeepalive" for word in variables):
        return []
    return _matched(pattern, node.lname.endswith("nocase"))


def check(ctx: LintContext, report: Report) -> None:
    # (name, argument list) -> clients: the reader shares one argument list
    # between the lines of one text, so 20,000 hosts' copies are judged once.
    judged: dict[tuple[str, int], list[str]] = {}
    for node in ctx.directives("BrowserMatch", "BrowserMatchNoCase", "SetEnvIf", "SetEnvIfNoCase"):
        key = (node.lname, id(node.args))
        clients = judged.get(key)
        if clients is None:
            clients = judged[key] = _clients(node)
        if not clients:
            continue
        pattern, variables = _pattern_and_variables(node)  # type: ignore[misc]
        also = [word for word in variables if word.lower() in ("downgrade-1.0", "force-response-1.0")]
        extra = f", and {' and '.join(also)} answer them in HTTP/1.0" if also else ""
        report(node, f"{node.name} {pattern!r} sets nokeepalive for every client whose User-Agent it "
                     f"matches: today the strings of {', '.join(clients)} (crawlers and scanners still "
                     "send old IE strings). Each such request closes its connection (a new TCP connection, and over "
                     f"TLS a new handshake, for the next){extra}.",
               fix="Delete this line: the browsers it worked around are long gone.")


RULE = Rule(code="P116", slug="browser-nokeepalive", severity="info", category="performance",
            directives=("BrowserMatch", "BrowserMatchNoCase", "SetEnvIf", "SetEnvIfNoCase"), doc=DOC,
            check=check)
