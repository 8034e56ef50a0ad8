"""What the php-fpm rules share: the pools the tree hands PHP to, and the
memory of one child of each (given, measured or assumed).

The pools were read by advisor.config.fpm_pools (the reader layer); here
they are only looked at.
"""

from __future__ import annotations

from advisor.config.fpm_pools import DEFAULT_CHILD_BYTES, FpmPool, FpmValue
from advisor.lint.context import LintContext
from advisor.lint.values import format_bytes


def used_pools(ctx: LintContext) -> list[FpmPool]:
    setup = ctx.facts.fpm
    return setup.used_pools() if setup is not None else []


def child_memory(ctx: LintContext, pool: FpmPool) -> tuple[int, str]:
    found = ctx.facts.fpm_memory.get(pool.name)
    if found is not None:
        return found
    return DEFAULT_CHILD_BYTES, f"assumed {format_bytes(DEFAULT_CHILD_BYTES)} a child; measure with --fpm-memory"


def location(pool: FpmPool, key: str) -> tuple[str, int]:
    """Where a pool setting is written; the pool's [name] line for a default."""
    found = pool.settings.get(key)
    if found is not None and found.written:
        return found.file, found.line
    return pool.file, pool.line


def described(pool: FpmPool, key: str) -> str:
    found: FpmValue | None = pool.value(key)
    if found is None:
        return f"{key} unset"
    return f"{key} = {found.text} ({found.where()})"


def ram_text(ctx: LintContext) -> str:
    """'2 GiB (--ram)': the RAM and where it came from."""
    source = f" ({ctx.facts.ram_source})" if ctx.facts.ram_source else ""
    return f"{format_bytes(ctx.facts.ram)}{source}"


def report_children(ctx: LintContext, report, pool: FpmPool, message: str, fits: int) -> None:
    """A finding about a pool's pm.max_children, at the line that hands PHP
    to the pool (the Apache tree is what is linted and where suppressions
    live), related to the pool file's line."""
    handoff = ctx.facts.fpm.handoffs_to(pool)[0]
    report((handoff.file, handoff.line), message,
           fix=f"pm.max_children = {fits}" if fits > 0 else None,
           severity="error", related=location(pool, "pm.max_children"))
