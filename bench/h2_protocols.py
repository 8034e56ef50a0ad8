"""HTTP/1.1 against HTTP/2 under prefork, worker and event (issue 57).

Not a test. Three sandboxes, one per MPM, each from Debian's stock config,
held to --cpu-quota (50 % of a core) and offering h2 over TLS (`staging up
--tls --h2`). For each MPM and protocol, bench runs a knee search with the
browser workload (visits of --pages pages, each page's assets fetched as a
browser does: a burst over up to four connections for HTTP/1.1, streams on
one connection for HTTP/2; --think seconds between pages) with visitors
--rtt ms away and an SLO on the mean reply time. The six cells run in a
random order each round (randomized interleaved rounds), --rounds times,
so the host's drift falls on every cell alike. Prefork is asked for h2 too:
mod_http2 is inactive there, and the cell reads "not negotiated", as bench
refuses it. Prints a markdown table of medians:

    .venv/bin/python bench/h2_protocols.py                  # about 30 minutes at 3 rounds
    .venv/bin/python bench/h2_protocols.py --rounds 1 --json cells.jsonl

Columns: peak pages/s under the SLO, connections and TLS handshakes per
page at the peak (counted by the client and by the server), server CPU per
reply, the mean reply time at the peak (round trips added), the verdict past
the peak. The load lock (/tmp/advisor-load.lock) keeps it off other load runs.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

LOCK = "/tmp/advisor-load.lock"
MPMS = ("prefork", "worker", "event")
PROTOCOLS = ("h1", "h2")


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(f"apache-advisor {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-800:]}")
    return done


def knee(workdir: Path, mpm: str, protocol: str, args: argparse.Namespace) -> dict:
    command = ["bench", "--workdir", str(workdir), "--tls", "--mode", "knee", "--workload", "browser",
               "--num-calls", str(args.pages), "--think", f"{args.think:g}", "--protocol", protocol,
               "--rtt", f"{args.rtt:g}", "--start-rate", f"{args.start_rate:g}", "--max-probes", str(args.max_probes),
               "--duration", f"{args.duration:g}", "--slo-ms", f"{args.slo_ms:g}", "--retries", "1",
               "--format", "json"]
    done = cli(*command, check=False)
    cell = {"mpm": mpm, "protocol": protocol}
    if done.returncode == 2 and "would measure HTTP/1.1" in done.stderr:
        return {**cell, "refused": done.stderr.strip().splitlines()[-1]}
    docs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    found = next((d for d in docs if d.get("kind") == "knee"), None)
    if found is None:
        return {**cell, "error": done.stderr.strip()[-400:]}
    peak = found.get("peak_rate")
    trials = [d for d in docs if d.get("kind") == "trial"]
    at_peak = next((t for t in reversed(trials) if t["inputs"]["rate"] == peak and t.get("meets_slo")), None) or {}
    served = at_peak.get("protocol") or {}
    tls = at_peak.get("tls") or {}
    visits = (at_peak.get("httperf") or {}).get("session", {}).get("total") or 0
    pages = visits * args.pages
    handshakes = (tls.get("full_handshakes") or 0) + (tls.get("resumed_handshakes") or 0)
    limiting = found.get("limiting_verdict") or {}
    return {**cell, "peak_pages_s": peak * args.pages if peak else None, "lower_bound": found.get("lower_bound_only"),
            "served": served.get("served"),
            "connections_per_page": served.get("connections") / pages if pages and served.get("connections") else None,
            "handshakes_per_page": handshakes / pages if pages and tls else None,
            "cpu_per_reply_ms": at_peak.get("server_cpu_per_reply_ms"),
            "client_ms": (at_peak.get("client_time") or {}).get("mean_ms", at_peak.get("reply_time_ms")),
            "verdict": limiting.get("label"), "stop": found.get("stop_reason")}


def median_of(cells: list[dict], key: str) -> float | None:
    values = [c[key] for c in cells if c.get(key) is not None]
    return statistics.median(values) if values else None


def number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def table(results: dict[tuple[str, str], list[dict]], args: argparse.Namespace) -> None:
    print(f"Debian's stock pools, --cpu-quota {args.cpu_quota:g}, HTTPS at {args.rtt:g} ms, browser visits of "
          f"{args.pages} pages ({args.think:g} s think), SLO mean reply < {args.slo_ms:g} ms; medians of "
          f"{args.rounds} randomized interleaved rounds\n")
    print("| MPM | protocol | peak pages/s | connections / page | handshakes / page | server CPU per reply "
          "| mean reply at the peak | verdict past the peak |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for (mpm, protocol), cells in results.items():
        refused = [c for c in cells if "refused" in c]
        if refused:
            print(f"| {mpm} | {protocol} | not negotiated: bench refuses it (AH10034) | | | | | |")
            continue
        good = [c for c in cells if "error" not in c]
        if not good:
            print(f"| {mpm} | {protocol} | failed: {cells[0].get('error', '?')} | | | | | |")
            continue
        verdicts = sorted({c.get("verdict") or f"none ({c.get('stop')})" for c in good})
        bound = " (at least)" if any(c.get("lower_bound") for c in good) else ""
        print(f"| {mpm} | {protocol} ({good[0].get('served') or '?'}) | "
              f"{number(median_of(good, 'peak_pages_s'), 1)}{bound} | "
              f"{number(median_of(good, 'connections_per_page'), 2)} | {number(median_of(good, 'handshakes_per_page'), 2)} | "
              f"{number(median_of(good, 'cpu_per_reply_ms'), 3)} ms | {number(median_of(good, 'client_ms'), 1)} ms | "
              f"{', '.join(verdicts)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu-quota", type=float, default=50.0)
    parser.add_argument("--rtt", type=float, default=50.0)
    parser.add_argument("--pages", type=int, default=3, help="pages a visit")
    parser.add_argument("--think", type=float, default=1.0, help="seconds between a visit's pages")
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--start-rate", type=float, default=20.0, help="first probe, visits/s")
    parser.add_argument("--max-probes", type=int, default=8)
    parser.add_argument("--slo-ms", type=float, default=200.0, help="mean reply time bound (round trips added)")
    parser.add_argument("--seed", type=int, default=57)
    parser.add_argument("--json", help="write each cell's figures here, one JSON line each")
    parser.add_argument("--table-from", nargs="+", metavar="JSONL",
                        help="print the table of cells saved by --json (several runs' rounds together); no load")
    args = parser.parse_args()
    if args.table_from:
        saved: dict[tuple[str, str], list[dict]] = {(mpm, protocol): [] for mpm in MPMS for protocol in PROTOCOLS}
        for path in args.table_from:
            for line in Path(path).read_text().splitlines():
                cell = json.loads(line)
                saved[(cell["mpm"], cell["protocol"])].append(cell)
        args.rounds = max(len(cells) for cells in saved.values())
        table(saved, args)
        return
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="advisor-h2-"))
    base.chmod(0o755)  # the workers (www-data) enter the sandboxes
    dirs = {mpm: base / mpm for mpm in MPMS}
    cells = [(mpm, protocol) for mpm in MPMS for protocol in PROTOCOLS]
    results: dict[tuple[str, str], list[dict]] = {cell: [] for cell in cells}
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            for mpm, directory in dirs.items():
                cli("staging", "up", "--workdir", str(directory), "--mpm", mpm, "--tls", "--h2",
                    "--cpu-quota", f"{args.cpu_quota:g}")
            for round_index in range(args.rounds):
                for mpm, protocol in rng.sample(cells, len(cells)):
                    figures = knee(dirs[mpm], mpm, protocol, args)
                    figures["round"] = round_index + 1
                    results[(mpm, protocol)].append(figures)
                    print(json.dumps(figures), file=sys.stderr, flush=True)
                    if args.json:
                        with open(args.json, "a") as out:
                            out.write(json.dumps(figures) + "\n")
        finally:
            for directory in dirs.values():
                cli("staging", "down", "--workdir", str(directory), check=False)
            shutil.rmtree(base, ignore_errors=True)
    table(results, args)


if __name__ == "__main__":
    main()
