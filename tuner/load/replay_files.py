"""From a logged URL to what the replay asks for, and the httperf session file.

Each URL gets the URI httperf requests and the file of its mean logged size
the sandbox serves (its own path, an anonymous one, or the sandbox's CGI
endpoint); the sessions picked from the scratch file are then written in
httperf's --wsesslog syntax, their URL numbers turned into those URIs.
"""

from __future__ import annotations

import hashlib
import math
import os
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable
from urllib.parse import quote, unquote

from advisor.tuner.load.replay_sessions import ReplayOptions, UrlEntry

DYNAMIC_EXTENSIONS = frozenset({"php", "php3", "php5", "cgi", "pl", "py", "asp", "aspx", "jsp", "shtml", "rb", "fcgi"})
CGI_ENDPOINT = "/cgi-bin/sleep.cgi?ms=0"
# httperf 0.9.0 reads at most 1,000 sessions from a --wsesslog file
# (MAX_SESSION_TEMPLATES in its wsesslog.c) and stops with "too many sessions".
MAX_SESSIONS = 1000
MAX_SEGMENT_BYTES = 200
MAX_PATH_BYTES = 1024
LENGTH_CLASSES = (8, 16, 32, 64, 128, 256)
URI_SAFE = "/-._~!$&'()*+,;=:@%"


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
