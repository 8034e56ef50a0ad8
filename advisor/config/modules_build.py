"""Record the modules Debian's httpd package ships, as packaged data.

Run: python -m advisor.config.modules_build [PACKAGE]   (default apache2-bin)
It writes advisor/config/data/modules-2.4.json from the package installed on
this machine:

- built-in modules: the source names `apache2 -l` prints, paired in order
  with the `(static)` identifiers of `apache2 -M` (the two lists come from
  the same table in the binary, in the same order);
- shared modules: every `mod_*.so` that `dpkg -L PACKAGE` lists, with the
  identifier LoadModule needs (`NAME_module` for `mod_NAME.so`, checked
  against the symbol names in the object) and the source name `<IfModule>`
  answers to. That is `mod_NAME.c` when the object holds the string; when it
  does not (mod_ldap is `util_ldap.c`, the MPMs are `event.c`...), each
  `.c` name in the object is tried with the real httpd until `<IfModule>`
  answers yes.

The package version goes into the file: the data are facts about that build.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).parent / "data" / "modules-2.4.json"
_SOURCE_STRING = re.compile(rb"\0([A-Za-z0-9_]+\.c)\0")


def _run(command: list[str], **kwargs) -> str:
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=60, **kwargs)
    return done.stdout + done.stderr


def _httpd() -> str:
    for name in ("apache2", "httpd"):
        found = shutil.which(name) or (f"/usr/sbin/{name}" if os.access(f"/usr/sbin/{name}", os.X_OK) else None)
        if found:
            return found
    raise SystemExit("no apache2/httpd binary: install the package first")


def _config(directory: str, lines: list[str]) -> str:
    path = os.path.join(directory, "probe.conf")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(["ServerName probe.invalid", f"ErrorLog {directory}/error.log",
                                f"PidFile {directory}/httpd.pid", *lines]) + "\n")
    return path


def builtins(httpd: str, mpm_path: str, work: str) -> list[list[str]]:
    sources = [line.strip() for line in _run([httpd, "-l"]).splitlines()
               if line.strip().endswith(".c")]
    # -M needs a config httpd accepts, and httpd accepts none without an MPM.
    stem = os.path.basename(mpm_path)[4:-3]
    config = _config(work, [f"LoadModule {stem}_module {mpm_path}"])
    ids = [match.group(1) for match in re.finditer(r"^\s*(\w+) \(static\)$",
                                                   _run([httpd, "-d", work, "-f", config, "-M"]), re.M)]
    if len(ids) != len(sources) or not ids:
        raise SystemExit(f"`{httpd} -l` lists {len(sources)} built-in modules, `-M` {len(ids)}")
    return [[module_id, source] for module_id, source in zip(ids, sources)]


def _answers(httpd: str, work: str, module_id: str, path: str, source: str, mpm_path: str) -> bool:
    """Whether httpd, with this module loaded (and an MPM: httpd reads no
    config without one), takes `<IfModule source>`."""
    lines = [] if module_id.startswith("mpm_") else [f"LoadModule mpm_event_module {mpm_path}"]
    config = _config(work, lines + [f"LoadModule {module_id} {path}",
                                    f"<IfModule {source}>", "Define PROBE_ANSWERED", "</IfModule>"])
    return "Define: PROBE_ANSWERED" in _run([httpd, "-d", work, "-f", config, "-t", "-D", "DUMP_RUN_CFG"])


def shared(httpd: str, files: list[str], mpm_path: str, work: str,
           builtin_sources: set[str]) -> list[list[str]]:
    found: list[list[str]] = []
    for path in sorted(files, key=os.path.basename):
        base = os.path.basename(path)
        stem = base[4:-3]
        module_id = f"{stem}_module"
        data = Path(path).read_bytes()
        if b"\0" + module_id.encode() + b"\0" not in data:
            raise SystemExit(f"{path} has no symbol {module_id}: its identifier is not the usual one")
        source = f"mod_{stem}.c"
        if b"\0" + source.encode() + b"\0" not in data:
            # A built-in's name (core.c) answers whatever is loaded.
            candidates = sorted({m.decode() for m in _SOURCE_STRING.findall(data)} - builtin_sources)
            answered = [name for name in candidates if _answers(httpd, work, module_id, path, name, mpm_path)]
            if len(answered) != 1:
                raise SystemExit(f"{path}: cannot tell its source name among {candidates}")
            source = answered[0]
        found.append([module_id, base, source])
    return found


def build(package: str = "apache2-bin") -> dict:
    httpd = _httpd()
    version = _run(["dpkg-query", "-W", "-f", "${Version}", package]).strip()
    listed = [line for line in _run(["dpkg", "-L", package]).splitlines()
              if re.fullmatch(r"/\S+/mod_[A-Za-z0-9_]+\.so", line)]
    if not version or not listed:
        raise SystemExit(f"package {package} is not installed (or ships no mod_*.so)")
    module_dir = os.path.dirname(listed[0])
    mpm = next(path for path in listed if os.path.basename(path) == "mod_mpm_event.so")
    with tempfile.TemporaryDirectory(prefix="modules-build-") as work:
        compiled_in = builtins(httpd, mpm, work)
        return {
            "about": (f"Modules httpd 2.4 ships in Debian's {package} package: built into the "
                      "binary ([identifier, source]) and shared objects in its modules directory "
                      "([identifier, file, source]). Written by python -m advisor.config.modules_build."),
            "package": package,
            "version": version,
            "httpd": _run([httpd, "-v"]).splitlines()[0].split(":", 1)[-1].strip(),
            "module_dir": module_dir,
            "builtin": compiled_in,
            "shared": shared(httpd, listed, mpm, work, {source for _, source in compiled_in}),
        }


def render(data: dict) -> str:
    """JSON with one module a line, so a new build's diff reads module by module."""
    lines = ["{"]
    for key, value in data.items():
        if isinstance(value, list):
            rows = ",\n".join(f"  {json.dumps(row)}" for row in value)
            lines.append(f" {json.dumps(key)}: [\n{rows}\n ],")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)},")
    lines[-1] = lines[-1].rstrip(",")
    return "\n".join(lines) + "\n}\n"


def main() -> None:
    data = build(sys.argv[1] if len(sys.argv) > 1 else "apache2-bin")
    OUT.write_text(render(data))
    print(f"wrote {OUT}: {len(data['builtin'])} built-in and {len(data['shared'])} shared modules "
          f"of {data['package']} {data['version']}")


if __name__ == "__main__":
    main()
