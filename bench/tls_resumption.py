"""What the TLS session cache and session tickets buy: handshakes and server CPU (issue 58).

Not a test. One sandbox (`staging up --tls`, prefork or --mpm, held to
--cpu-quota of a core), and four settings of its managed include:

- cache on, tickets off: the sandbox as Debian's ssl.conf sets it (shmcb cache), with
  tickets off as Mozilla's generator and rule S521 advise;
- cache on, tickets on: httpd's default for tickets;
- cache off (`SSLSessionCache none`), tickets on: resumption rests on tickets alone;
- cache off, tickets off: no resumption at all (rule P115's case).

Each is one fixed-rate trial of httperf sessions over Almeida's file set,
--calls requests a session with --think seconds between them, with
KeepAlive Off so that every request of a session opens a connection and the
session's later connections try to resume its TLS session, as a browser's
parallel and later connections do. The server counts the full and resumed
handshakes (mod_status's TLS counters, as bench reports them), and its CPU
per reply is read from its cgroup. The four run in a random order each
round (randomized interleaved rounds), --rounds times; the table shows
medians.

    .venv/bin/python bench/tls_resumption.py                 # about 5 minutes
    .venv/bin/python bench/tls_resumption.py --mpm event --rounds 5 --json rows.jsonl
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
SETTINGS = {
    "cache on, tickets off": ["SSLSessionTickets off"],
    "cache on, tickets on": ["SSLSessionTickets on"],
    "cache off, tickets on": ["SSLSessionCache none", "SSLSessionTickets on"],
    "cache off, tickets off": ["SSLSessionCache none", "SSLSessionTickets off"],
}


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(f"apache-advisor {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-800:]}")
    return done


def trial(workdir: Path, name: str, args: argparse.Namespace) -> dict:
    protocol = ["SSLProtocol -all +TLSv1.2"] if args.tls12 else []
    sets = [item for line in ["KeepAlive Off", *protocol, *SETTINGS[name]] for item in ("--set", line)]
    done = cli("bench", "--workdir", str(workdir), "--tls", "--workload", "almeida", "--num-calls", str(args.calls),
               "--think", f"{args.think:g}", "--rate", f"{args.rate:g}", "--duration", f"{args.duration:g}",
               "--format", "json", *sets, check=False)
    docs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if not docs:
        return {"setting": name, "error": done.stderr.strip()[-400:]}
    doc = docs[-1]
    tls = doc.get("tls") or {}
    return {"setting": name, "valid": doc.get("valid"), "reply_rate": doc.get("reply_rate"),
            "full_per_s": tls.get("full_handshakes_per_s"), "resumed_per_s": tls.get("resumed_handshakes_per_s"),
            "full": tls.get("full_handshakes"), "resumed": tls.get("resumed_handshakes"),
            "tls_version": tls.get("version"), "cpu_per_reply_ms": doc.get("server_cpu_per_reply_ms"),
            "handshake_share": tls.get("handshake_cpu_share"), "reply_time_ms": doc.get("reply_time_ms"),
            "verdict": (doc.get("verdict") or {}).get("label")}


def median_of(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def table(results: dict[str, list[dict]], args: argparse.Namespace) -> None:
    print(f"{args.mpm}, --cpu-quota {args.cpu_quota:g}, HTTPS ({args.tls_key}{', TLS 1.2 only' if args.tls12 else ''}), "
          f"KeepAlive Off, sessions of "
          f"{args.calls} requests ({args.think:g} s think) at {args.rate:g} sessions/s for {args.duration:g} s; "
          f"medians of {args.rounds} randomized interleaved rounds\n")
    print("| setting | TLS | full / resumed handshakes/s | resumed share | server CPU per reply "
          "| handshakes' share of CPU | replies/s | verdict |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, rows in results.items():
        good = [r for r in rows if "error" not in r]
        if not good:
            print(f"| {name} | failed: {rows[0].get('error')} | | | | | | |")
            continue
        full, resumed = median_of(good, "full_per_s"), median_of(good, "resumed_per_s")
        share = resumed / (full + resumed) if full is not None and resumed is not None and full + resumed else None
        cpu_share = median_of(good, "handshake_share")
        print(f"| {name} | {good[0].get('tls_version') or '?'} | {number(full)} / {number(resumed)} | "
              f"{number(100 * share if share is not None else None)} % | "
              f"{number(median_of(good, 'cpu_per_reply_ms'), 3)} ms | "
              f"{number(100 * cpu_share if cpu_share is not None else None)} % | "
              f"{number(median_of(good, 'reply_rate'))} | "
              f"{', '.join(sorted({str(r.get('verdict')) for r in good}))} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mpm", default="prefork")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu-quota", type=float, default=50.0)
    parser.add_argument("--rate", type=float, default=20.0, help="sessions a second (below the knee)")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--think", type=float, default=0.2)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=58)
    parser.add_argument("--tls-key", default="ecdsa-p256", help="the sandbox's key (staging up --tls-key)")
    parser.add_argument("--tls12", action="store_true", help="TLS 1.2 only (SSLProtocol -all +TLSv1.2)")
    parser.add_argument("--json", help="write each trial's figures here, one JSON line each")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="advisor-tls-resume-"))
    base.chmod(0o755)  # the workers (www-data) enter the sandbox
    workdir = base / "sandbox"
    results: dict[str, list[dict]] = {name: [] for name in SETTINGS}
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            cli("staging", "up", "--workdir", str(workdir), "--mpm", args.mpm, "--tls", "--tls-key", args.tls_key,
                "--cpu-quota", f"{args.cpu_quota:g}")
            for round_index in range(args.rounds):
                for name in rng.sample(list(SETTINGS), len(SETTINGS)):
                    figures = trial(workdir, name, args)
                    figures["round"] = round_index + 1
                    results[name].append(figures)
                    print(json.dumps(figures), file=sys.stderr, flush=True)
                    if args.json:
                        with open(args.json, "a") as out:
                            out.write(json.dumps(figures) + "\n")
        finally:
            cli("staging", "down", "--workdir", str(workdir), check=False)
            shutil.rmtree(base, ignore_errors=True)
    table(results, args)


if __name__ == "__main__":
    main()
