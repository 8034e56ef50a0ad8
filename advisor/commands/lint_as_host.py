"""`lint --host H --as PATH CANDIDATE`: a local candidate judged in a host's tree.

Each host's tree is read as `lint --host` reads it (advisor/commands/fleet.py,
one program over SSH, a local copy at the host's paths). The candidate is
overlaid on that copy for the lint, as `lint --as` overlays it on a local
tree. httpd's judgement has to be the host's own: its binary, its modules,
its paths. So one more program goes over the same kind of connection (under
the same sudo, with `--become`), with the candidate on its stdin: it copies
the tree into a private directory (mkdtemp, 0700), puts the candidate in
PATH's place there, points the copy's ServerRoot and Include lines at the
copy (as `fix --write`'s check does, advisor/fix/check.py), runs `apache2 -t`
on it, and removes the directory whatever happens, a signal included. The
host's own files are only read.
"""

from __future__ import annotations

import base64
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from advisor.errors import AdvisorError, UsageError


def check_on_host(request: dict) -> dict:
    """Run on the host (stdlib only): httpd's config test of the tree with
    the candidate in PATH's place, on a copy in a private directory. The
    answer: the tree's paths the host resolves to PATH (`aliases`), httpd's
    exit status and output with the copy's paths turned back into the
    tree's, and when it refused, its status on the copy without the
    candidate (`status_as_is`); or `error` when no copy could be made."""
    import re
    import shutil
    import signal
    import subprocess
    import tempfile

    def leave(signum, frame):
        raise SystemExit(128 + signum)

    # ssh hangs up or the controller is killed: the directory still goes.
    for stop in stop_signals():
        signal.signal(stop, leave)
    binary = next((name for name in ("apache2", "httpd", "/usr/sbin/apache2", "/usr/sbin/httpd")
                   if shutil.which(name)), None)
    if binary is None:
        return {"error": "no apache2 or httpd binary found to test the tree with"}
    main, server_root, files, target = (request["main"], request["server_root"], request["files"],
                                        request["target"])
    wanted = os.path.realpath(target)
    aliases = sorted(set(path for path in files if path != target and os.path.realpath(path) == wanted))
    answer = {"aliases": aliases, "binary": os.path.basename(binary)}
    every = list(files) + [main]
    root = server_root if all(inside(path, server_root) for path in every) \
        else os.path.commonpath([os.path.dirname(path) for path in every])
    replaced = [target] + aliases
    if not any(inside(path, root) or inside(os.path.realpath(path), root) for path in replaced):
        answer["outside"] = root
        return answer
    if root == "/" or sum(len(names) for _, _, names in os.walk(root)) > 20000:
        return {"error": "the tree under %s is too large to copy for httpd's test" % root}
    candidate = base64.b64decode(request["candidate"])
    scratch = tempfile.mkdtemp(prefix="apache-advisor-validate-")
    try:
        tree = (binary, root, main, server_root, files, replaced)
        answer["status"], answer["output"] = config_test_on_copy(tree, os.path.join(scratch, "tree1"), candidate)
        # A complaint about another file: does httpd refuse the tree as it is too?
        named = re.findall(r"Syntax error on line \d+ of ([^:\n]+):", answer["output"])
        if answer["status"] != 0 and not (named and named[-1] in replaced):
            answer["status_as_is"] = config_test_on_copy(tree, os.path.join(scratch, "tree2"), None)[0]
        return answer
    except (OSError, shutil.Error, subprocess.SubprocessError) as exc:
        return {"error": "cannot test a copy of %s there: %s" % (root, exc)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def inside(path: str, root: str) -> bool:
    """Run on the host: whether `path` is `root` or below it."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def config_test_on_copy(tree: tuple, copy: str, candidate: bytes | None) -> tuple[int, str]:
    """Run on the host: httpd's -t on a fresh copy of the tree at `copy`,
    with `candidate` (None: the tree as it is) in place of the replaced
    paths; its status and complaint, at the tree's paths."""
    import shutil

    binary, root, main, server_root, files, replaced = tree
    shutil.copytree(root, copy, symlinks=True, ignore_dangling_symlinks=True)
    old, new = root.encode(), copy.encode()
    for path in dict.fromkeys(files + replaced):
        base = path if inside(path, root) else os.path.realpath(path)
        if not inside(base, root):
            continue  # read where it is, outside the tree
        here = os.path.join(copy, os.path.relpath(base, root))
        ours = candidate is not None and path in replaced
        if ours:
            data = candidate
        else:
            try:
                with open(here, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
        lines = data.split(b"\n")
        for position, line in enumerate(lines):
            head = line.lstrip().split(None, 1)
            if old in line and head and head[0].lower() in (b"serverroot", b"include", b"includeoptional"):
                lines[position] = line.replace(old, new)
        fixed = b"\n".join(lines)
        if ours or fixed != data:
            # Never through a link that leads out of the copy: that is the host's file.
            real = os.path.realpath(here)
            if not inside(real, os.path.realpath(copy)):
                if os.path.lexists(here):
                    os.unlink(here)
                real = here
            os.makedirs(os.path.dirname(real), exist_ok=True)
            with open(real, "wb") as handle:
                handle.write(fixed)
    copy_main = os.path.normpath(os.path.join(copy, os.path.relpath(main, root)))
    copy_root = os.path.normpath(os.path.join(copy, os.path.relpath(server_root, root))) if inside(server_root, root) \
        else server_root
    status, output = run_ending_with_us([binary, "-t", "-d", copy_root, "-f", copy_main], cwd=copy,
                                        env=copy_environment(main, copy_main, os.path.dirname(copy)))
    return status, output.replace(copy, root.rstrip("/") or "/")


def stop_signals() -> list:
    """Run on the host: the signals that end the program (ssh's hang-up, a kill, ^C, a closed pipe)."""
    import signal

    return [signal.SIGHUP, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE]


def run_ending_with_us(args: list, cwd: str, env: dict) -> tuple[int, str]:
    """Run on the host: a command's status and complaint (stderr, else
    stdout), the command killed and reaped if this program is stopped at
    any moment, even while the command is being started."""
    import signal
    import subprocess

    stops = stop_signals()
    # A stop that lands before Popen returns would leave the child orphaned
    # (no handle to kill it by): hold stops until the handle exists. The
    # child starts with them unblocked, as httpd expects.
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        process = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_UNBLOCK, stops))
    except BaseException:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
        raise
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
        stdout, stderr = process.communicate(timeout=60)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process.returncode, (stderr or stdout).decode("utf-8", "surrogateescape")


def copy_environment(main: str, copy_main: str, scratch: str) -> dict:
    """Run on the host: the environment httpd's test runs in, with Debian's
    envvars (the copy's) sourced as apache2ctl does for apache2.conf."""
    import subprocess

    envvars = os.path.join(os.path.dirname(copy_main), "envvars")
    if os.path.basename(main) != "apache2.conf" or not os.path.isfile(envvars):
        return dict(os.environ)
    sourced = subprocess.run(["sh", "-c", '. "$0" >/dev/null 2>&1; exec env -0', envvars],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30)
    env = dict(item.split("=", 1) for item in sourced.stdout.decode("utf-8", "surrogateescape").split("\0")
               if "=" in item)
    # apache2ctl makes these before httpd starts: a host where httpd never
    # ran lacks them without the tree being wrong.
    for name, default in (("APACHE_RUN_DIR", "/var/run/apache2"), ("APACHE_LOCK_DIR", "/var/lock/apache2")):
        if not os.path.isdir(env.get(name) or default):
            env[name] = os.path.join(scratch, name.lower())
            os.makedirs(env[name], exist_ok=True)
    return env


SHIPPED = (check_on_host, inside, config_test_on_copy, copy_environment, stop_signals, run_ending_with_us)
"""The functions the program sent to each host is made of."""


@dataclass
class HostCheck:
    """What the host's httpd said of the candidate in its tree."""

    host: Any  # fleet.FleetHost
    answer: dict | None = None
    error: str | None = None


def ask_host(host, ssh_options: list[str], request: dict) -> HostCheck:
    """check_on_host run on `host` over its own connection (under sudo with
    its become user), the request on stdin."""
    import inspect

    from advisor.tuner.transport.ssh import SshConnection

    program = ("from __future__ import annotations\nimport base64, json, os, sys\n\n" + "\n\n".join(inspect.getsource(f) for f in SHIPPED)
               + "\n\nprint(json.dumps(check_on_host(json.load(sys.stdin))))\n")
    conn = None
    try:
        conn = SshConnection(host.spec, options=list(ssh_options), identity=host.identity, become=host.become)
        conn.connect(probe=False)
        result = conn.run(["python3", "-S", "-c", program], input=json.dumps(request), timeout=150)
        try:
            answer = json.loads(result.stdout)
        except ValueError:
            return HostCheck(host, error=f"{host.name}: httpd's test of the candidate gave no answer there "
                                         f"({result.stderr.strip().splitlines()[-1:] or ['no output']})")
        if "error" in answer:
            return HostCheck(host, error=f"{host.name}: {answer['error']}")
        return HostCheck(host, answer)
    except AdvisorError as error:
        return HostCheck(host, error=f"{host.name}: {error.render()}")
    except OSError as error:
        return HostCheck(host, error=f"{host.name}: {error.strerror or error}")
    finally:
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - closing must not hide the answer
                pass


def httpd_verdict(answer: dict, overlay, host_config: str) -> UsageError | None:
    """The host's httpd's refusal as one line (lint_as.refused_error), or
    None when it accepted the tree with the candidate."""
    from advisor.commands.lint_as import refused_error
    from advisor.tuner.staging.httpd_binary import config_test_error

    if "outside" in answer:
        return UsageError(f"{overlay.target} lies outside {answer['outside']}, so a copy cannot show httpd "
                          "the candidate", hint="name a file under the tree's ServerRoot")
    if answer["status"] == 0:
        return None
    complaint = config_test_error(answer["output"], host_config)
    return refused_error(answer["binary"], (complaint.file, complaint.line, complaint.message), overlay,
                         lambda: answer.get("status_as_is", 1) != 0)


def lint_fleet_as(hosts: list, options, ssh_options: list[str], jobs: int, setup, facts_of,
                  progress: bool | None = None):
    """fleet.lint_fleet for `--as`: every host read, the candidate tested by
    its httpd, each distinct tree linted with the candidate and as it is;
    exit code 2 when no host was linted, 1 when one failed or the candidate
    brings a finding at --fail-on, else 0."""
    import sys
    import tempfile
    from pathlib import Path

    from advisor.commands import fleet
    from advisor.lint.rule import SEVERITY_RANK, max_severity

    if not hosts:
        raise UsageError("no host to lint", hint="name one with --host or --inventory")
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    target, candidate = options.as_candidate
    with open(candidate, "rb") as handle:
        encoded = base64.b64encode(handle.read()).decode("ascii")
    if progress is None:
        progress = sys.stderr.isatty()
    linted: list = []
    with tempfile.TemporaryDirectory(prefix="apache-advisor-fleet-") as work:
        reads = fleet.read_hosts(hosts, ssh_options, jobs, Path(work), progress)
        groups, failed = fleet.group_reads(reads)
        trees = [TreeAsIs.read(group, options) for group in groups]
        asked = [(tree, host) for tree in trees if tree.config is not None for host in tree.group.hosts]
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            checks = list(pool.map(lambda pair: ask_host(pair[1], ssh_options, pair[0].request(target, encoded)),
                                   asked))
        for tree in trees:
            if tree.config is None:
                failed += [fleet.HostRead(host, error=tree.error if host is tree.group.hosts[0] else
                                          f"{host.name}: same tree as {tree.group.hosts[0].name}, which failed")
                           for host in tree.group.hosts]
                continue
            mine = [check for (owner, _), check in zip(asked, checks) if owner is tree]
            failed += [fleet.HostRead(check.host, error=check.error) for check in mine if check.error]
            for group in tree.lint_with_candidate([check for check in mine if not check.error], options,
                                                  setup, facts_of):
                (failed.append(fleet.HostRead(group.hosts[0], error=group.error)) if group.error
                 else linted.append(group))
    worst = max_severity(f for group in linted for f in group.findings)
    findings_fail = (setup.fail_on != "never" and worst is not None
                     and SEVERITY_RANK[worst] >= SEVERITY_RANK[setup.fail_on])
    code = 2 if not linted else 1 if failed or findings_fail else 0
    return fleet.FleetRun(linted, failed, code)


@dataclass
class TreeAsIs:
    """One distinct tree of the fleet as its hosts have it now: read from
    the local copy, before the candidate."""

    group: Any  # fleet.HostGroup
    load: Any = None  # LoadOptions
    config: Any = None
    error: str | None = None

    @classmethod
    def read(cls, group, options) -> "TreeAsIs":
        from advisor.commands.options import parse_defines
        from advisor.config.load_options import LoadOptions
        from advisor.config.loader import load_config

        facts = group.read.facts
        load = LoadOptions(defines=parse_defines(options.defines), modules=set(facts.get("modules") or [])
                           | set(options.modules), modules_from=options.modules_from, mpm=options.mpm,
                           apache_version=options.apache_version or facts.get("version") or "2.4",
                           allow_missing_includes=options.allow_missing_includes, root=str(group.read.root),
                           environ={}, effective=True)
        tree = cls(group, load)
        try:
            tree.config = load_config(group.read.host.config, load)
        except AdvisorError as error:
            tree.error = f"{group.hosts[0].name}: {error.render()}"
        return tree

    def request(self, target: str, encoded: str) -> dict:
        return {"main": self.config.main_file, "server_root": self.config.server_root,
                "files": list(self.config.files), "target": target, "candidate": encoded}

    def lint_with_candidate(self, checks: list[HostCheck], options, setup, facts_of) -> list:
        """A HostGroup for each set of hosts that resolve PATH alike and whose
        httpd accepted the candidate (linted once), and one with `error` for
        each host whose httpd or our reader refused it."""
        from advisor.commands import fleet
        from advisor.commands.lint_as import load_with_candidate

        by_aliases: dict[tuple, list[HostCheck]] = {}
        for check in checks:
            by_aliases.setdefault(tuple(check.answer["aliases"]), []).append(check)
        groups = []
        for aliases, alike in by_aliases.items():
            notes: list[str] = []
            try:
                config, overlay = load_with_candidate(self.config.main_file, self.load, options.as_candidate,
                                                      notes, aliases)
            except AdvisorError as error:
                groups += [fleet.HostGroup([check.host], self.group.read, error=f"{check.host.name}: {error.render()}")
                           for check in alike]
                continue
            accepted = []
            for check in alike:
                refused = httpd_verdict(check.answer, overlay, self.config.main_file)
                if refused is None:
                    accepted.append(check.host)
                else:
                    groups.append(fleet.HostGroup([check.host], self.group.read,
                                                  error=f"{check.host.name}: {refused.render()}"))
            if accepted:
                group = fleet.HostGroup(accepted, self.group.read, notes=notes)
                self.lint_group(group, config, overlay, options, setup, facts_of)
                groups.append(group)
        return groups

    def lint_group(self, group, config, overlay, options, setup, facts_of) -> None:
        """The group's tree linted with the candidate, and kept: what the
        candidate brings (its lint as it is tells the tree's own findings)."""
        from advisor.commands import fleet
        from advisor.commands.lint_as import brought_by_candidate, show_at_candidate
        from advisor.lint.engine import lint_config

        name = group.hosts[0].name
        found = []
        for tree in (config, self.config):
            notes: list[str] = []
            facts = fleet.host_facts_read(tree, group.read.facts, name, options, setup, facts_of, notes)
            found.append(lint_config(tree, facts, setup.enabled, known_codes=setup.known_codes,
                                     settings=setup.file_settings, edits=False))
            if tree is config:
                group.notes = list(dict.fromkeys(group.notes + notes + list(found[0].notes)))
        result, as_is = found
        show_at_candidate(result.findings, result.files, overlay)
        read_order = {path: position for position, path in enumerate(dict.fromkeys(result.files))}
        kept = brought_by_candidate(result.findings, group.notes, overlay.candidate, lambda: as_is.findings)
        group.findings = sorted(kept, key=lambda f: (read_order.get(f.file, len(read_order)), f.file, f.line,
                                                     f.code))
        for finding in group.findings:
            finding.host = name
        group.files = list(dict.fromkeys(result.files))


