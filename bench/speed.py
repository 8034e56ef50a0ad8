#!/usr/bin/env python3
"""Speed goal: reading (and linting) the 2,000-vhost tree takes less wall time
than `apache2 -t` takes to check it. Whole processes, several runs each;
prints the medians of wall and CPU time and the ratios ours / httpd's
(below 1.0 is the goal).

Lint is timed twice: cold (`--no-cache`: the first lint of a tree, or any
lint after a change) and on the unchanged tree (the result cache proves with
one stat per input that nothing changed, and reuses the result).

    python bench/speed.py [--runs 7] [--tree DIR]
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vhost_tree import generate  # noqa: E402

from advisor.config.oracle import find_httpd  # noqa: E402
from advisor.lint.cache import RACY_WINDOW_NS  # noqa: E402


def timed(command: list[str], runs: int, env: dict[str, str]) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system) of whole runs.

    The CPU figure is steadier on a busy machine; the goal is stated in wall
    time, which is what a user waits for."""
    walls, cpus = [], []
    for _ in range(runs):
        before = os.times()
        start = time.perf_counter()
        completed = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                                   stdin=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        after = os.times()
        cpus.append((after.children_user - before.children_user) + (after.children_system - before.children_system))
        if completed.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command)} failed: {completed.stderr.decode()[-300:]}")
    return statistics.median(walls), statistics.median(cpus)


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
    parser.add_argument("--tree", type=Path, help="reuse or create the tree here")
    parser.add_argument("--advisor", help="the apache-advisor executable to time (default: the one on PATH; "
                        "an editable install adds ~40 ms of import hooks that a regular install does not have)")
    args = parser.parse_args()
    httpd = find_httpd()
    if httpd is None:
        print("no apache2/httpd binary here", file=sys.stderr)
        return 2
    advisor = args.advisor or shutil.which("apache-advisor") or ""
    base = [advisor] if advisor else [sys.executable, "-m", "advisor"]
    with tempfile.TemporaryDirectory() as tmp:
        tree = args.tree or Path(tmp) / "tree"
        main_file = tree / "httpd.conf"
        if not main_file.exists():
            generate(tree)
        files = len(list(tree.rglob("*.conf")))
        lines = sum(len(p.read_text().splitlines()) for p in tree.rglob("*.conf"))
        print(f"tree: {files} files, {lines} lines")
        env = dict(os.environ)
        reference, reference_cpu = timed([httpd, "-t", "-f", str(main_file)], args.runs, env)
        print(f"{'apache2 -t':26} wall {reference * 1000:7.1f} ms            cpu {reference_cpu * 1000:7.1f} ms")
        jobs = [("apache-advisor dump", base + ["dump", str(main_file)])]
        lint = base + ["lint", "--fail-on", "never", str(main_file)]
        jobs.append(("lint, cold (--no-cache)", lint + ["--no-cache"]))
        # The warm runs use a cache directory of their own, filled by one run
        # first; the tree has not changed since, so the result is reused.
        cache_dir = Path(tmp) / "cache"
        env["APACHE_ADVISOR_CACHE_DIR"] = str(cache_dir)
        env.pop("APACHE_ADVISOR_NO_CACHE", None)
        _wait_out_racy_window(tree)
        subprocess.run(lint, stdout=subprocess.DEVNULL, env=env, check=False)
        if not any(cache_dir.glob("lint-*.json")):
            raise SystemExit("the warm-up lint saved no cache entry")
        jobs.append(("lint, unchanged tree", lint))
        for label, command in jobs:
            median, cpu = timed(command, args.runs, env)
            print(f"{label:26} wall {median * 1000:7.1f} ms ({median / reference:4.2f}x)   "
                  f"cpu {cpu * 1000:7.1f} ms ({cpu / reference_cpu:4.2f}x)")
        # Where the time goes: the fixed cost of starting Python and importing
        # the CLI (Typer) against the cost of reading this tree.
        python = _interpreter(base)
        print("breakdown (same interpreter):")
        for label, code in (("python start-up", "pass"), ("+ import typer", "import typer"),
                            ("+ import advisor.cli", "import advisor.cli"),
                            ("+ load_config (the tree)", f"from advisor.config.loader import load_config; "
                                                         f"load_config({str(main_file)!r})")):
            median, _ = timed([python, "-c", code], args.runs, env)
            print(f"  {label:26} wall {median * 1000:7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
