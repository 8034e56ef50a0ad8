#!/usr/bin/env python3
"""Fleet lint cost: N hosts (network namespaces, an sshd and a tree of its own
each, tests/fleet_topology.py) linted with `lint --host ... --jobs J`, the
controller's CPU per host and the wall time against the CPU bound.

    sudo python bench/fleet_lint.py [--hosts 50] [--jobs 8] [--runs 3] [--singles] [--breakdown]
                                    [--profile FILE] [--ssh-option OPTION]...

Every host's tree differs by one comment line, so none is grouped with
another: every host is read and linted. Each host is a plain Debian host:
root's home there is empty, so the bash sshd runs does not source this
machine's ~/.bashrc (pyenv's init, 0.1 s a command, and pyenv's python3).

Two cgroups count CPU time exactly, exited and daemonised processes
included: the controller's (the lint process and its ssh clients) and the
hosts' (every sshd, with the sessions, python3 and httpd runs it starts).
Here both sides share the same cores, so the least wall time the run can
take is the CPU bound: (hosts' CPU + controller's CPU) / cores. Each run
prints its wall time; the controller's CPU split into the lint process (read
as it leaves) and its ssh clients, and the lint process's into the hosts'
readings, the trees' lints and the rest (each by its thread's CPU clock);
the hosts' CPU; the bound and wall / bound; and the CPU other processes of
the machine used meanwhile (from /proc/stat), with a second ratio that
counts it in the bound: on a shared machine the first ratio measures the
others. The summary is the median of --runs, the hosts built once. Issue
59's goals: the controller's CPU at most 0.15 s a host, wall / bound at
most 1.3 (50 hosts, --jobs 8).

--breakdown also runs one bare `ssh HOST true` a host: what a connection
alone costs the ssh client and the host. --ssh-option is passed to lint
(e.g. KexAlgorithms=curve25519-sha256). --singles also times each host
linted alone (median of --runs) and prints the fleet run against the
slowest (issue 32's ratio). --profile FILE runs one more fleet lint under
cProfile and writes its stats to FILE (`python -m pstats FILE`).

Needs root, iproute2, openssh-server and Debian's apache2, like the netns
tests. Everything it builds is removed at the end, also after a failure.
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import fleet_topology  # noqa: E402


@dataclass
class Run:
    wall: float
    controller: float
    hosts: float
    others: float
    """CPU seconds the rest of the machine used during the run."""
    process: float = float("nan")
    """The lint process's own CPU seconds (its threads; not its ssh clients)."""
    reading: float = float("nan")
    """Of `process`: the hosts' readings (starting ssh, decoding, writing the copies)."""
    linting: float = float("nan")
    """Of `process`: the trees' lints (reading the copy, the rules)."""

    def bound(self, cores: int) -> float:
        return (self.hosts + self.controller) / cores

    def shared_bound(self, cores: int) -> float:
        """The bound with the other processes' CPU in it: what a shared machine left."""
        return (self.hosts + self.controller + self.others) / cores


def _machine_busy_s() -> float:
    """CPU seconds every core has spent busy since boot (all but idle and iowait)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(value) for value in fields[:8]]
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / os.sysconf("SC_CLK_TCK")


def lint(topo, nodes, jobs: int, timeout: float, controller: fleet_topology.CpuGroup,
         profile: Path | None = None, ssh_options: tuple[str, ...] = ()) -> Run:
    """One `lint --host` of `nodes`, run in the `controller` group: its wall
    time and the CPU each side used."""
    own = Path(tempfile.mkstemp(prefix="fleet-bench-self-")[1])
    argv = [sys.executable] + (["-c", _PROFILED, str(profile)] if profile is not None else ["-c", _MEASURED, str(own)])
    argv += ["lint", "--isolated", "--fail-on", "never", "--format", "json",
             "--identity", str(topo.user_key), "--jobs", str(jobs)]
    for option in [*ssh_options, *topo.ssh_options()]:
        argv += ["--ssh-option", option]
    for node in nodes:
        argv += ["--host", f"root@{node.addr}"]
    before = (controller.usage_s(), topo.cpu_group.usage_s(), _machine_busy_s())
    started = time.perf_counter()
    result = subprocess.run(fleet_topology._in_group(controller) + argv, capture_output=True, text=True,
                            timeout=timeout, cwd=REPO)
    elapsed = time.perf_counter() - started
    # The ControlMaster processes outlive the lint by the moment `-O exit` takes.
    deadline = time.monotonic() + 5
    while controller.pids() and time.monotonic() < deadline:
        time.sleep(0.02)
    if result.returncode != 0:
        raise SystemExit(f"lint of {len(nodes)} host(s) exited {result.returncode}: {result.stderr.strip()[-500:]}")
    used_controller = controller.usage_s() - before[0]
    used_hosts = topo.cpu_group.usage_s() - before[1]
    others = _machine_busy_s() - before[2] - used_controller - used_hosts
    written = own.read_text()  # empty under --profile
    process, reading, linting = ast.literal_eval(written) if written else (float("nan"),) * 3
    own.unlink()
    return Run(elapsed, used_controller, used_hosts, max(0.0, others), process, reading, linting)


# The lint process's own CPU, read as it leaves (by os._exit, past atexit):
# the controller's CPU less this is its ssh clients'. Each host's reading
# (the ssh client started and waited for, the answer decoded, the copy
# written) and each tree's lint are timed by the CPU clock of their thread.
_MEASURED = """
import resource, sys, time
import advisor.cli as cli
from advisor.commands import fleet
out = sys.argv.pop(1)
sys.argv[0] = 'apache-advisor'
steps = {'read': 0.0, 'lint': 0.0}
def timed(name, step):
    def run(*args, **kwargs):
        started = time.thread_time()
        try:
            return step(*args, **kwargs)
        finally:
            steps[name] += time.thread_time() - started
    return run
fleet._read_host = timed('read', fleet._read_host)
fleet._lint_group = timed('lint', fleet._lint_group)
leave = cli._exit_now
def measured(code):
    used = resource.getrusage(resource.RUSAGE_SELF)
    with open(out, 'w') as handle:
        handle.write(repr((used.ru_utime + used.ru_stime, steps['read'], steps['lint'])))
    leave(code)
cli._exit_now = measured
cli.main()
"""

# cProfile sees only the thread it runs in, and lint leaves with os._exit:
# each host's reading (a thread of the pool) gets a profiler of its own, and
# all are added up and written when the command returns.
_PROFILED = """
import cProfile, pstats, sys
from advisor.commands import fleet
out = sys.argv.pop(1)
sys.argv[0] = 'apache-advisor'
import time
profiles = [cProfile.Profile(time.process_time)]
reader = fleet._read_host
def profiled(*args, **kwargs):
    profile = cProfile.Profile(time.process_time)
    profiles.append(profile)
    return profile.runcall(reader, *args, **kwargs)
fleet._read_host = profiled
from advisor.cli import app
try:
    profiles[0].runcall(app)
except SystemExit:
    pass
stats = pstats.Stats(profiles[0])
for profile in profiles[1:]:
    stats.add(profile)
stats.dump_stats(out)
"""


def breakdown(topo, controller: fleet_topology.CpuGroup, ssh_options: tuple[str, ...], runs: list[Run]) -> None:
    """One `ssh HOST true` a host, one at a time, as lint's ssh would run it:
    the ssh client's CPU and the host's (sshd, the login shell) for a bare
    connection; the rest of the hosts' CPU in a lint is the reading program
    with its httpd runs. (The controller's side splits in every run already.)"""
    hosts = len(topo.nodes)
    before = (controller.usage_s(), topo.cpu_group.usage_s())
    for node in topo.nodes:
        argv = ["ssh", "-o", "BatchMode=yes"] + [part for option in [*ssh_options, *topo.ssh_options()]
                                                 for part in ("-o", option)]
        argv += ["-o", "ControlMaster=no", "-i", str(topo.user_key), "-o", "IdentitiesOnly=yes",
                 "--", f"root@{node.addr}", "true"]
        subprocess.run(fleet_topology._in_group(controller) + argv, check=True, capture_output=True, timeout=60)
    client = (controller.usage_s() - before[0]) / hosts
    session = (topo.cpu_group.usage_s() - before[1]) / hosts
    lint_hosts = _median(runs, "hosts") / hosts
    print(f"a bare ssh connection (ssh HOST true, {hosts} hosts one at a time): ssh client {client:.3f} s, "
          f"the host's sshd and shell {session:.3f} s; so of the hosts' {lint_hosts:.3f} s a host in the "
          f"fleet lint, about {session:.3f} s is the connection and {lint_hosts - session:.3f} s the reading "
          f"program with its httpd runs")


def _median(runs: list[Run], attribute: str) -> float:
    return statistics.median(getattr(run, attribute) for run in runs)


def report(runs: list[Run], hosts: int, jobs: int, cores: int) -> None:
    for number, run in enumerate(runs, start=1):
        bound = run.bound(cores)
        print(f"run {number}: wall {run.wall:.2f} s; controller CPU {run.controller:.2f} s "
              f"({run.controller / hosts:.3f} s a host: the lint process {run.process / hosts:.3f} s, "
              f"its ssh clients {(run.controller - run.process) / hosts:.3f} s); hosts' CPU {run.hosts:.2f} s "
              f"({run.hosts / hosts:.3f} s a host); bound {bound:.2f} s; wall / bound {run.wall / bound:.2f}; "
              f"other processes' CPU meanwhile {run.others:.2f} s "
              f"(wall / bound with it {run.wall / run.shared_bound(cores):.2f})")
    wall, controller, hosts_cpu = _median(runs, "wall"), _median(runs, "controller"), _median(runs, "hosts")
    ratio = statistics.median(run.wall / run.bound(cores) for run in runs)
    print(f"{hosts} hosts at --jobs {jobs}, median of {len(runs)}: wall {wall:.2f} s; "
          f"controller CPU {controller / hosts:.3f} s a host (goal <= 0.15; the lint process "
          f"{_median(runs, 'process') / hosts:.3f} s, ssh {statistics.median(r.controller - r.process for r in runs) / hosts:.3f} s); "
          f"of the lint process a host: reading {_median(runs, 'reading') / hosts:.4f} s, linting "
          f"{_median(runs, 'linting') / hosts:.4f} s, the rest (start-up, the report) "
          f"{statistics.median(r.process - r.reading - r.linting for r in runs) / hosts:.4f} s; "
          f"hosts' CPU {hosts_cpu / hosts:.3f} s a host; wall / bound {ratio:.2f} (goal <= 1.3); "
          f"other processes' CPU {_median(runs, 'others'):.2f} s "
          f"(wall / bound with it {statistics.median(run.wall / run.shared_bound(cores) for run in runs):.2f}); "
          f"cores {cores}; "
          f"load average {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--singles", action="store_true", help="also time each host alone (issue 32's ratio)")
    parser.add_argument("--profile", type=Path, help="one more fleet lint under cProfile, its stats written here")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time one bare ssh command a host: what the connection alone costs each side")
    parser.add_argument("--ssh-option", action="append", default=[], metavar="OPTION",
                        help="passed to lint's --ssh-option, e.g. KexAlgorithms=curve25519-sha256")
    args = parser.parse_args()
    if not 1 <= args.hosts <= 200 or not 1 <= args.runs <= 20:
        raise SystemExit("--hosts 1..200 and --runs 1..20")
    cores = os.cpu_count() or 1
    print(f"load average before: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    tag = f"apache-advisor-fleet-bench-{os.getpid()}"
    hosts_group = fleet_topology.CpuGroup.create(tag + "-hosts")
    controller = fleet_topology.CpuGroup.create(tag + "-controller")
    topo = None
    try:
        with tempfile.TemporaryDirectory(prefix="fleet-bench-") as temporary:
            work = Path(temporary)
            run = work / "run"
            run.mkdir()
            trees = []
            for index in range(1, args.hosts + 1):
                tree = fleet_topology.debian_tree(work / f"tree-{index}", run)
                (tree / "conf-enabled" / "host.conf").write_text(f"# host {index}\nServerTokens Prod\n")
                trees.append((f"h{index}", tree, fleet_topology.plain_root_home(work)))
            built = time.perf_counter()
            topo = fleet_topology.build(work / "net", trees, cpu_group=hosts_group)
            print(f"built {args.hosts} hosts in {time.perf_counter() - built:.1f} s "
                  f"(CPU counted in {hosts_group.path} and {controller.path})")
            options = tuple(args.ssh_option)
            lint(topo, topo.nodes[:1], 1, 120, controller, ssh_options=options)  # warm the page cache, untimed
            runs = [lint(topo, topo.nodes, args.jobs, 600, controller, ssh_options=options) for _ in range(args.runs)]
            report(runs, args.hosts, args.jobs, cores)
            if args.breakdown:
                breakdown(topo, controller, tuple(args.ssh_option), runs)
            if args.singles:
                singles = sorted((statistics.median(lint(topo, [node], 1, 120, controller, ssh_options=options).wall
                                                    for _ in range(args.runs)), node.name) for node in topo.nodes)
                slowest, name = singles[-1]
                print(f"single host (median of {args.runs}): fastest {singles[0][0]:.2f} s, "
                      f"median {statistics.median(t for t, _ in singles):.2f} s, slowest {slowest:.2f} s ({name}); "
                      f"fleet / slowest single host {_median(runs, 'wall') / slowest:.2f}")
            if args.profile is not None:
                lint(topo, topo.nodes, args.jobs, 600, controller, profile=args.profile.resolve(), ssh_options=options)
                print(f"profile of one more fleet lint: {args.profile}")
            left = topo.close()
            topo = None
            if left:
                print(f"left behind: {left}", file=sys.stderr)
    finally:
        if topo is not None:
            left = topo.close()
            if left:
                print(f"left behind: {left}", file=sys.stderr)
        controller.remove()
        hosts_group.remove()
        print(f"load average after: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")


if __name__ == "__main__":
    main()
