"""Rule documentation as text and Markdown, and the generated docs/rules.md."""

from __future__ import annotations

import textwrap
from typing import Iterable

from advisor.lint.rule import CATEGORIES, PROFILES, Rule
from advisor.lint.tls_profile import DEFAULT_TLS_PROFILE

GENERATED_NOTE = (
    "<!-- Generated from the rule metadata in rules/*.py by "
    "`apache-advisor rules --format markdown --output docs/rules.md`. Do not edit by hand. -->"
)


def rule_markdown(rule: Rule, heading_level: int = 3) -> str:
    doc = rule.doc
    hashes = "#" * heading_level
    sub = "#" * (heading_level + 1)
    parts = [
        f"{hashes} {rule.code} `{rule.slug}`",
        "",
        f"**{doc.summary}**",
        "",
        f"- Severity: {rule.severity}",
        f"- Category: {rule.category}",
        f"- Directives: {', '.join(rule.directives) if rule.directives else '(whole config)'}",
    ]
    if rule.needs:
        parts.append(f"- Needs: {', '.join(n.replace('_', '-') for n in rule.needs)}")
    parts.append("- Fix: " + ("automatic (`apache-advisor fix`)" if rule.fixable else "by hand"))
    if rule.tls_profiles:
        parts.append("- TLS profiles (`--tls-profile`): "
                     + "; ".join(f"{name}: {expectation}" for name, expectation in rule.tls_profiles))
    parts += [
        "",
        f"{sub} What it flags",
        "",
        doc.what,
        "",
        f"{sub} Why",
        "",
        doc.why,
        "",
        f"> Evidence: {doc.evidence}",
        "",
        f"{sub} Bad",
        "",
        "```apache",
        doc.bad.rstrip(),
        "```",
        "",
        f"{sub} Good",
        "",
        "```apache",
        doc.good.rstrip(),
        "```",
        "",
        f"{sub} How to fix",
        "",
        doc.fix,
        "",
        f"{sub} References",
        "",
    ]
    parts += [f"- {reference}" for reference in doc.references]
    return "\n".join(parts) + "\n"


def _wrap(text: str, indent: str = "  ") -> str:
    return textwrap.fill(text, width=88, initial_indent=indent, subsequent_indent=indent)


def rule_text(rule: Rule, tls_profile: tuple[str, str] | None = None) -> str:
    """`explain`'s page. `tls_profile` (name, where it was chosen) is the TLS
    profile a lint run here would apply: a rule that reads it says so."""
    doc = rule.doc
    lines = [
        f"{rule.code} {rule.slug} ({rule.severity}, {rule.category})",
        doc.summary,
        "",
        "What it flags:",
        _wrap(doc.what),
        "",
        "Why:",
        _wrap(doc.why),
        "",
        "Evidence:",
        _wrap(doc.evidence),
        "",
        "Bad:",
        textwrap.indent(doc.bad.rstrip(), "    "),
        "",
        "Good:",
        textwrap.indent(doc.good.rstrip(), "    "),
        "",
        "How to fix:",
        _wrap(doc.fix),
        "  " + ("`apache-advisor fix` applies this fix (it is one mechanical edit)." if rule.fixable
                else "`apache-advisor fix` leaves this one to you: it needs a human decision."),
        "",
        "Directives: " + (", ".join(rule.directives) if rule.directives else "(whole config)"),
        "References:",
    ]
    lines += [f"  - {reference}" for reference in doc.references]
    if rule.tls_profiles:
        lines += ["", *_profile_lines(rule, tls_profile)]
    return "\n".join(lines) + "\n"


def _profile_lines(rule: Rule, tls_profile: tuple[str, str] | None) -> list[str]:
    """What the rule expects under each TLS profile, the one in effect marked."""
    name, source = tls_profile or (DEFAULT_TLS_PROFILE, "the default")
    lines = [textwrap.fill(f"TLS profile: {name} ({source}; `lint --tls-profile` or `tls-profile` in "
                           "the settings file chooses another). This rule's findings follow it:", width=88)]
    for profile, expectation in rule.tls_profiles:
        mark = "*" if profile == name else "-"
        lines.append(textwrap.fill(f"{mark} {profile}: {expectation}", width=88, initial_indent="  ",
                                   subsequent_indent="    "))
    return lines


def rules_document(rules: Iterable[Rule]) -> str:
    rules = list(rules)
    lines = [
        "# apache-advisor lint rules",
        "",
        GENERATED_NOTE,
        "",
        "Every rule has a stable code. Select or ignore rules by code (`P101`), prefix (`P1`),",
        "category or slug; silence one place with `# apache-advisor: disable=CODE -- reason`",
        "on the line before the directive (or at the top of a file, followed by a blank line,",
        "for the whole file). `apache-advisor explain CODE` prints one rule's page.",
        "",
        "Profiles: " + "; ".join(f"`{name}` = {', '.join(cats)}" for name, cats in PROFILES.items()) + ".",
        "",
        "## Using the findings",
        "",
        "- Exit codes: 0 when nothing is at or above `--fail-on` (default `warning`), 1 when",
        "  something is, 2 for usage or read errors (one `file:line: what (what to do)` line on stderr).",
        "- Formats: `text` (grouped by file; colour only on a terminal, `NO_COLOR` honoured), `json`",
        "  (an array of objects with exactly `code`, `severity`, `message`, `file`, `line`,",
        "  `evidence`, `fix`), `sarif` (2.1.0, for GitHub code scanning) and `github` (workflow",
        "  annotations).",
        "- Many places, one shape: in `text` output a finding seen in 4 or more places that differ only",
        "  in file, line and the digits of the message (`site1`, `site20000`: one finding per host of a",
        "  mass-hosting tree) is printed once, where it first occurs, with its count and first three",
        "  other places; the summary still counts every finding. `--no-group` prints every one; `json`,",
        "  `sarif` and `github` always carry every finding.",
        "- `--statistics`: the number of findings per rule (count, code, severity, slug; most frequent",
        "  first, as ruff prints it) instead of the findings, in `text` or `json` (an array of",
        "  `code`, `severity`, `count`). The exit code is the same as without it.",
        "- `fix` is the text that replaces the flagged line when the change is mechanical; an empty",
        "  string means delete the line; for a value nobody wrote (the finding points at the enclosing",
        "  section or line 1 of the main file and says it is httpd's default) it is the line to add;",
        "  null when the fix needs judgement. Values nobody wrote are judged only in a whole config",
        "  (one that loads modules); a fragment linted alone is checked for what it writes.",
        "- Host facts: `--ram`, `--worker-memory`, `--expected-clients`, `--mpm`, `--apache-version`,",
        "  or the `[host]` table of the settings file; RAM and worker memory are measured on the host",
        "  when the config linted is the host's own (under /etc) or with `--live`.",
        "- TLS expectations: `--tls-profile modern|intermediate|old` (default intermediate), or",
        "  `tls-profile` in the settings file: Mozilla's Server Side TLS profiles. S505 (protocols),",
        "  S511 (ciphers), S522 (HSTS max-age) and S523 judge by it and name it in their findings;",
        "  `explain CODE` shows the profile in effect and what each profile expects.",
        "- Settings: `.apache-advisor.toml` or `[tool.apache-advisor]` in `pyproject.toml` (nearest",
        "  to the working directory): `select`, `ignore`, `profile`, `tls-profile`, `fail-on`,",
        "  `[severity]`, `[per-path-ignores]`, `[host]`.",
        "- pre-commit: `.pre-commit-hooks.yaml` ships the hooks `apache-advisor-lint` (give the main",
        "  config in `args`) and `apache-advisor-lint-files` (each staged file linted on its own).",
        "- GitHub Actions: `action.yml` (a composite action) installs the package, lints `path`, writes",
        "  SARIF, annotates the pull request and fails as `lint` exits; see the README.",
        "",
        "## Rules",
        "",
        "| code | slug | severity | category | fix | flags |",
        "|---|---|---|---|---|---|",
    ]
    for rule in rules:
        anchor = f"{rule.code.lower()}-{rule.slug}"
        lines.append(f"| [{rule.code}](#{anchor}) | `{rule.slug}` | {rule.severity} | "
                     f"{rule.category} | {'auto' if rule.fixable else ''} | {rule.doc.summary.replace('|', '/')} |")
    lines.append("")
    lines += _trade_offs(rules) + _baseline_coverage(rules)
    for category in CATEGORIES:
        members = [rule for rule in rules if rule.category == category]
        if not members:
            continue
        lines += [f"## {category.capitalize()}", ""]
        for rule in members:
            lines.append(rule_markdown(rule))
    return "\n".join(lines).rstrip() + "\n"


def _trade_offs(rules: list[Rule]) -> list[str]:
    """Pairs of rules that give opposite advice for security and for speed."""
    by_code = {rule.code: rule for rule in rules}
    pairs = sorted({tuple(sorted((rule.code, rule.trade_off))) for rule in rules
                    if rule.trade_off and rule.trade_off in by_code})
    if not pairs:
        return []
    lines = [
        "## Security against speed",
        "",
        "Some settings are safer one way and faster the other. For these the rules do not give",
        "two silent, opposite orders: each rule of a pair names the other in its documentation and",
        "in every finding, and the profile says which goal counts. `--profile security` (or",
        "`profile = \"security\"` in the settings file) keeps the security rule, `--profile",
        "performance` the performance rule; no config gets both findings of a pair under either.",
        "The default profile, `all`, shows both: a tree or host gets at most one of the pair (they",
        "flag opposite states), and each finding says what the other side would cost.",
        "",
        "| security rule | performance rule | the setting |",
        "|---|---|---|",
    ]
    for first, second in pairs:
        security, performance = sorted((by_code[first], by_code[second]),
                                       key=lambda rule: rule.category != "security")
        lines.append(f"| {security.code} `{security.slug}` | {performance.code} `{performance.slug}` | "
                     f"{security.doc.summary.replace('|', '/')} |")
    return lines + [""]


def _baseline_coverage(rules: list[Rule]) -> list[str]:
    """Each dev-sec apache-baseline control, and the rules that judge it."""
    from advisor.lint.baseline import DEV_SEC_APACHE

    lines = [
        "## dev-sec apache-baseline coverage",
        "",
        "The dev-sec apache-baseline (InSpec) has 14 controls. Nine are about the configuration and",
        "are judged by meaning (the value in effect, inherited from the main server and",
        "`<Directory />`, modules really loaded), not by matching text in a named file. Five need the",
        "running host: apache-03 to 05 (processes, owners and modes) are judged when a host is read",
        "live (`lint --host`, `--inventory`, `--live` on this machine, or a saved `--live-facts`",
        "snapshot); apache-01 and 02 (installed and running, started at boot) are about the service,",
        "not its config or files, and stay out of reach. That is every control (12 of 12) that",
        "concerns the server's config and files. `apache-advisor rules --format json` lists each",
        "rule's `baseline` controls.",
        "",
        "| control | what it checks | needs a live host | rules |",
        "|---|---|---|---|",
    ]
    for control in DEV_SEC_APACHE:
        covering = [rule.code for rule in rules if control.id in rule.baseline]
        lines.append(f"| {control.id} | {control.title.replace('|', '/')} | "
                     f"{'yes' if control.live_host else 'no'} | "
                     f"{', '.join(covering) if covering else '-'} |")
    return lines + [""]
