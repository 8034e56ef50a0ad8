#!/usr/bin/env python3
"""Fleet lint speed: N hosts (network namespaces, an sshd and a tree of its own
each, tests/fleet_topology.py) linted with `lint --host ... --jobs J`, against
the slowest of the same hosts linted alone. Every host's tree differs by one
comment line, so none is grouped with another: every host is read and linted.

    sudo python bench/fleet_lint.py [--hosts 50] [--jobs 8] [--runs 3]

Prints each single-host time (median of --runs), the fleet run's times and the
ratio fleet / slowest single host (the goal: below 2). Needs root, iproute2,
openssh-server and Debian's apache2, like the netns tests. Everything it
builds is removed at the end, also after a failure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import fleet_topology  # noqa: E402


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def lint(topo, nodes, jobs: int, timeout: float) -> tuple[float, float]:
    """Wall time of the lint, and the CPU time of its side of the connections
    (the lint process and its ssh clients; not the hosts' sshd and httpd)."""
    argv = [sys.executable, "-m", "advisor", "lint", "--isolated", "--fail-on", "never", "--format", "json",
            "--identity", str(topo.user_key), "--jobs", str(jobs)]
    for option in topo.ssh_options():
        argv += ["--ssh-option", option]
    for node in nodes:
        argv += ["--host", f"root@{node.addr}"]
    cpu = _children_cpu()
    started = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    elapsed = time.perf_counter() - started
    cpu = _children_cpu() - cpu
    if result.returncode != 0:
        raise SystemExit(f"lint of {len(nodes)} host(s) exited {result.returncode}: {result.stderr.strip()[-500:]}")
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not 1 <= args.hosts <= 200 or not 1 <= args.runs <= 20:
        raise SystemExit("--hosts 1..200 and --runs 1..20")
    with tempfile.TemporaryDirectory(prefix="fleet-bench-") as temporary:
        work = Path(temporary)
        run = work / "run"
        run.mkdir()
        trees = []
        for index in range(1, args.hosts + 1):
            tree = fleet_topology.debian_tree(work / f"tree-{index}", run)
            (tree / "conf-enabled" / "host.conf").write_text(f"# host {index}\nServerTokens Prod\n")
            trees.append((f"h{index}", tree))
        built = time.perf_counter()
        topo = fleet_topology.build(work / "net", trees)
        print(f"built {args.hosts} hosts in {time.perf_counter() - built:.1f} s")
        try:
            singles = []
            for node in topo.nodes:
                times = [lint(topo, [node], 1, 120)[0] for _ in range(args.runs)]
                singles.append((statistics.median(times), node.name))
            singles.sort()
            fleet_times, fleet_cpu = [], []
            for _ in range(args.runs):
                elapsed, cpu = lint(topo, topo.nodes, args.jobs, 600)
                fleet_times.append(elapsed)
                fleet_cpu.append(cpu)
            slowest, name = singles[-1]
            fleet = statistics.median(fleet_times)
            print(f"single host (median of {args.runs}): fastest {singles[0][0]:.2f} s, "
                  f"median {statistics.median(t for t, _ in singles):.2f} s, slowest {slowest:.2f} s ({name})")
            print(f"{args.hosts} hosts at --jobs {args.jobs}: " + ", ".join(f"{t:.2f}" for t in fleet_times)
                  + f" s (median {fleet:.2f} s)")
            print(f"ratio fleet / slowest single host: {fleet / slowest:.2f} (goal < 2); "
                  f"per host {fleet / args.hosts:.3f} s; cores on this machine: {os.cpu_count()}, "
                  f"load average {os.getloadavg()[0]:.1f}")
            cpu = statistics.median(fleet_cpu)
            print(f"CPU on the linting side (lint and its ssh clients): {cpu:.2f} s, {cpu / args.hosts:.3f} s a host; "
                  f"the rest of the machine's work is the hosts' (sshd, python3, httpd)")
        finally:
            left = topo.close()
            if left:
                print(f"left behind: {left}", file=sys.stderr)


if __name__ == "__main__":
    main()
