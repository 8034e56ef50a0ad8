"""Lint settings: the project's config file merged with the command line.

The config file is `.apache-advisor.toml`, or the `[tool.apache-advisor]`
table of `pyproject.toml`, found in the current directory or the nearest
parent that has one. Keys (kebab-case; snake_case accepted too):

    select = ["P", "C201", "security"]      # codes, prefixes, categories, slugs
    ignore = ["P112"]
    profile = "all"                          # performance | security | all
    tls-profile = "intermediate"             # Mozilla's modern | intermediate | old
    fail-on = "warning"                      # error | warning | info | never
    [severity]                               # per-rule severity overrides
    P106 = "warning"
    [per-path-ignores]                       # glob (relative to this file) -> codes
    "sites-available/legacy-*.conf" = ["E404"]
    [host]                                   # facts about the machine
    ram = "8G"
    worker-memory = "48M"
    expected-clients = 400
    mpm = "event"
    apache-version = "2.4"
    os-reserve = "1G"
    per-connection = "64K"
    document-set = "2G"

Command-line options win over the file.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable

from advisor.errors import UsageError
from advisor.lint.rule import CATEGORIES, PROFILES, SEVERITIES, Rule
from advisor.lint.tls_profile import TLS_PROFILE_NAMES

CONFIG_NAMES = (".apache-advisor.toml", "pyproject.toml")
FAIL_ON = ("error", "warning", "info", "never")
_TOP_KEYS = {"select", "ignore", "profile", "tls-profile", "fail-on", "severity", "per-path-ignores",
             "host"}
HOST_KEYS = {"ram", "worker-memory", "expected-clients", "mpm", "apache-version",
             "os-reserve", "per-connection", "document-set"}


@dataclass
class FileSettings:
    """What a config file says, already checked."""

    path: str | None = None
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    profile: str | None = None
    tls_profile: str | None = None
    """The Mozilla TLS profile the TLS rules expect (advisor.lint.tls_profile)."""
    fail_on: str | None = None
    severity: dict[str, str] = field(default_factory=dict)
    per_path_ignores: list[tuple[str, list[str]]] = field(default_factory=list)
    host: dict[str, Any] = field(default_factory=dict)

    @property
    def base_dir(self) -> str:
        return os.path.dirname(os.path.abspath(self.path)) if self.path else os.getcwd()


def _load_toml(path: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise UsageError(f"cannot read config file: {exc.strerror}", path) from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"invalid TOML: {exc}", path, hint="fix the syntax of the config file") from None


def find_config_file(start: str | None = None) -> str | None:
    """The nearest `.apache-advisor.toml`, or `pyproject.toml` with a
    `[tool.apache-advisor]` table, from `start` (default: cwd) upward."""
    directory = os.path.abspath(start or os.getcwd())
    while True:
        candidate = os.path.join(directory, CONFIG_NAMES[0])
        if os.path.isfile(candidate):
            return candidate
        pyproject = os.path.join(directory, CONFIG_NAMES[1])
        if os.path.isfile(pyproject):
            try:
                with open(pyproject, "rb") as handle:
                    has_table = b"apache-advisor" in handle.read()
            except OSError:
                has_table = False
            if has_table and "apache-advisor" in _load_toml(pyproject).get("tool", {}):
                return pyproject
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _kebab(table: dict[str, Any]) -> dict[str, Any]:
    return {str(key).replace("_", "-").lower(): value for key, value in table.items()}


def _string_list(value: Any, key: str, path: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    raise UsageError(f"'{key}' must be a string or a list of strings", path)


def load_file_settings(path: str) -> FileSettings:
    data = _load_toml(path)
    if os.path.basename(path) == "pyproject.toml":
        data = data.get("tool", {}).get("apache-advisor", {})
        where = "[tool.apache-advisor]"
    else:
        where = "the config file"
    table = _kebab(data)
    unknown = sorted(set(table) - _TOP_KEYS)
    if unknown:
        raise UsageError(f"unknown key {unknown[0]!r} in {where}", path,
                         hint=f"valid keys: {', '.join(sorted(_TOP_KEYS))}")
    settings = FileSettings(path=path)
    if "select" in table:
        settings.select = _string_list(table["select"], "select", path)
    if "ignore" in table:
        settings.ignore = _string_list(table["ignore"], "ignore", path)
    if "profile" in table:
        settings.profile = check_choice(table["profile"], PROFILES, "profile", path)
    if "tls-profile" in table:
        settings.tls_profile = check_choice(table["tls-profile"], TLS_PROFILE_NAMES, "tls-profile", path)
    if "fail-on" in table:
        settings.fail_on = check_choice(table["fail-on"], FAIL_ON, "fail-on", path)
    severity = table.get("severity", {})
    if not isinstance(severity, dict):
        raise UsageError("[severity] must be a table of CODE = \"error|warning|info\"", path)
    for code, level in severity.items():
        settings.severity[str(code).upper()] = check_choice(level, SEVERITIES, f"severity.{code}", path)
    ignores = table.get("per-path-ignores", {})
    if not isinstance(ignores, dict):
        raise UsageError("[per-path-ignores] must be a table of \"glob\" = [codes]", path)
    for pattern, codes in ignores.items():
        settings.per_path_ignores.append((str(pattern), _string_list(codes, f"per-path-ignores.{pattern}", path)))
    host = table.get("host", {})
    if not isinstance(host, dict):
        raise UsageError("[host] must be a table", path)
    host = _kebab(host)
    unknown = sorted(set(host) - HOST_KEYS)
    if unknown:
        raise UsageError(f"unknown key {unknown[0]!r} in [host]", path,
                         hint=f"valid keys: {', '.join(sorted(HOST_KEYS))}")
    settings.host = host
    return settings


def check_choice(value: Any, choices: Iterable[str], key: str, path: str | None = None) -> str:
    options = list(choices)
    if not isinstance(value, str) or value.lower() not in options:
        raise UsageError(f"{key} must be one of {', '.join(options)}, got {value!r}", path)
    return value.lower()


# ---- rule selection ------------------------------------------------------------


def matches(rule: Rule, token: str) -> bool:
    """A selector names a code (P101), a code prefix (P1, E), a category
    (security), a slug (keepalive-off) or ALL."""
    lowered = token.strip().lower()
    if not lowered:
        return False
    return (
        lowered == "all"
        or rule.code.lower().startswith(lowered)
        or lowered == rule.category
        or lowered == rule.slug
    )


def check_selectors(tokens: Iterable[str], rules: Iterable[Rule], option: str) -> None:
    rules = list(rules)
    for token in tokens:
        if not any(matches(rule, token) for rule in rules):
            raise UsageError(
                f"{option} {token!r} matches no rule",
                hint="use a code (P101), a prefix (P1), a category "
                     f"({', '.join(CATEGORIES)}) or a slug; `apache-advisor rules` lists them",
            )


def select_rules(rules: Iterable[Rule], select: list[str] | None, ignore: list[str],
                 profile: str) -> list[Rule]:
    """`select` (when given) replaces the profile's categories; `ignore` then
    removes rules."""
    rules = list(rules)
    if select:
        check_selectors(select, rules, "--select")
        chosen = [rule for rule in rules if any(matches(rule, token) for token in select)]
    else:
        categories = PROFILES[profile]
        chosen = [rule for rule in rules if rule.category in categories]
    check_selectors(ignore, rules, "--ignore")
    return [rule for rule in chosen if not any(matches(rule, token) for token in ignore)]


def split_tokens(values: Iterable[str] | None) -> list[str]:
    """`--select P1,E4 --select S` -> ['P1', 'E4', 'S']."""
    tokens: list[str] = []
    for value in values or []:
        tokens.extend(part.strip() for part in value.split(",") if part.strip())
    return tokens


def path_ignored(file: str, code: str, settings: FileSettings) -> bool:
    if not settings.per_path_ignores:
        return False
    absolute = os.path.abspath(file)
    relative = os.path.relpath(absolute, settings.base_dir)
    for pattern, codes in settings.per_path_ignores:
        if not any(code.upper().startswith(c.upper()) or c.lower() == "all" for c in codes):
            continue
        if (fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(absolute, pattern)
                or fnmatch.fnmatch(os.path.basename(absolute), pattern)):
            return True
    return False
