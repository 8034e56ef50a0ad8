"""C206: more httpd workers send to a php-fpm pool than it can hold.

A pool holds pm.max_children requests at work and listen.backlog more
waiting in the kernel's queue of its socket. Andersson et al. (2003) model
Apache as a server that holds at most K jobs and blocks the next; with
php-fpm behind httpd the second pool is such a server, with K = children +
backlog, and httpd's workers are its arrivals.
"""

from __future__ import annotations

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._fpm import described, used_pools
from ._mpm import effective_workers

DOC = Doc(
    summary="More httpd workers send to a php-fpm pool than its children plus listen.backlog",
    what=(
        "For each php-fpm pool the config reaches (pool files from --fpm-config, or from /etc "
        "when linting this host), compares httpd's MaxRequestWorkers (after httpd's own "
        "corrections: every worker may be serving PHP at a peak) with pm.max_children + "
        "listen.backlog (php-fpm's default 511 when unset), and flags the handoff line when "
        "the workers are more."
    ),
    why=(
        "Requests beyond pm.max_children wait in the pool's listen queue; beyond the backlog "
        "the connect fails (a unix socket answers EAGAIN at once, a TCP one drops the SYN), "
        "and mod_proxy_fcgi returns 503, or 504 once ProxyTimeout passes for those that wait. "
        "Andersson et al. (2003) model Apache as a server holding at most K jobs that blocks "
        "the next arrival; with K fitted at 208 to 298 for MaxClients 75 and 150, the worst "
        "response time is bounded by K while throughput is not raised by it. Behind httpd, "
        "php-fpm is that server: httpd workers beyond its K only turn into blocked requests."
    ),
    evidence=(
        "Andersson et al. (2003): a server that holds at most K jobs blocks the next; K = 208 "
        "to 298 for MaxClients 75 and 150, and throughput does not grow with it."
    ),
    bad="# pool www: pm.max_children = 5, listen.backlog = 64\nMaxRequestWorkers 400",
    good="# pool www: pm.max_children = 20, listen.backlog = 511\nMaxRequestWorkers 400",
    fix=(
        "Raise pm.max_children (as far as RAM allows, C205) or listen.backlog (capped by "
        "net.core.somaxconn), or lower MaxRequestWorkers to what the pool can hold."
    ),
    references=(
        "Andersson, Cao, Kihl & Nyberg 2003, MMPP/G/1/K*PS model of Apache (blocking at K)",
        "https://www.php.net/manual/en/install.fpm.configuration.php",
        "https://httpd.apache.org/docs/2.4/mod/mod_proxy_fcgi.html",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    pools = used_pools(ctx)
    if not pools or ctx.mpm not in ("prefork", "worker", "event"):
        return
    workers = effective_workers(ctx)
    if workers is None or workers <= 0:
        return
    for pool in pools:
        holds = pool.max_children + pool.listen_backlog
        if workers <= holds:
            continue
        handoff = ctx.facts.fpm.handoffs_to(pool)[0]
        report((handoff.file, handoff.line),
               f"{workers:,} httpd workers can send to php-fpm pool [{pool.name}] ({handoff.text}), which "
               f"holds {holds:,}: {described(pool, 'pm.max_children')} + "
               f"{described(pool, 'listen.backlog')}. At a peak the other {workers - holds:,} are refused "
               f"(503) and those queued wait until ProxyTimeout (504).",
               fix=f"pm.max_children = {workers - pool.listen_backlog}",
               severity="warning")


RULE = Rule(code="C206", slug="fpm-pool-below-workers", severity="warning", category="capacity",
            directives=("MaxRequestWorkers", "SetHandler", "ProxyPass", "ProxyPassMatch"),
            doc=DOC, check=check)
