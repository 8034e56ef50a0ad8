"""E407: an Options line (or an AllowOverride Options= list) httpd 2.4 refuses."""

from __future__ import annotations

from advisor.lint.context import LintContext, per_argument_list
from advisor.lint.rule import Doc, Report, Rule

# The option names httpd 2.4's Options and AllowOverride Options= take
# (case-insensitive), besides All and None.
OPTION_NAMES = ("Indexes", "Includes", "IncludesNOEXEC", "FollowSymLinks", "SymLinksIfOwnerMatch",
                "ExecCGI", "MultiViews", "RunScripts")
_NAMES = {name.lower(): name for name in OPTION_NAMES}

MIXED = "either all Options must start with + or -, or none may"

DOC = Doc(
    summary="Options mixing bare and +/- words (or signs in AllowOverride Options=): httpd won't start",
    what=(
        "Flags an active Options line that httpd 2.4 refuses to read: bare options mixed "
        "with +/- ones (`Options Indexes FollowSymLinks +ExecCGI`), None or All anywhere "
        "but first, a sign on None or All, or a name that is not an option. Also flags "
        "AllowOverride Options= lists that carry a + or - (`Options=Indexes,+ExecCGI`) or "
        "an unknown name: that list only names what .htaccess may set, and httpd refuses "
        "any sign in it. The checks follow httpd 2.4's own order, so the reason given is "
        "the one httpd prints."
    ),
    why=(
        "httpd 2.2 accepted mixed Options with a warning and a surprising result; 2.4 stops "
        "at the line (AH00526, 'Either all Options must start with + or -, or no Option "
        "may.'), so `apachectl configtest` fails and a reload keeps the old config or a "
        "restart leaves no server. The line usually comes from an old tutorial or a 2.2 "
        "vhost carried over, and reads as if it worked."
    ),
    evidence=(
        "httpd 2.4 refuses such a line with AH00526 ('Either all Options must start with + "
        "or -, or no Option may.', 'Illegal option +ExecCGI' for AllowOverride) and does not "
        "start; checked with Debian's apache2 -t."
    ),
    bad="Options Indexes FollowSymLinks +ExecCGI\nAllowOverride Options=Indexes,+ExecCGI",
    good="Options Indexes FollowSymLinks ExecCGI\nAllowOverride Options=Indexes,ExecCGI",
    fix=(
        "Write every option bare (the list replaces what the section inherits) or every "
        "one with + or - (it adjusts what it inherits), with None or All only first and "
        "unsigned; in AllowOverride Options= list the names without signs."
    ),
    references=(
        "https://httpd.apache.org/docs/2.4/mod/core.html#options",
        "https://httpd.apache.org/docs/2.4/mod/core.html#allowoverride",
        "https://httpd.apache.org/docs/2.4/upgrading.html",
    ),
)


def options_problem(words: tuple[str, ...]) -> str | None:
    """Why httpd 2.4 refuses `Options WORDS`, or None when it takes them.

    The same checks in the same order as httpd's parser (core.c): a sign
    after a bare word is refused unless that word was All or None, a bare
    word after a signed one always is; None and All must come first and
    unsigned; any other name must be an option."""
    first = True
    signed_seen = False
    all_or_none = False
    for word in words:
        sign = word[:1] if word[:1] in ("+", "-") else ""
        name = word[1:] if sign else word
        if sign:
            if not signed_seen and not first and not all_or_none:
                return MIXED
            signed_seen = True
        elif not first and signed_seen:
            return MIXED
        lname = name.lower()
        if lname in ("none", "all"):
            spelled = "None" if lname == "none" else "All"
            if not first:
                return f"'{spelled}' must be the first option"
            if sign:
                return f"'{sign}{spelled}' is not allowed ({spelled} takes no sign)"
            all_or_none = True
        elif lname not in _NAMES:
            return f"{name!r} is not an option"
        first = False
    return None


def options_fix(words: tuple[str, ...]) -> str | None:
    """A mechanical fix for mixed signs only: the first word says which form
    was meant. Bare first: the list replaces the inherited options, so a +
    adds nothing and a - removes what is not there: keep the names of the +
    words, drop the - words. Signed first: give every bare word a +."""
    if words[0][:1] in ("+", "-"):
        fixed = [word if word[:1] in ("+", "-") else f"+{word}" for word in words]
    else:
        fixed = list(dict.fromkeys(word.lstrip("+") for word in words if word[:1] != "-"))
    # Offered only when httpd takes the result (not when another word is wrong too).
    return "Options " + " ".join(fixed) if options_problem(tuple(fixed)) is None else None


def allowoverride_problem(words: tuple[str, ...]) -> str | None:
    """Why httpd 2.4 refuses the Options= lists of `AllowOverride WORDS`."""
    for word in words:
        kind, equals, listed = word.partition("=")
        if not equals or kind.lower() != "options":
            continue
        for item in listed.split(","):
            if not item:
                continue
            if item[:1] in ("+", "-"):
                return (f"AllowOverride Options= names what .htaccess may set and takes no "
                        f"sign: {item!r}")
            if item.lower() not in _NAMES and item.lower() not in ("all", "none"):
                return f"AllowOverride Options=: {item!r} is not an option"
    return None


def check(ctx: LintContext, report: Report) -> None:
    if ctx.facts.version_key != "2.4":
        return  # 2.2 took mixed Options (with a warning)
    options_verdict = per_argument_list(lambda args: options_problem(tuple(args)))
    for node in ctx.raw_directives("Options"):
        problem = options_verdict(node.args)
        if problem is None:
            continue
        words = tuple(node.args)
        fix = options_fix(words) if problem == MIXED else None
        report(node, f"Options {' '.join(words)}: {problem}; httpd 2.4 refuses the line and does "
                     "not start.", fix=fix)
    override_verdict = per_argument_list(lambda args: allowoverride_problem(tuple(args)))
    for node in ctx.raw_directives("AllowOverride"):
        problem = override_verdict(node.args)
        if problem is not None:
            report(node, f"{problem}; httpd 2.4 refuses the line and does not start.")


RULE = Rule(code="E407", slug="options-refused", severity="error", category="correctness",
            directives=("Options", "AllowOverride"), doc=DOC, check=check)
