"""What the TLS session cache and session tickets buy: handshakes and server CPU (issue 58).

Not a test. One sandbox (`staging up --tls`, prefork, server on core 0 held to
--cpu-quota of it), and four settings of its own SSLSessionCache and
SSLSessionTickets lines, rewritten in httpd.conf and the server restarted
(tls_setup.set_session_resumption; the managed include cannot take the
cache away, since mod_ssl ignores an `SSLSessionCache none` read after a
cache line):

- a: shmcb cache, tickets off (Debian's ssl.conf with Mozilla's tickets setting);
- b: cache none, tickets off (nothing can resume: every handshake is full);
- c: cache none, tickets on (resumption by stateless tickets alone);
- d: shmcb cache, tickets on (httpd's default for tickets beside Debian's cache).

The clients are OpenSSL's own, on core 1, counted on the client side, so a
ticket resumption counts as well as a cache hit:

- `openssl s_time -new` for --seconds: every connection a full handshake and
  one GET of /1k.html; its rate is the full handshakes a second this server
  makes at its quota;
- `openssl s_time -reuse`: every connection offers the session of the one
  before it (s_time keeps one SSL object, so under TLS 1.3 it offers the
  newest ticket); it marks each connection `r` when the server resumed, so
  the resumed handshakes are counted, not assumed;
- a chain of --chain `openssl s_client -sess_out/-sess_in` connections with
  a GET each, every one offering the session the previous one saved, as a
  browser does: whether the case resumes at all, with no s_time involved.

The server's CPU is read from its cgroup around each s_time run and divided
by its connections (one reply each). mod_ssl's cache counters (mod_status
`?auto`) are read around each run too: the cross-check, which must match
`r` where the cache does the resuming and stays at zero where tickets do.
Each round runs the cases in a random order, each case's TLS versions and
modes in a random order too (randomized interleaved rounds); the table shows
medians and, in brackets, the lowest and highest round.

    .venv/bin/python bench/tls_resumption.py --rounds 1 --seconds 2      # a check, about 1 minute
    .venv/bin/python bench/tls_resumption.py --json bench/results/tls-resumption-DATE.jsonl   # about 6 minutes
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

LOCK = "/tmp/advisor-load.lock"
PAGE = "/1k.html"
CLIENT_CORE = "1"


@dataclass(frozen=True)
class Case:
    key: str
    label: str
    cache: bool
    tickets: bool


CASES = (
    Case("a", "shmcb cache, tickets off", cache=True, tickets=False),
    Case("b", "cache none, tickets off", cache=False, tickets=False),
    Case("c", "cache none, tickets on", cache=False, tickets=True),
    Case("d", "shmcb cache, tickets on", cache=True, tickets=True),
)
VERSIONS = {"1.3": "-tls1_3", "1.2": "-tls1_2"}
MODES = ("new", "reuse")

_MARKS = re.compile(r"[r*t3]+")
_TOTAL = re.compile(r"^(\d+) connections in [\d.]+s; [\d.]+ connections/user sec, bytes read (\d+)", re.M)


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(f"apache-advisor {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-800:]}")
    return done


def set_case(sandbox, case: Case) -> None:
    from advisor.tuner.staging import tls_setup

    tls_setup.set_session_resumption(sandbox.config_path, sandbox.work_dir / "run", cache=case.cache,
                                     tickets=case.tickets)
    sandbox.restart()
    if tls_setup.session_resumption(sandbox.config_path) != (case.cache, case.tickets):
        raise SystemExit(f"case {case.key}: httpd.conf does not hold the case's lines")


def cache_counters(port: int) -> dict[str, int] | None:
    """mod_ssl's cache counters from mod_status, on a connection of its own (one full handshake)."""
    import requests
    import urllib3

    from advisor.tuner.measure.tls_probe import cache_counters as parsed

    urllib3.disable_warnings()
    try:
        text = requests.get(f"https://127.0.0.1:{port}/server-status?auto", verify=False, timeout=5).text
    except requests.RequestException:
        return None
    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    return parsed(fields)


def s_time(port: int, version: str, mode: str, seconds: float, cpu_s) -> dict:
    """One s_time run: its connections, how many resumed, the wall time and the server's CPU."""
    command = ["taskset", "-c", CLIENT_CORE, "openssl", "s_time", "-connect", f"127.0.0.1:{port}", f"-{mode}",
               "-time", f"{seconds:g}", "-www", PAGE, VERSIONS[version]]
    before_counters, before_cpu = cache_counters(port), cpu_s()
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    wall = time.monotonic() - started
    after_cpu, after_counters = cpu_s(), cache_counters(port)
    total = _TOTAL.search(done.stdout)
    if done.returncode != 0 or total is None:
        return {"error": (done.stderr or done.stdout).strip()[-300:]}
    connections, bytes_read = int(total.group(1)), int(total.group(2))
    # s_time marks each timed connection: r resumed, * (t, 3 for older versions) full.
    resumed = sum(line.count("r") for line in done.stdout.splitlines() if _MARKS.fullmatch(line))
    row = {"connections": connections, "wall_s": round(wall, 3), "conn_per_s": round(connections / wall, 1),
           "resumed": resumed, "full": connections - resumed, "bytes_per_conn": bytes_read // max(1, connections),
           "server_cpu_s": None, "cpu_per_reply_ms": None, "server_cores_busy": None}
    if before_cpu is not None and after_cpu is not None:
        used = after_cpu - before_cpu
        row.update(server_cpu_s=round(used, 4), cpu_per_reply_ms=round(1000 * used / max(1, connections), 4),
                   server_cores_busy=round(used / wall, 3))
    if before_counters and after_counters:
        # The after-reading's own connection is a full handshake the counters may already show.
        row["cache_hits"] = after_counters["CacheRetrieveHitCount"] - before_counters["CacheRetrieveHitCount"]
        row["cache_stores"] = after_counters["CacheStoreCount"] - before_counters["CacheStoreCount"]
    return row


def chain(port: int, version: str, length: int, work: Path) -> list[bool]:
    """A browser's reconnects: each connection offers the session the last one saved; True where resumed."""
    session = work / "session.pem"
    session.unlink(missing_ok=True)
    resumed: list[bool] = []
    for _ in range(length):
        command = ["taskset", "-c", CLIENT_CORE, "openssl", "s_client", "-connect", f"127.0.0.1:{port}",
                   VERSIONS[version], "-ign_eof", "-sess_out", str(session)]
        if session.is_file() and session.stat().st_size:
            command += ["-sess_in", str(session)]  # absent where the server gave nothing to resume
        done = subprocess.run(command, input=f"GET {PAGE} HTTP/1.0\r\n\r\n", capture_output=True, text=True,
                              timeout=30)
        resumed.append(any(line.startswith("Reused,") for line in done.stdout.splitlines()))
    return resumed


def run_case(sandbox, port: int, case: Case, args: argparse.Namespace, rng: random.Random, work: Path,
             round_index: int) -> list[dict]:
    set_case(sandbox, case)
    quota = sandbox.cpu_quota()
    cpu_s = quota.usage_s if quota is not None else (lambda: None)
    rows = []
    for version in rng.sample(list(VERSIONS), len(VERSIONS)):
        links = chain(port, version, args.chain, work)
        for mode in rng.sample(MODES, len(MODES)):
            row = {"round": round_index, "case": case.key, "setting": case.label, "tls": version, "mode": mode,
                   "load_1min": round(os.getloadavg()[0], 2)}
            row.update(s_time(port, version, mode, args.seconds, cpu_s))
            row["chain_resumed"] = sum(links[1:])
            row["chain_offers"] = len(links) - 1
            rows.append(row)
    return rows


def spread(rows: list[dict], key: str, digits: int) -> str:
    values = [r[key] for r in rows if r.get(key) is not None]
    if not values:
        return "-"
    mid = statistics.median(values)
    if len(values) == 1:
        return f"{mid:,.{digits}f}"
    return f"{mid:,.{digits}f} ({min(values):,.{digits}f}-{max(values):,.{digits}f})"


def capacity(rows: list[dict], quota_pct: float) -> str:
    """Replies a second the quota allows at the median CPU per reply: the server's own ceiling."""
    values = [r["cpu_per_reply_ms"] for r in rows if r.get("cpu_per_reply_ms")]
    return f"{quota_pct / 100 * 1000 / statistics.median(values):,.0f}" if values else "-"


def table(rows: list[dict], args: argparse.Namespace) -> None:
    print(f"\nprefork, server on core 0 at --cpu-quota {args.cpu_quota:g}, clients on core 1, ECDSA P-256, "
          f"{PAGE} once per connection, s_time runs of {args.seconds:g} s; medians (lowest-highest) of "
          f"{args.rounds} randomized interleaved rounds; 'at quota' = the quota over the CPU per reply\n")
    print("| case | TLS | -new: CPU per reply | full/s at quota | full/s, one client | -reuse: resumed share "
          "| CPU per reply | resumed/s at quota | resumed/s, one client | cache hits / resumed | chain resumed |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for case in CASES:
        for version in VERSIONS:
            mine = [r for r in rows if r["case"] == case.key and r["tls"] == version and "error" not in r]
            new = [r for r in mine if r["mode"] == "new"]
            reuse = [r for r in mine if r["mode"] == "reuse"]
            for r in reuse:
                r["resumed_share"] = r["resumed"] / max(1, r["connections"])
                r["resumed_per_s"] = r["resumed"] / r["wall_s"]
            hits = sum(r.get("cache_hits", 0) for r in reuse)
            resumed = sum(r["resumed"] for r in reuse)
            links = f"{sum(r['chain_resumed'] for r in reuse)} of {sum(r['chain_offers'] for r in reuse)}"
            print(f"| {case.key}: {case.label} | {version} | {spread(new, 'cpu_per_reply_ms', 3)} ms "
                  f"| {capacity(new, args.cpu_quota)} | {spread(new, 'conn_per_s', 0)} "
                  f"| {spread(reuse, 'resumed_share', 2)} | {spread(reuse, 'cpu_per_reply_ms', 3)} ms "
                  f"| {capacity(reuse, args.cpu_quota) if resumed else '-'} | {spread(reuse, 'resumed_per_s', 0)} "
                  f"| {hits:,} / {resumed:,} | {links} |")
    errors = [r for r in rows if "error" in r]
    if errors:
        print(f"\n{len(errors)} runs failed, the first: {errors[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0, help="each s_time run's length")
    parser.add_argument("--chain", type=int, default=6, help="connections in each browser-like s_client chain")
    parser.add_argument("--cpu-quota", type=float, default=50.0)
    parser.add_argument("--max-minutes", type=float, default=20.0, help="no round starts after this")
    parser.add_argument("--seed", type=int, default=58)
    parser.add_argument("--json", help="append each run's figures here, one JSON line each")
    args = parser.parse_args()
    if args.rounds < 1 or not 0 < args.seconds <= 60 or args.chain < 2:
        parser.error("--rounds at least 1, --seconds in (0, 60], --chain at least 2")
    from advisor.tuner.staging.sandbox import Sandbox

    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="advisor-tls-resume-"))
    base.chmod(0o755)  # the workers (www-data) enter the sandbox
    workdir = base / "sandbox"
    rows: list[dict] = []
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        deadline = time.monotonic() + 60 * args.max_minutes
        try:
            cli("staging", "up", "--workdir", str(workdir), "--mpm", "prefork", "--tls", "--server-cpus", "0",
                "--cpu-quota", f"{args.cpu_quota:g}")
            sandbox = Sandbox(workdir)
            port = sandbox.load_state().port
            for round_index in range(1, args.rounds + 1):
                if time.monotonic() > deadline:
                    print(f"--max-minutes reached: {round_index - 1} rounds", file=sys.stderr)
                    break
                for case in rng.sample(CASES, len(CASES)):
                    for row in run_case(sandbox, port, case, args, rng, base, round_index):
                        row["commit"] = commit
                        rows.append(row)
                        print(json.dumps(row), file=sys.stderr, flush=True)
                        if args.json:
                            with open(args.json, "a") as out:
                                out.write(json.dumps(row) + "\n")
        finally:
            cli("staging", "down", "--workdir", str(workdir), check=False)
            shutil.rmtree(base, ignore_errors=True)
    table(rows, args)


if __name__ == "__main__":
    main()
