"""Facts about the host: RAM and the memory of one httpd child process.

Measuring needs psutil, which is imported here only when a measurement is
actually taken: a lint run of a config in a repository never pays for it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

HTTPD_NAMES = ("apache2", "httpd", "httpd-prefork", "httpd-worker", "httpd-event")


def is_system_config(main_file: str) -> bool:
    """A config under /etc is taken as this host's own: its RAM applies."""
    real = os.path.realpath(main_file)
    return real.startswith("/etc/")


@dataclass
class Measured:
    ram: int | None = None
    worker_memory: int | None = None
    workers_seen: int = 0


def measure_ram(main_file: str | None = None):
    """The RAM httpd may use, as an advisor.config.host_limits.Limit: the
    least of the machine's memory and the cgroup limit of the running httpd's
    parent (of this tool when none serves `main_file`); None if unmeasurable."""
    import psutil

    from advisor.config.host_limits import effective_memory

    try:
        total = int(psutil.virtual_memory().total)
    except (OSError, RuntimeError):
        return None
    pid = httpd_master(main_file) if main_file else None
    if pid is not None:
        return effective_memory(total, pid, f"httpd's parent (PID {pid})")
    return effective_memory(total, os.getpid(), f"this tool (PID {os.getpid()}; no running httpd serves the config)")


def httpd_master(main_file: str) -> int | None:
    """PID of the parent of the running httpd that serves `main_file`, or None."""
    import psutil

    processes = [p for p in psutil.process_iter(["name", "ppid", "pid", "cmdline"])
                 if (p.info.get("name") or "") in HTTPD_NAMES]
    pids = {p.info["pid"] for p in processes}
    masters = sorted(p.info["pid"] for p in processes
                     if p.info["ppid"] not in pids and _serves(p.info.get("cmdline") or [], main_file))
    return masters[0] if masters else None


DEFAULT_MAIN_FILES = ("/etc/apache2/apache2.conf", "/etc/httpd/conf/httpd.conf")


def _serves(cmdline: list[str], main_file: str) -> bool:
    """Whether an httpd started with `cmdline` reads `main_file`."""
    wanted = os.path.realpath(main_file)
    for position, word in enumerate(cmdline):
        if word == "-f" and position + 1 < len(cmdline):
            return os.path.realpath(cmdline[position + 1]) == wanted
        if word.startswith("-f") and len(word) > 2:
            return os.path.realpath(word[2:]) == wanted
    return wanted in {os.path.realpath(path) for path in DEFAULT_MAIN_FILES}


def measure_worker_memory(main_file: str) -> tuple[int | None, int]:
    """Mean private (unshared) memory of the children of the running httpd
    that serves `main_file`, and how many were measured. Like apache2buddy:
    children share code and pre-fork memory with their parent, so only what
    each one owns alone counts per worker. Other httpd instances on the host
    are left out: their modules and load are not this config's."""
    import psutil

    processes = []
    for process in psutil.process_iter(["name", "ppid", "pid", "cmdline"]):
        if (process.info.get("name") or "") in HTTPD_NAMES:
            processes.append(process)
    pids = {p.info["pid"] for p in processes}
    masters = {p.info["pid"] for p in processes
               if p.info["ppid"] not in pids and _serves(p.info.get("cmdline") or [], main_file)}
    sizes: list[int] = []
    for process in processes:
        if process.info["ppid"] not in masters:
            continue
        try:
            info = process.memory_full_info()
        except (psutil.AccessDenied, psutil.NoSuchProcess, OSError):
            continue
        private = getattr(info, "uss", None)
        if private is None:
            private = max(0, info.rss - getattr(info, "shared", 0))
        sizes.append(int(private))
    if not sizes:
        return None, 0
    return sum(sizes) // len(sizes), len(sizes)


def collect_live_facts(config: str, binary: str, files: list[str], dumped: str | None = None) -> dict:
    """What only the running host shows, for the live-host rules (S513-S518):
    its httpd processes (who runs as root), the owner, group and mode of the
    config files read and of the paths the server writes or serves, and the
    server account's shell and lock state. Stdlib only and self-contained:
    `lint --host` runs it on the host (shipped by tuner/staging/mirror.py),
    `lint --live` here. Paths come from httpd itself (`-t -D DUMP_RUN_CFG`)
    and, for what that does not print, from the lines of the files read.
    `dumped`: that listing, when the caller's httpd run took it already."""
    import re
    import stat as stat_module
    import subprocess

    envvars = os.path.join(os.path.dirname(config), "envvars")
    sourced = os.path.basename(config) == "apache2.conf" and os.path.isfile(envvars)
    prefix = '. "$2"; ' if sourced else ""
    if dumped is None:
        done = subprocess.run(["sh", "-c", prefix + 'exec "$0" -t -D DUMP_RUN_CFG -f "$1"', binary, config]
                              + ([envvars] if sourced else []), capture_output=True, text=True, timeout=60)
        dumped = done.stdout if done.returncode == 0 else ""
    environ = {}

    def variables():
        """The environment httpd gets (envvars sourced): read once, when a value needs it."""
        if not environ:
            environ.update(os.environ)
            if sourced:
                shown = subprocess.run(["sh", "-c", '. "$0"; env', envvars], capture_output=True, text=True,
                                       timeout=30)
                for line in shown.stdout.splitlines():
                    name, sep, value = line.partition("=")
                    if sep:
                        environ[name] = value
        return environ

    def quoted(pattern):
        found = re.search(pattern, dumped, re.M)
        return found.group(1) if found else None

    server_root = quoted(r'^ServerRoot: "(.*)"') or os.path.dirname(config)
    run = {"ServerRoot": server_root, "config": config}
    run["User"] = quoted(r'^User: name="([^"]*)"')
    run["Group"] = quoted(r'^Group: name="([^"]*)"')
    uid, gid = quoted(r'^User: name="[^"]*" id=(\d+)'), quoted(r'^Group: name="[^"]*" id=(\d+)')
    run["uid"] = int(uid) if uid else None
    run["gid"] = int(gid) if gid else None
    run["PidFile"] = quoted(r'^PidFile: "(.*)"')
    run["Mutex"] = sorted(set(os.path.normpath(d) for d in re.findall(r'^Mutex .*dir="([^"]*)"', dumped, re.M)))

    def expand(value):
        value = value.strip().strip('"').strip("'")
        if "${" in value:
            value = re.sub(r"\$\{(\w+)\}", lambda m: variables().get(m.group(1), ""), value)
        return value if value.startswith("/") else os.path.normpath(os.path.join(server_root, value))

    roots = []
    main_root = quoted(r'^Main DocumentRoot: "(.*)"')
    if main_root:
        roots.append(main_root)
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        for name, value in re.findall(r"^\s*(DocumentRoot|ScoreBoardFile|CoreDumpDirectory)\s+(\S.*?)\s*$",
                                      text, re.M | re.I):
            key = {"documentroot": "DocumentRoot", "scoreboardfile": "ScoreBoardFile",
                   "coredumpdirectory": "CoreDumpDirectory"}[name.lower()]
            if key == "DocumentRoot":
                roots.append(expand(value))
            else:
                run[key] = expand(value)
    run["DocumentRoot"] = sorted(set(os.path.normpath(root) for root in roots))

    wanted = set(files) | {server_root, os.path.dirname(config)} | set(run["DocumentRoot"]) | set(run["Mutex"])
    for key in ("PidFile", "ScoreBoardFile"):
        if run.get(key):
            wanted |= {run[key], os.path.dirname(run[key])}
    if run.get("CoreDumpDirectory"):
        wanted.add(run["CoreDumpDirectory"])
    stats = {}
    for path in sorted(wanted):
        try:
            info = os.stat(path)
        except OSError:
            continue
        stats[path] = [info.st_uid, info.st_gid, stat_module.S_IMODE(info.st_mode), stat_module.S_ISDIR(info.st_mode)]

    names = ("apache2", "httpd")
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as handle:
                line = handle.read()
            with open("/proc/%s/status" % entry) as handle:
                status = handle.read()
        except OSError:
            continue
        comm = line[line.index("(") + 1:line.rindex(")")]
        ppid = line[line.rindex(")") + 2:].split()[1]
        real_uid = re.search(r"^Uid:\s+(\d+)", status, re.M)
        table[entry] = (comm, ppid, int(real_uid.group(1)) if real_uid else None)
    parents = [pid for pid, (comm, ppid, _uid) in table.items() if comm in names and table.get(ppid, ("",))[0] not in names]
    children = [(comm, uid) for pid, (comm, ppid, uid) in table.items() if comm in names and ppid in parents]
    # Only what the rules judge: how many children a host runs changes with its
    # load, and would keep hosts with identical trees from being one group.
    processes = {"parents_as_root": sum(1 for p in parents if table[p][2] == 0),
                 "children_as_root": sum(1 for _c, uid in children if uid == 0)}

    account = {"name": run["User"], "shell": None, "locked": None}
    if run["User"]:
        try:
            with open("/etc/passwd") as handle:
                for line in handle:
                    fields = line.rstrip("\n").split(":")
                    if len(fields) >= 7 and fields[0] == run["User"]:
                        account["shell"] = fields[6]
        except OSError:
            pass
        try:
            with open("/etc/shadow") as handle:
                for line in handle:
                    fields = line.split(":")
                    if len(fields) >= 2 and fields[0] == run["User"]:
                        account["locked"] = fields[1].startswith(("!", "*")) or fields[1] == ""
        except OSError:
            pass  # only root reads it: the lock state stays unknown
    return {"run": run, "files": sorted(files), "stats": stats, "processes": processes, "account": account}
