#!/usr/bin/env python3
"""Compare `apache-advisor dump` with httpd's own dump over a folder of
real-world configuration files.

Each file is wrapped in a small main config that loads an MPM (the one the
file tunes, else event), mod_info and every shared module Debian ships, then
Includes the file. Only the files httpd accepts count. Prints one line per
file and "same N of M" at the end.

    python bench/compare_realworld.py ../shared/corpus-realworld [--show-diffs]
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import tempfile
from pathlib import Path

from advisor.config.load_options import LoadOptions
from advisor.config.loader import load_config
from advisor.config.oracle import available_modules, dump_config, find_httpd
from advisor.errors import AdvisorError
from advisor.output.httpd_dump import dump_text

# Modules that need others loaded first, or that cannot load beside the
# rest in a bare wrapper.
LOAD_FIRST = ("proxy_module", "cache_module", "dav_module", "session_module", "socache_shmcb_module",
              "authn_socache_module", "authz_core_module", "xml2enc_module", "watchdog_module",
              "lbmethod_byrequests_module")
NEVER = ("info_module",)


def pick_mpm(text: str) -> str:
    lowered = text.lower()
    for mpm in ("prefork", "worker", "event"):
        if re.search(rf"<ifmodule\s+(mpm_{mpm}_module|{mpm}\.c)", lowered):
            return mpm
    return "event"


def wrapper_text(target: Path, work: Path, modules: dict[str, str]) -> str:
    mpm = pick_mpm(target.read_text(errors="replace"))
    lines = [f"ServerRoot {work}", f"LoadModule mpm_{mpm}_module {modules[f'mpm_{mpm}_module']}"]
    ordered = [m for m in LOAD_FIRST if m in modules]
    ordered += sorted(m for m in modules if m not in ordered)
    for module_id in ordered:
        if module_id.startswith("mpm_") or module_id in NEVER:
            continue
        lines.append(f"LoadModule {module_id} {modules[module_id]}")
    lines += ["ServerName localhost", f"PidFile {work}/httpd.pid", f"ErrorLog {work}/error.log",
              f"Include {target}"]
    return "\n".join(lines) + "\n"


def _skeleton(work: Path) -> None:
    """The directories a Debian or Red Hat main file expects beside it, each
    with one empty file so that a non-optional wildcard Include matches."""
    for name in ("logs", "run"):
        (work / name).mkdir()
    for directory, suffixes in (("mods-enabled", (".load", ".conf")), ("conf-enabled", (".conf",)),
                                ("sites-enabled", (".conf",)), ("conf.d", (".conf",)),
                                ("conf.modules.d", (".conf",))):
        (work / directory).mkdir()
        for suffix in suffixes:
            (work / directory / f"empty{suffix}").write_text("")
    for name in ("ports.conf", "httpd.conf"):
        (work / name).write_text("")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--show-diffs", action="store_true")
    args = parser.parse_args()
    if find_httpd() is None:
        print("no apache2/httpd binary here", file=sys.stderr)
        return 2
    modules = available_modules()
    files = sorted(p for p in Path(args.folder).iterdir() if p.is_file() and p.suffix in (".conf", ""))
    files = [p for p in files if p.name not in ("INDEX.tsv",)]
    accepted = same = 0
    rejected: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _skeleton(work)
        env = dict(os.environ, APACHE_RUN_DIR=str(work / "run"), APACHE_LOG_DIR=str(work / "logs"),
                   APACHE_LOCK_DIR=str(work / "run"), APACHE_PID_FILE=str(work / "run/httpd.pid"),
                   APACHE_RUN_USER="www-data", APACHE_RUN_GROUP="www-data")
        for target in files:
            wrapper = work / f"wrap-{target.stem}.conf"
            wrapper.write_text(wrapper_text(target.resolve(), work, modules))
            result = dump_config(str(wrapper), server_root=str(work), env=env)
            if not result.accepted:
                reason = (result.stderr.strip().splitlines() or ["?"])[-1]
                rejected.append(f"{target.name}: {reason}")
                print(f"{target.name:12} httpd rejects: {reason[-160:]}")
                continue
            accepted += 1
            try:
                options = LoadOptions(server_root=str(work), apache_version=_version(), environ=env)
                ours = dump_text(load_config(str(wrapper), options))
            except AdvisorError as error:
                print(f"{target.name:12} DIFFERENT: we fail: {error.render()}")
                continue
            if ours == result.stdout:
                same += 1
                print(f"{target.name:12} same ({result.stdout.count(chr(10))} dump lines)")
            else:
                print(f"{target.name:12} DIFFERENT")
                if args.show_diffs:
                    diff = difflib.unified_diff(result.stdout.splitlines(True), ours.splitlines(True),
                                                "httpd", "ours", n=1)
                    sys.stdout.writelines(list(diff)[:40])
    print(f"same {same} of {accepted} (httpd accepted {accepted} of {len(files)} files)")
    return 0 if same == accepted else 1


_VERSION: list[str] = []


def _version() -> str:
    if not _VERSION:
        import subprocess

        text = subprocess.run([find_httpd() or "apache2", "-v"], capture_output=True, text=True).stdout
        match = re.search(r"Apache/(\d+\.\d+\.\d+)", text)
        _VERSION.append(match.group(1) if match else "2.4")
    return _VERSION[0]


if __name__ == "__main__":
    sys.exit(main())
