"""Run the system's httpd as an oracle: `-t -D DUMP_CONFIG` and `-D DUMP_INCLUDES`.

The dump needs mod_info; we load it with `-C` ahead of the configuration so
that any tree can be dumped without editing it.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from dataclasses import dataclass

from advisor.errors import UsageError

MODULE_DIRS = ("/usr/lib/apache2/modules", "/usr/lib64/httpd/modules", "/usr/lib/httpd/modules",
               "/usr/local/apache2/modules")


def find_httpd() -> str | None:
    for name in ("apache2", "httpd"):
        found = shutil.which(name) or next(
            (p for p in (f"/usr/sbin/{name}", f"/usr/local/apache2/bin/{name}") if os.access(p, os.X_OK)),
            None,
        )
        if found:
            return found
    return None


def module_dir() -> str | None:
    for directory in MODULE_DIRS:
        if os.path.isfile(os.path.join(directory, "mod_info.so")):
            return directory
    return None


def available_modules() -> dict[str, str]:
    """Shared modules on this host: identifier -> path (mod_foo.so -> foo_module)."""
    directory = module_dir()
    found: dict[str, str] = {}
    if directory:
        for path in sorted(glob.glob(os.path.join(directory, "mod_*.so"))):
            stem = os.path.basename(path)[4:-3]
            found[f"{stem}_module"] = path
    return found


@dataclass
class HttpdResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def accepted(self) -> bool:
        return self.returncode == 0


def run_httpd(config: str, *, server_root: str | None = None, args: tuple[str, ...] = (),
              env: dict[str, str] | None = None, preload_info: bool = True,
              timeout: float = 60) -> HttpdResult:
    binary = find_httpd()
    if binary is None:
        raise UsageError("no httpd binary (apache2 or httpd) on this machine",
                         hint="install Debian's apache2 package")
    command = [binary]
    if server_root:
        command += ["-d", server_root]
    command += ["-f", config]
    if preload_info:
        directory = module_dir()
        if directory is None:
            raise UsageError("mod_info.so not found", hint="install Debian's apache2 package")
        command += ["-C", f"LoadModule info_module {directory}/mod_info.so"]
    command += list(args)
    completed = subprocess.run(command, capture_output=True, env=env, timeout=timeout,
                               stdin=subprocess.DEVNULL)
    return HttpdResult(
        completed.returncode,
        completed.stdout.decode("utf-8", errors="surrogateescape"),
        completed.stderr.decode("utf-8", errors="surrogateescape"),
    )


def dump_config(config: str, **kwargs) -> HttpdResult:
    """httpd's own `-t -D DUMP_CONFIG` output (stdout holds the dump)."""
    return run_httpd(config, args=("-t", "-D", "DUMP_CONFIG"), **kwargs)
