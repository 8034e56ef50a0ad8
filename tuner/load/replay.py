"""Replay an access log: sessions, bursts and think times for httperf's --wsesslog.

Data flow: log records (advisor.tuner.load.accesslog) -> sessions (grouped by
client, split at an idle gap) -> bursts (requests within about a second of
the burst's first: a page and its embedded objects) and the think time
between them -> an httperf session file, plus the URL table: each URL's
mean logged size, from which the sandbox gets files of those sizes.

Memory is the URL table and the sessions still open: a session is written
out (with URL numbers, to a scratch file) as soon as its client has been
idle longer than the gap, so a log of any length streams through. The last
pass turns the numbers into paths, which needs the whole URL table (a path
that is also another path's directory gets a name of its own).

httperf's --wsesslog format (httperf(1)): a line per request; a line that
starts with whitespace belongs to the burst of the line above; `think=X`
on a burst's first line is the pause after that burst, once its replies
are in; a blank line ends a session. httperf takes the sessions in file
order and starts over at the end.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
from array import array
from collections import Counter, OrderedDict
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable
from urllib.parse import quote, unquote

from advisor.errors import UsageError
from advisor.tuner.load.accesslog import LogReader, LogRecord, ReadStats

DEFAULT_GAP_S = 30.0
BURST_WINDOW_S = 1.0
# Bytes a sandbox reply spends on headers (Date, Server, Last-Modified, ETag,
# Accept-Ranges, Content-Length, Keep-Alive, Content-Type): what %O counts
# beyond the body.
HEADER_BYTES = 250
DYNAMIC_EXTENSIONS = frozenset({"php", "php3", "php5", "cgi", "pl", "py", "asp", "aspx", "jsp", "shtml", "rb", "fcgi"})
CGI_ENDPOINT = "/cgi-bin/sleep.cgi?ms=0"
# Files the sandbox may be asked to hold for one log.
MAX_REPLAY_BYTES = 2 * 1024 ** 3
# httperf 0.9.0 reads at most 1,000 sessions from a --wsesslog file
# (MAX_SESSION_TEMPLATES in its wsesslog.c) and stops with "too many sessions".
MAX_SESSIONS = 1000
MAX_SEGMENT_BYTES = 200
MAX_PATH_BYTES = 1024
LENGTH_CLASSES = (8, 16, 32, 64, 128, 256)
URI_SAFE = "/-._~!$&'()*+,;=:@%"
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


# -- from URL to the path the replay asks for ---------------------------------

def is_dynamic(target: str) -> bool:
    path, _, query = target.partition("?")
    if query or path.startswith("/cgi-bin/"):
        return True
    name = path.rsplit("/", 1)[-1]
    return "." in name and name.rsplit(".", 1)[1].lower() in DYNAMIC_EXTENSIONS


def _digest(text: str, salt: bytes = b"", size: int = 8) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=size, key=salt).hexdigest()


def _extension(name: str) -> str:
    if "." not in name:
        return ""
    ext = name.rsplit(".", 1)[1]
    return f".{ext}" if ext.isalnum() and len(ext) <= 5 else ""


def anonymous_path(target: str, salt: bytes) -> str:
    """A hash as long as the path's length class, with the path's extension."""
    path = target.partition("?")[0]
    length = next((c for c in LENGTH_CLASSES if len(target) <= c), LENGTH_CLASSES[-1])
    ext = _extension(path.rsplit("/", 1)[-1])
    body = length - 1 - len(ext)
    digest = _digest(target, salt, 32)
    text = (digest * (body // len(digest) + 1))[:max(4, body)]
    return f"/{text}{ext}"


def file_path(target: str) -> str | None:
    """The docroot-relative file (decoded) for a logged target, or None if it cannot be one."""
    path, _, query = target.partition("?")
    decoded = unquote(path, errors="surrogateescape")
    if decoded.endswith("/"):
        decoded += "index.html"
    segments = decoded.split("/")[1:]
    if not segments or any(s in ("", ".", "..") or "\0" in s or len(s.encode("utf-8", "surrogateescape")) > MAX_SEGMENT_BYTES
                           for s in segments):
        return None
    if query:
        last = segments[-1]
        ext = _extension(last)
        stem = last[:-len(ext)] if ext else last
        segments[-1] = f"{stem}-q{_digest(query)}{ext}"
    joined = "/".join(segments)
    return joined if len(joined.encode("utf-8", "surrogateescape")) <= MAX_PATH_BYTES else None


@dataclass
class ReplayFile:
    """Where one URL is replayed: the URI httperf asks for and the file behind it."""

    uri: str
    file: str | None  # docroot-relative; None: no file (CGI, or an existing server's own)
    size: int
    dynamic: bool


def plan_files(urls: dict[str, UrlEntry], options: ReplayOptions, salt: bytes) -> list[ReplayFile]:
    """Every URL's replay, indexed by URL number."""
    plans: list[ReplayFile | None] = [None] * len(urls)
    wanted: dict[int, str] = {}
    for target, entry in urls.items():
        dynamic = is_dynamic(target)
        if options.prefix is None:
            plans[entry.number] = ReplayFile(target, None, entry.size, dynamic)
            continue
        if dynamic and options.dynamic == "cgi":
            plans[entry.number] = ReplayFile(CGI_ENDPOINT, None, entry.size, True)
            continue
        if options.anonymize:
            relative = anonymous_path(target, salt).lstrip("/")
        else:
            relative = file_path(target) or f"_/{_digest(target, salt)}{_extension(target.partition('?')[0])}"
        wanted[entry.number] = relative
        plans[entry.number] = ReplayFile("", relative, entry.size, dynamic)
    # A path that is also a directory of another path (/blog and /blog/1)
    # cannot be both on disk: the file gets a name of its own.
    directories: set[str] = set()
    for relative in wanted.values():
        parts = relative.split("/")
        for depth in range(1, len(parts)):
            directories.add("/".join(parts[:depth]))
    taken: set[str] = set()
    for number, relative in wanted.items():
        if relative in directories or relative in taken:
            relative = f"_/{_digest(relative + str(number), salt)}{_extension(relative)}"
        taken.add(relative)
        plan = plans[number]
        assert plan is not None
        plan.file = relative
        plan.uri = quote(f"{options.prefix}/{relative}", safe=URI_SAFE, errors="surrogateescape")
    return [p for p in plans if p is not None]


def write_files(docroot: Path, plans: Iterable[ReplayFile]) -> int:
    """Files of the logged sizes under `docroot`; the bytes written."""
    from advisor.tuner.load.workload import write_pattern

    total = 0
    for plan in plans:
        if plan.file is None:
            continue
        target = docroot / plan.file
        target.parent.mkdir(parents=True, exist_ok=True)
        write_pattern(target, plan.size)
        total += plan.size
    return total


@dataclass
class SessionFileFacts:
    """What the session file holds (a sample of the log's sessions when it has many)."""

    sessions: int
    requests: int
    bytes_total: int
    every: float  # one session in this many of the log's


def pick_sessions(scratch: Path, total: int, keep: int = MAX_SESSIONS) -> array:
    """Byte ranges (start, end pairs) in `scratch` of `keep` sessions spread evenly over `total`."""
    keep = min(keep, total)
    step = total / keep if keep else 1.0
    ranges = array("q")
    wanted = 0
    index = 0
    position = 0
    start = 0
    with open(scratch, "rb") as source:
        for line in source:
            end = position + len(line)
            if line == b"\n":
                if index == int(wanted * step) and len(ranges) < 2 * keep:
                    ranges.extend((start, end))
                    wanted += 1
                index += 1
                start = end
            position = end
    return ranges


def spread_order(count: int) -> list[int]:
    """An order of `count` items in which neighbours come from far apart: a
    short trial, which replays the file's first sessions, then samples the
    whole log rather than its first hours."""
    if count <= 2:
        return list(range(count))
    step = max(1, round(count * 0.6180339887))
    while math.gcd(step, count) != 1:
        step += 1
    return [(i * step) % count for i in range(count)]


def write_sesslog(scratch: Path, target: Path, plans: list[ReplayFile], ranges: array) -> SessionFileFacts:
    """The picked sessions of the scratch file, URL numbers -> httperf's --wsesslog syntax."""
    tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
    sessions = requests = total_bytes = 0
    with open(scratch, "rb") as source, open(tmp, "w", encoding="utf-8", errors="surrogateescape") as out:
        for pick in spread_order(len(ranges) // 2):
            start, end = ranges[2 * pick], ranges[2 * pick + 1]
            source.seek(start)
            block = source.read(end - start).decode("ascii")
            sessions += 1
            for line in block.splitlines():
                if not line:
                    continue
                think, _, numbers = line.partition(" ")
                picked = [plans[int(n)] for n in numbers.split()]
                requests += len(picked)
                total_bytes += sum(p.size for p in picked)
                first = picked[0].uri + ("" if think == "-" else f" think={think}")
                out.write(first + "\n" + "".join(f"\t{p.uri}\n" for p in picked[1:]))
            out.write("\n")
    os.replace(tmp, target)
    return SessionFileFacts(sessions, requests, total_bytes, 1.0)


# -- the whole derivation -------------------------------------------------------

@dataclass
class ReplaySummary:
    """What the log gave and what the replay keeps: no address, no path."""

    files: list[str]
    lines: int
    skipped: int
    skip_reasons: list[str]
    records: int
    replayed: int
    left_out: dict[str, int]
    sessions: int
    requests_per_session_mean: float
    requests_per_session_p95: int
    bursts_per_session_mean: float
    requests_per_burst_mean: float
    think_s_mean: float | None
    think_s_median: float | None
    bytes_per_request: float
    urls: int
    dynamic_urls: int
    dynamic_requests: int
    dynamic_mode: str
    coverage_pct: float
    log_span_s: float
    session_rate: float  # sessions per second in the log
    longest_session_s: float
    size_source: str
    anonymized: bool
    session_gap_s: float
    file_sessions: int = 0  # sessions in the httperf file: all of them, or an even sample
    file_requests_per_session_mean: float = 0.0
    file_bytes_per_request: float = 0.0
    bytes_on_disk: int = 0
    peak_open_sessions: int = 0

    def lines_for_humans(self) -> list[str]:
        out = [f"log: {', '.join(self.files)}: {self.lines} lines read, {self.skipped} skipped"]
        out += [f"  skipped {reason}" for reason in self.skip_reasons]
        if self.left_out:
            left = ", ".join(f"{k}: {v}" for k, v in sorted(self.left_out.items(), key=lambda kv: -kv[1])[:6])
            out.append(f"left out (not GET with status 200): {sum(self.left_out.values())} requests ({left})")
        think = ("none (one burst per session)" if self.think_s_mean is None else
                 f"mean {self.think_s_mean:.2f} s, median {self.think_s_median:.2f} s")
        out += [
            f"sessions: {self.sessions} (idle gap {self.session_gap_s:g} s), "
            f"{self.session_rate:.3g}/s over the log's {self.log_span_s:.0f} s",
            f"requests per session: mean {self.requests_per_session_mean:.2f}, p95 {self.requests_per_session_p95}; "
            f"bursts per session: mean {self.bursts_per_session_mean:.2f}, "
            f"requests per burst: mean {self.requests_per_burst_mean:.2f}",
            f"think time between bursts: {think}; longest session {self.longest_session_s:.0f} s",
            f"bytes per request: {self.bytes_per_request:.0f} ({self.size_source}); {self.urls} distinct URLs",
        ]
        if self.dynamic_urls:
            done = ("sent to the sandbox's CGI endpoint (" + CGI_ENDPOINT + "; its replies are not of the logged size)"
                    if self.dynamic_mode == "cgi" else "served as static files of the logged size")
            out.append(f"dynamic URLs (query strings, scripts): {self.dynamic_urls}, "
                       f"{self.dynamic_requests} requests, {done}")
        if self.file_sessions < self.sessions:
            out.append(f"the session file holds {self.file_sessions} of the {self.sessions} sessions (httperf reads "
                       f"at most {MAX_SESSIONS}), one in {self.sessions / self.file_sessions:.1f} spread over the log: "
                       f"{self.file_requests_per_session_mean:.2f} requests per session, "
                       f"{self.file_bytes_per_request:.0f} bytes per request")
        out.append(f"the replay covers {self.coverage_pct:.1f} % of the log's requests"
                   + ("; paths anonymized" if self.anonymized else ""))
        return out

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class Replay:
    """A prepared replay: the session file httperf reads and what it holds."""

    session_log: str
    summary: ReplaySummary
    plans: list[ReplayFile] = field(default_factory=list, repr=False)
    prefix: str | None = "/log"

    def install(self, docroot: Path) -> int:
        """Write the files of the logged sizes under `docroot`/prefix (replacing an
        earlier replay's); the bytes written. Nothing to do for logged paths."""
        if self.prefix is None:
            return 0
        base = docroot / self.prefix.strip("/")
        shutil.rmtree(base, ignore_errors=True)
        self.summary.bytes_on_disk = write_files(base, self.plans)
        return self.summary.bytes_on_disk

    @property
    def mean_calls(self) -> int:
        return max(1, round(self.summary.file_requests_per_session_mean))

    @property
    def mean_think_s(self) -> float:
        return self.summary.think_s_mean or 0.0


def _percentile(histogram: Counter, share: float) -> int:
    total = sum(histogram.values())
    if not total:
        return 0
    wanted = math.ceil(share * total)
    seen = 0
    for value in sorted(histogram):
        seen += histogram[value]
        if seen >= wanted:
            return value
    return max(histogram)


def _mean(histogram: Counter) -> float:
    total = sum(histogram.values())
    return sum(v * n for v, n in histogram.items()) / total if total else 0.0


def derive(reader: LogReader, out_dir: Path, options: ReplayOptions, *, salt: bytes | None = None) -> Replay:
    """Read the log once and write `replay.sesslog`; Replay.install writes the files."""
    import secrets

    out_dir.mkdir(parents=True, exist_ok=True)
    salt = salt if salt is not None else secrets.token_bytes(16)
    scratch = out_dir / "sessions.scratch"
    size_field = reader.format.size_field
    header = options.header_bytes if size_field == "O" else 0
    with open(scratch, "w", encoding="utf-8") as handle:
        builder = SessionBuilder(options, handle, header_bytes=header)
        for record in reader:
            builder.add(record)
        builder.finish()
    counts = builder.counts
    stats = reader.stats
    if counts.replayed == 0:
        scratch.unlink(missing_ok=True)
        raise _nothing_usable(reader, stats, counts)
    plans = plan_files(builder.urls, options, salt)
    if options.prefix is not None:
        planned = sum(p.size for p in plans if p.file is not None)
        if planned > MAX_REPLAY_BYTES:
            scratch.unlink(missing_ok=True)
            raise UsageError(f"the log's files would take {planned / 1024 ** 3:.1f} GB in the sandbox",
                             file=reader.paths[0], hint="replay a shorter stretch of the log")
    session_log = out_dir / "replay.sesslog"
    ranges = pick_sessions(scratch, counts.sessions)
    facts = write_sesslog(scratch, session_log, plans, ranges)
    facts.every = counts.sessions / max(1, facts.sessions)
    scratch.unlink(missing_ok=True)
    dynamic = [(p, entry) for p, entry in zip(plans, sorted(builder.urls.values(), key=lambda e: e.number)) if p.dynamic]
    thinks = counts.think_cs
    think_mean = _mean(thinks) / 100 if thinks else None
    think_median = _percentile(thinks, 0.5) / 100 if thinks else None
    span = (counts.last_time or 0.0) - (counts.first_time or 0.0)
    summary = ReplaySummary(
        files=stats.files, lines=stats.lines, skipped=stats.skipped, skip_reasons=list(stats.reasons),
        records=counts.records, replayed=counts.replayed, left_out=dict(counts.left_out),
        sessions=counts.sessions, requests_per_session_mean=round(_mean(counts.requests_per_session), 3),
        requests_per_session_p95=_percentile(counts.requests_per_session, 0.95),
        bursts_per_session_mean=round(_mean(counts.bursts_per_session), 3),
        requests_per_burst_mean=round(_mean(counts.burst_sizes), 3),
        think_s_mean=None if think_mean is None else round(think_mean, 3), think_s_median=think_median,
        bytes_per_request=round(counts.bytes_total / counts.replayed, 1), urls=len(builder.urls),
        dynamic_urls=len(dynamic), dynamic_requests=sum(entry.count for _p, entry in dynamic),
        dynamic_mode=options.dynamic if options.prefix is not None else "as logged",
        coverage_pct=round(100.0 * counts.replayed / max(1, counts.records + stats.skipped), 2),
        log_span_s=round(span, 1), session_rate=counts.sessions / span if span > 0 else float(counts.sessions),
        longest_session_s=round(builder.longest_s, 2),
        size_source={"b": "%b", "B": "%B", None: "no size in the format: empty files"}.get(
            size_field, f"%O less {header} bytes of headers"),
        anonymized=options.anonymize, session_gap_s=options.session_gap_s,
        file_sessions=facts.sessions, file_requests_per_session_mean=round(facts.requests / max(1, facts.sessions), 3),
        file_bytes_per_request=round(facts.bytes_total / max(1, facts.requests), 1),
        peak_open_sessions=builder.peak_open)
    (out_dir / "summary.json").write_text(json.dumps(summary.to_dict(), indent=1))
    return Replay(str(session_log), summary, plans, options.prefix)


def _nothing_usable(reader: LogReader, stats: ReadStats, counts: Derivation) -> UsageError:
    where = reader.paths[0]
    if stats.lines == 0:
        return UsageError("the log is empty", file=where, hint="give a log with requests in it")
    if counts.records == 0:
        first = stats.reasons[0] if stats.reasons else f"{where}:1: does not match the log format"
        file, line, why = (first.split(":", 2) + ["", ""])[:3]
        return UsageError(f"no line of {stats.lines} matches the log format {reader.format.text!r} ({why.strip()})",
                          file=file, line=int(line) if line.isdigit() else None,
                          hint="give the format with --log-format, or the config that writes the log with --config")
    return UsageError(f"none of the log's {counts.records} requests is a GET answered 200, which is what a replay sends",
                      file=where, hint="give a log of the site's ordinary traffic")


# -- what trials need to know about a session file ---------------------------

@dataclass(frozen=True)
class SessionShape:
    """Requests and length (sum of think times) of every session, in file order."""

    requests: array
    spans: array

    def requests_for(self, sessions: int) -> int:
        """Requests httperf sends for `sessions` sessions (it cycles through the file)."""
        count = len(self.requests)
        if not count:
            return 0
        full, rest = divmod(sessions, count)
        return full * sum(self.requests) + sum(self.requests[:rest])

    def tail_s(self, sessions: int, rate: float) -> float:
        """How long the run goes on after its last session starts (think times only)."""
        count = len(self.spans)
        if not count or sessions <= 0 or rate <= 0:
            return 0.0
        last_start = (sessions - 1) / rate
        reach = int(math.ceil(max(self.spans) * rate)) + 1
        end = 0.0
        for index in range(max(0, sessions - reach), sessions):
            end = max(end, index / rate + self.spans[index % count])
        return max(0.0, end - last_start)

    @property
    def longest_s(self) -> float:
        return max(self.spans) if self.spans else 0.0

    @property
    def mean_s(self) -> float:
        return sum(self.spans) / len(self.spans) if self.spans else 0.0


def session_shape(path: str) -> SessionShape:
    stat = os.stat(path)
    return _session_shape(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _session_shape(path: str, _mtime: int, _size: int) -> SessionShape:
    requests, spans = array("I"), array("d")
    count, span = 0, 0.0
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        for line in handle:
            if not line.strip():
                if count:
                    requests.append(count)
                    spans.append(span)
                count, span = 0, 0.0
                continue
            if line.startswith("#"):
                continue
            count += 1
            for word in line.split()[1:]:
                if word.startswith("think="):
                    span += float(word[6:])
    if count:
        requests.append(count)
        spans.append(span)
    return SessionShape(requests, spans)


# -- from the command line's `log:PATH` to a prepared replay ----------------------

LOG_PREFIX = "log:"


def is_log_workload(name: str) -> bool:
    return name.startswith(LOG_PREFIX)


def resolve_format(paths: list[str], given: str | None, config_path: str | None) -> tuple[str, str]:
    """The LogFormat string to read `paths` with, and where it came from.

    `--log-format` wins (a string, or `common`/`combined`); then the config
    tree's CustomLog writing that file; else the first lines decide between
    Combined and Common.
    """
    from advisor.tuner.load.accesslog import BUILTIN_FORMATS, COMBINED, COMMON, LogFormat, format_from_config

    if given:
        return BUILTIN_FORMATS.get(given, given), "--log-format"
    if config_path:
        from advisor.config import LoadOptions, load_config

        cfg = load_config(config_path, LoadOptions(apache_version="2.4"))
        found = format_from_config(cfg, paths)
        if found is not None:
            return found[0], f"the CustomLog's format ({found[1]})"
    sample = _first_lines(paths[0], 50)
    best, best_hits = COMBINED, -1
    for text in (COMBINED, COMMON):
        pattern = LogFormat.compile(text).pattern
        hits = sum(1 for line in sample if pattern.match(line.rstrip("\r\n")))
        if hits > best_hits:
            best, best_hits = text, hits
    return best, ("Combined" if best == COMBINED else "Common") + " Log Format (from the first lines)"


def _first_lines(path: str, count: int) -> list[str]:
    from advisor.tuner.load.accesslog import open_log

    lines: list[str] = []
    try:
        with open_log(path) as handle:
            for line in handle:
                lines.append(line)
                if len(lines) >= count:
                    break
    except (EOFError, OSError, ValueError):
        pass
    return lines


def prepare(spec: str, out_dir: Path, options: ReplayOptions, *, log_format: str | None = None, config_path: str | None = None) -> tuple[Replay, str]:
    """`log:PATH[,PATH...]` -> the replay (its session file written; files by Replay.install)
    and where the log's format came from."""
    from advisor.tuner.load.accesslog import LogFormat, LogReader, expand_paths

    paths = expand_paths(spec[len(LOG_PREFIX):] if is_log_workload(spec) else spec)
    text, source = resolve_format(paths, log_format, config_path)
    reader = LogReader(paths, LogFormat.compile(text))
    options = options if reader.format.size_field != "O" or options.header_bytes else \
        ReplayOptions(**{**asdict(options), "header_bytes": HEADER_BYTES})
    return derive(reader, out_dir, options), source
