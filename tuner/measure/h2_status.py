"""mod_http2's sessions as mod_status shows them, sampled through a trial.

What httpd 2.4.71 (mod_http2 2.0) offers, checked on this machine:
- the `http2-status` handler of older mod_http2 is gone: `SetHandler
  http2-status` answers 404 over HTTP/2, and the module holds no such name;
- `server-status?auto` carries no protocol and nothing of mod_http2;
- the HTML page with ExtendedStatus On has a row per worker slot with a
  Protocol column ("h2" or "http/1.1") and, while a slot serves an HTTP/2
  session, the session's own line in the Request column:
  "[OPENED/DONE] STATE: stream N, METHOD PATH", where OPENED counts the
  streams the client has opened on the session and DONE those finished, so
  OPENED - DONE is the streams open at that moment (h2load with ten streams
  a connection read 1406/1396, 1451/1441...; with H2MaxSessionStreams 2
  never more than 2 apart). A slot the session has left keeps its last line
  with the idle mark "_", so only busy slots count.
- mod_http2's own workers (H2MaxWorkers a child; 3/2 ThreadsPerChild by
  default, "workers_max=37" at 25 threads in its AH03200 debug line) have no
  scoreboard slots: their use is read as the streams open in each child,
  each of which needs a worker until its reply is produced.
- flow-control windows and stalls are not shown anywhere in mod_status.

Nothing here reads the config; the verdict (advisor.tuner.trial.h2_verdict)
sets these figures against the directive lines.
"""

from __future__ import annotations

import html
import re
import statistics
from dataclasses import dataclass, field

from advisor.tuner.measure.status import PeriodicReader, fetch_page

_ROW = re.compile(r"<tr><td><b>([^<]*)</b></td>(.*?)</tr>", re.S)
_CELL = re.compile(r"<td[^>]*>(.*?)</td>", re.S)
_TAG = re.compile(r"<[^>]+>")
_SESSION = re.compile(r"^\[(\d+)/(\d+)\]\s*([a-z ]*)")
IDLE_MARKS = ("_", ".", "")
FLOW_CONTROL_NOT_SHOWN = ("not shown: httpd 2.4.71's mod_status and mod_http2 report no flow-control "
                          "window or stall")


@dataclass(frozen=True)
class H2Session:
    """One HTTP/2 session a busy worker slot was serving at the reading."""

    pid: int
    mark: str  # the slot's scoreboard mark: R, W, K...
    opened: int  # streams the client has opened on it so far
    open_now: int  # streams not yet finished
    state: str  # mod_http2's word: schedule, write, read, wait, idle, done...


@dataclass
class H2Reading:
    """One status page: the HTTP/2 sessions on busy slots, and the HTTP/1.1 slots beside them."""

    t: float
    sessions: list[H2Session] = field(default_factory=list)
    h1_busy: int = 0

    def open_streams_by_child(self) -> dict[int, int]:
        per: dict[int, int] = {}
        for session in self.sessions:
            per[session.pid] = per.get(session.pid, 0) + session.open_now
        return per


def _text(cell: str) -> str:
    return html.unescape(_TAG.sub("", cell)).strip()


def parse_status_page(page: str, t: float = 0.0) -> H2Reading | None:
    """The reading from mod_status's HTML page, or None when the page has no
    per-slot table with a Protocol column (ExtendedStatus Off)."""
    header = page.find("<th>Protocol</th>")
    if header < 0:
        return None
    columns = [_text(c) for c in re.findall(r"<th>(.*?)</th>", page[page.rfind("<tr>", 0, header):], re.S)]
    try:
        where = {name: columns.index(name) for name in ("PID", "M", "Protocol", "Request")}
    except ValueError:
        return None
    reading = H2Reading(t=t)
    for first, rest in _ROW.findall(page):
        cells = [_text(first)] + [_text(c) for c in _CELL.findall(rest)]
        if len(cells) <= max(where.values()):
            continue
        mark = cells[where["M"]]
        if mark in IDLE_MARKS:
            continue
        protocol = cells[where["Protocol"]].lower()
        if protocol != "h2":
            if protocol.startswith("http/1"):
                reading.h1_busy += 1
            continue
        found = _SESSION.match(cells[where["Request"]])
        if found is None:
            continue
        opened, done = int(found.group(1)), int(found.group(2))
        pid = int(cells[where["PID"]]) if cells[where["PID"]].isdigit() else 0
        reading.sessions.append(H2Session(pid=pid, mark=mark, opened=opened, open_now=max(0, opened - done),
                                          state=found.group(3).strip()))
    return reading


def fetch_reading(url: str, session=None, timeout: float = 1.0, t: float = 0.0) -> H2Reading | None:
    """One reading of mod_status's HTML page at `url` (its `?auto` suffix dropped)."""
    page = fetch_page(url.split("?", 1)[0], timeout, session)
    return parse_status_page(page, t) if page is not None else None


class H2Sampler(PeriodicReader[H2Reading]):
    """mod_status's page read every `interval` seconds through a trial, at
    most `max_samples` times, on one kept-alive connection; `reads` counts
    the pages asked, with or without the table."""

    def __init__(self, status_url: str, interval: float = 1.0, max_samples: int = 600):
        super().__init__("h2-status", self._read, interval, max_samples)
        self.status_url = status_url
        self._http = None

    def _read(self, elapsed: float) -> H2Reading | None:
        if self._http is None:
            import requests

            self._http = requests.Session()
        return fetch_reading(self.status_url, self._http, timeout=min(1.0, self.interval), t=elapsed)

    def stop(self) -> list[H2Reading]:
        readings = super().stop()
        if self._http is not None:
            self._http.close()
        return readings


def summarize(readings: list[H2Reading], pages: int) -> dict[str, object]:
    """The trial's HTTP/2 evidence (JSON keys of the trial's `http2`)."""
    if not readings:
        return {"visible": False, "pages": pages,
                "why": "mod_status's page had no per-slot table (ExtendedStatus Off: staging up --extended-status)"
                if pages else "mod_status did not answer", "flow_control": FLOW_CONTROL_NOT_SHOWN}
    sessions = [s for r in readings for s in r.sessions]
    open_per_session = [s.open_now for s in sessions]
    busy_children = [max(r.open_streams_by_child().values(), default=0) for r in readings]
    return {
        "visible": True,
        "readings": len(readings),
        "h2_sessions_busy_max": max(len(r.sessions) for r in readings),
        "h2_sessions_busy_mean": round(statistics.fmean(len(r.sessions) for r in readings), 2),
        "h1_slots_busy_max": max(r.h1_busy for r in readings),
        "streams_open_per_session_max": max(open_per_session, default=0),
        "streams_open_per_session_mean": round(statistics.fmean(open_per_session), 2) if sessions else None,
        "streams_opened_per_session_max": max((s.opened for s in sessions), default=0),
        "streams_open_per_child_max": max(busy_children, default=0),
        "streams_open_per_child_series": busy_children,
        "flow_control": FLOW_CONTROL_NOT_SHOWN,
    }


def summary_line(summary: dict[str, object]) -> str:
    """The text report's one line."""
    if not summary.get("visible"):
        return f"HTTP/2 state: not read ({summary.get('why')})"
    mean = summary.get("streams_open_per_session_mean")
    return (f"HTTP/2 state ({summary['readings']} readings): up to {summary['h2_sessions_busy_max']} sessions on "
            f"workers at once, streams open per session up to {summary['streams_open_per_session_max']}"
            + (f" (mean {mean:g})" if mean is not None else "")
            + f", per child up to {summary['streams_open_per_child_max']}"
            + (f" against H2MaxWorkers {summary['h2_max_workers']}" if summary.get("h2_max_workers") else "")
            + "; flow control not shown")
