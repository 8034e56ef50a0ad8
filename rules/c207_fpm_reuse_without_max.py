"""C207: enablereuse=on to a php-fpm pool without a max= the pool can hold.

With enablereuse=on each httpd child keeps its backend connections open,
up to `max` (default: ThreadsPerChild), and a php-fpm child serves one
connection at a time: a kept connection ties its child up even while idle.
The mod_proxy_fcgi manual warns of exactly this.
"""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._fpm import described, used_pools
from ._mpm import effective_workers, processes_for, setting

DOC = Doc(
    summary="enablereuse=on to a php-fpm pool without a max= its pm.max_children can hold",
    what=(
        "For a handoff to php-fpm with enablereuse=on (on the ProxyPass line or by ProxySet in "
        "the matching <Proxy>), multiplies httpd's child processes at MaxRequestWorkers by the "
        "connections each keeps (max=, else ThreadsPerChild for worker and event, 1 for "
        "prefork) and flags the line when that exceeds the pool's pm.max_children."
    ),
    why=(
        "A php-fpm child serves one FastCGI connection at a time, and a connection httpd "
        "keeps for reuse keeps its child, busy or not. When httpd's children can keep more "
        "connections than the pool has children, some httpd children hold every php-fpm "
        "child while the others' requests wait in the listen queue: the mod_proxy_fcgi "
        "manual warns that reuse can tie up all backend processes. More connections than the "
        "backend can serve add no throughput: Arlitt & Williamson (2004, section 5.1.5) "
        "measured the same peak of 5,700 replies/s with MaxClients 150 and 1,024."
    ),
    evidence=(
        "Arlitt & Williamson (2004, 5.1.5): MaxClients 150 and 1,024 reached the same peak of "
        "5,700 replies/s: connections beyond what the server works on add no throughput."
    ),
    bad=('ProxyPassMatch "^/(.*\\.php)$" "unix:/run/php/php8.2-fpm.sock|fcgi://localhost/var/www/$1" '
         "enablereuse=on\n# 16 httpd children x 25 threads; pool: pm.max_children = 20"),
    good=('ProxyPassMatch "^/(.*\\.php)$" "unix:/run/php/php8.2-fpm.sock|fcgi://localhost/var/www/$1" '
          "enablereuse=on max=1\n# 16 httpd children x 1 kept connection; pool: pm.max_children = 20"),
    fix=(
        "Give max=N with N x httpd's child processes at most pm.max_children (the message "
        "gives N), raise pm.max_children, or leave enablereuse off (the default) for php-fpm."
    ),
    references=(
        "Arlitt & Williamson 2004, sec. 5.1.5 (MaxClients 150 vs 1,024: same peak)",
        "https://httpd.apache.org/docs/2.4/mod/mod_proxy_fcgi.html (enablereuse)",
        "https://httpd.apache.org/docs/2.4/mod/mod_proxy.html#proxypass (max)",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    setup = ctx.facts.fpm
    if not used_pools(ctx) or ctx.mpm not in ("prefork", "worker", "event"):
        return
    workers = effective_workers(ctx)
    if workers is None or workers <= 0:
        return
    processes = processes_for(ctx, workers)
    threads = 1 if ctx.mpm == "prefork" else (setting(ctx, "threadsperchild", "ThreadsPerChild").value or 25)
    for handoff in setup.handoffs:
        pool = handoff.pool
        if pool is None or not handoff.enablereuse:
            continue
        given = handoff.max_connections
        kept = given if given is not None else threads
        if processes * kept <= pool.max_children:
            continue
        each = pool.max_children // processes
        said = f"max={given}" if given is not None else f"no max= (so ThreadsPerChild, {threads})"
        report((handoff.file, handoff.line),
               f"enablereuse=on with {said}: {processes:,} httpd children can keep {processes * kept:,} "
               f"connections to php-fpm pool [{pool.name}], which has {described(pool, 'pm.max_children')}; "
               f"each kept connection holds a php-fpm child, so some httpd children starve the others.",
               fix=f"max={each}" if each >= 1 else "enablereuse=off",
               severity="warning")


RULE = Rule(code="C207", slug="fpm-reuse-without-max", severity="warning", category="capacity",
            directives=("ProxyPass", "ProxyPassMatch", "ProxySet"),
            doc=DOC, check=check)
