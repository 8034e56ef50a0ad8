"""The tuning session's journal: JSON lines, one per completed trial, fsynced.

    {"kind": "header", "version": 1, "space": {...}, "workload": {...}, "objective": {...}, "seed": 0, ...}
    {"kind": "trial", "trial": 1, "point": {...}, "objective": 812.4, "valid": true, "verdict": "...", ...}
    {"kind": "gain", "index": 1, "role": "start", "point": {...}, "objective": 640.2, "valid": true, ...}
    {"kind": "lint refusal", "point": {...}, "origin": "mpm", "errors": ["candidate line 15: E401 ..."]}

Each line is written with one write() on a file opened for appending and is
fsynced before the next trial starts, so after a crash or kill -9 the file
holds every completed trial and at most one torn line at the end. Reading
drops that torn tail; resuming cuts it off before appending.

The gain's interleaved replicates (after the search) are journalled the same
way, as "gain" lines, so that a resumed session that ends on the same winner
does not measure them again.

`--resume` rebuilds the optimizer by telling it every completed trial, and
refuses a journal whose space, workload or objective differ from the ones
asked for: its trials measured something else.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from advisor.errors import AdvisorError, UsageError
from advisor.tuner.search.optimizer import Observation
from advisor.tuner.session.refusals import KIND as REFUSAL_KIND
from advisor.tuner.session.refusals import LintRefusal

JOURNAL_NAME = "journal.jsonl"
VERSION = 1


@dataclass
class JournalHeader:
    space: dict[str, Any]
    """The space's signature (Space.signature()), plus whatever the caller adds."""
    workload: dict[str, Any]
    objective: dict[str, Any]
    seed: int
    search: str = "bayesian"
    created: float = field(default_factory=time.time)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "header", "version": VERSION, "space": self.space, "workload": self.workload,
                "objective": self.objective, "seed": self.seed, "search": self.search,
                "created": self.created, "extra": self.extra}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "JournalHeader":
        return cls(space=dict(data["space"]), workload=dict(data["workload"]),
                   objective=dict(data["objective"]), seed=int(data["seed"]),
                   search=str(data.get("search", "bayesian")), created=float(data.get("created", 0.0)),
                   extra=dict(data.get("extra") or {}))


@dataclass
class JournalContents:
    header: JournalHeader
    trials: list[Observation]
    torn: bool
    """The last line was cut short (a crash mid-write); it is not a trial."""
    good_bytes: int
    """Length of the file up to the end of the last complete line."""
    gain_runs: list["GainRun"] = field(default_factory=list)
    ablation_runs: list["GainRun"] = field(default_factory=list)
    lint_refusals: list[LintRefusal] = field(default_factory=list)
    """Points the candidate lint refused before any trial (refusals.py)."""


@dataclass
class GainRun:
    """One completed replicate of the gain measurement."""

    index: int
    """Its place in the interleaved order (1-based)."""
    role: str
    """"start" or "winner"."""
    point: dict[str, Any]
    objective: float | None
    valid: bool
    verdict: str
    details: dict[str, Any] = field(default_factory=dict)
    kind: str = "gain"
    """"gain" (start against winner) or "ablation" (the winner against the
    winner less one change: role "winner" or "without:<dimension>")."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "index": self.index, "role": self.role, "point": dict(self.point),
                "objective": self.objective, "valid": self.valid, "verdict": self.verdict,
                "details": self.details}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "GainRun":
        role = str(data["role"])
        kind = str(data.get("kind", "gain"))
        if kind == "ablation":
            if role not in ("winner", "start") and not role.startswith("without:"):
                raise ValueError(f"ablation role {role!r}")
        elif role not in ("start", "winner"):
            raise ValueError(f"role {role!r}")
        objective = data.get("objective")
        return cls(index=int(data["index"]), role=role, point=dict(data["point"]),
                   objective=None if objective is None else float(objective), valid=bool(data["valid"]),
                   verdict=str(data.get("verdict", "")), details=dict(data.get("details") or {}), kind=kind)


def journal_path(session_dir: str | os.PathLike) -> Path:
    return Path(session_dir) / JOURNAL_NAME


def read_journal(path: str | os.PathLike) -> JournalContents:
    """Every complete line; a torn last line is dropped, a bad line elsewhere refused."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError("no journal here", file=str(path),
                         hint="resume names the session directory of an earlier tune run") from None
    except OSError as exc:
        raise UsageError(f"cannot read the journal: {exc.strerror}", file=str(path)) from None
    lines = data.split(b"\n")
    # Everything after the last newline is a line that was being written.
    tail = lines.pop()
    torn = bool(tail.strip())
    good_bytes = len(data) - len(tail)
    records: list[tuple[int, dict]] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            # Lines end with their own newline and JSON escapes any other, so
            # only the tail can be torn: a bad line before it was edited.
            raise UsageError(f"journal line {number} is not JSON", file=str(path), line=number,
                             hint="the journal was edited or damaged; start a new session") from None
        if not isinstance(record, dict):
            raise UsageError(f"journal line {number} is not a JSON object", file=str(path), line=number,
                             hint="the journal was edited or damaged; start a new session")
        records.append((number, record))
    if not records or records[0][1].get("kind") != "header":
        raise UsageError("the journal has no header line", file=str(path), line=1,
                         hint="the journal was cut before its first line was written; start a new session")
    number, head = records[0]
    if head.get("version") != VERSION:
        raise UsageError(f"journal version {head.get('version')!r} is not {VERSION}", file=str(path), line=number,
                         hint="resume it with the apache-advisor that wrote it, or start a new session")
    try:
        header = JournalHeader.from_dict(head)
        trials = [Observation.from_dict(r) for _, r in records[1:] if r.get("kind") == "trial"]
        gain_runs = [GainRun.from_dict(r) for _, r in records[1:] if r.get("kind") == "gain"]
        ablation_runs = [GainRun.from_dict(r) for _, r in records[1:] if r.get("kind") == "ablation"]
        refusals = [LintRefusal.from_dict(r) for _, r in records[1:] if r.get("kind") == REFUSAL_KIND]
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"journal entry lacks {exc}", file=str(path),
                         hint="the journal was edited or damaged; start a new session") from None
    return JournalContents(header, trials, torn, good_bytes, gain_runs, ablation_runs, refusals)


def _differences(mine: Any, theirs: Any, prefix: str = "") -> list[str]:
    """Paths at which two JSON values differ, shortest first."""
    if isinstance(mine, Mapping) and isinstance(theirs, Mapping):
        out = []
        for key in sorted(set(mine) | set(theirs), key=str):
            out += _differences(mine.get(key), theirs.get(key), f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
        out = []
        for index, (a, b) in enumerate(zip(mine, theirs)):
            label = a.get("name") if isinstance(a, Mapping) and "name" in a else str(index)
            out += _differences(a, b, f"{prefix}.{label}" if prefix else str(label))
        return out
    return [] if mine == theirs else [prefix or "value"]


def check_compatible(header: JournalHeader, *, space: Mapping[str, Any], workload: Mapping[str, Any],
                     objective: Mapping[str, Any], path: str) -> None:
    """Refuse, in one line, a journal that measured another search."""
    for what, journal_value, asked in (("space", header.space, space), ("workload", header.workload, workload),
                                       ("objective", header.objective, objective)):
        # JSON round trip: the journal holds lists where the caller may hold tuples.
        asked = json.loads(json.dumps(asked))
        differ = _differences(journal_value, asked)
        if differ:
            raise UsageError(
                f"this journal's {what} differs from the one asked for (at {differ[0]})",
                file=path, line=1,
                hint="resume with the same --space, --workload and --objective, or start a new session directory")


@dataclass
class EarlierRuns:
    """What an interrupted session journalled, taken up by `--resume`: its
    trials, gain runs and ablation runs (all empty for a new session)."""

    trials: list[Observation] = field(default_factory=list)
    gain_runs: list[GainRun] = field(default_factory=list)
    ablation_runs: list[GainRun] = field(default_factory=list)
    lint_refusals: list[LintRefusal] = field(default_factory=list)


def open_journal(session_dir: str | os.PathLike, header: JournalHeader, *, resume: bool
                 ) -> tuple["Journal", EarlierRuns]:
    """The session's journal, created, or resumed after checking it measured
    the same search; with what it already holds."""
    if resume:
        journal, contents = Journal.resume(session_dir, space=header.space, workload=header.workload,
                                           objective=header.objective)
        return journal, EarlierRuns(list(contents.trials), list(contents.gain_runs), list(contents.ablation_runs),
                                    list(contents.lint_refusals))
    return Journal.create(session_dir, header), EarlierRuns()


class Journal:
    """Appends completed trials to one session's journal."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, session_dir: str | os.PathLike, header: JournalHeader) -> "Journal":
        directory = Path(session_dir)
        path = journal_path(directory)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        except FileExistsError:
            raise UsageError("a tuning journal is already here", file=str(path),
                             hint="continue it with --resume, or pick a new session directory") from None
        except OSError as exc:
            raise UsageError(f"cannot create the journal: {exc.strerror}", file=str(path)) from None
        try:
            _write_line(descriptor, header.to_dict())
        finally:
            os.close(descriptor)
        _fsync_directory(directory)
        return cls(path)

    @classmethod
    def resume(cls, session_dir: str | os.PathLike, *, space: Mapping[str, Any], workload: Mapping[str, Any],
               objective: Mapping[str, Any]) -> tuple["Journal", JournalContents]:
        """Open an earlier session's journal for appending, after checking it
        measured the same search; a torn last line is cut off first."""
        path = journal_path(session_dir)
        contents = read_journal(path)
        check_compatible(contents.header, space=space, workload=workload, objective=objective, path=str(path))
        if contents.torn:
            with open(path, "r+b") as handle:
                handle.truncate(contents.good_bytes)
                handle.flush()
                os.fsync(handle.fileno())
        return cls(path), contents

    def append(self, observation: Observation) -> None:
        self._append({"kind": "trial", **observation.to_dict()})

    def append_gain(self, run: GainRun) -> None:
        self._append(run.to_dict())

    def append_refusal(self, refusal: LintRefusal) -> None:
        self._append(refusal.to_dict())

    def _append(self, record: Mapping[str, Any]) -> None:
        try:
            # Never O_CREAT: a journal that vanished mid-session (its report
            # directory removed) is not silently begun again without its header.
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except OSError as exc:
            raise AdvisorError(f"cannot append to the tuning journal: {exc.strerror}", file=str(self.path),
                               hint="the report directory was removed or made read-only during the session; "
                                    "the server is put back on its original config") from None
        try:
            _write_line(descriptor, record)
        finally:
            os.close(descriptor)


def _write_line(descriptor: int, record: Mapping[str, Any]) -> None:
    # allow_nan=False: a NaN would make the line unreadable by strict JSON readers.
    data = (json.dumps(record, sort_keys=True, allow_nan=False, default=_plain) + "\n").encode()
    view = memoryview(data)
    while view:
        written = os.write(descriptor, view)
        view = view[written:]
    os.fsync(descriptor)


def _plain(value: Any) -> Any:
    """numpy scalars and other stragglers as plain JSON values."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to the journal")


def _fsync_directory(directory: Path) -> None:
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
