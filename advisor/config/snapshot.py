"""A frozen copy of what one reading of a tree depended on.

A tuning session lints each candidate against the admin's tree as it was
when the session read it. Meanwhile an MPM switch edits that tree on disk:
it rewrites the line that loads the MPM, and on Debian it changes which
`mods-enabled/*.load` files a wildcard finds. Copying the file texts alone
would not keep the second kind of change out, since a wildcard lists its
directory again at every reading.

So the copy is of every input the reading used, at its own path under a
private directory that then serves as `LoadOptions.root`: the files read
(copied), the directories listed (created, holding only what was read from
them, which is all a wildcard matched), and any other path a test found
(`<IfFile>`, linked to the original). A path found missing stays missing.
Reading the copy gives the same model as the first reading, with the
host's own paths in it, whatever happens to the live tree afterwards.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field, replace

from advisor.config.inputs import InputRecorder
from advisor.config.load_options import LoadOptions


@dataclass
class TreeSnapshot:
    """A private directory standing for `/` of the host, and the options
    that read the frozen tree from it."""

    directory: tempfile.TemporaryDirectory
    options: LoadOptions
    files: list[str] = field(default_factory=list)
    """The host paths whose texts were copied."""

    @property
    def root(self) -> str:
        return self.directory.name

    def close(self) -> None:
        self.directory.cleanup()


def freeze_tree(main_file: str, options: LoadOptions, prefix: str = "advisor-frozen-") -> TreeSnapshot:
    """Read `main_file` once with a recorder and copy its inputs.

    The reading's own errors are the caller's to report (they are raised as
    they would be from `load_config`). A tree already read under a root (a
    remote host's copy) is frozen from that copy.
    """
    from advisor.config.loader import load_config

    recorder = InputRecorder()
    config = load_config(main_file, replace(options, recorder=recorder))
    source_root = options.root.rstrip("/") if options.root else ""
    directory = tempfile.TemporaryDirectory(prefix=prefix)
    root = directory.name
    os.chmod(root, 0o755)  # the tuner may read it as the server's user
    read = set(config.files)
    copied: list[str] = []
    try:
        for path in sorted(recorder.paths):
            recorded = recorder.paths[path]
            if recorded is None or not os.path.isabs(path):
                continue  # absent then: it stays absent in the copy
            source = source_root + path
            target = root + os.path.normpath(path)
            mode = recorded[5]
            if stat.S_ISDIR(mode):
                os.makedirs(target, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.lexists(target):
                continue
            if path in read:
                shutil.copyfile(source, target)
                copied.append(path)
            else:
                os.symlink(os.path.realpath(source), target)
    except BaseException:
        directory.cleanup()
        raise
    frozen = replace(options, root=root, recorder=None)
    return TreeSnapshot(directory=directory, options=frozen, files=sorted(copied))
