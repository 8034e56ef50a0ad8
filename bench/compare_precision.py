"""How precise `bench --compare` is on this host: A/A and A/B comparisons (issue 56).

Runs, on a sandbox (prefork, held to --quota % of a core, HTTPS), the
tuner's default objective (the peak rate of 5-request sessions over
Almeida's file set with 0.2 s think time, mean reply time under 100 ms
with visitors --rtt ms away):
- A/A: the config against itself; a comparison that reports a difference
  at 95 % is a false one;
- A/B, `--ab pool` (the default): MaxRequestWorkers 120 against 150 at
  the same quota. Both pools bind long before half a core runs out (the
  sandbox's 256 workers bind at about 1,250 replies/s, half a core serves
  1,300 or more): each kept-alive session holds a worker for its four think
  times, so by Little's law the peak is the pool over a session's length,
  and the predicted ratio is 150 / 120 = x1.25;
- A/B, `--ab quota`: the same config at --quota against --quota-b, both
  sides with --ab-lines (MaxRequestWorkers 512), a predicted ratio of
  quota-b / quota where the server's CPU is the limit. Measured on
  2026-12-07 it was not a known difference on this host: with the sandbox's
  own 256 workers the sessions held every worker before half a core ran out
  whenever the host ran fast (the whole core and half of it read 1,248-1,271
  and 1,169-1,215 replies/s), and with 512 workers the rounds' ratios of 45
  to 50 % ran from x0.61 to x1.10 within 12 minutes while the CPU-speed
  reference on the server's core stood still (1.569 ms): the throughput a
  CFS quota buys a prefork pool moved on its own. Each design is summed up
  apart, with its own prediction;
interleaved (A/A, A/B, A/A, ...) so that both see the same hours of the
host.
Each comparison is `apache-advisor bench --compare ... --format json`; its
document is appended to --out as one JSON line. The summary sets beside
the comparisons' own result (figures read inside the knee's bracket,
paired rounds) the same rounds with each search's passing probe as its
figure, and today's single trial a side (the first round's two figures).
`--from FILE` summarises a file of earlier comparisons without measuring.

    python bench/compare_precision.py --comparisons 20 --out /tmp/compare.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


from advisor.tuner.stats.ratio import bracket_sd, paired_interval

LOAD = ["--tls", "--workload", "almeida", "--num-calls", "5", "--think", "0.2", "--slo-ms", "100"]
AB_LINES = "MaxRequestWorkers 512; ServerLimit 512"
POOL_A = "MaxRequestWorkers 120; ServerLimit 120"
POOL_B = "MaxRequestWorkers 150; ServerLimit 150"


def predicted_ratio(document: dict) -> float | None:
    """B/A as the design predicts it: the quotas' ratio where they differ
    (the server's CPU the limit), else the pools' (Little's law, the pool the limit)."""
    sides = document.get("sides") or []
    if len(sides) != 2:
        return None
    quotas = [side.get("quota_pct") for side in sides]
    if None not in quotas and quotas[0] != quotas[1]:
        return quotas[1] / quotas[0]
    pools = []
    for side in sides:
        found = re.search(r"MaxRequestWorkers\s+(\d+)", "; ".join(side.get("directives") or []))
        pools.append(int(found.group(1)) if found else None)
    if None in pools or pools[0] == pools[1]:
        return None
    return pools[1] / pools[0]
TODAY_TOLERANCE = 0.1
"""Today's search calls two single figures different when they are more than a knee bracket apart."""


def advisor_command() -> list[str]:
    here = Path(sys.executable).parent / "apache-advisor"
    found = str(here) if here.exists() else shutil.which("apache-advisor")
    if not found:
        raise SystemExit("compare_precision: apache-advisor is not installed beside this Python")
    return [found]


def run_comparison(kind: str, args: argparse.Namespace, seed: int) -> dict:
    command = advisor_command() + ["bench", "--workdir", args.workdir, "--rtt", str(args.rtt), *LOAD,
                                   "--format", "json", "--seed", str(seed), "--precision", str(args.precision),
                                   "--max-rounds", str(args.max_rounds), "--tolerance", str(args.tolerance)]
    if kind == "aa":
        command += ["--compare", "-", "-"]
    elif args.ab == "pool":
        command += ["--compare", POOL_A, POOL_B]
    else:
        command += ["--compare-quota", str(args.quota), str(args.quota_b)]
        if args.ab_lines:
            command += ["--compare", args.ab_lines, args.ab_lines]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=args.max_rounds * 300)
    if done.returncode not in (0, 1):
        raise SystemExit(f"compare_precision: bench --compare failed ({done.returncode}): "
                         f"{done.stderr.strip().splitlines()[-1:]}")
    document = json.loads(done.stdout)
    document["bench_kind"] = kind
    document["wall_s"] = round(time.monotonic() - started, 1)
    return document


CORRECTED = "corrected"
"""Not a key of the run: its figure times the geometric mean of its CPU-speed
reference readings (ms of the fixed work), so that a core that ran slower
for a while does not read as a slower config."""


def _value(run: dict, key: str) -> float | None:
    if key != CORRECTED:
        return run.get(key)
    readings = [float(v) for v in run.get("reference_ms") or [] if v and v > 0]
    if not run.get("figure") or not readings:
        return None
    return float(run["figure"]) * math.exp(statistics.fmean(math.log(v) for v in readings))


def _pairs(document: dict, key: str) -> list[tuple[float, float]]:
    pairs = []
    for one in document["rounds"]:
        a, b = _value(one["runs"].get("A", {}), key), _value(one["runs"].get("B", {}), key)
        if a and b:
            pairs.append((float(a), float(b)))
    return pairs


def _design(document: dict) -> str:
    """The directives both sides ran, as the document's sides name them ('' for the config as it is)."""
    lines = list(dict.fromkeys("; ".join(side.get("directives") or []) for side in document.get("sides", [])))
    return lines[0] if len(lines) == 1 else " | ".join(lines)


def _title(kind: str, design: str) -> str:
    if kind == "aa":
        return "A/A (the config against itself)" + (f", {design}" if design else "")
    if " | " in design:
        return f"A/B (pool): {design.replace(' | ', ' against ')}"
    if design:
        return f"A/B (quota), both sides with {design}"
    return "A/B (quota) on the sandbox's own 256 workers (the pool bound first on fast hours: kept apart)"


def _summary(documents: list[dict], kind: str, tolerance: float, design: str) -> list[str]:
    chosen = [d for d in documents if d.get("bench_kind") == kind and _design(d) == design]
    if not chosen:
        return []
    predicted = predicted_ratio(chosen[0]) if kind == "ab" else None
    lines = [f"### {_title(kind, design)}: {len(chosen)} comparisons", "",
             "| method | differences reported | median half-width | median rounds | holds the prediction |",
             "| --- | --- | --- | --- | --- |"]
    for label, key in (("paired rounds, figure inside the bracket (bench --compare)", "figure"),
                       ("paired rounds, passing probe's figure", "passing_figure"),
                       ("paired rounds, figure x CPU reference (the cores' drift taken out)", CORRECTED)):
        intervals = []
        for document in chosen:
            pairs = _pairs(document, key)
            if len(pairs) >= 2:
                intervals.append(paired_interval(pairs, floor_sd=bracket_sd(tolerance)))
        if not intervals:
            continue
        reported = sum(1 for i in intervals if i.excludes_one)
        holds = (f"{sum(1 for i in intervals if i.low <= predicted <= i.high)} of {len(intervals)}"
                 if predicted else "")
        lines.append(f"| {label} | {reported} of {len(intervals)} | "
                     f"±{100 * statistics.median(i.half_width for i in intervals):.1f} % | "
                     f"{statistics.median(len(d['rounds']) for d in chosen):g} | {holds} |")
    singles = [math.log(p[0][1] / p[0][0]) for p in (_pairs(d, "passing_figure") for d in chosen) if p]
    if len(singles) >= 2:
        spread = 1.96 * statistics.stdev(singles)
        apart = sum(1 for s in singles if abs(s) > math.log1p(TODAY_TOLERANCE))
        lines.append(f"| today: one knee search a side (the first round) | {apart} of {len(singles)} "
                     f"beyond ±{TODAY_TOLERANCE:.0%} | ±{100 * math.expm1(spread):.1f} % (1.96 sd of the single "
                     f"ratios) | 1 | |")
    minutes = statistics.median(d.get("wall_s", 0) for d in chosen) / 60
    lines += ["", f"Median wall time of a comparison: {minutes:.1f} minutes."]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comparisons", type=int, default=20, help="A/A comparisons, and as many A/B")
    parser.add_argument("--workdir", default="/tmp/compare-precision", help="the sandbox's work directory")
    parser.add_argument("--quota", type=float, default=50.0)
    parser.add_argument("--quota-b", type=float, default=45.0)
    parser.add_argument("--rtt", type=float, default=50.0)
    parser.add_argument("--precision", type=float, default=0.05)
    parser.add_argument("--max-rounds", type=int, default=15)
    parser.add_argument("--tolerance", type=float, default=0.1)
    parser.add_argument("--ab", choices=("pool", "quota"), default="pool",
                        help=f"the A/B's known difference: the pool ({POOL_A} against {POOL_B}) or the quota")
    parser.add_argument("--ab-lines", default=AB_LINES,
                        help="the directives both A/B sides run ('' for the config as it is)")
    parser.add_argument("--kinds", default="aa,ab", help="aa, ab or both (aa,ab)")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seed of the first comparison (to add to a file of earlier ones without repeating a seed)")
    parser.add_argument("--minutes", type=float, default=None,
                        help="start no comparison after this many minutes (a session's share of a long measurement)")
    parser.add_argument("--out", default="compare-precision.jsonl")
    parser.add_argument("--from", dest="from_file", help="summarise this JSON-lines file; measure nothing")
    args = parser.parse_args(argv)
    if args.from_file:
        documents = [json.loads(line) for line in Path(args.from_file).read_text().splitlines() if line.strip()]
    else:
        _measure(args)
        # The summary covers the whole file: comparisons add up across sessions.
        documents = [json.loads(line) for line in Path(args.out).read_text().splitlines() if line.strip()]
    for kind in ("aa", "ab"):
        for design in sorted({_design(d) for d in documents if d.get("bench_kind") == kind}, reverse=True):
            for line in _summary(documents, kind, args.tolerance, design):
                print(line)
            print()
    return 0


def _measure(args: argparse.Namespace) -> list[dict]:
    command = advisor_command()
    up = subprocess.run(command + ["staging", "up", "--mpm", "prefork", "--cpu-quota", str(args.quota), "--tls",
                                   "--workdir", args.workdir], capture_output=True, text=True, timeout=120)
    if up.returncode != 0:
        raise SystemExit(f"compare_precision: staging up failed: {up.stderr.strip()}")
    documents: list[dict] = []
    kinds = [k for k in args.kinds.split(",") if k in ("aa", "ab")]
    deadline = time.monotonic() + 60 * args.minutes if args.minutes else math.inf
    try:
        with open(args.out, "a") as out:
            for index in range(args.first_seed, args.first_seed + args.comparisons):
                for kind in kinds:
                    if time.monotonic() >= deadline:
                        print(f"compare_precision: {args.minutes:g} minutes spent; stopped before {kind} "
                              f"seed {index}", file=sys.stderr)
                        return documents
                    document = run_comparison(kind, args, seed=index)
                    documents.append(document)
                    out.write(json.dumps(document) + "\n")
                    out.flush()
                    print(f"{kind} seed {index}: {document['verdict']} x{document.get('ratio') or 0:.3f} "
                          f"(±{100 * (document.get('half_width') or 0):.1f} %, {len(document['rounds'])} rounds, "
                          f"{document['wall_s'] / 60:.1f} min)", file=sys.stderr)
    finally:
        subprocess.run(command + ["staging", "down", "--workdir", args.workdir], capture_output=True, timeout=120)
    return documents


if __name__ == "__main__":
    sys.exit(main())
