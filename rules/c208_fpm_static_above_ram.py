"""C208: a php-fpm pool with pm = static sized above RAM.

pm = static starts every one of pm.max_children at once and keeps them: the
pool's memory is spent from the start, not only at a peak.
"""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import format_bytes

from ._fpm import child_memory, described, ram_text, report_children, used_pools
from .c201_memory_overcommit import DEFAULT_OS_RESERVE

DOC = Doc(
    summary="php-fpm pool with pm = static whose pm.max_children do not fit in RAM",
    what=(
        "For each php-fpm pool the config reaches with pm = static, adds the OS reserve "
        "(C201's) to pm.max_children x the memory of one child (--fpm-memory, the measured "
        "PSS of its running children, or an assumed 48 MiB) and flags the line that hands "
        "PHP to it when the pool alone exceeds RAM (the message names pm.max_children's file:line)."
    ),
    why=(
        "A static pool forks all its children when php-fpm starts and never stops them, so "
        "a pool above RAM swaps, or meets the OOM killer in a container, as soon as the "
        "children have touched their memory, before any peak. Kegel (1997) saw what follows: "
        "on 32 MB, 150 Apache processes made the machine unresponsive. Static pools did not "
        "pay off for Apache either: every static pool Arlitt & Williamson (2004, 5.1.5) "
        "measured peaked below the dynamic default."
    ),
    evidence=(
        "Kegel (1997): with 32 MB of RAM, 150 Apache processes made the machine unresponsive; "
        "Arlitt & Williamson (2004, 5.1.5): static pools of 128 to 1,024 peaked below the default."
    ),
    bad="; 2 GiB of RAM, children of about 48 MiB\npm = static\npm.max_children = 60",
    good="; 2 GiB of RAM, children of about 48 MiB\npm = static\npm.max_children = 30",
    fix="Lower pm.max_children to what fits (the message gives it), or use pm = dynamic or ondemand.",
    references=(
        "Kegel 1997, 'Fixing an overloaded web server' (RAM rule of thumb, thrashing)",
        "Arlitt & Williamson 2004, sec. 5.1.5 (static pools)",
        "https://www.php.net/manual/en/install.fpm.configuration.php",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    ram = ctx.facts.ram
    if ram is None:
        return
    reserve = ctx.facts.os_reserve if ctx.facts.os_reserve is not None else DEFAULT_OS_RESERVE
    for pool in used_pools(ctx):
        if pool.pm != "static":
            continue
        size, source = child_memory(ctx, pool)
        need = reserve + pool.max_children * size
        if need <= ram:
            continue
        fits = max(0, (ram - reserve) // size)
        report_children(ctx, report, pool,
                        f"php-fpm pool [{pool.name}] is pm = static with {described(pool, 'pm.max_children')}: "
                        f"OS {format_bytes(reserve)} + {pool.max_children} children x {format_bytes(size)} "
                        f"({source}) = {format_bytes(need)} from the start, but RAM is {ram_text(ctx)}. "
                        f"About {fits} fit.",
                        fits)

RULE = Rule(code="C208", slug="fpm-static-above-ram", severity="error", category="capacity",
            directives=("SetHandler", "ProxyPass", "ProxyPassMatch"),
            doc=DOC, check=check)
