"""The demand an access log shows, second by second: `capacity --log`.

Pure: the command reads the log (advisor.tuner.load.accesslog's lean
`timings` pass) and feeds each line's arrival time and hold time to a
`DemandAccumulator`; nothing is kept per line. What is kept is per second
of the log: the arrivals, and the worker-seconds the requests held in that
second. That is Little's law taken one second at a time: the mean number of
busy workers over a second is the time all requests spent in workers during
it, so a request that arrived at t and held its worker for d seconds (%D)
adds the part of [t, t + d) that falls in each second it spans. Whole
seconds go through a difference array, so a long request costs no more than
a short one.

Memory is a few arrays of one number per second of the log's span (28 bytes
a second: 2.4 MB a day), and a fixed histogram of hold times.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field

# Lines are written when the request ends but stamped with its start, so a
# long request's line comes after later ones: a step back this large is
# still the ordinary order of an access log.
BACKWARD_SLACK_SECONDS = 300
MAX_SPAN_DAYS = 31
# Hold-time histogram: 50 bins per decade from 1 µs to 10^5 s (4.7 % wide).
_BINS_PER_DECADE = 50
_LOW_EXPONENT = -6
_DECADES = 11
# The pool counts as full in a second whose mean busy workers reach this share
# of MaxRequestWorkers: a per-second mean cannot pass the pool, and a second
# that begins or ends a spell at the limit shows a little under it.
FULL_SHARE = 0.95


class LogOrderError(ValueError):
    """A time far before the ones already read: the files are out of order."""


class LogSpanError(ValueError):
    """The log spans more time than the per-second arrays hold."""


@dataclass
class HoldDistribution:
    """How long requests held their worker (s), from %D or %T."""

    source: str
    count: int
    mean: float
    cv: float
    """Standard deviation over the mean."""
    minimum: float
    p50: float
    p90: float
    p99: float
    maximum: float


@dataclass
class KeepAliveHolds:
    """Workers held by idle keep-alive connections, when the log can tell."""

    counted: bool
    how: str
    connections: int = 0
    timeout: float = 0.0
    peak_idle_workers: float = 0.0
    open_share: float | None = None
    """%X: share of responses after which the connection stayed open."""
    h2_connections: int = 0
    """New HTTP/2 connections (stream 1) counted as idle holds (under worker)."""
    h2_timeout: float = 0.0


@dataclass
class ProtocolCount:
    """The requests per protocol, when the format tells it (%H, or %r's last word)."""

    source: str
    requests: int
    """Requests read (a line that names no protocol counts as HTTP/1.x)."""
    h2_requests: int
    h2_share: float
    h1_connections: int | None = None
    """New HTTP/1.x connections (%k = 0); None without %k."""
    h2_connections: int | None = None
    """New HTTP/2 connections (stream 1 of %{H2_STREAM_ID}e or %{H2_STREAM_TAG}e); None without them."""


@dataclass
class LogDemand:
    """The log's demand, summed up (the per-second series stay in `SecondSeries`)."""

    files: list[str]
    lines: int
    skipped: int
    skip_reasons: list[str]
    requests: int
    first: float
    """Epoch seconds of the first second with an arrival."""
    seconds: int
    """Seconds from the first arrival's second to the last's, inclusive."""
    mean_rate: float
    busiest_minute_rate: float
    busiest_minute_start: float
    busiest_second_rate: int
    busiest_second_at: float
    p99_second_rate: float
    hold: HoldDistribution | None
    mean_busy: float
    peak_busy: float
    """Mean busy workers in the busiest second (requests and, when counted, idle keep-alive holds)."""
    peak_busy_at: float
    p99_busy: float
    peak_busy_requests: float
    """The busiest second counting requests only."""
    keepalive: KeepAliveHolds
    notes: list[str] = field(default_factory=list)
    protocols: ProtocolCount | None = None
    """None: the format has neither %H nor %r, the mix is unknown."""


@dataclass
class SecondSeries:
    """Per second of the log, from `first`: arrivals, and busy workers."""

    first: float
    arrivals: array
    busy: array
    """Mean workers busy with requests."""
    idle: array
    """Mean workers held by idle keep-alive connections (zeros when not counted)."""

    def total(self, index: int) -> float:
        return self.busy[index] + self.idle[index]


class DemandAccumulator:
    """Per-second sums over a stream of (arrival, hold) pairs, in log order."""

    def __init__(self, *, fixed_hold: float | None = None, keepalive_timeout: float | None = None,
                 h2_keepalive_timeout: float | None = None):
        self.fixed_hold = fixed_hold
        """Seconds every request holds its worker when the log has no %D/%T."""
        self.keepalive_timeout = keepalive_timeout
        """Seconds an idle keep-alive connection holds a worker (None: it holds none)."""
        self.h2_keepalive_timeout = h2_keepalive_timeout
        """Seconds an idle HTTP/2 connection holds an MPM worker (None: it holds none)."""
        self.origin: int | None = None
        self.arrivals = array("I")
        self.part = array("d")  # worker-seconds of partial seconds
        self.whole = array("f")  # difference array of whole busy seconds
        self.idle_part = array("d")
        self.idle_whole = array("f")
        self.requests = 0
        self.latest = -math.inf
        self.low = math.inf
        self.high = -math.inf
        self.hold_count = 0
        self.hold_sum = 0.0
        self.hold_squares = 0.0
        self.hold_min = math.inf
        self.hold_max = 0.0
        self.histogram = [0] * (_BINS_PER_DECADE * _DECADES + 2)
        self.connections = 0
        self.status_seen = 0
        self.status_open = 0
        self.no_hold = 0
        self.h2_requests = 0
        self.h1_starts = 0
        self.h2_starts = 0
        self.h2_connections = 0

    # -- the stream ---------------------------------------------------------------

    def add(self, when: float, hold: float | None, keepalive: int | None = None, status: str | None = None,
            h2: bool | None = None, h2_first: bool | None = None) -> None:
        if self.origin is None:
            self.origin = int(math.floor(when)) - BACKWARD_SLACK_SECONDS
        if when < self.latest - BACKWARD_SLACK_SECONDS or when < self.origin:
            raise LogOrderError(f"the time goes back {self.latest - when:.0f} s from the lines before it")
        if when > self.latest:
            self.latest = when
        self.low = min(self.low, when)
        self.high = max(self.high, when)
        self.requests += 1
        start = when - self.origin
        second = int(start)
        self._reach(second)
        self.arrivals[second] += 1
        if hold is None:
            hold = self.fixed_hold
            self.no_hold += 1
        else:
            self._count_hold(hold)
        if hold:
            self._interval(self.part, self.whole, start, start + hold)
        if status is not None:
            self.status_seen += 1
            if status == "+":
                self.status_open += 1
        if h2:
            self.h2_requests += 1
            if h2_first:
                self._h2_connection(start, hold)
            return
        if keepalive is not None and keepalive == 0:
            self.h1_starts += 1
            if status != "-" and self.keepalive_timeout:
                # A new connection: once its last request is served, its worker
                # waits KeepAliveTimeout for another. Counted from the end of the
                # first request (the rate of such holds is what Little's law needs).
                self.connections += 1
                end = start + (hold or 0.0)
                self._interval(self.idle_part, self.idle_whole, end, end + self.keepalive_timeout)

    def _h2_connection(self, start: float, hold: float | None) -> None:
        """An HTTP/2 request on stream 1: a new connection. (%k and %X describe
        a stream, not its connection: mod_http2 logs %k >= 1 and %X '-'.)"""
        self.h2_starts += 1
        if self.h2_keepalive_timeout:
            self.h2_connections += 1
            end = start + (hold or 0.0)
            self._interval(self.idle_part, self.idle_whole, end, end + self.h2_keepalive_timeout)

    def _count_hold(self, hold: float) -> None:
        self.hold_count += 1
        self.hold_sum += hold
        self.hold_squares += hold * hold
        if hold < self.hold_min:
            self.hold_min = hold
        if hold > self.hold_max:
            self.hold_max = hold
        if hold <= 0:
            slot = 0
        else:
            slot = int((math.log10(hold) - _LOW_EXPONENT) * _BINS_PER_DECADE) + 1
            slot = min(max(slot, 0), len(self.histogram) - 1)
        self.histogram[slot] += 1

    def _reach(self, second: int) -> None:
        """Grow the arrays to hold `second` (and a request's tail past it)."""
        if second < len(self.arrivals):
            return
        if second > MAX_SPAN_DAYS * 86400:
            raise LogSpanError(f"the log spans more than {MAX_SPAN_DAYS} days")
        grow = max(second + 1 - len(self.arrivals), 3600)
        for store, zero in ((self.arrivals, 0), (self.part, 0.0), (self.whole, 0.0),
                            (self.idle_part, 0.0), (self.idle_whole, 0.0)):
            store.extend(array(store.typecode, [zero]) * grow)

    def _interval(self, part: array, whole: array, start: float, end: float) -> None:
        """Add [start, end) (seconds from the origin) to the per-second busy time."""
        first, last = int(start), int(end)
        if first == last:
            part[first] += end - start
            return
        self._reach(last + 1)
        part[first] += first + 1 - start
        part[last] += end - last
        if last > first + 1:
            whole[first + 1] += 1
            whole[last] -= 1

    # -- the summary --------------------------------------------------------------

    def finish(self, files: list[str], lines: int, skipped: int, reasons: list[str], *, hold_source: str,
               keepalive_how: str, protocol_source: str | None = None, counts_h1_connections: bool = False,
               counts_h2_connections: bool = False) -> tuple[LogDemand, SecondSeries]:
        """`protocol_source`: where the protocol was read (%H, %r), None when
        the format has neither; the two flags: does the format have %k, and
        mod_http2's stream number."""
        if self.requests == 0 or self.origin is None:
            raise ValueError("no request in the log")
        begin = int(math.floor(self.low)) - self.origin
        end = int(math.floor(self.high)) - self.origin + 1
        arrivals = self.arrivals[begin:end]
        busy = _settle(self.part, self.whole, begin, end)
        idle = _settle(self.idle_part, self.idle_whole, begin, end)
        seconds = end - begin
        first = float(self.origin + begin)

        import numpy as np

        counts = np.frombuffer(arrivals, dtype=np.uint32).astype(np.int64)
        totals = np.frombuffer(busy, dtype=np.float64) + np.frombuffer(idle, dtype=np.float64)
        best_second = int(np.argmax(counts))
        window = min(60, seconds)
        sums = np.convolve(counts, np.ones(window, dtype=np.int64), mode="valid")
        best_minute_at = int(np.argmax(sums))
        best_minute = int(sums[best_minute_at])
        peak_index = int(np.argmax(totals))

        hold = None
        if self.hold_count:
            mean = self.hold_sum / self.hold_count
            variance = max(self.hold_squares / self.hold_count - mean * mean, 0.0)
            hold = HoldDistribution(hold_source, self.hold_count, mean, math.sqrt(variance) / mean if mean > 0 else 0.0,
                                    self.hold_min, self._quantile(0.50), self._quantile(0.90), self._quantile(0.99),
                                    self.hold_max)
        keep = KeepAliveHolds(counted=self.keepalive_timeout is not None and keepalive_how.startswith("counted"),
                              how=keepalive_how, connections=self.connections,
                              timeout=self.keepalive_timeout or 0.0, peak_idle_workers=max(idle, default=0.0),
                              open_share=self.status_open / self.status_seen if self.status_seen else None,
                              h2_connections=self.h2_connections, h2_timeout=self.h2_keepalive_timeout or 0.0)
        notes: list[str] = []
        if self.no_hold and self.hold_count:
            notes.append(f"{self.no_hold} requests logged no hold time ('-'): counted with "
                         + (f"--service-time {self.fixed_hold:g} s" if self.fixed_hold else "none"))
        demand = LogDemand(
            files=files, lines=lines, skipped=skipped, skip_reasons=reasons, requests=self.requests,
            first=first, seconds=seconds, mean_rate=self.requests / seconds,
            busiest_minute_rate=best_minute / window, busiest_minute_start=first + best_minute_at,
            busiest_second_rate=int(arrivals[best_second]), busiest_second_at=first + best_second,
            p99_second_rate=float(np.quantile(counts, 0.99, method="inverted_cdf")),
            hold=hold, mean_busy=float(totals.mean()), peak_busy=float(totals[peak_index]),
            peak_busy_at=first + peak_index, p99_busy=float(np.quantile(totals, 0.99, method="inverted_cdf")),
            peak_busy_requests=float(max(busy)), keepalive=keep, notes=notes,
            protocols=self._protocols(protocol_source, counts_h1_connections, counts_h2_connections),
        )
        return demand, SecondSeries(first, arrivals, busy, idle)

    def _protocols(self, source: str | None, h1_counted: bool, h2_counted: bool) -> ProtocolCount | None:
        # A line whose request line names no protocol ("-": a connection closed
        # before its request) counts as HTTP/1.x: an HTTP/2 stream always has one.
        seen = self.requests
        if source is None or not seen:
            return None
        return ProtocolCount(source, seen, self.h2_requests, self.h2_requests / seen,
                             self.h1_starts if h1_counted else None, self.h2_starts if h2_counted else None)

    def _quantile(self, q: float) -> float:
        """From the histogram, interpolated (log-linearly) within the bin."""
        target = q * self.hold_count
        seen = 0
        for slot, count in enumerate(self.histogram):
            if count and seen + count >= target:
                if slot == 0:
                    return max(self.hold_min, 0.0)
                share = (target - seen) / count
                low = 10 ** (_LOW_EXPONENT + (slot - 1) / _BINS_PER_DECADE)
                value = low * 10 ** (share / _BINS_PER_DECADE)
                return min(max(value, self.hold_min), self.hold_max)
            seen += count
        return self.hold_max


def _settle(part: array, whole: array, begin: int, end: int) -> array:
    """Partial seconds plus the running sum of the whole-second differences."""
    import numpy as np

    running = np.cumsum(np.frombuffer(whole, dtype=np.float32).astype(np.float64))[begin:end]
    settled = np.frombuffer(part, dtype=np.float64)[begin:end] + running
    return array("d", settled.tobytes())


def full_seconds(series: SecondSeries, workers: int, limit: int = 20) -> tuple[list[tuple[float, int]], int]:
    """Seconds whose busy workers reached the pool (FULL_SHARE of it), as
    spells of consecutive seconds: the first `limit` spells (start, seconds),
    and how many seconds there were in all."""
    import numpy as np

    totals = np.frombuffer(series.busy, dtype=np.float64) + np.frombuffer(series.idle, dtype=np.float64)
    where = np.flatnonzero(totals >= FULL_SHARE * workers)
    if where.size == 0:
        return [], 0
    breaks = np.flatnonzero(np.diff(where) > 1)
    starts = np.concatenate([[0], breaks + 1])[:limit]
    ends = np.concatenate([breaks, [where.size - 1]])[:limit]
    spells = [(series.first + float(where[a]), int(where[b] - where[a] + 1)) for a, b in zip(starts, ends)]
    return spells, int(where.size)
