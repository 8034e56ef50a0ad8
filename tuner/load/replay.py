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

Here: the whole derivation (`derive`, the `ReplaySummary`, the prepared
`Replay`) and the command line's `log:PATH` made into one (`prepare`).
The sessions are grouped in `replay_sessions`, the URLs made into files
and the session file written in `replay_files`; `session_shape` reads a
session file back for the trials.
"""

from __future__ import annotations

import json
import math
import shutil
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from advisor.errors import UsageError
from advisor.tuner.load.accesslog import LogReader, ReadStats
from advisor.tuner.load.replay_files import (CGI_ENDPOINT, MAX_SESSIONS, ReplayFile, pick_sessions, plan_files,
                                             write_files, write_sesslog)
from advisor.tuner.load.replay_sessions import Derivation, ReplayOptions, SessionBuilder

# Bytes a sandbox reply spends on headers (Date, Server, Last-Modified, ETag,
# Accept-Ranges, Content-Length, Keep-Alive, Content-Type): what %O counts
# beyond the body.
HEADER_BYTES = 250
# Files the sandbox may be asked to hold for one log.
MAX_REPLAY_BYTES = 2 * 1024 ** 3


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
