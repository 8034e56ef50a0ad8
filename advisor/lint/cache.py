"""A lint result cache that proves itself current before it is used.

Linting an unchanged tree again (a pre-commit hook, an admin re-checking
before a reload, a CI job with a restored cache) should not cost a full read.
An entry is keyed on everything that is not the configuration tree itself:
the tool's own code, the Python running it, the working directory, the
command-line options and the settings file's bytes. It records every input
the reading depended on (files read, directories listed, paths tested,
environment variables looked up; see advisor.config.inputs) and is used only when
`stat` shows all of them as they were. Any difference, or any doubt, means a
full lint.

Timestamps have a granularity (one or two seconds on some filesystems): a
file changed within the same tick as the reading could keep its recorded
times. So a result whose inputs changed less than `RACY_WINDOW_NS` before the
run started is not saved at all (git's "racily clean" problem, solved the
simple way); the next run saves it.

Entries are written atomically, one file per key (`lint-KEY.json`), in two
parts: a line of JSON that proves the entry current (the inputs, the exit
code), then the findings, decoded only when a report has to be made from
them. The findings are marshal data: plain lists of strings, numbers and
None (marshal loads no code it would run, and nothing here executes what
it loads), written eleven times faster than JSON (80,004 findings: 0.06 s
against 0.63 s, a sixth of a first lint of 20,000 hosts). The head holds
their length and CRC-32: damaged findings are never handed to marshal,
which could take a damaged size for a list of a billion items.

Beside an entry, each report already made from it (one per format and way
of showing, `lint-KEY.VARIANT.out`) is kept with the entry's token, so
linting an unchanged tree again costs the stats and one copy of the report,
not a rendering of every finding (a mass-hosting tree has tens of
thousands). Both are in `$APACHE_ADVISOR_CACHE_DIR`, else
`$XDG_CACHE_HOME/apache-advisor`, else `~/.cache/apache-advisor`. A cache
that cannot be read or written is skipped without a word: it only ever
saves time.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import sys
import time
import zlib
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from advisor.config.inputs import InputRecorder, changed

CACHE_FORMAT = 3
RACY_WINDOW_NS = 2_000_000_000
MAX_ENTRIES = 64
STALE_TEMPORARY_NS = 3600 * 1_000_000_000
"""A temporary file this old is no save under way but one that was killed."""
"""Old entries beyond this many are removed when a new one is written."""

_ENTRY_PREFIX = "lint-"


def new_token() -> str:
    return os.urandom(12).hex()


def default_directory() -> str | None:
    explicit = os.environ.get("APACHE_ADVISOR_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.path.expanduser("~")
        if home == "~":
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "apache-advisor")


def _code_fingerprint() -> list[Any]:
    """Name, size and modification time of every file of the installed
    package: a changed rule (even without a version bump, as in an editable
    install) makes every old entry unusable."""
    import importlib.util

    import advisor

    roots = [os.path.dirname(os.path.abspath(advisor.__file__))]
    # In an editable install the rules live outside advisor/ (rules/ is
    # mapped to advisor.rules); find_spec locates them without importing.
    spec = importlib.util.find_spec("advisor.rules")
    for location in (spec.submodule_search_locations or []) if spec else []:
        location = os.path.abspath(location)
        if not any(location == root or location.startswith(root + os.sep) for root in roots):
            roots.append(location)
    found: list[Any] = [advisor.__version__]
    pending = roots
    while pending:
        directory = pending.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    pending.append(entry.path)
            elif entry.name.endswith((".py", ".json")):
                info = entry.stat()
                found.append((entry.path, info.st_size, info.st_mtime_ns))
    return found


def entry_key(options: dict[str, Any], settings_path: str | None) -> str:
    """The key of everything a lint result depends on besides the tree."""
    settings_bytes = b""
    if settings_path:
        with open(settings_path, "rb") as handle:
            settings_bytes = handle.read()
    material = json.dumps({
        "format": CACHE_FORMAT,
        "python": sys.version,
        "marshal": marshal.version,
        "code": _code_fingerprint(),
        "cwd": os.getcwd(),
        "options": options,
        "settings": [settings_path, hashlib.sha256(settings_bytes).hexdigest()],
    }, sort_keys=True, default=str)
    return hashlib.sha256(material.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass
class CachedResult:
    findings: list[Any] | None
    """Each finding as (code, severity, message, file, line, evidence, fix,
    edit fields or None), a tuple (a list reads back alike); None until
    `finding_fields` decodes them."""
    notes: list[str]
    files: list[str]
    exit_code: int
    token: str = ""
    """Names this entry: a report saved beside it is used only with it."""
    rest: Any = None
    """The entry file, open after its first line: the findings are read
    from it only when asked for (the file may be replaced meanwhile; the
    open handle still reads this entry)."""

    size: int = 0
    crc: int = 0
    """Length and CRC-32 of the findings' bytes, as the head recorded them."""

    def finding_fields(self) -> list[Any]:
        """The findings; ValueError when they are not what was written."""
        if self.findings is None:
            with self.rest as stream:
                data = stream.read(self.size + 1)
            if len(data) != self.size or zlib.crc32(data) != self.crc:
                raise ValueError("the cached findings are damaged")
            try:
                findings = marshal.loads(data)
            except (EOFError, TypeError) as exc:
                raise ValueError(f"the cached findings are damaged: {exc}") from None
            if type(findings) is not list:
                raise ValueError("the cached findings are damaged")
            self.findings = findings
        return self.findings


def _decoded_pieces(handle: BinaryIO) -> Iterator[str]:
    """The rest of an open file as text, a megabyte at a time (a character
    split between two reads is decoded whole)."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    with handle:
        while chunk := handle.read(1 << 20):
            text = decoder.decode(chunk)
            if text:
                yield text
        tail = decoder.decode(b"", final=True)
        if tail:
            yield tail


class LintCache:
    def __init__(self, directory: str) -> None:
        self.directory = directory

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, f"{_ENTRY_PREFIX}{key}.json")

    def _report_path(self, key: str, variant: str) -> str:
        return os.path.join(self.directory, f"{_ENTRY_PREFIX}{key}.{variant}.out")

    def _lock_path(self, key: str) -> str:
        return os.path.join(self.directory, f"{_ENTRY_PREFIX}{key}.lock")

    def lookup(self, key: str) -> CachedResult | None:
        """The saved result when every input it depended on is unchanged
        (after waiting for a save of this key still under way)."""
        self._wait_for_saving(key)
        handle = None
        try:
            handle = open(self._path(key), "rb")
            # An entry someone else wrote could hide findings: only ours count.
            if os.fstat(handle.fileno()).st_uid != os.geteuid():
                handle.close()
                return None
            head = handle.readline()
            if not head.endswith(b"\n"):
                handle.close()
                return None
            entry = json.loads(head)
            if entry.get("key") != key:
                handle.close()
                return None
            paths = {path: tuple(found) if found is not None else None
                     for path, found in entry["paths"].items()}
            if changed(paths, entry["variables"]) is not None:
                handle.close()
                return None
            return CachedResult(None, entry["notes"], entry["files"], int(entry["exit_code"]),
                                str(entry["token"]), handle, int(entry["findings_size"]),
                                int(entry["findings_crc"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            if handle is not None:
                handle.close()
            return None  # missing, unreadable or damaged: lint afresh

    @staticmethod
    def admits(recorder: InputRecorder, started_ns: int) -> bool:
        """Whether a result read from these inputs may be saved: none of them
        changed within the racy window before the run started."""
        return not recorder.unreliable and recorder.newest_time_ns() < started_ns - RACY_WINDOW_NS

    def store(self, key: str, recorder: InputRecorder, result: CachedResult, started_ns: int) -> bool:
        """Save a result unless its inputs are too fresh to vouch for; True
        when saved. The result's token names the entry (one is drawn when it
        has none)."""
        if not self.admits(recorder, started_ns):
            return False
        try:
            findings = marshal.dumps(result.finding_fields())
        except ValueError:
            return False  # a value marshal cannot write: this result is not kept
        result.token = result.token or new_token()
        entry = {
            "key": key,
            "token": result.token,
            "paths": recorder.paths,
            "variables": recorder.variables,
            "notes": result.notes,
            "files": result.files,
            "exit_code": result.exit_code,
            "findings_size": len(findings),
            "findings_crc": zlib.crc32(findings),
        }
        # No circular check: the entry is plain data, and checking marks every
        # one of its (20,000 on a large tree) signatures: half the encoding time.
        # Without an indent json.dumps writes no raw newline: the first one
        # ends the head.
        head = json.dumps(entry, ensure_ascii=False, check_circular=False).encode("utf-8", "surrogateescape")
        try:
            self._write(self._path(key), (head, b"\n", findings))
            self._prune()
        except OSError:
            return False
        return True

    def store_after_exit(self, key: str, save: Callable[[], object]) -> None:
        """Run `save` in a child process that outlives this one, so the
        command's answer is not held back by writing the entry (on 20,000
        hosts with fixes: the edits' fields, their marshal data and the head,
        about 0.3 s). The child holds the key's lock until it is done: a
        lookup of the key waits for it, so a lint run right after still
        finds the entry. Where the lock is taken (another save of the key is
        under way) or no child can be made, nothing is saved this time."""
        import fcntl

        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            lock = os.open(self._lock_path(key), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            for stream in (sys.stdout, sys.stderr):
                stream.flush()  # else the child's exit could write them again
            child = os.fork()
        except OSError:
            os.close(lock)
            return
        if child:
            os.close(lock)  # the child's copy keeps the lock
            return
        try:
            os.setsid()  # not in the terminal's process group: a Ctrl-C at the prompt is not for it
            quiet = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):  # a caller reading our output sees its end now, not after the save
                os.dup2(quiet, fd)
            save()
        finally:
            os._exit(0)

    def _wait_for_saving(self, key: str, patience_s: float = 20.0) -> None:
        import fcntl

        try:
            lock = os.open(self._lock_path(key), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return
        try:
            deadline = time.monotonic() + patience_s
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        return  # a save that never ends: the lookup goes on and may miss
                    time.sleep(0.005)
                except OSError:
                    return
        finally:
            os.close(lock)

    def _write(self, path: str, pieces: Iterable[bytes]) -> None:
        """All of `pieces` at `path` or nothing (a temporary file renamed)."""
        import tempfile  # only when saving: importing it costs a lookup about 3 ms

        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=self.directory)
        try:
            with os.fdopen(handle, "wb") as stream:
                for piece in pieces:
                    stream.write(piece)
            os.replace(temporary, path)
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise

    def report(self, key: str, token: str, variant: str) -> Iterator[str] | None:
        """A report saved from the entry named `token`, as pieces read from
        the file while they are written out (a saved SARIF log of 20,000
        hosts is 150 MB: read whole, then decoded, it took 470 MB), or None."""
        try:
            handle = open(self._report_path(key, variant), "rb")
        except OSError:
            return None
        try:
            if os.fstat(handle.fileno()).st_uid != os.geteuid():
                handle.close()
                return None
            head = handle.readline()
        except OSError:
            handle.close()
            return None
        if not head.endswith(b"\n") or not token or head[:-1].decode("ascii", "replace") != token:
            handle.close()
            return None
        return _decoded_pieces(handle)

    def storing_report(self, key: str, token: str, variant: str, pieces: Iterable[str]) -> Iterator[str]:
        """The report's pieces, passed on as they come and kept beside the
        entry named `token` once the last has passed (never a part of one:
        a report left unfinished is not kept). Saving is best effort: a
        cache that cannot be written only stops being written to."""
        import tempfile  # only when saving: importing it costs a lookup about 3 ms

        stream = temporary = None
        if token:
            try:
                os.makedirs(self.directory, mode=0o700, exist_ok=True)
                handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=self.directory)
                stream = os.fdopen(handle, "wb")
                stream.write(token.encode("ascii") + b"\n")
            except OSError:
                self._abandon(stream, temporary)
                stream = None
        finished = False
        try:
            for piece in pieces:
                if stream is not None:
                    try:
                        stream.write(piece.encode("utf-8", "surrogateescape"))
                    except (OSError, UnicodeEncodeError):
                        self._abandon(stream, temporary)
                        stream = None
                yield piece
            finished = True
        finally:
            if stream is not None:
                if finished:
                    try:
                        stream.close()
                        os.replace(temporary, self._report_path(key, variant))
                    except OSError:
                        self._abandon(None, temporary)
                else:
                    self._abandon(stream, temporary)

    @staticmethod
    def _abandon(stream: Any, temporary: str | None) -> None:
        """Close and remove a report that will not be kept."""
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass

    def _prune(self) -> None:
        entries = []
        reports: dict[str, list[str]] = {}
        stale_ns = time.time_ns() - STALE_TEMPORARY_NS
        for entry in os.scandir(self.directory):
            if entry.name.startswith(".tmp-"):  # a save killed midway left it
                try:
                    if entry.stat().st_mtime_ns < stale_ns:
                        os.unlink(entry.path)
                except OSError:
                    pass
                continue
            if not entry.name.startswith(_ENTRY_PREFIX):
                continue
            if entry.name.endswith(".json"):
                try:
                    entries.append((entry.stat().st_mtime_ns, entry.path))
                except OSError:
                    continue
            elif entry.name.endswith((".out", ".lock")):
                key = entry.name[len(_ENTRY_PREFIX):].split(".", 1)[0]
                reports.setdefault(key, []).append(entry.path)
        entries.sort(reverse=True)
        kept = {os.path.basename(path)[len(_ENTRY_PREFIX):-len(".json")] for _, path in entries[:MAX_ENTRIES]}
        removed = [path for _, path in entries[MAX_ENTRIES:]]
        removed += [path for key, paths in reports.items() if key not in kept for path in paths]
        for path in removed:
            try:
                os.unlink(path)
            except OSError:
                pass

    def clear(self) -> int:
        """Remove every entry; how many were removed."""
        removed = 0
        try:
            for entry in os.scandir(self.directory):
                if entry.name.startswith((_ENTRY_PREFIX, ".tmp-")):
                    os.unlink(entry.path)
                    removed += 1
        except FileNotFoundError:
            return 0
        return removed
