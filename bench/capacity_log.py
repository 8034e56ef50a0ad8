"""`capacity --log` on a million log lines: time and peak memory (issue 31).

Not a test. Writes a generated access log (tests/loggen.py: Poisson
arrivals with a burst, %D lognormal, seeded) of about --lines lines, runs
`apache-advisor capacity CONFIG --log FILE --format json` in a child process
and prints its wall time and peak RSS, then the same for the log replay's
reading of that file (`--workload log:`'s `prepare`, which derives the
sessions), so the two readers are compared on one file.

    .venv/bin/python bench/capacity_log.py                # 1,000,000 lines
    .venv/bin/python bench/capacity_log.py --lines 200000 --gzip

CPU only (no server, no load): it takes no load lock, but runs niced.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FORMAT = '%h %l %u %t "%r" %>s %b %D'

REPLAY = """
import sys
from pathlib import Path
from advisor.tuner.load.replay import prepare
from advisor.tuner.load.replay_sessions import ReplayOptions
replay, _ = prepare("log:" + sys.argv[1], Path(sys.argv[2]), ReplayOptions(), log_format=sys.argv[3])
print(replay.summary.lines, replay.summary.skipped)
"""


def child(command: list[str]) -> tuple[float, int, str]:
    """(wall seconds, peak RSS of that child in MiB, stdout), by wait4 on the child itself."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(["nice", "-n", "10", *command], stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise SystemExit(f"{command[:4]}... failed: {err.read().strip()}")
        return wall, usage.ru_maxrss // 1024, out.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000, help="about this many lines (default 1,000,000)")
    parser.add_argument("--gzip", action="store_true", help="write the log gzipped")
    parser.add_argument("--skip-replay", action="store_true", help="time capacity --log only")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "tests"))
    import loggen

    rate = 400.0
    burst_seconds, burst_rate = 60, 4 * rate
    seconds = int((args.lines - burst_seconds * (burst_rate - rate)) / rate)
    with tempfile.TemporaryDirectory(prefix="caplog-bench-") as work:
        log = Path(work) / ("access.log.gz" if args.gzip else "access.log")
        start = time.perf_counter()
        loggen.write_log(log, seconds, rate, gz=args.gzip, burst_at=seconds // 2,
                         burst_seconds=burst_seconds, burst_rate=burst_rate, seed=11)
        written = time.perf_counter() - start
        lines = sum(1 for _ in (__import__("gzip").open(log, "rt") if args.gzip else open(log)))
        config = Path(work) / "httpd.conf"
        config.write_text("LoadModule mpm_prefork_module m.so\nServerName localhost\nMaxRequestWorkers 150\n")
        print(f"log: {lines:,} lines, {log.stat().st_size / 2**20:.0f} MiB on disk, {seconds:,} s of traffic "
              f"(written in {written:.1f} s)")
        tool = [sys.executable, "-m", "advisor", "capacity", str(config), "--log", str(log), "--log-format", FORMAT,
                "--no-measure", "--ram", "4G", "--worker-memory", "20M", "--format", "json"]
        wall, rss, out = child(tool)
        demand = json.loads(out)["log"]["demand"]
        print(f"capacity --log : {wall:6.1f} s, peak RSS {rss:4d} MiB, {lines / wall:,.0f} lines/s "
              f"(busiest second {demand['busiest_second_rate']} req/s, peak busy {demand['peak_busy']:.1f} workers)")
        if not args.skip_replay:
            out_dir = Path(work) / "replay"
            out_dir.mkdir()
            wall, rss, _ = child([sys.executable, "-c", REPLAY, str(log), str(out_dir), FORMAT])
            print(f"--workload log: : {wall:6.1f} s, peak RSS {rss:4d} MiB, "
                  f"{lines / wall:,.0f} lines/s")
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
