"""Have httpd judge the fixed tree before anything is kept.

The tree (the server root, or the directory that holds every file read)
is copied to a temporary directory, the new contents go into the copy, and
the check command runs against the copy: by default the system's httpd
with `-t -d COPY_ROOT -f COPY_MAIN`, and Debian's envvars when the tree
has one. Paths in ServerRoot and Include lines that name the original
tree are pointed at the copy (in the copy only), so httpd reads the edited
files and not the originals.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass

from advisor.errors import UsageError

# Copying is for config trees, not for whole filesystems.
MAX_COPY_FILES = 20000
_PATH_LINES = re.compile(rb"^\s*(serverroot|include|includeoptional)\s", re.IGNORECASE)
_SYNTAX = re.compile(r"Syntax error on line (\d+) of ([^:]+):\s*(.*)", re.DOTALL)


@dataclass
class CheckCommand:
    argv: list[str]
    skip: bool = False
    default: bool = False


def resolve_command(text: str | None) -> CheckCommand:
    """`--check-cmd` as given, or the system's httpd. `true` skips the check."""
    if text is None:
        from advisor.config.oracle import find_httpd

        binary = find_httpd()
        if binary is None:
            for name in ("apachectl", "apache2ctl"):
                binary = shutil.which(name)
                if binary:
                    break
        if binary is None:
            raise UsageError("no apache2, httpd or apachectl on PATH to check the fixed config",
                             hint="install httpd, pass --check-cmd CMD, or --check-cmd true to skip the check")
        return CheckCommand([binary, "-t"], default=True)
    argv = shlex.split(text)
    if not argv:
        raise UsageError("--check-cmd is empty", hint="give a command, or `true` to skip the check")
    if argv == ["true"]:
        return CheckCommand(argv, skip=True)
    if shutil.which(argv[0]) is None:
        raise UsageError(f"check command {argv[0]!r} not found; nothing was changed",
                         hint="install it or pass another --check-cmd (`true` skips the check)")
    return CheckCommand(argv)


def _copy_root(main_file: str, server_root: str, files: list[str]) -> str:
    """The directory to copy: the server root when it holds the whole tree,
    else the deepest directory that holds every file read."""
    paths = [os.path.abspath(path) for path in files] + [os.path.abspath(main_file)]
    root = os.path.abspath(server_root)
    if all(path.startswith(root.rstrip(os.sep) + os.sep) for path in paths):
        return root
    return os.path.commonpath([os.path.dirname(path) for path in paths])


def _count_files(root: str) -> int:
    count = 0
    for _, _, names in os.walk(root):
        count += len(names)
        if count > MAX_COPY_FILES:
            break
    return count


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _repoint(data: bytes, original: str, copy: str) -> bytes:
    """ServerRoot and Include lines naming the original tree name the copy."""
    old, new = original.encode("utf-8", "surrogateescape"), copy.encode("utf-8", "surrogateescape")
    if old not in data:
        return data
    lines = data.split(b"\n")
    for position, line in enumerate(lines):
        if old in line and _PATH_LINES.match(line):
            lines[position] = line.replace(old, new)
    return b"\n".join(lines)


def _place(copy_path: str, data: bytes, copy_root: str) -> None:
    """Write `data` at `copy_path` in the copy, never through a link that
    leads out of the copy (that would edit the original)."""
    real = os.path.realpath(copy_path)
    if not _inside(real, os.path.realpath(copy_root)):
        os.unlink(copy_path)
        real = copy_path
    os.makedirs(os.path.dirname(real), exist_ok=True)
    with open(real, "wb") as handle:
        handle.write(data)


def _explain(stderr: str, stdout: str, copy_root: str, root: str) -> tuple[str | None, int | None, str]:
    """httpd's complaint with the copy's paths turned back into the tree's."""
    text = (stderr.strip() or stdout.strip()).replace(copy_root, root)
    match = _SYNTAX.search(text)
    if match:
        return match.group(2), int(match.group(1)), " ".join(match.group(3).split())
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return None, None, " ".join(lines[-3:]) if lines else "no message"


def refusal(command: CheckCommand, main_file: str, server_root: str, files: list[str],
            contents: dict[str, bytes], timeout: float = 120) -> tuple[str | None, int | None, str] | None:
    """Run the check on a copy of the tree with `contents` (path -> new
    bytes; a path that does not exist yet is created in the copy) in place:
    None when it passes, else the complaint as (file, line, message) with
    the tree's own paths. Raises one line when no copy can be made."""
    root = _copy_root(main_file, server_root, files)
    if root == os.sep or _count_files(root) > MAX_COPY_FILES:
        raise UsageError(f"the tree under {root} is too large to copy for the check",
                         hint="pass --server-root, or --check-cmd true to skip the check")
    for path in contents:
        if not _inside(os.path.realpath(path), os.path.realpath(root)) and not _inside(path, root):
            raise UsageError(f"{path} lies outside {root}, so a copy cannot show httpd the edit",
                             hint="pass --check-cmd true to skip the check and review the diff")
    done, copy_root, _ = _run_on_copy(command, main_file, server_root, files, contents, root, timeout)
    if done.returncode == 0:
        return None
    stderr = done.stderr.decode("utf-8", "surrogateescape")
    stdout = done.stdout.decode("utf-8", "surrogateescape")
    return _explain(stderr, stdout, copy_root, root)


def check_tree(command: CheckCommand, main_file: str, server_root: str, files: list[str],
               contents: dict[str, bytes], timeout: float = 120) -> None:
    """Run the check on a copy of the tree with `contents` (real path ->
    new bytes) in place; raise one line when it fails."""
    if command.skip:
        return
    refused = refusal(command, main_file, server_root, files, contents, timeout)
    if refused is None:
        return
    file, line, message = refused
    name = os.path.basename(command.argv[0])
    # Was it the fix? The same check on the tree as it is tells.
    if refusal(command, main_file, server_root, files, {}, timeout) is not None:
        raise UsageError(f"{name} refuses this config even before any fix: {message}; nothing was "
                         "changed", file, line, hint="make httpd accept it first, then run fix")
    raise UsageError(f"{name} refused the fixed config: {message}; nothing was changed", file, line,
                     hint="fix that by hand, or leave out the rule with --ignore")


# Debian's apache2ctl makes these before it starts httpd (mkdir -p), so a
# host where httpd never ran, or whose /run was emptied by a reboot, lacks
# them without the config being wrong. The check gives the copy its own.
_APACHE2CTL_MADE_DIRS = (("APACHE_RUN_DIR", "/var/run/apache2"), ("APACHE_LOCK_DIR", "/var/lock/apache2"))


def _runtime_directories(env: dict[str, str], scratch: str) -> None:
    for name, default in _APACHE2CTL_MADE_DIRS:
        if not os.path.isdir(env.get(name) or default):
            made = os.path.join(scratch, name.lower())
            os.makedirs(made, exist_ok=True)
            env[name] = made


def _run_on_copy(command: CheckCommand, main_file: str, server_root: str, files: list[str],
                 contents: dict[str, bytes], root: str, timeout: float):
    """(completed process, the copy's root, argv) of one check on a fresh copy."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="apache-advisor-check-") as scratch:
        copy_root = os.path.join(scratch, "tree")
        try:
            shutil.copytree(root, copy_root, symlinks=True,
                            ignore_dangling_symlinks=True)
        except (OSError, shutil.Error) as exc:
            raise UsageError(f"cannot copy {root} for the check: {exc}",
                             hint="pass --check-cmd true to skip the check") from None

        def in_copy(path: str) -> str:
            absolute = os.path.abspath(path)
            real = os.path.realpath(path)
            base = absolute if _inside(absolute, root) else real
            return os.path.join(copy_root, os.path.relpath(base, root))

        for path in dict.fromkeys(list(files) + list(contents)):
            if not _inside(os.path.abspath(path), root) and not _inside(os.path.realpath(path), root):
                continue  # read from where it is (outside the tree; never edited)
            target = in_copy(path)
            if path in contents:
                data = contents[path]
            else:
                try:
                    with open(target, "rb") as handle:
                        data = handle.read()
                except OSError:
                    continue
            repointed = _repoint(data, root, copy_root)
            if path in contents or repointed != data:
                _place(target, repointed, copy_root)
        copy_main = in_copy(main_file)
        copy_server_root = in_copy(server_root) if _inside(os.path.abspath(server_root), root) else server_root
        argv = list(command.argv)
        joined = " ".join(argv)
        if "{config}" in joined or "{root}" in joined:
            argv = [word.replace("{config}", copy_main).replace("{root}", copy_server_root) for word in argv]
        else:
            argv += ["-d", copy_server_root, "-f", copy_main]
        env = dict(os.environ)
        from advisor.config.envvars import envvars_beside, read_envvars

        envvars = envvars_beside(copy_main)
        if envvars is not None:
            env.update(read_envvars(envvars, env))
            _runtime_directories(env, scratch)
        try:
            done = subprocess.run(argv, capture_output=True, timeout=timeout, env=env,
                                  cwd=copy_root, stdin=subprocess.DEVNULL)
        except OSError as exc:
            raise UsageError(f"cannot run the check command {argv[0]}: {exc.strerror}; nothing was changed",
                             hint="pass another --check-cmd") from None
        except subprocess.TimeoutExpired:
            raise UsageError(f"the check command took over {timeout:g} s; nothing was changed",
                             hint="pass another --check-cmd") from None
    return done, copy_root, argv
