"""A replay's options, and an access log's records grouped into sessions and bursts.

Sessions are grouped by client and split at an idle gap; a burst is the
requests within about a second of its first (a page and its embedded
objects), and the think time is the pause between bursts. Memory is the URL
table and the sessions still open: a session is written out (with URL
numbers, to a scratch file) as soon as its client has been idle longer than
the gap, so a log of any length streams through (advisor.tuner.load.replay
puts the whole derivation together).
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

from advisor.errors import UsageError
from advisor.tuner.load.accesslog import LogRecord

DEFAULT_GAP_S = 30.0
BURST_WINDOW_S = 1.0
_WHITE = re.compile(r"\s")


@dataclass(frozen=True)
class ReplayOptions:
    session_gap_s: float = DEFAULT_GAP_S
    burst_window_s: float = BURST_WINDOW_S
    dynamic: str = "static"  # "static": files of the logged size; "cgi": the sandbox's CGI endpoint
    anonymize: bool = False
    prefix: str | None = "/log"  # where the sandbox serves the files; None: replay the logged paths as they are
    header_bytes: int = 0  # taken off each logged size (%O counts headers)

    def __post_init__(self) -> None:
        if not 0 < self.session_gap_s <= 86400:
            raise UsageError("--session-gap must be more than 0 and at most 86400 seconds")
        if self.dynamic not in ("static", "cgi"):
            raise UsageError(f"unknown --dynamic {self.dynamic!r}", hint="choose static or cgi")
        if self.anonymize and self.prefix is None:
            raise UsageError("--anonymize needs the sandbox, which serves the renamed files",
                             hint="replay against the sandbox (--workdir), or drop --anonymize")


class UrlEntry:
    """One distinct URL: how often it was replayed and the bytes logged for it."""

    __slots__ = ("number", "count", "bytes_total")

    def __init__(self, number: int) -> None:
        self.number = number
        self.count = 0
        self.bytes_total = 0

    @property
    def size(self) -> int:
        return round(self.bytes_total / self.count) if self.count else 0


class _Burst:
    __slots__ = ("start", "last", "urls")

    def __init__(self, start: float, url: int) -> None:
        self.start = start
        self.last = start
        self.urls = [url]


class _OpenSession:
    __slots__ = ("last", "bursts")

    def __init__(self, time: float) -> None:
        self.last = time
        self.bursts: list[_Burst] = []


@dataclass
class Derivation:
    """Counts over the whole log, kept as histograms so they cost no memory per line."""

    records: int = 0
    replayed: int = 0
    left_out: Counter = field(default_factory=Counter)
    sessions: int = 0
    requests_per_session: Counter = field(default_factory=Counter)
    bursts_per_session: Counter = field(default_factory=Counter)
    burst_sizes: Counter = field(default_factory=Counter)
    think_cs: Counter = field(default_factory=Counter)  # think times in hundredths of a second
    bytes_total: int = 0
    first_time: float | None = None
    last_time: float | None = None


class SessionBuilder:
    """Group records into sessions as they stream by; closed sessions go to `scratch`.

    Sessions interleave in a log, so the open ones sit in an OrderedDict by
    last activity: those idle longer than the gap, at the front, are
    written out as the log's clock moves on.
    """

    def __init__(self, options: ReplayOptions, scratch, header_bytes: int = 0) -> None:
        self.options = options
        self.scratch = scratch
        self.header_bytes = header_bytes
        self.urls: dict[str, UrlEntry] = {}
        self.open: OrderedDict[bytes, _OpenSession] = OrderedDict()
        self.counts = Derivation()
        self.now = float("-inf")
        self.peak_open = 0
        self.longest_s = 0.0

    def add(self, record: LogRecord) -> None:
        counts = self.counts
        counts.records += 1
        when = record.time
        if when > self.now:
            if counts.first_time is None:
                counts.first_time = when
            self.now = counts.last_time = when
            self._close_idle()
        elif when < counts.first_time:  # type: ignore[operator]  # set by the first record
            counts.first_time = when
        if record.method != "GET":
            counts.left_out[f"method {record.method[:16]}"] += 1
            return
        if record.status != 200:
            counts.left_out[f"status {record.status}"] += 1
            return
        target = record.target
        if _WHITE.search(target):
            counts.left_out["path with white space"] += 1
            return
        client = record.client
        opened = self.open
        session = opened.get(client)
        if session is not None and when - session.last > self.options.session_gap_s:
            self._emit(opened.pop(client))
            session = None
        if session is None:
            session = opened[client] = _OpenSession(when)
            if len(opened) > self.peak_open:
                self.peak_open = len(opened)
        else:
            opened.move_to_end(client)
            if when < session.last:  # a line logged a little out of order
                when = session.last
        entry = self.urls.get(target)
        if entry is None:
            entry = self.urls[target] = UrlEntry(len(self.urls))
        size = (record.size or 0) - self.header_bytes
        if size < 0:
            size = 0
        entry.count += 1
        entry.bytes_total += size
        counts.bytes_total += size
        counts.replayed += 1
        bursts = session.bursts
        if bursts and when - bursts[-1].start <= self.options.burst_window_s:
            burst = bursts[-1]
            burst.urls.append(entry.number)
            burst.last = when
        else:
            bursts.append(_Burst(when, entry.number))
        session.last = when

    def _close_idle(self) -> None:
        horizon = self.now - self.options.session_gap_s
        while self.open:
            client, session = next(iter(self.open.items()))
            if session.last >= horizon:
                break
            del self.open[client]
            self._emit(session)

    def finish(self) -> None:
        while self.open:
            _client, session = self.open.popitem(last=False)
            self._emit(session)

    def _emit(self, session: _OpenSession) -> None:
        """One line per burst: its think time after it, then its URL numbers."""
        counts = self.counts
        counts.sessions += 1
        bursts = session.bursts
        counts.requests_per_session[sum(len(b.urls) for b in bursts)] += 1
        counts.bursts_per_session[len(bursts)] += 1
        lines = []
        span = 0.0
        for index, burst in enumerate(bursts):
            counts.burst_sizes[len(burst.urls)] += 1
            think = None
            if index + 1 < len(bursts):
                think = max(0.0, bursts[index + 1].start - burst.last)
                counts.think_cs[int(round(think * 100))] += 1
                span += think
            lines.append(("-" if think is None else f"{think:g}") + " " + " ".join(map(str, burst.urls)))
        self.longest_s = max(self.longest_s, span)
        self.scratch.write("\n".join(lines) + "\n\n")
