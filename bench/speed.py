#!/usr/bin/env python3
"""Speed goal: reading (and linting) a tree of N virtual hosts (default
2,000) takes less wall time, and no more memory, than `apache2 -t` takes to
check it. Whole processes, several runs each; prints the medians of wall
time, CPU time and peak memory (max RSS) and the ratios ours / httpd's
(below 1.0 is the goal).

Lint is timed three ways: cold (`--no-cache`: any lint after a change), a
first lint that saves its result to an empty cache (what a user's first run
costs), and on the unchanged tree (the result cache proves with one stat per
input that nothing changed, and reuses the result).

    python bench/speed.py [--vhosts 20000] [--runs 7] [--tree DIR] [--advisor PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vhost_tree import generate  # noqa: E402

from advisor.config.oracle import find_httpd  # noqa: E402
from advisor.lint.cache import RACY_WINDOW_NS  # noqa: E402


@dataclass
class Timing:
    """Medians over whole runs of one command."""

    wall: float
    """Seconds a user waits: the goal is stated in these."""
    cpu: float
    """User + system seconds of the process: steadier on a busy machine."""
    max_rss: int
    """Peak resident memory of the process, in bytes."""


def run_once(command: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall time, CPU time and max RSS of one run, from wait4's rusage of
    that very process (RUSAGE_CHILDREN would keep the maximum of all runs)."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=errors, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode not in (0, 1):
            errors.seek(0)
            raise SystemExit(f"{' '.join(command)} failed: {errors.read().decode()[-300:]}")
    # ru_maxrss is in kilobytes on Linux.
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def timed(command: list[str], runs: int, env: dict[str, str], before_each=None) -> Timing:
    """Medians of `runs` whole runs; `before_each()` (untimed) prepares each."""
    walls, cpus, peaks = [], [], []
    for _ in range(runs):
        if before_each is not None:
            before_each()
        wall, cpu, peak = run_once(command, env)
        walls.append(wall)
        cpus.append(cpu)
        peaks.append(peak)
    return Timing(statistics.median(walls), statistics.median(cpus), int(statistics.median(peaks)))


def report(label: str, timing: Timing, reference: Timing | None = None) -> None:
    line = f"{label:30} wall {timing.wall * 1000:7.1f} ms"
    line += f" ({timing.wall / reference.wall:4.2f}x)" if reference else " " * 8
    line += f"   cpu {timing.cpu * 1000:7.1f} ms"
    line += f" ({timing.cpu / reference.cpu:4.2f}x)" if reference else " " * 8
    line += f"   max RSS {timing.max_rss / 2**20:6.1f} MiB"
    line += f" ({timing.max_rss / reference.max_rss:4.2f}x)" if reference else ""
    print(line, flush=True)


def _interpreter(command: list[str]) -> str:
    """The Python that runs the apache-advisor command (its shebang)."""
    if len(command) > 1:
        return command[0]
    with open(command[0], "rb") as handle:
        first = handle.readline().decode().strip()
    return first[2:].split()[0] if first.startswith("#!") else sys.executable


def _wait_out_racy_window(tree: Path) -> None:
    """The cache saves no result whose files changed within its racy window
    (timestamp granularity); a tree generated just now must age first."""
    newest = max(path.stat().st_ctime_ns for path in tree.rglob("*"))
    delay = (newest + RACY_WINDOW_NS) / 1e9 + 0.2 - time.time()
    if delay > 0:
        time.sleep(delay)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--vhosts", type=int, default=2000, help="virtual hosts in the generated tree "
                        "(one file each; default 2,000)")
    parser.add_argument("--tree", type=Path, help="reuse the tree here, or create it (with --vhosts hosts)")
    parser.add_argument("--advisor", help="the apache-advisor executable to time (default: the one on PATH; "
                        "an editable install adds ~40 ms of import hooks that a regular install does not have)")
    args = parser.parse_args()
    httpd = find_httpd()
    if httpd is None:
        print("no apache2/httpd binary here", file=sys.stderr)
        return 2
    advisor = args.advisor or shutil.which("apache-advisor") or ""
    base = [advisor] if advisor else [sys.executable, "-m", "advisor"]
    if args.vhosts < 1:
        parser.error("--vhosts must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        tree = args.tree or Path(tmp) / "tree"
        main_file = tree / "httpd.conf"
        if not main_file.exists():
            generate(tree, args.vhosts)
        files = len(list(tree.rglob("*.conf")))
        lines = sum(len(p.read_text().splitlines()) for p in tree.rglob("*.conf"))
        print(f"tree: {files - 1} virtual hosts, {files} files, {lines} lines")
        env = dict(os.environ)
        env.pop("APACHE_ADVISOR_NO_CACHE", None)
        reference = timed([httpd, "-t", "-f", str(main_file)], args.runs, env)
        report("apache2 -t", reference)
        report("apache-advisor dump", timed(base + ["dump", str(main_file)], args.runs, env), reference)
        lint = base + ["lint", "--fail-on", "never", str(main_file)]
        report("lint, cold (--no-cache)", timed(lint + ["--no-cache"], args.runs, env), reference)
        # The cache saves no result for a tree changed within its racy window.
        _wait_out_racy_window(tree)
        cache_dir = Path(tmp) / "cache"
        env["APACHE_ADVISOR_CACHE_DIR"] = str(cache_dir)

        def empty_cache() -> None:
            shutil.rmtree(cache_dir, ignore_errors=True)

        report("lint, first (saves to cache)", timed(lint, args.runs, env, before_each=empty_cache), reference)
        if not any(cache_dir.glob("lint-*.json")):
            raise SystemExit("the first lint saved no cache entry")
        # The tree has not changed since: the saved result is reused.
        report("lint, unchanged tree", timed(lint, args.runs, env), reference)
        # Where the time goes: the fixed cost of starting Python and importing
        # the CLI (Typer) against the cost of reading this tree.
        python = _interpreter(base)
        print("breakdown (same interpreter):")
        for label, code in (("python start-up", "pass"), ("+ import typer", "import typer"),
                            ("+ import advisor.cli", "import advisor.cli"),
                            ("+ load_config (the tree)", f"from advisor.config.loader import load_config; "
                                                         f"load_config({str(main_file)!r})")):
            timing = timed([python, "-c", code], args.runs, env)
            print(f"  {label:28} wall {timing.wall * 1000:7.1f} ms   cpu {timing.cpu * 1000:7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
