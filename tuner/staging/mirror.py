"""A local copy of a remote server's config tree, for the config model.

`tune --host` derives its search space and lints each candidate from the
config the remote httpd reads. The host's own httpd says which files that
is (`-t -D DUMP_INCLUDES`, with Debian's envvars sourced as apache2ctl
does); a small stdlib-only program sent over SSH lists and reads them in
one round trip. They are written under a directory on this machine at the
host's paths, and the loader reads them there with LoadOptions.root: the
model, its findings and its errors keep the host's paths.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import shutil
import tempfile
from pathlib import Path

from advisor.errors import AdvisorError


def collect_config_tree(config: str, dumps=()) -> dict:
    """Run on the host: every file httpd reads for `config`, base64-encoded
    by path, or what its config test said when it refused. `dumps` are more
    of httpd's -D DUMP_* listings to take in the same run (`dump` holds its
    output then)."""
    import re
    import shutil as shell
    import subprocess
    from base64 import b64encode

    binary = next((name for name in ("apache2", "httpd", "/usr/sbin/apache2", "/usr/sbin/httpd")
                   if shell.which(name)), None)
    if binary is None:
        return {"missing": "no apache2 or httpd binary found"}
    envvars = os.path.join(os.path.dirname(config), "envvars")
    sourced = os.path.basename(config) == "apache2.conf" and os.path.isfile(envvars)
    # A tree only root may read (S515 asks for the main config 0640 root) makes
    # httpd's config test fail on its first line; name the file instead.
    for needed in [config] + ([envvars] if sourced else []):
        if os.path.exists(needed) and not os.access(needed, os.R_OK):
            return {"unreadable": needed, "reason": "Permission denied"}
    script = ('. "$2"; ' if sourced else "") + 'exec "$0" -t -D DUMP_INCLUDES ' \
        + "".join("-D %s " % name for name in dumps) + '-f "$1"'
    done = subprocess.run(["sh", "-c", script, binary, config] + ([envvars] if sourced else []),
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return {"refused": done.stderr + done.stdout}
    paths = re.findall(r"^\s*\((?:\*|\d+)\)\s+(/.*?)\s*$", done.stdout, re.M)
    if sourced:
        paths.append(envvars)
    files = {}
    for path in paths:
        try:
            with open(path, "rb") as handle:
                files[path] = b64encode(handle.read()).decode("ascii")
        except OSError as exc:
            return {"unreadable": path, "reason": exc.strerror}
    answer = {"files": files, "binary": binary}
    if dumps:
        answer["dump"] = done.stdout
    return answer


def collect_httpd_facts(config: str, binary: str, dumped: str | None = None) -> dict:
    """Run on the host, after collect_config_tree: what that host's httpd
    itself says about the config (`-M`, `-v`) and the memory it has (RAM,
    and the cgroup limit of its running parent, or of the ssh session when
    none runs). `dumped`: httpd's -D DUMP_MODULES output, when taken already."""
    import re
    import subprocess

    envvars = os.path.join(os.path.dirname(config), "envvars")
    sourced = os.path.basename(config) == "apache2.conf" and os.path.isfile(envvars)

    def httpd(*switches):
        script = ('. "$2"; ' if sourced else "") + 'exec "$0" ' + " ".join(switches) + ' -f "$1"'
        done = subprocess.run(["sh", "-c", script, binary, config] + ([envvars] if sourced else []),
                              capture_output=True, text=True, timeout=60)
        return done.stdout if done.returncode == 0 else ""

    listing = dumped if dumped is not None else httpd("-M")
    modules = re.findall(r"^\s*([A-Za-z0-9_]+_module)\s*\((?:static|shared)\)", listing, re.M)
    version = re.search(r"Apache/(\d+\.\d+(?:\.\d+)?)", httpd("-v"))
    mpm = next((m[4:-7] for m in modules if m.startswith("mpm_") and m[4:-7] in ("prefork", "worker", "event")),
               None)
    ram = None
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    ram = int(line.split()[1]) * 1024
    except OSError:
        pass
    parent = "self"
    names = ("apache2", "httpd")
    try:
        comms = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open("/proc/%s/stat" % entry) as handle:
                        stat = handle.read()
                    comms[entry] = (stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
        for pid, (comm, ppid) in comms.items():
            if comm in names and comms.get(ppid, ("",))[0] not in names:
                parent = pid
                break
    except OSError:
        pass
    limit = None
    try:
        with open("/proc/%s/cgroup" % parent) as handle:
            for line in handle:
                _hierarchy, controllers, path = line.rstrip("\n").split(":", 2)
                for candidate in ("/sys/fs/cgroup" + path + "/memory.max",
                                  "/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes"):
                    if (controllers == "" or "memory" in controllers.split(",")) and os.path.isfile(candidate):
                        with open(candidate) as limit_file:
                            text = limit_file.read().strip()
                        if text.isdigit() and (ram is None or int(text) < ram):
                            limit = int(text)
    except (OSError, ValueError):
        pass
    return {"modules": modules, "version": version.group(1) if version else None, "mpm": mpm,
            "ram": ram, "memory_limit": limit}


def write_mirror(files: dict[str, bytes], root: Path) -> Path:
    """Put `files` (host path -> content) under `root`, replacing what was
    there only once the new copy is whole."""
    root.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=root.name + ".new.", dir=root.parent))
    try:
        made: set[Path] = set()
        for path, data in files.items():
            local = fresh / path.lstrip("/")
            if local.parent not in made:  # a tree's files share a few directories
                local.parent.mkdir(parents=True, exist_ok=True)
                made.add(local.parent)
            local.write_bytes(data)
        old = root.with_name(root.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if root.exists():
            os.replace(root, old)
        os.replace(fresh, root)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise
    return root


def decode_answer(stdout: str, host: str, config: str) -> tuple[dict[str, bytes], dict]:
    """The program's answer as host path -> bytes, and the facts it holds ({}
    without); AdvisorError with what to do otherwise."""
    from advisor.tuner.staging.httpd_binary import config_test_error

    where = f"{host}:{config}"
    try:
        answer = json.loads(stdout)
    except ValueError:
        raise AdvisorError(f"cannot list the config files on {host}: its python3 gave no answer",
                           file=where, hint="check that python3 runs there for the ssh user") from None
    if "missing" in answer:
        raise AdvisorError(f"cannot list the config files on {host}: {answer['missing']}", file=where,
                           hint="tune reads the tree with the host's own `httpd -t -D DUMP_INCLUDES`; "
                                "install httpd there or put it on the ssh user's PATH")
    if "refused" in answer:
        error = config_test_error(answer["refused"], config)
        error.file = f"{host}:{error.file}" if error.file else where
        if "Permission denied" in answer["refused"]:
            # An included file only root may read: httpd names the Include that failed.
            error.hint = "the ssh user must be able to read the whole config tree: pass --become (sudo)"
        raise error
    if "unreadable" in answer:
        path = answer["unreadable"]
        raise AdvisorError(f"the config tree's file cannot be read there: {answer.get('reason') or 'unreadable'}",
                           file=f"{host}:{path}",
                           hint="the ssh user must be able to read the whole config tree: pass --become "
                                "(sudo) or log in as a user that may read it")
    return {path: base64.b64decode(text) for path, text in answer["files"].items()}, answer.get("facts", {})


@functools.lru_cache(maxsize=2)
def _reading_program(with_facts: bool) -> str:
    """The program read_host_tree sends, built once a process: a fleet sends it
    to every host, and inspect's tokenizing of the functions' source cost a
    good part of the controller's time per host."""
    import inspect

    from advisor.lint.host import collect_live_facts

    shipped = [collect_config_tree] + ([collect_httpd_facts, collect_live_facts] if with_facts else [])
    # With the facts, one httpd run lists the files, the modules and the run-time
    # paths together (each run of httpd is a good part of a small host's answer).
    return ("import json, os, sys\n\n" + "\n\n".join(inspect.getsource(f) for f in shipped)
            + ("\n\nanswer = collect_config_tree(sys.argv[1], ('DUMP_MODULES', 'DUMP_RUN_CFG'))\n"
               "if 'files' in answer:\n    dumped = answer.pop('dump')\n"
               "    answer['facts'] = collect_httpd_facts(sys.argv[1], answer['binary'], dumped)\n"
               "    answer['facts']['live'] = collect_live_facts(sys.argv[1], answer['binary'], "
               "sorted(answer['files']), dumped)\n" if with_facts
               else "\n\nanswer = collect_config_tree(sys.argv[1])\n")
            + "print(json.dumps(answer))\n")


def read_host_tree(conn, config: str, root: Path, with_facts: bool = False,
                   label: str | None = None) -> tuple[dict[str, bytes], dict]:
    """The files the host's httpd reads for `config`, copied under `root` (at
    their host paths), and with `with_facts` what collect_httpd_facts and
    collect_live_facts (advisor/lint/host.py) found there: one program, one round trip over `conn` (an SshConnection).
    Errors name the host by `label` (default: its ssh destination)."""
    program = _reading_program(with_facts)
    # -S: the program needs the standard library alone, and site's start-up is
    # a good part of a small host's answer time.
    result = conn.run(["python3", "-S", "-c", program, config], timeout=90)
    if result.returncode == 127 and not result.stdout:
        raise AdvisorError(f"python3 not found on {label or conn.spec}: the config tree is read with it",
                           hint="install it on the host (apt-get install python3-minimal)")
    files, facts = decode_answer(result.stdout, label or str(conn.spec), config)
    write_mirror(files, root)
    return files, facts
