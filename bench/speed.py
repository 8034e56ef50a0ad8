#!/usr/bin/env python3
"""Speed goal: reading (and linting) a tree of N virtual hosts (default
2,000) takes less wall time, and no more memory, than `apache2 -t` takes to
check it. Whole processes, several runs each, taken in rounds (every
command once per round, so a host that is busy for a while slows all of
them alike); prints the medians of wall time, CPU time and peak memory (max
RSS) and the ratios ours / httpd's (below 1.0 is the goal).

Lint is timed three ways: cold (`--no-cache`: any lint after a change), a
first lint that saves its result to an empty cache (what a user's first run
costs: the entry is written by a child after the command answers, and the
time that save outlasts the command is printed beside, not in, the figure;
the next run waits for it, untimed), and on the unchanged tree (the result cache proves with one stat per
input that nothing changed, and reuses the result).

Two tree shapes by default (both printed): `plain` (bench/vhost_tree.py's
default hosts) and `logged` (a mass-hosting tree: three findings on every
host, each message naming the host's own paths), since the cost of rules
and formatters grows with the findings. `--shapes plain,logged,fixable`
adds a tree whose hosts each have two findings with a mechanical fix
(KeepAlive Off, HostnameLookups On): the results whose SARIF carries an
edit (2,000 such hosts once took 37 s to write as SARIF; 0.7 s now).
`tls` (not in the default list: each site is two hosts, so its tree is
twice the others' and its round takes about twice as long) writes each
site as a plain-HTTP host that redirects to a TLS host with a certificate,
Mozilla-intermediate protocol and ciphers and HSTS, a third of them
proxying and a third handing PHP to php-fpm: the per-host work of the TLS
and proxy rules.
`--formats text,json,sarif` adds a cold lint for each report format: the
memory of a report of 40,000 findings is the report's, not the tree's.

With `--baseline PATH` (another apache-advisor, e.g. a regular install of
main in its own venv), its dump and lints run in the same rounds as the
ones measured, and are printed below them with the same ratios: a before/
after comparison that a machine whose speed drifts cannot skew. Give it
more than once to compare several (say, the code before a day's work and
main before one change): `(baseline 1)`, `(baseline 2)`...

    python bench/speed.py [--vhosts 20000] [--runs 7] [--shapes plain,logged] [--formats text,json,sarif]
                          [--tree DIR] [--advisor PATH] [--baseline PATH [--baseline PATH2]]
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
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vhost_tree import SHAPES, generate  # noqa: E402

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


@dataclass
class Job:
    label: str
    command: list[str]
    env: dict[str, str]
    before_each: Callable[[], None] | None = None
    """Untimed preparation of each run (emptying the cache)."""
    after_each: Callable[[], None] | None = None
    """Untimed wait after each run (for the cache save the lint left running)."""


def wait_for_saves(cache_dir: Path) -> float:
    """Seconds until every cache save a lint left running has ended (it
    holds its key's lock file until then): measured from now, so it is the
    part of the save that outlasted the command."""
    import fcntl

    started = time.perf_counter()
    for lock in cache_dir.glob("lint-*.lock"):
        with open(lock) as handle:
            fcntl.flock(handle, fcntl.LOCK_SH)
    return time.perf_counter() - started


def timed(command: list[str], runs: int, env: dict[str, str]) -> Timing:
    """Medians of `runs` whole runs of one command."""
    return interleaved([Job("", command, env)], runs)[0]


def interleaved(jobs: list[Job], runs: int, warm: Callable[[], None] | None = None) -> list[Timing]:
    """Medians of `runs` whole runs of each job, taken in rounds (each job
    once per round): a host that is slower for a while slows every job alike
    instead of the ones that happened to run then. Each round starts one job
    later than the one before, so no job always follows the same one.
    `warm()` runs (untimed) before every run."""
    samples: list[list[tuple[float, float, int]]] = [[] for _ in jobs]
    for round_number in range(runs):
        start = round_number % len(jobs)
        order = list(zip(jobs, samples))
        for job, taken in order[start:] + order[:start]:
            if warm is not None:
                warm()
            if job.before_each is not None:
                job.before_each()
            taken.append(run_once(job.command, job.env))
            if job.after_each is not None:
                job.after_each()
    return [Timing(statistics.median(s[0] for s in taken), statistics.median(s[1] for s in taken),
                   int(statistics.median(s[2] for s in taken))) for taken in samples]


def report(label: str, timing: Timing, reference: Timing | None = None) -> None:
    line = f"{label:34} wall {timing.wall * 1000:7.1f} ms"
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


def _page_cache_warmer(tree: Path) -> Callable[[], None]:
    """Reads every file of the tree: each run then finds it in the page
    cache, as a tree read a moment ago is. (A host that reclaims memory
    eagerly would otherwise send whichever run comes first after a pause to
    the disk, and the order of the runs would decide the ratios.)"""
    files = [str(path) for path in tree.rglob("*.conf")]

    def warm() -> None:
        for path in files:
            descriptor = os.open(path, os.O_RDONLY)
            try:
                while os.read(descriptor, 1 << 16):
                    pass
            finally:
                os.close(descriptor)
    return warm


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
    parser.add_argument("--shapes", default="plain,logged",
                        help="comma-separated tree shapes of bench/vhost_tree.py (default plain,logged)")
    parser.add_argument("--formats", default="text",
                        help="comma-separated report formats of the cold lint (default text; json and sarif "
                        "add a cold lint each: their reports of a findings-heavy tree are the largest)")
    parser.add_argument("--tree", type=Path, help="reuse the tree here, or create it (with --vhosts hosts; "
                        "one shape only)")
    parser.add_argument("--advisor", help="the apache-advisor executable to time (default: the one on PATH; "
                        "an editable install adds ~40 ms of import hooks that a regular install does not have)")
    parser.add_argument("--baseline", action="append", default=[],
                        help="another apache-advisor executable (a regular install of the code to compare "
                        "with), timed in the same rounds and printed as `(baseline)`; give it again for "
                        "more (`(baseline 2)`...: say, the code before today's work and this morning's main)")
    args = parser.parse_args()
    httpd = find_httpd()
    if httpd is None:
        print("no apache2/httpd binary here", file=sys.stderr)
        return 2
    advisor = args.advisor or shutil.which("apache-advisor") or ""
    base = [advisor] if advisor else [sys.executable, "-m", "advisor"]
    if args.vhosts < 1:
        parser.error("--vhosts must be at least 1")
    shapes = [shape.strip() for shape in args.shapes.split(",") if shape.strip()]
    unknown = [shape for shape in shapes if shape not in SHAPES]
    if unknown or not shapes:
        parser.error(f"--shapes takes {', '.join(SHAPES)}")
    formats = [name.strip() for name in args.formats.split(",") if name.strip()]
    if not formats or any(name not in ("text", "json", "sarif") for name in formats):
        parser.error("--formats takes text, json and sarif")
    args.extra_formats = [name for name in formats if name != "text"]
    if args.tree and len(shapes) > 1:
        parser.error("--tree takes one shape (--shapes NAME)")
    # The ratios depend on the interpreter's build as well as on the code: a
    # Python built with --enable-shared and no PGO (pyenv's default) runs
    # 15-23 % more instructions for the same lint than Debian's python3.
    interpreter = _interpreter(base)
    try:
        version = subprocess.run([interpreter, "-c", "import platform; print(platform.python_version())"],
                                 capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        version = "?"
    timed = os.path.realpath(shutil.which(interpreter) or interpreter)
    print(f"apache-advisor runs on {timed} ({version})")
    system = "/usr/bin/python3"
    if os.path.exists(system) and timed != os.path.realpath(system):
        # The ratios are the product's as a user installs it (`python3 -m
        # venv` on a fresh Debian machine, like CI's venv): a Python built
        # from source without profile guidance runs the same lint slower.
        print(f"note: not the distribution's {system}, which `python3 -m venv` gives on a fresh Debian "
              "machine; an interpreter built without profile-guided optimisation (pyenv's default) "
              "shifts every ratio (see docs/TEAM.md)")
    baselines = [[path] for path in args.baseline]
    for number, path in enumerate(args.baseline, 1):
        print(f"{_baseline_label(number, len(baselines))}: {path}")
    for position, shape in enumerate(shapes):
        if position:
            print()
        measure_shape(shape, args, base, httpd, baselines)
    return 0


def _baseline_label(number: int, count: int) -> str:
    return "baseline" if count == 1 else f"baseline {number}"


def measure_shape(shape: str, args: argparse.Namespace, base: list[str], httpd: str,
                  baselines: list[list[str]] | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tree = args.tree or Path(tmp) / "tree"
        main_file = tree / "httpd.conf"
        if not main_file.exists():
            generate(tree, args.vhosts, shape=shape)
        texts = [path.read_text().splitlines() for path in tree.rglob("*.conf")]
        lines = sum(map(len, texts))
        hosts = sum(line.lstrip().startswith("<VirtualHost") for text in texts for line in text)
        print(f"tree ({shape}): {hosts} virtual hosts, {len(texts)} files, {lines} lines")
        env = dict(os.environ)
        env.pop("APACHE_ADVISOR_NO_CACHE", None)
        cache_dir = Path(tmp) / "cache"
        cached = {**env, "APACHE_ADVISOR_CACHE_DIR": str(cache_dir)}
        lint = base + ["lint", "--fail-on", "never", str(main_file)]

        def empty_cache() -> None:
            shutil.rmtree(cache_dir, ignore_errors=True)

        background_saves: list[float] = []

        def save_done() -> None:
            background_saves.append(wait_for_saves(cache_dir))

        def saved_entry() -> None:
            if not any(cache_dir.glob("lint-*.json")):
                raise SystemExit("the first lint saved no cache entry")

        # The unchanged-tree lint reuses what the last first lint saved (the
        # tree has not changed since); the first round runs them in order.
        jobs = [Job("apache2 -t", [httpd, "-t", "-f", str(main_file)], env),
                Job("apache-advisor dump", base + ["dump", str(main_file)], env),
                Job("lint, cold (--no-cache)", lint + ["--no-cache"], env),
                Job("lint, first (saves to cache)", lint, cached, empty_cache, save_done),
                Job("lint, unchanged tree", lint, cached, saved_entry)]
        jobs += [Job(f"lint, cold, -f {name}", lint + ["--no-cache", "--format", name], env)
                 for name in args.extra_formats]
        for number, baseline in enumerate(baselines or [], 1):
            jobs += _baseline_jobs(baseline, _baseline_label(number, len(baselines or [])), number,
                                   main_file, Path(tmp), env, args.extra_formats)
        # The cache saves no result for a tree changed within its racy window.
        _wait_out_racy_window(tree)
        timings = interleaved(jobs, args.runs, warm=_page_cache_warmer(tree))
        for job, timing in zip(jobs, timings):
            report(job.label, timing, timings[0] if job is not jobs[0] else None)
        if background_saves:
            print(f"  (the first lint's cache entry, saved after it answered: another "
                  f"{statistics.median(background_saves) * 1000:.0f} ms, median, not in its figures)")
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


def _baseline_jobs(baseline: list[str], label: str, number: int, main_file: Path, tmp: Path,
                   env: dict[str, str], extra_formats: list[str]) -> list[Job]:
    """The dump and lints of another apache-advisor, for the same rounds."""
    # Its own cache directory: the versions' entries differ.
    old_cache = tmp / f"baseline-cache-{number}"
    old_cached = {**env, "APACHE_ADVISOR_CACHE_DIR": str(old_cache)}
    old_lint = baseline + ["lint", "--fail-on", "never", str(main_file)]

    def old_saved_entry() -> None:
        if not any(old_cache.glob("lint-*.json")):
            # The first round: the baseline's entry is made, untimed.
            subprocess.run(old_lint, env=old_cached, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)

    def old_empty_cache() -> None:
        shutil.rmtree(old_cache, ignore_errors=True)

    jobs = [Job(f"  dump ({label})", baseline + ["dump", str(main_file)], env),
            Job(f"  lint, cold ({label})", old_lint + ["--no-cache"], env),
            Job(f"  lint, first ({label})", old_lint, old_cached, old_empty_cache),
            Job(f"  lint, unchanged ({label})", old_lint, old_cached, old_saved_entry)]
    jobs += [Job(f"  lint, cold, -f {name} ({label})", old_lint + ["--no-cache", "--format", name], env)
             for name in extra_formats]
    return jobs


if __name__ == "__main__":
    sys.exit(main())
