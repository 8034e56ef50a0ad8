"""Replace config files all or nothing.

Every new file is written beside the one it replaces (same filesystem, so
the rename is atomic), flushed to disk, given the old file's mode and
owner, and only then renamed over it. The backups are written the same
way first. If any step fails, the files already replaced get their old
bytes back and the temporary files go: the tree is as it was.

A file whose mode has no write bit, or a directory without one, is treated
as read-only even for root (who could write it anyway): somebody marked it
so, and a tool should not overrule that silently.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from advisor.errors import UsageError


@dataclass
class Target:
    path: str
    """The path as shown (the admin's spelling)."""
    data: bytes
    """The new content."""
    original: bytes


def _real(path: str) -> str:
    """Where a symbolic link points: Debian's sites-enabled/ holds links,
    and the file behind one is what gets the edit (the link stays)."""
    return os.path.realpath(path)


def preflight(targets: list[Target], backup_suffix: str | None) -> None:
    """Refuse before writing anything when a file or its directory cannot
    or should not be written."""
    for target in targets:
        real = _real(target.path)
        directory = os.path.dirname(real) or "."
        try:
            info = os.stat(real)
            dir_info = os.stat(directory)
        except OSError as exc:
            raise UsageError(f"cannot read {target.path}: {exc.strerror}", target.path) from None
        if not info.st_mode & 0o222 or not os.access(real, os.W_OK):
            raise UsageError("the file is read-only; nothing was changed", target.path,
                             hint="make it writable (chmod u+w) or fix it by hand from the diff")
        if not dir_info.st_mode & 0o222 or not os.access(directory, os.W_OK | os.X_OK):
            raise UsageError(f"directory {directory} is read-only, so the file cannot be replaced "
                             "atomically; nothing was changed", target.path,
                             hint="make the directory writable or fix it by hand from the diff")
        if backup_suffix is not None and os.path.isdir(real + backup_suffix):
            raise UsageError(f"the backup path {real + backup_suffix} is a directory; nothing was "
                             "changed", target.path, hint="pass another --backup-suffix")


def _write_temporary(beside: str, data: bytes, like: os.stat_result) -> str:
    import tempfile

    directory = os.path.dirname(beside) or "."
    handle, temporary = tempfile.mkstemp(prefix=".apache-advisor-fix-", dir=directory)
    try:
        view = memoryview(data)
        while view:
            written = os.write(handle, view)
            view = view[written:]
        os.fchmod(handle, stat.S_IMODE(like.st_mode))
        if os.geteuid() == 0 or like.st_uid == os.geteuid():
            try:
                os.fchown(handle, like.st_uid, like.st_gid)
            except PermissionError:
                pass  # not root: the file stays ours, as an editor would leave it
        os.fsync(handle)
    except BaseException:
        os.close(handle)
        os.unlink(temporary)
        raise
    os.close(handle)
    return temporary


def _sync_directory(directory: str) -> None:
    try:
        descriptor = os.open(directory or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the rename is done
    finally:
        os.close(descriptor)


def write_all(targets: list[Target], backup_suffix: str | None) -> None:
    """Replace every target, keeping a backup of each unless `backup_suffix`
    is None; on any error restore what was replaced and raise one line."""
    preflight(targets, backup_suffix)
    # (temporary, destination, is_backup), in the order they are renamed:
    # each file's backup before the file.
    pending: list[tuple[str, str, bool]] = []
    replaced: list[tuple[str, bytes, os.stat_result]] = []
    new_backups: list[str] = []
    current = targets[0].path if targets else ""
    try:
        for target in targets:
            current = target.path
            real = _real(target.path)
            info = os.stat(real)
            if backup_suffix is not None:
                pending.append((_write_temporary(real, target.original, info), real + backup_suffix, True))
            pending.append((_write_temporary(real, target.data, info), real, False))
        while pending:
            temporary, destination, is_backup = pending[0]
            current = destination
            if is_backup:
                existed = os.path.lexists(destination)
                os.replace(temporary, destination)
                if not existed:
                    new_backups.append(destination)
            else:
                before = os.stat(destination)
                with open(destination, "rb") as handle:
                    old = handle.read()
                os.replace(temporary, destination)
                replaced.append((destination, old, before))
            pending.pop(0)
        for directory in {os.path.dirname(_real(t.path)) for t in targets}:
            _sync_directory(directory)
    except OSError as exc:
        for temporary, _, _ in pending:
            try:
                os.unlink(temporary)
            except OSError:
                pass
        restored = _restore(replaced)
        for backup in new_backups:
            try:
                os.unlink(backup)
            except OSError:
                pass
        what = "nothing was changed" if restored else "some files could not be restored"
        raise UsageError(f"cannot write the fixed file: {exc.strerror or exc}; {what}", current,
                         hint="free space or fix permissions, then run fix again") from None


def _restore(replaced: list[tuple[str, bytes, os.stat_result]]) -> bool:
    """Put the old bytes back where a new file went in already."""
    everything = True
    for path, data, info in reversed(replaced):
        try:
            os.replace(_write_temporary(path, data, info), path)
        except OSError:
            everything = False
    return everything
