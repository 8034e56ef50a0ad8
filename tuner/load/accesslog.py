"""Read httpd access logs: any LogFormat string, gzipped or not, rotated sets in order.

The reader streams: one record at a time, nothing kept per line. What it
cannot read is counted, with the first few reasons kept for the summary, so
that a log with some lines of another format still replays the rest.

Client addresses are read only to tell clients apart: `LogRecord.client`
is a salted digest (the salt is random per run and never stored), so no
address leaves this module.
"""

from __future__ import annotations

import calendar
import glob
import gzip
from hashlib import blake2b
import io
import os
import re
import secrets
import zlib
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from advisor.errors import UsageError

COMMON = '%h %l %u %t "%r" %>s %b'
COMBINED = '%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i"'
BUILTIN_FORMATS = {"common": COMMON, "combined": COMBINED}
# The fields a replay cannot do without (LogFormat.compile's default `need`).
REPLAY_NEEDS = ("time", "request", "status", "client")
# Reasons for skipped lines kept for the summary; the rest are only counted.
KEPT_REASONS = 5

_MONTHS = {name: index for index, name in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}

# One LogFormat directive: %[<>][!]?[codes]{arg}letter, or %% for a percent sign.
_DIRECTIVE = re.compile(r"%(?:(%)|[<>]?!?(?:\d{3}(?:,\d{3})*)?(?:\{([^}]*)\})?[<>]?([a-zA-Z]))")


@dataclass(slots=True)
class LogRecord:
    """One request as the log tells it."""

    time: float  # seconds since the epoch, when the request arrived
    client: bytes  # salted digest of address (and user agent): not reversible, not stored
    method: str
    target: str  # path with its query string, as requested
    status: int
    size: int | None  # response body bytes (None: the format has no size)


@dataclass
class LogFormat:
    """A LogFormat string compiled to a regular expression with named fields."""

    text: str
    pattern: re.Pattern[str]
    has_agent: bool
    size_field: str | None  # "b", "B" (body) or "O" (with headers)
    hold_field: str | None = None  # "D" (microseconds) or "T" (seconds, or its {ms}/{us}/{s} unit)
    hold_unit: float = 1e-6  # seconds per unit of the hold field
    has_keepalive: bool = False  # %k: keep-alive requests served on the connection before this one
    has_connstatus: bool = False  # %X: the connection's state when the response was done
    protocol_field: str | None = None  # "H" (%H), else "r" (the request line's last word), else None
    h2_stream_field: str | None = None  # "H2_STREAM_ID" or "H2_STREAM_TAG" (%{...}e, set by mod_http2)

    @classmethod
    def compile(cls, text: str, need: tuple[str, ...] = REPLAY_NEEDS) -> "LogFormat":
        """`need`: the fields a reader cannot do without (the replay: time,
        request, status and client; `capacity --log`: only the time)."""
        parts: list[str] = []
        hold_field: str | None = None
        hold_unit = 1e-6
        seen: set[str] = set()
        has_agent = False
        size_field: str | None = None
        position = 0
        for match in _DIRECTIVE.finditer(text):
            parts.append(re.escape(text[position:match.start()]))
            position = match.end()
            if match.group(1):
                parts.append("%")
                continue
            arg, letter = match.group(2), match.group(3)
            quoted = match.start() > 0 and text[match.start() - 1] == '"' and text[match.end():match.end() + 1] == '"'
            name = _field_name(letter, arg)
            if name == "agent":
                has_agent = True
            if name == "size":
                size_field = _better_size(size_field, letter)
                name = f"size_{letter}"
            if name == "hold":
                name = f"hold_{letter}"
                if name not in seen and hold_field != "D":  # %D is finer than %T: it wins
                    hold_field, hold_unit = letter, _hold_unit(letter, arg)
            if name == "time" and arg not in (None, "sec", "msec", "usec", "begin:sec", "begin:msec", "begin:usec"):
                raise UsageError(f"the log format's %{{{arg}}}t is not supported",
                                 hint="log with %t or %{sec}t, or give --log-format with one of them")
            group = _group_pattern(letter, arg, quoted, text[match.end():match.end() + 1])
            if name is None or name in seen:
                parts.append(f"(?:{group})")
            else:
                seen.add(name)
                parts.append(f"(?P<{name}>{group})")
        parts.append(re.escape(text[position:]))
        missing = [what for key, what, names in (("time", "the time (%t)", {"time"}),
                                                 ("request", "the request (%r, or %m and %U)", {"request", "path"}),
                                                 ("status", "the status (%>s or %s)", {"status"}),
                                                 ("client", "the client (%h or %a)", {"host"}))
                   if key in need and not names & seen]
        if missing:
            raise UsageError(f"the log format {text!r} lacks " + ", ".join(missing),
                             hint="sessions need who asked, when, for what and with what result"
                             if need == REPLAY_NEEDS else "log when each request arrived (%t or %{msec}t)")
        protocol = "H" if "protocol" in seen else ("r" if "request" in seen else None)
        stream = next((tag for tag, name in (("H2_STREAM_ID", "h2stream"), ("H2_STREAM_TAG", "h2tag"))
                       if name in seen), None)
        return cls(text, re.compile("".join(parts) + r"\s*$"), has_agent, size_field, hold_field, hold_unit,
                   "keepalive" in seen, "connstatus" in seen, protocol, stream)


def _field_name(letter: str, arg: str | None) -> str | None:
    if letter in ("h", "a"):
        return "host"
    if letter == "t":
        return "time"
    if letter == "r":
        return "request"
    if letter == "m":
        return "method"
    if letter == "U":
        return "path"
    if letter == "q":
        return "query"
    if letter == "s":
        return "status"
    if letter in ("b", "B", "O"):
        return "size"
    if letter in ("D", "T"):
        return "hold"
    if letter == "k":
        return "keepalive"
    if letter == "X":
        return "connstatus"
    if letter == "H":
        return "protocol"
    if letter == "e" and arg in ("H2_STREAM_ID", "H2_STREAM_TAG"):
        # mod_http2's stream number (its tag: connection id, "-", stream number)
        return "h2stream" if arg == "H2_STREAM_ID" else "h2tag"
    if letter == "i" and arg and arg.lower() == "user-agent":
        return "agent"
    return None


def _hold_unit(letter: str, arg: str | None) -> float:
    """Seconds per unit of %D (microseconds) or %T (seconds; %{ms}T, %{us}T)."""
    if letter == "D":
        return 1e-6
    units = {None: 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6}
    if arg not in units:
        raise UsageError(f"the log format's %{{{arg}}}T is not a unit httpd knows",
                         hint="write %T, %{ms}T, %{us}T or %D")
    return units[arg]


def _better_size(current: str | None, letter: str) -> str:
    """A body size (%b, %B) beats bytes sent with headers (%O)."""
    if current in ("b", "B"):
        return current
    return letter


def _group_pattern(letter: str, arg: str | None, quoted: bool, following: str) -> str:
    if letter == "t" and arg is None:
        return r"\[[^\]]*\]"
    if quoted:
        return r'[^"\\]*(?:\\.[^"\\]*)*'
    if letter == "U":
        return r"[^\s?]*"
    if letter == "q":
        return r"(?:\?\S*)?"
    if letter == "X":
        return r"[X+-]"
    if letter in ("s", "b", "B", "O", "D", "T", "p", "P", "I", "k"):
        return r"-|\d+" if letter != "T" else r"-|\d+(?:\.\d+)?"
    if following and not following.isspace() and following != "%":
        return rf"[^\s{re.escape(following)}]*"
    return r"\S*"


def _parse_clf_time(text: str) -> float:
    """`[10/Oct/2000:13:55:36 -0700]` -> seconds since the epoch."""
    text = text.strip("[]")
    day, month, rest = text[0:2], text[3:6], text[7:]
    year, hour, minute, second = int(rest[0:4]), int(rest[5:7]), int(rest[8:10]), int(rest[11:13])
    offset = 0
    zone = rest[14:].strip()
    if zone:
        sign = -1 if zone[0] == "-" else 1
        offset = sign * (int(zone[1:3]) * 3600 + int(zone[3:5]) * 60)
    return calendar.timegm((year, _MONTHS[month], int(day), hour, minute, second, 0, 0, 0)) - offset


def _parse_time(text: str) -> float:
    if text.startswith("["):
        return _parse_clf_time(text)
    value = float(text)
    # %{msec}t and %{usec}t: scale to seconds by magnitude (seconds since
    # 1970 have 10 digits until 2286).
    while value > 1e11:
        value /= 1000.0
    return value


@dataclass
class ReadStats:
    """What the reader saw: counts and the first few reasons for skipped lines."""

    lines: int = 0
    skipped: int = 0
    reasons: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def skip(self, where: str, line: int | None, why: str) -> None:
        self.skipped += 1
        if len(self.reasons) < KEPT_REASONS:
            self.reasons.append(f"{where}:{line}: {why}" if line else f"{where}: {why}")


class LogReader:
    """Iterate the records of one or more log files, in the order given."""

    def __init__(self, paths: list[str], log_format: LogFormat, *, salt: bytes | None = None):
        self.paths = paths
        self.format = log_format
        self.stats = ReadStats(files=[os.path.basename(p) for p in paths])
        self._salt = salt if salt is not None else secrets.token_bytes(16)
        self._last_time: tuple[str, float] = ("", 0.0)  # consecutive lines often share a second
        self._match = log_format.pattern.match
        # Group numbers (0-based, as in match.groups()) of the fields read.
        self._index = {name: number - 1 for name, number in log_format.pattern.groupindex.items()}
        self._size = self._index.get(f"size_{log_format.size_field}") if log_format.size_field else None
        self._agent = self._index.get("agent")
        self.current_path = paths[0] if paths else ""

    def __iter__(self) -> Iterator[LogRecord]:
        for path in self.paths:
            yield from self._read(path)

    def _read(self, path: str) -> Iterator[LogRecord]:
        number = 0
        parse = self._parse
        stats = self.stats
        try:
            with open_log(path) as handle:
                for number, line in enumerate(handle, 1):
                    stats.lines += 1
                    record = parse(line, path, number)
                    if record is not None:
                        yield record
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            # A truncated or damaged gzip member: what came before it counts.
            stats.skip(path, number + 1, f"the compressed file ends early or is damaged ({exc.__class__.__name__}); "
                       "the rest of this file is lost")
        except OSError as exc:
            raise UsageError(f"cannot read the log: {exc.strerror or exc}", file=path) from None

    def timings(self) -> Iterator[tuple[int, float, float | None, int | None, str | None, bool | None, bool | None]]:
        """Only what `capacity --log` needs, per line: (line number, arrival in
        seconds since the epoch, seconds the request held its worker or None,
        %k or None, %X or None, HTTP/2 or not (None: unknown), the first stream
        of an HTTP/2 connection or not (None: not logged)). `self.current_path`
        names the file being read. No digest, no record object: a lean pass for
        millions of lines."""
        fmt = self.format
        index = self._index
        time_at = index["time"]
        hold_at = index.get(f"hold_{fmt.hold_field}") if fmt.hold_field else None
        unit = fmt.hold_unit
        keep_at = index.get("keepalive")
        status_at = index.get("connstatus")
        protocol_at = index.get("protocol" if fmt.protocol_field == "H" else "request") \
            if fmt.protocol_field else None
        stream_at = index.get("h2stream" if fmt.h2_stream_field == "H2_STREAM_ID" else "h2tag") \
            if fmt.h2_stream_field else None
        match = self._match
        stats = self.stats
        last_stamp, last_when = "", 0.0
        for path in self.paths:
            self.current_path = path
            number = 0
            try:
                with open_log(path) as handle:
                    for number, line in enumerate(handle, 1):
                        stats.lines += 1
                        found = match(line)
                        if found is None:
                            stats.skip(path, number, "does not match the log format")
                            continue
                        groups = found.groups()
                        stamp = groups[time_at]
                        if stamp != last_stamp:
                            try:
                                last_when = _parse_time(stamp)
                            except (ValueError, KeyError, IndexError):
                                stats.skip(path, number, "unreadable time")
                                continue
                            last_stamp = stamp
                        hold = None
                        if hold_at is not None:
                            raw = groups[hold_at]
                            if raw and raw != "-":
                                hold = float(raw) * unit
                        keep = None
                        if keep_at is not None:
                            raw = groups[keep_at]
                            keep = int(raw) if raw and raw.isdigit() else None
                        yield (number, last_when, hold, keep, groups[status_at] if status_at is not None else None,
                               # protocol_is_h2, inlined: a call a line would cost this pass some 5 %
                               None if protocol_at is None else groups[protocol_at].endswith(H2_PROTOCOLS),
                               None if stream_at is None else first_h2_stream(groups[stream_at]))
            except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
                stats.skip(path, number + 1, f"the compressed file ends early or is damaged "
                           f"({exc.__class__.__name__}); the rest of this file is lost")
            except OSError as exc:
                raise UsageError(f"cannot read the log: {exc.strerror or exc}", file=path) from None

    def _parse(self, line: str, path: str, number: int) -> LogRecord | None:
        match = self._match(line)  # the pattern ends with \s*$: the newline needs no strip
        if match is None:
            self.stats.skip(path, number, "does not match the log format")
            return None
        groups = match.groups()
        index = self._index
        stamp = groups[index["time"]]
        if stamp == self._last_time[0]:
            when = self._last_time[1]
        else:
            try:
                when = _parse_time(stamp)
            except (ValueError, KeyError, IndexError):
                self.stats.skip(path, number, "unreadable time")
                return None
            self._last_time = (stamp, when)
        if "request" in index:
            pieces = groups[index["request"]].split(" ", 2)
            if len(pieces) < 2 or not pieces[1].startswith("/"):
                self.stats.skip(path, number, "unreadable request line")
                return None
            method, target = pieces[0], pieces[1]
        else:
            method = (groups[index["method"]] if "method" in index else None) or "GET"
            target = (groups[index["path"]] or "") + ((groups[index["query"]] if "query" in index else None) or "")
            if not target.startswith("/"):
                self.stats.skip(path, number, "unreadable request path")
                return None
        status_text = groups[index["status"]] or "-"
        if not status_text.isdigit():
            self.stats.skip(path, number, "no status")
            return None
        size = None
        if self._size is not None:
            raw = groups[self._size] or "-"
            size = int(raw) if raw.isdigit() else 0
        who = groups[index["host"]] or ""
        if self._agent is not None:
            who += "\0" + (groups[self._agent] or "")
        client = blake2b(who.encode("utf-8", "surrogateescape"), digest_size=8, key=self._salt).digest()
        return LogRecord(when, client, method, target, int(status_text), size)


# How mod_http2 names the protocol in %H and at the end of %r's request line
# ("GET /x HTTP/2.0"); anything else (HTTP/1.1, HTTP/1.0, "-") is not HTTP/2.
H2_PROTOCOLS = ("HTTP/2.0", "HTTP/2")


def protocol_is_h2(text: str) -> bool:
    """%H, or %r's request line: HTTP/2 or not (what `timings` reads inline)."""
    return text.endswith(H2_PROTOCOLS)


def first_h2_stream(text: str | None) -> bool | None:
    """%{H2_STREAM_ID}e ("1") or %{H2_STREAM_TAG}e ("143-1"): is this the
    connection's first stream (stream 1, the client's first)? None when the
    request has none ("-": not HTTP/2)."""
    if not text:
        return None
    tail = text[text.rfind("-") + 1:]
    return tail == "1" if tail.isdigit() else None


def open_log(path: str) -> io.TextIOBase:
    """A log file as text, gzip'd or not (by its magic bytes, not its name); bytes
    that are not UTF-8 survive as surrogate escapes, line ends as written."""
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="surrogateescape", newline="")
    return open(path, encoding="utf-8", errors="surrogateescape", newline="")


_ROTATION = re.compile(r"^(?P<base>.*?)(?:[.-](?P<n>\d+))?(?P<gz>\.gz)?$")


def rotation_key(path: str) -> tuple[str, int]:
    """Oldest first: access.log.3.gz, access.log.2.gz, access.log.1, access.log."""
    match = _ROTATION.match(os.path.basename(path))
    assert match is not None  # the pattern matches any name
    number = int(match.group("n")) if match.group("n") else 0
    return match.group("base"), -number


def expand_paths(spec: str) -> list[str]:
    """`log:` paths: comma-separated, each a file or a glob; a glob's files in rotation order."""
    paths: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        if any(ch in part for ch in "*?["):
            found = sorted(glob.glob(part), key=rotation_key)
            if not found:
                raise UsageError("no log file matches", file=part, hint="check the pattern")
            paths.extend(found)
        elif not os.path.isfile(part):
            raise UsageError("no such log file", file=part, hint="give the path of an access log")
        else:
            paths.append(part)
    if not paths:
        raise UsageError("--workload log: needs a path", hint="write it as log:/var/log/apache2/access.log")
    return paths


def log_base_name(path: str) -> str:
    """access.log.2.gz -> access.log: the name the CustomLog writes."""
    name = os.path.basename(path)
    name = name[:-3] if name.endswith(".gz") else name
    return re.sub(r"[.-]\d+$", "", name)


def format_from_config(cfg, log_paths: Iterable[str]) -> tuple[str, str] | None:
    """The format string of the CustomLog that writes these files, and where it is set.

    Matched by file name (rotation suffixes removed), also inside a piped
    logger's command line. The nickname is looked up in the CustomLog's own
    virtual host first, then at server scope, then among httpd's usual
    `common` and `combined`. None when no CustomLog writes such a file.
    """
    wanted = {log_base_name(p) for p in log_paths}
    for directive in cfg.effective.walk():
        if getattr(directive, "name", None) != "CustomLog" or len(directive.args) < 2:
            continue
        target = directive.args[0]
        names = {os.path.basename(word) for word in target.lstrip("|").split()} if target.startswith("|") \
            else {os.path.basename(target)}
        if not names & wanted:
            continue
        spec = directive.args[1]
        where = f"{directive.file}:{directive.line}"
        if "%" in spec:
            return spec, where
        found = _nickname(cfg, directive, spec)
        if found is not None:
            return found
        if spec in BUILTIN_FORMATS:
            return BUILTIN_FORMATS[spec], where
        raise UsageError(f"the CustomLog uses the nickname {spec!r}, which no LogFormat defines",
                         file=directive.file, line=directive.line, hint="give the format with --log-format")
    return None


def _nickname(cfg, custom_log, nickname: str) -> tuple[str, str] | None:
    scopes = []
    parent = getattr(custom_log, "parent", None)
    while parent is not None:
        scopes.append(parent)
        parent = getattr(parent, "parent", None)
    for scope in scopes:
        last = None
        for directive in scope.own_directives("LogFormat"):
            if len(directive.args) >= 2 and directive.args[1] == nickname:
                last = directive
        if last is not None:
            return last.args[0], f"{last.file}:{last.line}"
    return None
