"""The safe workflow on any staging target (advisor.tuner.staging.target):
journal first, write the managed include, validate, reload, health-check,
roll back on failure, restore at the end (ManagedConfig)."""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import dataclass, field

from advisor.errors import AdvisorError, UsageError
from advisor.tuner.load import httperf
from advisor.tuner.staging.sandbox import MANAGED_HEADER
from advisor.tuner.staging.target import StagingTarget


@dataclass
class Journal:
    """On disk before the first change: what to put back, even after kill -9."""

    managed: str
    original: str | None
    target: dict[str, object]
    pid: int
    started: float
    applied: list[str] = field(default_factory=list)
    files: dict[str, str | None] = field(default_factory=dict)
    """Other config files a trial edited (the line that loads the MPM), with
    their original text: written back before the managed include."""


def render_managed(directives: list[str]) -> str:
    body = "".join(f"{line}\n" for line in directives)
    return f"{MANAGED_HEADER}# Candidate written {time.strftime('%Y-%m-%d %H:%M:%S')}\n{body}"


class ManagedConfig:
    """Apply candidate configs to a target with journal, rollback and restore.

    Use as a context manager: entering takes a lock (one tool run per target)
    and first restores whatever a previous, killed run left behind; leaving
    restores the original, whatever happened in between.
    """

    def __init__(self, target: StagingTarget):
        self.target = target
        self.journal_path = target.state_base.with_name(target.state_base.name + ".journal")
        self.lock_path = target.state_base.with_name(target.state_base.name + ".lock")
        self._lock_fd: int | None = None
        self.recovered: Journal | None = None
        # ServerLimit/ThreadLimit the server was started with, as far as we know.
        self._running_limits: dict[str, int] = {}
        self.stray_load: list[int] = []  # load generators of a dead run, ended on entry
        self._running_mpm: str | None = None  # the MPM the server was started with, once a switch is possible
        self._mpm_unknown = False  # a dead run's switch is being undone: restart whatever the files say
        self._in_effect: tuple[tuple[str, ...], str] | None = None
        """The lines this run last applied and the managed text it wrote for them, once the
        server was reloaded with it (None: not known)."""
        self.reused = 0  # applies that found their text already in effect, and kept the warm pool

    def __enter__(self) -> "ManagedConfig":
        self.acquire()
        try:
            # A dead run's load first: a restore, or a trial, under a
            # stranger's load would measure that load.
            self.stray_load = httperf.end_recorded(self.target.load_record)
            self._running_limits = self._config_limits()  # what the server was started with, we assume
            self._running_mpm = self.target.configured_mpm()
            self.recovered = self.recover()
        except BaseException:
            self.release()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            self.restore()
        finally:
            self.release()

    def acquire(self) -> None:
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UsageError(f"another apache-advisor run is using {self.target.managed_path}",
                             hint="wait for it to finish") from None
        self._lock_fd = fd

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing drops the flock; a killed process drops it too
            self._lock_fd = None

    def read_journal(self) -> Journal | None:
        try:
            return Journal(**json.loads(self.journal_path.read_text()))
        except FileNotFoundError:
            return None
        except (ValueError, TypeError) as exc:
            raise AdvisorError(f"unreadable journal: {exc}", file=str(self.journal_path),
                               hint="restore the managed file by hand, then delete the journal") from None

    def _write_journal(self, journal: Journal) -> None:
        tmp = self.journal_path.with_name(self.journal_path.name + ".tmp")
        tmp.write_text(json.dumps(journal.__dict__, indent=2))
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, self.journal_path)

    def recover(self) -> Journal | None:
        """A journal left by a run that died: put its original back first."""
        journal = self.read_journal()
        if journal is None:
            return None
        self._mpm_unknown = bool(journal.files)
        self._restore_from(journal)
        return journal

    def apply(self, directives: list[str], mpm: str | None = None) -> None:
        """Write a candidate; on any failure roll back to the previous managed file.

        `mpm`: the MPM the candidate needs (tune --allow-mpm-switch). When it
        is not the one running, the target's config is switched to it (the
        files it edits are journalled first) and the server restarted in full.
        """
        previous = self.target.read_managed()
        journal = self.read_journal()
        if journal is None:
            journal = Journal(managed=str(self.target.managed_path), original=previous,
                              target=self.target.describe(), pid=os.getpid(), started=time.time())
        journal.applied = list(directives)
        current = self.target.configured_mpm()
        if self._running_mpm is None:
            self._running_mpm = current  # the switch became possible after entry (an existing server's check)
        switching = mpm is not None and mpm != current
        lines = tuple(directives)
        if not switching and self._in_effect is not None and self._in_effect == (lines, previous):
            # The server already runs these lines (a replicate right after a
            # run of the same point): a reload would only throw away the pool
            # the last run warmed, and the next warm-up would grow it again.
            self.reused += 1
            return
        before: dict[str, str | None] = {}
        if switching:
            before = self.target.mpm_files()
            for path, text in before.items():
                journal.files.setdefault(path, text)
        self._write_journal(journal)
        try:
            if switching:
                self.target.switch_mpm(mpm)
            text = render_managed(directives)
            self._change(text, validate=True)
            self._in_effect = (lines, text)
            running = self.target.running_mpm() if switching else None
            if running is not None and running != mpm:
                raise AdvisorError(f"the server at {self.target.base_url} runs the {running} MPM after a "
                                   f"restart into {mpm}", hint="check that the restart stops and starts it in full")
        except BaseException:
            for path, text in before.items():
                self.target.write_config_file(path, text)
            self._change(previous, validate=False)
            raise

    def restore(self) -> None:
        """Put the original back at the end of a run. The server is reloaded
        and answers with it before this returns; the pool is not watched
        settling, since no trial of this run follows (the next run's first
        apply, or its quiet wait, waits for it)."""
        journal = self.read_journal()
        if journal is not None:
            self._restore_from(journal, settle=False)

    def _restore_from(self, journal: Journal, settle: bool = True) -> None:
        # The files first, so nothing is lost; the journal goes only after the
        # reload was tried, so a run killed in between restores again next time.
        try:
            for path, text in journal.files.items():
                self.target.write_config_file(path, text)
            self._change(journal.original, validate=False, settle=settle)
        finally:
            if self.target.read_managed() == journal.original and all(
                    self.target.read_config_file(path) == text for path, text in journal.files.items()):
                self.journal_path.unlink(missing_ok=True)

    def _config_limits(self) -> dict[str, int]:
        pool = self.target.pool_config(claimed=False)
        return pool.restart_limits if pool is not None else {}

    def _change(self, text: str | None, validate: bool, settle: bool = True) -> None:
        """Write the managed include (None: remove it) and the instruments' share
        of the config that goes with it, then make the server run it."""
        self._in_effect = None  # apply() sets it once the server runs a candidate
        self.target.write_managed(text)
        self.target.instrument()
        if validate:
            self.target.validate()
        self._reload(settle)

    def _reload(self, settle: bool = True) -> None:
        """Graceful restart, or a full one when a start-up-only limit changed.

        httpd keeps ServerLimit and ThreadLimit across a graceful restart
        (AH00179): a trial would measure the old limit under the new name.
        A target that cannot restart keeps the change in `pending_restart`,
        which makes its trials invalid.
        """
        from advisor.tuner.staging.poolconfig import RESTART_ONLY

        wanted = self._config_limits()
        changed = [f"{name} {self._running_limits[name]} -> {wanted[name]}" for name in RESTART_ONLY
                   if name in wanted and name in self._running_limits and wanted[name] != self._running_limits[name]]
        # Another MPM loads only on a full restart. Unknown (a dead run's
        # switch, restored on entry): restart all the same.
        configured = self.target.configured_mpm()
        new_mpm = self._mpm_unknown or (configured is not None and self._running_mpm is not None
                                        and configured != self._running_mpm)
        if (changed or new_mpm) and self.target.can_restart():
            self._mpm_unknown = True  # a restart that fails leaves the server in no known state
            self.target.restart()
            self._running_limits = dict(wanted)
            self._running_mpm = configured
            self._mpm_unknown = False
            self.target.pending_restart = []
            if settle:
                self._settle(set())
            return
        self.target.pending_restart = changed
        before = self.target.generation()
        old_children = self._children() if settle else set()
        self.target.reload()
        self.target.wait_reloaded(before)
        if settle:
            self._settle(old_children)

    def _children(self) -> set[int]:
        return self.target.server_children()

    def _settle(self, old_children: set[int], timeout: float = 8.0, steady_s: float = 1.2) -> None:
        """Let the restart finish before a trial measures.

        Right after a graceful restart the old generation's children still
        finish their connections, and the new generation is not all there
        yet: prefork starts StartServers children only after a one-second
        pause. A probe started then measures the restart, not the config. We
        wait for the old processes to exit and for the number of children to
        hold still across one of the parent's one-second maintenance cycles.
        (The scoreboard is no guide: slots beyond a lowered limit keep their
        `G` mark with no process behind them.)
        """
        deadline = time.monotonic() + timeout
        while old_children & self._children() and time.monotonic() < deadline:
            time.sleep(0.05)
        count, since = len(self._children()), time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - since < steady_s:
            time.sleep(0.1)
            now = len(self._children())
            if now != count:
                count, since = now, time.monotonic()
        self.target.pool_settled = (self.target.server_pid(), count, since, time.monotonic())
