"""S530: request text copied into a proxied URL on an httpd open to CVE-2023-25690."""

from __future__ import annotations

import re

from advisor.config.model import Directive
from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from .e415_proxy_without_reverse import ProxyRoute, proxy_routes, rewrite_flags
from .s519_h2_dos_version import UNKNOWN_PATCH

FIRST_AFFECTED = (2, 4, 0)
LAST_AFFECTED = (2, 4, 55)
FIXED_IN = "2.4.56"

DOC = Doc(
    summary="RewriteRule [P] or ProxyPassMatch copies request text into the proxied URL (CVE-2023-25690)",
    what=(
        "On httpd 2.4.0 to 2.4.55 (`--apache-version 2.4.NN`, the settings file, or the "
        "host's httpd -v), flags each RewriteRule with the P flag (RewriteEngine on) and "
        "each ProxyPassMatch whose HTTP, WebSocket or balancer URL takes text from the "
        "request path: a backreference ($1, or %1 of a RewriteCond on the path) to a group "
        "that can match a line break, or %{REQUEST_URI}, %{REQUEST_FILENAME}, %{PATH_INFO} "
        "or %{SCRIPT_FILENAME}. Groups limited to characters without CR and LF (\\w, [a-z0-9_-]) "
        "and backreferences re-escaped by the B flag are fine. FastCGI, AJP and other "
        "non-HTTP backends cannot be split this way and are left out. Silent on 2.4.56 and "
        "later; when the patch level is unknown, silent with a note."
    ),
    why=(
        "mod_rewrite and ProxyPassMatch match the decoded path, so an encoded %0d%0a in the "
        "request becomes a real CR LF in the captured text. Copied into the URL mod_proxy "
        "sends on, it ends the backend request line early and starts a second request the "
        "client wrote: httpd's advisory for CVE-2023-25690 (2.4.0 to 2.4.55, fixed in "
        "2.4.56, rated important) names access controls bypassed, unintended URLs proxied "
        "to existing backends, and cache poisoning. The fix in 2.4.56 stops control "
        "characters and spaces of a rewritten URL from reaching the backend; on those "
        "releases the same rule is the documented use of [P], so the rule says nothing "
        "there. A distribution may carry the fix under an older number (RHEL and Debian "
        "backport), which a version cannot show: a warning to check, not an error."
    ),
    evidence=(
        "httpd's advisory CVE-2023-25690: request splitting through RewriteRule [P] or "
        "ProxyPassMatch that reinserts request text, 2.4.0-2.4.55, fixed in 2.4.56; "
        "RFC 9112 section 3 (the request line ends at CRLF)."
    ),
    bad='RewriteEngine on\nRewriteRule "^/here/(.*)" "http://example.com:8080/elsewhere?$1" [P]',
    good='RewriteEngine on\nRewriteRule "^/here/([A-Za-z0-9_/-]*)$" "http://example.com:8080/elsewhere?$1" [P]',
    fix=(
        "Upgrade httpd to 2.4.56 or later (or a distribution build whose changelog names "
        "CVE-2023-25690). Until then, add the B flag ([P,B]) so backreferences are "
        "re-escaped, or capture only the characters the backend needs."
    ),
    references=(
        "https://httpd.apache.org/security/vulnerabilities_24.html (CVE-2023-25690)",
        "https://httpd.apache.org/docs/2.4/rewrite/flags.html#flag_b",
        "https://httpd.apache.org/docs/2.4/mod/mod_proxy.html#proxypassmatch",
        "RFC 9112, section 3 (Request Line)",
    ),
)

# mod_proxy backends whose request line the copied text lands in.
_HTTP_SCHEMES = frozenset(("http", "https", "ws", "wss", "balancer", "h2", "h2c"))
# Server variables that hold the decoded path.
_DECODED = ("REQUEST_URI", "REQUEST_FILENAME", "PATH_INFO", "SCRIPT_FILENAME")
_VARIABLE = re.compile(r"%\{(" + "|".join(_DECODED) + r")\}", re.IGNORECASE)
_BACKREF = re.compile(r"(?<!\\)([$%])([0-9])")
# Escapes and POSIX classes that can match CR or LF (or that this reading does
# not follow: a code point, a property, a quoted run).
_BREAKING_ESCAPES = frozenset("sSWDhHvVRNxcuepPQX0123456789")
_BREAKING_POSIX = ("[:space:]", "[:cntrl:]", "[:ascii:]")
_CR, _LF = 13, 10


def class_end(text: str, opening: int) -> int:
    """The index of the ']' that closes the class opened at `opening` (-1 if none);
    a ']' first in the class (after an optional '^') is a literal."""
    position = opening + 1
    if text[position:position + 1] == "^":
        position += 1
    if text[position:position + 1] == "]":
        position += 1
    while position < len(text):
        if text[position] == "\\":
            position += 2
            continue
        if text[position] == "]":
            return position
        position += 1
    return -1


def _class_breaks(body: str) -> bool:
    """Whether the character class `body` (between [ and ]) admits CR or LF."""
    if body.startswith("^"):
        rest = body[1:]
        return not ("\\s" in rest or ("\\r" in rest and "\\n" in rest))
    if any(posix in body for posix in _BREAKING_POSIX) or "\r" in body or "\n" in body:
        return True
    position = 0
    while position < len(body):
        char = body[position]
        if char == "\\":
            if body[position + 1:position + 2] in ("", *"sSWDrnvVhHxc0pPuN"):
                return True
            position += 2
            continue
        if (position + 2 < len(body) and body[position + 1] == "-"
                and ord(char) <= _CR and ord(body[position + 2]) >= _LF):
            return True
        position += 1
    return False


def _breaks_line(group: str) -> bool:
    """Whether a capture group's text may match CR or LF (httpd compiles with
    DOTALL, so '.' does): anything not understood counts as yes."""
    position = 0
    while position < len(group):
        char = group[position]
        if char == "\\":
            if group[position + 1:position + 2] in ("", *_BREAKING_ESCAPES):
                return True
            position += 2
        elif char == "[":
            end = class_end(group, position)
            if end < 0 or _class_breaks(group[position + 1:end]):
                return True
            position = end + 1
        elif char in ".\r\n":
            return True
        else:
            position += 1
    return False


def capture_groups(pattern: str) -> list[str]:
    """The text of each capturing group of a PCRE pattern, in number order."""
    groups: list[str] = []
    stack: list[tuple[int | None, int]] = []
    position = 0
    while position < len(pattern):
        char = pattern[position]
        if char == "\\":
            position += 2
            continue
        if char == "[":
            end = class_end(pattern, position)
            position = len(pattern) if end < 0 else end + 1
            continue
        if char == "(":
            body = position + 1
            rest = pattern[body:]
            named = rest.startswith(("?<", "?P<", "?'")) and not rest.startswith(("?<=", "?<!"))
            if named:
                closer = ">" if "<" in rest[:3] else "'"
                body = pattern.find(closer, body + 2) + 1
            capturing = named or not rest.startswith("?")
            if capturing:
                groups.append("")
            stack.append((len(groups) - 1 if capturing else None, body))
        elif char == ")" and stack:
            index, body = stack.pop()
            if index is not None:
                groups[index] = pattern[body:position]
        position += 1
    return groups


def _risky_groups(pattern: str) -> set[int]:
    """Backreference numbers that may carry CR or LF ($0 always can)."""
    if pattern.startswith("!"):
        return set()  # a negated pattern captures nothing
    risky = {0}
    for number, group in enumerate(capture_groups(pattern), start=1):
        if _breaks_line(group):
            risky.add(number)
    return risky


def _conditions(node: Directive) -> list[Directive]:
    """The RewriteCond lines that belong to this RewriteRule (those right before it)."""
    siblings = node.parent.children if node.parent is not None else []
    found: list[Directive] = []
    for child in reversed(siblings[:siblings.index(node)] if node in siblings else []):
        if type(child) is not Directive or child.lname != "rewritecond":
            break
        found.append(child)
    return found


def copied_text(route: ProxyRoute) -> list[str]:
    """What request text the route's URL takes that can carry a line break."""
    node, url = route.node, route.url
    found = [f"%{{{match.group(1)}}}" for match in _VARIABLE.finditer(url)]
    rewrite = node.lname == "rewriterule"
    escaped = rewrite and ("b" in rewrite_flags(node) or "bctls" in rewrite_flags(node))
    rule_groups = _risky_groups(node.args[0]) if node.args else set()
    cond_groups: set[int] | None = None
    for match in _BACKREF.finditer(url):
        sign, number = match.group(1), int(match.group(2))
        if escaped or (sign == "%" and not rewrite):
            continue
        if sign == "$" and number in rule_groups:
            found.append(match.group(0))
        elif sign == "%" and number > 0:
            if cond_groups is None:
                cond_groups = set()
                for cond in _conditions(node):
                    if len(cond.args) >= 2 and _VARIABLE.search(cond.args[0]):
                        cond_groups |= _risky_groups(cond.args[1])
            if number in cond_groups:
                found.append(match.group(0))
    return list(dict.fromkeys(found))


def check(ctx: LintContext, report: Report) -> None:
    major, minor, patch = ctx.version
    if (major, minor) != (2, 4) or (ctx.version > LAST_AFFECTED and patch != UNKNOWN_PATCH):
        return
    found = []
    for route in proxy_routes(ctx):
        if route.node.lname == "proxypass" or route.scheme not in _HTTP_SCHEMES:
            continue
        copied = copied_text(route)
        if copied:
            found.append((route, copied))
    if not found:
        return
    if patch == UNKNOWN_PATCH:
        ctx.notes.append("S530 skipped: a RewriteRule [P] or ProxyPassMatch copies request text into a "
                         "proxied URL, and httpd's patch level is unknown (CVE-2023-25690 affects "
                         "2.4.0-2.4.55; pass --apache-version 2.4.NN, or lint the host with --host)")
        return
    for route, copied in found:
        interim = ("add the B flag or capture" if route.node.lname == "rewriterule" else "capture")
        report(route.node,
               f"{route.node.name} copies request text ({', '.join(copied)}) into the URL it proxies to "
               f"({route.url}), and httpd {ctx.facts.version_text} is open to CVE-2023-25690: an encoded "
               "CR LF in the path ends the backend's request line and starts a second request the client "
               f"wrote (access controls bypassed, cache poisoned). Upgrade to {FIXED_IN} or later; until "
               f"then {interim} only the characters the backend needs.",
               fix=f"Upgrade httpd to {FIXED_IN} or later")


RULE = Rule(code="S530", slug="proxy-request-splitting", severity="warning", category="security",
            directives=("RewriteRule", "RewriteCond", "ProxyPassMatch"), doc=DOC, check=check)
