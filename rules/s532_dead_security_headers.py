"""S532: response headers that browsers no longer act on, one of them harmful."""

from __future__ import annotations

from advisor.lint.context import LintContext, per_argument_list
from advisor.lint.edits import remove_directive
from advisor.lint.rule import Doc, Report, Rule

DOC = Doc(
    summary="Header sets X-XSS-Protection (not 0), Expect-CT or Public-Key-Pins: dropped by browsers",
    what=(
        "Flags each `Header` line (with or without `always`) that sets, adds, appends or "
        "merges X-XSS-Protection with a value other than 0, Expect-CT, Public-Key-Pins or "
        "Public-Key-Pins-Report-Only. `Header unset` of them and `X-XSS-Protection 0` are "
        "fine. A warning for X-XSS-Protection, information for the other three."
    ),
    why=(
        "X-XSS-Protection switched on the XSS filter of Internet Explorer, Chrome, Edge and "
        "Safari. Chrome (version 78) and Edge removed theirs and Firefox never had one; "
        "where a filter still runs, an attacker can make it blank out chosen scripts of a "
        "safe page or learn what a page contains (the filter's own XS-Leak), so OWASP's "
        "Secure Headers Project says "
        "to send 0 or nothing, with a Content-Security-Policy doing the real work. "
        "Public-Key-Pins (HPKP, RFC 7469) was dropped by Chrome 72 and Firefox 72 after "
        "sites pinned keys they then lost and locked their own visitors out; Expect-CT "
        "(RFC 9163) lost its purpose once browsers required Certificate Transparency for "
        "every certificate, and Chrome removed it in version 107. Those two cost bytes on every "
        "response and suggest a protection nobody applies."
    ),
    evidence=(
        "OWASP Secure Headers Project: X-XSS-Protection deprecated, send 0 or omit it; "
        "RFC 7469 (HPKP) and RFC 9163 (Expect-CT) headers no longer honoured by browsers."
    ),
    bad='Header always set X-XSS-Protection "1; mode=block"\nHeader always set Expect-CT "max-age=86400, enforce"',
    good=("Header always set Content-Security-Policy \"default-src 'self'\"\n"
          "Header always set X-Content-Type-Options nosniff"),
    fix=(
        "Delete the Header line (`apache-advisor fix` blanks it). For X-XSS-Protection, a "
        "Content-Security-Policy is the protection browsers apply today; `Header always set "
        "X-XSS-Protection 0` is fine where a scanner insists on seeing the header."
    ),
    references=(
        "OWASP Secure Headers Project (https://owasp.org/www-project-secure-headers/)",
        "RFC 7469 (Public Key Pinning Extension for HTTP)",
        "RFC 9163 (Expect-CT Extension for HTTP)",
        "https://developer.mozilla.org/en-US/docs/Web/HTTP/Headers/X-XSS-Protection",
        "https://httpd.apache.org/docs/2.4/mod/mod_headers.html#header",
    ),
)

# The actions that put a header on the response (edit, unset, echo, note do not).
_SETTING = frozenset(("set", "add", "append", "merge", "setifempty"))

# What each dropped header does today.
_DEAD = {
    "x-xss-protection": ("warning", "turns on an XSS filter that Chrome and Edge removed and Firefox "
                                    "never had; where one still runs, an attacker can use it to blank "
                                    "out scripts of a safe page. Send 0 or nothing"),
    "expect-ct": ("info", "is ignored by browsers since Certificate Transparency became mandatory "
                          "(Chrome removed it in version 107)"),
    "public-key-pins": ("info", "(HPKP) is ignored by every current browser; where it was honoured, "
                                "a lost key locked visitors out"),
    "public-key-pins-report-only": ("info", "(HPKP) is ignored by every current browser"),
}


def _unquoted(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1].strip()
    return value


def _dead_header(args: list[str]) -> tuple[str, str, str] | None:
    """(header as written, severity, what it does) for a Header line that
    puts a dropped header on the response; None otherwise."""
    first = 1 if args and args[0].lower() in ("always", "onsuccess") else 0
    if len(args) < first + 2 or args[first].lower() not in _SETTING:
        return None
    name = args[first + 1]
    found = _DEAD.get(name.lower())
    if found is None:
        return None
    if name.lower() == "x-xss-protection":
        value = args[first + 2] if len(args) > first + 2 else ""
        if _unquoted(value) == "0":
            return None
    return name, found[0], found[1]


def check(ctx: LintContext, report: Report) -> None:
    dead = per_argument_list(_dead_header)  # every host's identical Header line judged once
    for node in ctx.directives("Header"):
        text = node.raw_args.lower()
        if not ("x-xss-protection" in text or "expect-ct" in text or "public-key-pins" in text):
            # Names none of _DEAD's headers ("public-key-pins" covers its
            # report-only form); spelled out, as three `in` tests cost a third
            # of a generator over the keys on every Header line. A memo miss
            # costs more still (see S522's hsts_lines).
            continue
        found = dead(node.args)
        if found is None:
            continue
        name, severity, what = found
        report(node, f"Header sets {name}, which {what}. Drop the line.",
               fix="", severity=severity, edit=remove_directive(ctx, node))


RULE = Rule(code="S532", slug="dead-security-headers", severity="warning", category="security",
            directives=("Header",), doc=DOC, check=check, fixable=True)
