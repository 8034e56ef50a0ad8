"""C205: httpd's pool and the php-fpm pools it feeds do not fit in RAM together.

C201's sum (Kegel 1997) covers httpd alone. With PHP in php-fpm the memory
goes to php-fpm's children, pm.max_children of each pool, and both pools
are full at the same moment under load: every busy httpd worker waits on a
busy php-fpm child.
"""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule
from advisor.lint.values import format_bytes

from ._fpm import child_memory, described, ram_text, report_children, used_pools
from ._mpm import effective_workers
from .c201_memory_overcommit import sizing

DOC = Doc(
    summary="httpd's workers plus the php-fpm pools' pm.max_children exceed RAM",
    what=(
        "When the config hands PHP to php-fpm (SetHandler proxy:...|fcgi:// or ProxyPass "
        "fcgi://) and the pool files are known (--fpm-config, or /etc/php/*/fpm/pool.d and "
        "/etc/php-fpm.d when linting this host), adds C201's sum for httpd's pool to "
        "pm.max_children x the memory of one php-fpm child for every pool reached, and flags "
        "the line that hands PHP to the pool when the total exceeds RAM while httpd's pool alone fits (C201 covers that case). "
        "The child memory is --fpm-memory, the mean PSS of the pool's running children, or "
        "an assumed 48 MiB that the message names."
    ),
    why=(
        "Under load both pools fill together: each httpd worker serving PHP holds a php-fpm "
        "child for as long as the script runs. A pool that fits alone but not with the other "
        "one sends the host into swap, or a container to its OOM killer, at the peak. Kegel "
        "(1997) found no gradual decline: 150 Apache processes on 32 MB made the machine "
        "unresponsive. Sizing tools that count php-fpm only as 'other services' measure "
        "today's idle children, not the pm.max_children the pool may start."
    ),
    evidence=(
        "Kegel (1997): with 32 MB of RAM, 150 Apache processes made the machine unresponsive; "
        "RAM = OS + per process + 64 KB per connection + active documents."
    ),
    bad="# 2 GiB, event MPM; pool www: pm.max_children = 60 (about 48 MiB a child)\nMaxRequestWorkers 150",
    good="# 2 GiB, event MPM; pool www: pm.max_children = 25 (about 48 MiB a child)\nMaxRequestWorkers 150",
    fix=(
        "Lower pm.max_children to what RAM leaves after httpd's pool (the message gives the "
        "figure), or lower MaxRequestWorkers: more httpd workers than php-fpm children only "
        "queue in php-fpm's listen backlog (C206)."
    ),
    references=(
        "Kegel 1997, 'Fixing an overloaded web server' (RAM rule of thumb, thrashing)",
        "https://www.php.net/manual/en/install.fpm.configuration.php",
        "https://httpd.apache.org/docs/2.4/mod/mod_proxy_fcgi.html",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    ram = ctx.facts.ram
    pools = used_pools(ctx)
    if ram is None or not pools or ctx.mpm not in ("prefork", "worker", "event"):
        return
    workers = effective_workers(ctx)
    if workers is None or workers <= 0:
        return
    httpd = sizing(ctx, workers)
    if httpd.total > ram:
        return  # C201's finding: httpd's pool alone does not fit
    parts = []
    fpm_total = 0
    for pool in pools:
        size, source = child_memory(ctx, pool)
        if pool.pm == "static" and httpd.os_reserve + pool.max_children * size > ram:
            return  # C208's finding: that pool alone does not fit
        fpm_total += pool.max_children * size
        parts.append(f"pool [{pool.name}] {pool.max_children} children x {format_bytes(size)} ({source})")
    if httpd.total + fpm_total <= ram:
        return
    first = pools[0]
    size, _ = child_memory(ctx, first)
    others = fpm_total - first.max_children * size
    fits = max(0, (ram - httpd.total - others) // size)
    report_children(ctx, report, first,
                    f"httpd's pool ({httpd.workers:,} workers, about {format_bytes(httpd.total)} with the OS) "
                    f"and php-fpm's ({'; '.join(parts)}) need about {format_bytes(httpd.total + fpm_total)} "
                    f"together but RAM is {ram_text(ctx)}: at a peak both fill and the host swaps or the "
                    f"OOM killer ends children. {described(first, 'pm.max_children')}; about {fits} fit.",
                    fits)

RULE = Rule(code="C205", slug="fpm-children-exceed-ram", severity="error", category="capacity",
            directives=("MaxRequestWorkers", "SetHandler", "ProxyPass", "ProxyPassMatch"),
            doc=DOC, check=check)
