"""A browser-like workload: visitors who load pages and each page's assets.

A page is one HTML file of the sandbox's Almeida file set and the assets a
browser fetches once the HTML has arrived. Almeida et al. (1996, Table 1,
workload A) give the classes' access probabilities: HTML 0.192, images 0.754,
sound 0.05, video 0.004, so a page brings on average 0.754 / 0.192 = 3.9
images, 0.26 sounds and 0.02 videos. A visit is a few pages with think time
between them.

The same visits are written for both load generators:
- httperf (HTTP/1.1): a --wsesslog file in which a page's assets are a burst
  (indented lines) that httperf spreads over several connections of the
  session without pipelining, as HTTP/1.1 browsers do. Browsers open up to
  six; httperf 0.9.0 refuses more than four a session ("--max-conns must be
  <= 4", its compiled limit), so a visitor here opens four;
- h2load (HTTP/2): a --timing-script-file, every request at its offset on the
  visitor's one connection, the assets as concurrent streams. A timing script
  cannot wait for the page's reply, so the assets are sent one page time
  later (two round trips and the page's service, `asset_delay_ms`).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import lru_cache

from advisor.tuner.load.workload import ALMEIDA_WORKLOAD_A

BROWSER_H1_CONNECTIONS = 6
"""The connections an HTTP/1.1 browser opens to one host (RFC 7230 lifted
RFC 2616's two; browsers settled on six)."""
HTTPERF_SESSION_CONNECTIONS = 4
"""The most httperf 0.9.0 opens for one session (session.c's MAX_CONN)."""
BROWSER_SEED = 2717
DEFAULT_THINK_S = 1.0
"""Seconds between a visit's pages when --think is not given."""


ASSETS_PER_PAGE = sum(p for _c, _e, _f, _kb, p in ALMEIDA_WORKLOAD_A[1:]) / ALMEIDA_WORKLOAD_A[0][4]
"""The mean assets a page brings (images, sounds and videos over HTML: 4.2)."""


@dataclass(frozen=True)
class Page:
    html: str
    assets: tuple[str, ...]

    @property
    def requests(self) -> int:
        return 1 + len(self.assets)


@dataclass(frozen=True)
class Visit:
    pages: tuple[Page, ...]

    @property
    def requests(self) -> int:
        return sum(page.requests for page in self.pages)


def _class_uris() -> dict[str, list[str]]:
    """The sandbox's file names per class (workload.write_docroot names them so)."""
    return {klass: [f"/almeida/{klass}/{klass}{index:02d}.{ext}" for index in range(files)]
            for klass, ext, files, _kb, _p in ALMEIDA_WORKLOAD_A}


def _poisson(rng: random.Random, mean: float) -> int:
    """Knuth's method: small means only (a page's assets)."""
    limit, count, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        count += 1
        product *= rng.random()
    return count


def make_visits(count: int, pages_per_visit: int, seed: int = BROWSER_SEED) -> list[Visit]:
    """`count` visits of `pages_per_visit` pages, drawn with Almeida's proportions."""
    if count < 1 or pages_per_visit < 1:
        raise ValueError("a workload needs at least one visit of one page")
    rng = random.Random(seed)
    uris = _class_uris()
    per_page = {klass: probability / ALMEIDA_WORKLOAD_A[0][4]
                for klass, _ext, _files, _kb, probability in ALMEIDA_WORKLOAD_A[1:]}
    visits = []
    for _ in range(count):
        pages = []
        for _ in range(pages_per_visit):
            assets = [rng.choice(uris[klass]) for klass, mean in per_page.items()
                      for _ in range(_poisson(rng, mean))]
            pages.append(Page(rng.choice(uris["html"]), tuple(assets)))
        visits.append(Visit(tuple(pages)))
    return visits


def httperf_session_log(visits: list[Visit], think_s: float) -> str:
    """The --wsesslog text: a page line, its assets indented (the burst httperf
    sends once the page's reply is in), a blank line between visits. Each page
    but a visit's last carries its think time (`think=`, the pause after its
    burst), so that the file alone gives a visit's length."""
    lines: list[str] = []
    for visit in visits:
        for index, page in enumerate(visit.pages):
            last = index == len(visit.pages) - 1
            lines.append(page.html if last else f"{page.html} think={think_s:g}")
            lines.extend(f"  {asset}" for asset in page.assets)
        lines.append("")
    return "\n".join(lines) + "\n"


def httperf_browser_args() -> list[str]:
    """What makes httperf's sessions open connections as an HTTP/1.1 browser does."""
    return [f"--max-connections={min(BROWSER_H1_CONNECTIONS, HTTPERF_SESSION_CONNECTIONS)}", "--max-piped-calls=1"]


def asset_delay_ms(rtt_ms: float, page_service_ms: float = 5.0) -> float:
    """When a browser asks for a page's assets: after the page's reply (request
    and reply each cross the link once) and its service time."""
    return rtt_ms + page_service_ms


def h2load_timing_script(visit: Visit, base_uri: str, think_s: float, rtt_ms: float) -> str:
    """One visitor's --timing-script-file: every request at its offset in ms.

    h2load takes the scheme, host and port from the first line's URI only.
    """
    lines: list[str] = []
    offset = 0.0
    delay = asset_delay_ms(rtt_ms)
    for page in visit.pages:
        first = not lines
        lines.append(f"{offset:.3f}\t{base_uri.rstrip('/') + page.html if first else page.html}")
        lines.extend(f"{offset + delay:.3f}\t{asset}" for asset in page.assets)
        offset += delay + rtt_ms + 1000.0 * think_s
    return "\n".join(lines) + "\n"


SESSION_LOG_VISITS = 400
"""Distinct visits in httperf's session log of a browser trial (it reuses them round-robin past the end)."""


def visitors_split(total: int, share: float) -> tuple[int, int]:
    """(visitors on HTTP/2, visitors on HTTP/1.1) of a mixed run: each side at least one."""
    on_h2 = min(total - 1, max(1, round(share * total))) if total > 1 else 1
    return on_h2, max(1, total - on_h2)


@lru_cache(maxsize=8)
def _visit_requests(pages: int) -> tuple[int, tuple[int, ...]]:
    """(the requests of the one visit h2load's script repeats, the requests of
    each visit httperf's session log cycles through) for visits of `pages` pages."""
    h2_visit = make_visits(1, pages)[0].requests
    return h2_visit, tuple(visit.requests for visit in make_visits(SESSION_LOG_VISITS, pages))


def planned_requests(visitors: int, pages: int, served: str, h2_share: float = 0.0) -> int:
    """The requests a browser trial's visitors were to send, page and assets
    alike, by the protocol its replies came over ("h2", "mix", else HTTP/1.1:
    a mix on a server that does not speak h2 is all HTTP/1.1 visits)."""
    h2_visit, h1_visits = _visit_requests(pages)

    def over_h1(sessions: int) -> int:  # httperf cycles through the log from its first visit
        full, rest = divmod(sessions, len(h1_visits))
        return full * sum(h1_visits) + sum(h1_visits[:rest])

    if served == "mix":
        on_h2, on_h1 = visitors_split(visitors, h2_share)
        return on_h2 * h2_visit + over_h1(on_h1)
    if served == "h2":
        return visitors * h2_visit
    return over_h1(visitors)
