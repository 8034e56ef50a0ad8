"""The lint rules, one per module (installed as `advisor.rules`).

Every module here whose name does not start with `_` defines `RULE`, an
`advisor.lint.rule.Rule`. Codes and slugs are part of the product: a code is
never reused for another meaning.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from advisor.lint.rule import Rule


@lru_cache(maxsize=1)
def all_rules() -> tuple[Rule, ...]:
    """Every registered rule, ordered by code."""
    found: list[Rule] = []
    for module_info in pkgutil.iter_modules(__path__):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        rule = getattr(module, "RULE", None)
        if not isinstance(rule, Rule):
            raise TypeError(f"rules/{module_info.name}.py defines no RULE")
        found.append(rule)
    codes: dict[str, Rule] = {}
    slugs: dict[str, Rule] = {}
    for rule in found:
        if rule.code in codes:
            raise ValueError(f"rule code {rule.code} is defined twice")
        if rule.slug in slugs:
            raise ValueError(f"rule slug {rule.slug} is defined twice")
        codes[rule.code] = rule
        slugs[rule.slug] = rule
    return tuple(sorted(found, key=lambda rule: rule.code))


def rule_by_code() -> dict[str, Rule]:
    return {rule.code: rule for rule in all_rules()}


def find_rule(name: str) -> Rule | None:
    """A rule by code (case-insensitive) or slug."""
    wanted = name.strip()
    for rule in all_rules():
        if rule.code.lower() == wanted.lower() or rule.slug == wanted.lower():
            return rule
    return None
