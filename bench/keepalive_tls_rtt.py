"""KeepAlive On against Off where reconnects cost what they cost real visitors (issue 27).

Not a test. Two prefork sandboxes from the same stock config, each held to
--cpu-quota (50 % of a core by default): one plain HTTP, one HTTPS
(`staging up --tls`, ECDSA P-256 unless --tls-key says otherwise). For each
of plain HTTP at 0 ms, HTTPS at 0 ms and HTTPS at --rtt (50 ms), and for
KeepAlive On and Off, bench runs a knee search with almeida-sessions (the
Almeida file set, sessions of 5 requests, 0.2 s think time) and an SLO on
the mean reply time (client-perceived with --rtt). The six searches run
interleaved, --rounds times, so the host's drift falls on every row alike.
Prints a markdown table of medians:

    sudo .venv/bin/python bench/keepalive_tls_rtt.py              # about 15 minutes
    sudo .venv/bin/python bench/keepalive_tls_rtt.py --rounds 1 --json rows.jsonl

Columns: peak sessions/s under the SLO (and replies/s), full and resumed
handshakes/s counted by the server at that peak, server CPU per reply at
the peak, the client-perceived mean reply time at the peak (measured plus
the round trips added), and the verdict that ended the search. The load
lock (/tmp/advisor-load.lock) keeps it off other load runs.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

LOCK = "/tmp/advisor-load.lock"


@dataclass(frozen=True)
class Row:
    scheme: str  # "http" or "https"
    rtt_ms: float
    keepalive: str  # "On" or "Off"

    @property
    def name(self) -> str:
        return f"{self.scheme.upper()} at {self.rtt_ms:g} ms, KeepAlive {self.keepalive}"


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(f"apache-advisor {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-800:]}")
    return done


def knee(workdir: Path, row: Row, args: argparse.Namespace) -> dict:
    # Each search starts near where this host's knees were (KeepAlive Off
    # serves several times the sessions On does), so the probes bracket the
    # knee instead of doubling up to it.
    start = args.start_rate if row.keepalive == "On" else args.start_rate_off
    command = ["bench", "--workdir", str(workdir), "--mode", "knee", "--workload", "almeida", "--num-calls", "5",
               "--think", "0.2", "--start-rate", str(start), "--max-probes", str(args.max_probes),
               "--duration", str(args.duration), "--slo-ms", str(args.slo_ms), "--retries", "1",
               "--set", f"KeepAlive {row.keepalive}", "--format", "json"]
    if row.rtt_ms:
        command += ["--rtt", f"{row.rtt_ms:g}"]
    done = cli(*command, check=False)
    docs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    found = next((d for d in docs if d.get("kind") == "knee"), None)
    if found is None:
        return {"row": row.name, "error": done.stderr.strip()[-400:]}
    peak = found.get("peak_rate")
    trials = [d for d in docs if d.get("kind") == "trial"]
    at_peak = next((t for t in reversed(trials) if t["inputs"]["rate"] == peak and t.get("meets_slo", True)), None)
    tls = (at_peak or {}).get("tls") or {}
    client = (at_peak or {}).get("client_time") or {}
    limiting = found.get("limiting_verdict") or {}
    return {
        "row": row.name, "peak_sessions": peak, "peak_replies": found.get("peak_reply_rate"),
        "lower_bound": found.get("lower_bound_only"), "stop": found.get("stop_reason"),
        "full_per_s": tls.get("full_handshakes_per_s"), "resumed_per_s": tls.get("resumed_handshakes_per_s"),
        "tls_version": tls.get("version"), "cpu_per_reply_ms": (at_peak or {}).get("server_cpu_per_reply_ms"),
        "client_ms": client.get("mean_ms", (at_peak or {}).get("reply_time_ms")),
        "client_added_ms": client.get("added_ms"), "verdict": limiting.get("label"),
        "verdict_summary": limiting.get("summary") or limiting.get("label"),
    }


def median_of(results: list[dict], key: str) -> float | None:
    values = [r[key] for r in results if r.get(key) is not None]
    return statistics.median(values) if values else None


def number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cpu-quota", type=float, default=50.0)
    parser.add_argument("--rtt", type=float, default=50.0)
    parser.add_argument("--tls-key", default="ecdsa-p256")
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--start-rate", type=float, default=40.0, help="KeepAlive On's first probe (sessions/s)")
    parser.add_argument("--start-rate-off", type=float, default=400.0, help="KeepAlive Off's first probe")
    parser.add_argument("--max-probes", type=int, default=8)
    parser.add_argument("--slo-ms", type=float, default=200.0,
                        help="mean reply time bound (client-perceived with --rtt)")
    parser.add_argument("--json", help="write each search's figures here, one JSON line each")
    args = parser.parse_args()
    rows = [Row(scheme, rtt, keepalive) for scheme, rtt in (("http", 0.0), ("https", 0.0), ("https", args.rtt))
            for keepalive in ("On", "Off")]
    base = Path(tempfile.mkdtemp(prefix="advisor-ka-tls-"))
    base.chmod(0o755)  # the workers (www-data) enter the sandboxes
    dirs = {"http": base / "plain", "https": base / "tls"}
    results: dict[str, list[dict]] = {row.name: [] for row in rows}
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            cli("staging", "up", "--workdir", str(dirs["http"]), "--mpm", "prefork",
                "--cpu-quota", f"{args.cpu_quota:g}")
            cli("staging", "up", "--workdir", str(dirs["https"]), "--mpm", "prefork",
                "--cpu-quota", f"{args.cpu_quota:g}", "--tls", "--tls-key", args.tls_key)
            for round_index in range(args.rounds):
                order = rows if round_index % 2 == 0 else list(reversed(rows))
                for row in order:
                    figures = knee(dirs[row.scheme], row, args)
                    figures["round"] = round_index + 1
                    results[row.name].append(figures)
                    print(json.dumps(figures), file=sys.stderr, flush=True)
                    if args.json:
                        with open(args.json, "a") as out:
                            out.write(json.dumps(figures) + "\n")
        finally:
            for directory in dirs.values():
                cli("staging", "down", "--workdir", str(directory), check=False)
            shutil.rmtree(base, ignore_errors=True)
    print(f"prefork, Debian's stock pool, --cpu-quota {args.cpu_quota:g}, almeida-sessions (5 requests, 0.2 s "
          f"think), SLO mean reply < {args.slo_ms:g} ms, {args.tls_key} key; medians of {args.rounds} "
          "interleaved rounds\n")
    print("| scheme, RTT | KeepAlive | peak sessions/s (replies/s) | full / resumed handshakes/s "
          "| server CPU per reply | client-perceived mean reply | verdict past the peak |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        found = results[row.name]
        errors = [r["error"] for r in found if "error" in r]
        if errors and len(errors) == len(found):
            print(f"| {row.scheme.upper()} {row.rtt_ms:g} ms | {row.keepalive} | failed: {errors[0]} | | | | |")
            continue
        verdicts = sorted({r.get("verdict") or f"none ({r.get('stop')})" for r in found if "error" not in r})
        handshakes = ("-" if row.scheme == "http" else
                      f"{number(median_of(found, 'full_per_s'))} / {number(median_of(found, 'resumed_per_s'))}")
        added = median_of(found, "client_added_ms")
        client = number(median_of(found, "client_ms"), 1) + (f" ({number(added, 1)} added)" if added else "")
        bound = " (at least)" if any(r.get("lower_bound") for r in found) else ""
        print(f"| {row.scheme.upper()} {row.rtt_ms:g} ms | {row.keepalive} | "
              f"{number(median_of(found, 'peak_sessions'), 1)}{bound} "
              f"({number(median_of(found, 'peak_replies'))}) | {handshakes} | "
              f"{number(median_of(found, 'cpu_per_reply_ms'), 3)} ms | {client} ms | {', '.join(verdicts)} |")


if __name__ == "__main__":
    main()
