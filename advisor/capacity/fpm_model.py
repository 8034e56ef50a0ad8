"""httpd's workers and a php-fpm pool in series: where requests wait.

A request for PHP holds an httpd worker for its whole life, and a php-fpm
child only while PHP runs. With the pool's children as the servers, the
requests in the system are bounded by httpd's MaxRequestWorkers (each
waiting one holds a worker) and by the pool's children + listen.backlog
(beyond that php-fpm's socket refuses): an M/M/c/K queue with c =
pm.max_children and K = min(MaxRequestWorkers, children + backlog). The
classic closed forms give the throughput, the share of arrivals turned away
(blocked: httpd's listen queue or a refused connect, 503), and the mean time
a request waits for a child.

Andersson et al. (2003) model Apache alone as a server that holds at most K
jobs and blocks the next; this is that model with the php-fpm children as
the servers and httpd's pool as part of K. Pure arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SeriesPrediction:
    rate: float
    """Offered PHP requests per second."""
    children: int
    capacity: int
    """K: requests the two pools hold at once."""
    throughput: float
    blocked_share: float
    mean_waiting: float
    """Requests waiting for a php-fpm child, on average."""
    mean_wait_s: float
    """Time a served request waits for a child, on average."""
    busy_children: float


def mmck(rate: float, service_time: float, children: int, capacity: int) -> SeriesPrediction:
    """M/M/c/K: Poisson arrivals at `rate`, exponential service of mean
    `service_time` on `children` servers, at most `capacity` in the system."""
    if rate <= 0 or service_time <= 0 or children < 1 or capacity < children:
        raise ValueError("need rate > 0, service time > 0, children >= 1 and capacity >= children")
    offered = rate * service_time
    # p_n / p_0, built term by term (no factorials: they overflow past 170).
    terms = [1.0]
    for n in range(1, capacity + 1):
        terms.append(terms[-1] * offered / min(n, children))
        if terms[-1] > 1e280:  # rescale to stay finite; only ratios matter
            terms = [t / 1e280 for t in terms]
    total = sum(terms)
    p = [t / total for t in terms]
    throughput = rate * (1.0 - p[capacity])
    waiting = sum((n - children) * pn for n, pn in enumerate(p) if n > children)
    busy = sum(min(n, children) * pn for n, pn in enumerate(p))
    return SeriesPrediction(rate, children, capacity, throughput, p[capacity], waiting,
                            waiting / throughput if throughput > 0 else 0.0, busy)
