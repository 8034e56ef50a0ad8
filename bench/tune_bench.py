"""The tuner against random search and a grid, on the real sandbox (issue 11, "The benchmark").

Not a test: it takes the better part of an hour per start. For each start (a
deliberately misconfigured prefork server, and Debian's stock prefork
settings) it measures the start as written and a grid over the dimensions
that matter, then runs the Bayesian tuner and random search at the same
trial budget for several seeds, and prints per seed and as medians: start,
tuner, random, best of grid, tuner/best, tuner/start, and the time each took.

Every point is measured by the tune session's own trial objective
(advisor.tuner.trial.objective.TrialObjective) under tune's default workload
(almeida-sessions: the sandbox's Almeida file set, 5 requests per session,
0.2 s think time, HTTP/1.0 when the config closes after every reply) and its
default objective (the peak sustainable session rate under the SLO, told as
the served reply rate). Each search gets a fresh objective that knows only
the start's peak, as a session knows it after its first trial; the grid's
knee searches start from the best peak found so far, as the tuner's do.

A search's best is the highest of its noisy measurements, so `--confirm N`
measures each search's best point and the grid's N times more, interleaved,
and prints their means: the fair comparison of the points.

`--confirm-seeds N` (issue 56) confirms each seed as soon as its searches
end, in the same sandbox: the tuner's and random search's best points, N
rounds each, in an order drawn per round, then the paired 95 % interval of
tuner/random over the rounds (ahead, within noise or behind) and whether the
tuner's searched figure for its point lies within its reported uncertainty
of the confirmed mean (its own, plus the run-to-run spread of the
confirmation runs, as a session's report checks it: session/figure_check).
Each seed is one JSON line in `--json` when it ends, so a long benchmark
can be run a few seeds at a time (`--seed-list`) and summed up with
`--from FILE`.

    sudo .venv/bin/python bench/tune_bench.py --starts stock --seed-list 0,1 --skip-grid --allow-mpm-switch \
        --tls --rtt 50 --cpu-quota 50 --confirm-seeds 5 --json bench/results/tune-bench-seeds.jsonl
    .venv/bin/python bench/tune_bench.py --from bench/results/tune-bench-seeds.jsonl
    sudo .venv/bin/python bench/tune_bench.py --seeds 3 --budget 15 --cpu-quota 50 --confirm 3
    sudo .venv/bin/python bench/tune_bench.py --allow-mpm-switch --tls --rtt 50 --cpu-quota 50 --confirm 3
    sudo .venv/bin/python bench/tune_bench.py --starts stock --confirm-from figures.jsonl --cpu-quota 50
    .venv/bin/python bench/tune_bench.py --grid-dims KeepAlive --budget 2 --seeds 1 --duration 2   # smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

# The installed package, not this checkout's advisor/ put first on the path:
# tuner/ is advisor.tuner only once installed, so a regular install run from
# here failed on its first import (an editable one hid it).

from advisor.config.load_options import LoadOptions
from advisor.config.loader import load_config
from advisor.tuner.search.optimizer import SearchSettings, make_searcher, run_search
from advisor.tuner.search.simulated import default_levels, grid
from advisor.tuner.search.space_derive import derive_space
from advisor.tuner.search.space_lint import CandidateLint
from advisor.tuner.staging.httpd_binary import find_httpd, find_modules_dir
from advisor.tuner.staging.sandbox import Sandbox
from advisor.tuner.staging.managed_config import ManagedConfig
from advisor.tuner.staging.target import SandboxTarget
from advisor.tuner.trial.objective import TrialObjective, point_key
from advisor.tuner.trial.objective_spec import ObjectiveSpec, ProbeSettings
from advisor.tuner.trial.session_workload import make_session_workload
from seed_confirm import observation as _observation

# The worst practice. MaxConnectionsPerChild 100 and MaxRequestWorkers 8
# lie below the space's guards (lint calls MaxConnectionsPerChild <= 1,000 an
# error), so the searches start from the clipped point; the measured start
# runs the config as written.
WORST = ["StartServers 8", "MinSpareServers 8", "MaxSpareServers 8", "MaxRequestWorkers 8", "ServerLimit 8",
         "KeepAlive Off", "MaxConnectionsPerChild 100", "HostnameLookups On"]
# Debian's mods-available/mpm_prefork.conf and apache2.conf defaults.
STOCK = ["StartServers 5", "MinSpareServers 5", "MaxSpareServers 10", "MaxRequestWorkers 150",
         "MaxConnectionsPerChild 0", "KeepAlive On", "KeepAliveTimeout 5", "MaxKeepAliveRequests 100",
         "HostnameLookups Off"]
START_DIRECTIVES = {"worst": WORST, "stock": STOCK}
# HostnameLookups is left out: on loopback the reverse lookup is answered from
# /etc/hosts, so it costs nothing here (a real client network is another matter).
GRID_DIMS = "KeepAlive,MaxConnectionsPerChild,MaxRequestWorkers"
# With --allow-mpm-switch (issue 28): the MPM x KeepAlive x pool grid.
MPM_GRID_DIMS = "MPM,KeepAlive,MaxRequestWorkers"
# Levels of the grid per dimension (others: --levels per range, every choice).
GRID_LEVELS = {"MaxConnectionsPerChild": [1001, 1_000_000]}


def write_config(directory: Path, name: str, directives: list[str]) -> Path:
    modules = find_modules_dir(find_httpd())
    path = directory / f"{name}.conf"
    path.write_text(f'LoadModule mpm_prefork_module "{modules}/mod_mpm_prefork.so"\n' + "\n".join(directives) + "\n")
    return path


@contextmanager
def start_sandbox(name: str, directives: list[str], args, work: Path):
    """The sandbox running `directives`, its space and lint, and a maker of
    trial objectives on it; stopped and removed on the way out."""
    config = write_config(work, name, directives)
    cfg = load_config(str(config), LoadOptions(apache_version="2.4"))
    bounds = {mpm: args.ram_workers for mpm in ("prefork", "worker", "event")} if args.allow_mpm_switch \
        else args.ram_workers
    space = derive_space(cfg, bounds, allow_mpm_switch=args.allow_mpm_switch)
    lint = CandidateLint(cfg, space)
    sandbox_dir = Path(tempfile.mkdtemp(prefix=f"aa-tb-{name}-", dir="/tmp"))
    os.chmod(sandbox_dir, 0o755)
    sandbox = Sandbox(sandbox_dir)
    sandbox.up(source_config=str(config), mpm="prefork", server_cpus=[0], cpu_quota_pct=args.cpu_quota,
               tls=args.tls)
    try:
        from advisor.tuner.load.roundtrips import RTT_ADDED

        target = SandboxTarget(sandbox)
        workload = make_session_workload("almeida-sessions", sandbox_dir)
        probes = ProbeSettings(duration_s=args.duration, start_rate=args.start_rate, max_probes=args.max_probes)
        # --rtt: the SLO judges the client-perceived reply time (docs/tune.md, "The objective").
        objective_spec = ObjectiveSpec(rtt_ms=args.rtt, rtt_how=RTT_ADDED) if args.rtt else ObjectiveSpec()
        with ManagedConfig(target) as managed:
            def fresh(incumbent=None) -> TrialObjective:
                return TrialObjective(target, managed, space, workload, objective_spec, probes,
                                      server_cpus=[0], client_cpus=[1], incumbent=incumbent)

            yield space, lint, fresh
    finally:
        sandbox.down()
        shutil.rmtree(sandbox_dir, ignore_errors=True)


def confirm(name: str, directives: list[str], figures: dict, args, work: Path) -> None:
    """Measure again the best point of each search and of the grid, `--confirm`
    times each, interleaved, every run a knee search from its own peak with no
    ceiling. A search's best is the highest of its noisy measurements (a
    search that never replicates keeps its luckiest); these runs are not
    chosen by their value, so they compare the points fairly."""
    points: dict[str, dict] = {"grid": figures["grid_point"]}
    for row in figures["seeds"]:
        for kind in ("bayesian", "random"):
            if row.get(f"{kind}_point"):
                points[f"{kind} seed {row['seed']}"] = row[f"{kind}_point"]
    with start_sandbox(name, directives, args, work) as (space, lint, fresh):
        objective = fresh()
        objective.uncapped = True
        # Each point's first search starts near its searched peak (in sessions/s), later ones from their own.
        base = objective.base
        calls = base.wsess[1] if base.wsess else max(1, base.num_calls)
        for label, point in points.items():
            searched = _searched(figures, label)
            if searched > 0:
                objective.peaks[point_key(space, point)] = [searched / calls]
        runs: dict[str, list[float]] = {label: [] for label in points}
        for round_ in range(args.confirm):
            for label, point in points.items():
                outcome = objective(dict(point))
                objective.learn(_observation(point, outcome))
                runs[label].append(outcome.objective if outcome.valid else float("nan"))
                print(f"{name:6} confirm {round_ + 1}/{args.confirm} {label}: {runs[label][-1]:8.1f} replies/s",
                      flush=True)
    for label, values in runs.items():
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        print(f"{name:6} confirmed {label:16}: mean {statistics.fmean(values):8.1f} replies/s, sd {sd:6.1f} "
              f"(searched best {_searched(figures, label):8.1f})", flush=True)


def _searched(figures: dict, label: str) -> float:
    """The value the benchmark recorded for a point `confirm` labels ("grid", "random seed 0")."""
    if label == "grid":
        return float(figures["grid"])
    kind, _, seed = label.split()
    row = next(r for r in figures["seeds"] if str(r["seed"]) == seed)
    return float(row.get(kind, float("nan")))


def one_start(name: str, directives: list[str], args, work: Path) -> dict:
    figures: dict = {"name": name}
    with start_sandbox(name, directives, args, work) as (space, lint, fresh):
        first = fresh()
        t0 = time.monotonic()
        outcome = first(dict(space.start), list(directives))
        figures["start"] = outcome.objective
        figures["start_s"] = time.monotonic() - t0
        start_peak = (outcome.details.get("knee") or {}).get("peak_rate")
        why = "" if outcome.valid else f"; invalid: {outcome.details.get('invalid_reasons')}"
        print(f"{name:6} start as written: {outcome.objective:8.1f} replies/s (peak {start_peak} sessions/s, "
              f"{outcome.verdict}{why}) in {figures['start_s']:.0f} s", flush=True)
        seeded = {point_key(space, space.start): [float(start_peak)]} if start_peak else {}

        dims = [d for d in args.grid_dims.split(",") if d in space.names]
        levels = {k: v for k, v in default_levels(space, args.levels).items() if k in dims}
        levels.update({k: v for k, v in GRID_LEVELS.items() if k in levels})
        points = [p for p in grid(space, levels) if not lint.check(p).errors]
        if args.skip_grid:
            points = [dict(space.start)]
        on_grid = fresh()
        on_grid.peaks.update(seeded)
        t0 = time.monotonic()
        grid_values = []
        for point in points:
            result = on_grid(point)
            on_grid.learn(_observation(point, result))
            grid_values.append(result.objective if result.valid else 0.0)
        figures["grid"] = max(grid_values)
        figures["grid_point"] = points[grid_values.index(figures["grid"])]
        figures["grid_points"] = len(points)
        figures["grid_s"] = time.monotonic() - t0
        print(f"{name:6} grid: best {figures['grid']:.1f} replies/s of {len(points)} points in "
              f"{figures['grid_s']:.0f} s at {figures['grid_point']}", flush=True)
        figures["seeds"] = []
        seeds = [int(x) for x in args.seed_list.split(",")] if args.seed_list else list(range(args.seeds))
        for seed in seeds:
            row = {"seed": seed}
            for kind in args.searches.split(","):
                settings = SearchSettings(budget=args.budget, seed=seed)
                searcher = make_searcher(kind, space, settings)
                objective = fresh(incumbent=lambda s=searcher: (s.incumbent() or (None,))[0])
                objective.peaks.update({k: list(v) for k, v in seeded.items()})
                t0 = time.monotonic()
                result = run_search(searcher, objective, check=lambda p: lint.check(p).errors,
                                    on_trial=objective.learn)
                row[kind] = float(result.best_objective or 0.0)
                row[f"{kind}_s"] = time.monotonic() - t0
                row[f"{kind}_trials"] = len(result.observations)
                row[f"{kind}_point"] = result.best
                row[f"{kind}_searched"] = searched_figure(space, result)
                row[f"{kind}_stop"] = result.stop_reason + (f": {result.advice}" if result.advice else "")
                if len(result.observations) < args.budget:
                    last = result.observations[-1] if result.observations else None
                    print(f"{name:6} seed {seed} {kind} stopped after {len(result.observations)} trials: "
                          f"{row[kind + '_stop']}"
                          + (f"; last trial's reasons: {last.details.get('invalid_reasons')}" if last else ""),
                          flush=True)
            figures["seeds"].append(row)
            print_seed(name, figures, row)
            if args.confirm_seeds:
                from seed_confirm import confirm_seed

                confirmed = confirm_seed(space, fresh, row, args.confirm_seeds, seed)
                if args.json:
                    with open(args.json, "a") as out:
                        out.write(json.dumps({"kind": "seed", "name": name, "start": figures["start"],
                                              "args": _run_args(args), **row, **confirmed}, default=str) + "\n")
            print(f"{name:6} seed {seed} points: tuner {row.get('bayesian_point')}, random {row.get('random_point')}",
                  flush=True)
    return figures


def searched_figure(space, result) -> dict | None:
    """The search's own figure for its best point: the mean of its valid
    measurements there, with the uncertainty they reported (averaged over
    them), and a bound when every one of them was one."""
    if result.best is None:
        return None
    key = point_key(space, result.best)
    found = [o for o in result.observations if o.valid and o.objective and point_key(space, o.point) == key]

    def uncertainty(o) -> dict:
        return (o.details or {}).get("uncertainty") or {}

    exact = [o for o in found if not uncertainty(o).get("bound")]
    bound = None if exact else (uncertainty(found[0]).get("bound") if found else None)
    exact = exact or found
    if not exact:
        return None
    known = [float(v) for v in (uncertainty(o).get("rel_sd") for o in exact) if v is not None]
    return {"figure": statistics.fmean(float(o.objective) for o in exact), "count": len(exact),
            "rel_sd": (sum(v * v for v in known) ** 0.5 / len(known)) if known else None, "bound": bound,
            "trials": [o.trial for o in exact]}


def _run_args(args) -> dict:
    return {k: getattr(args, k) for k in ("budget", "allow_mpm_switch", "tls", "rtt", "cpu_quota", "duration",
                                          "confirm_seeds")}


def _over(value: float, base: float) -> float:
    """value / base; nan where the base served nothing (a start that holds no
    rate under the SLO, as the worst-practice one over TLS at 50 ms)."""
    return value / base if base else float("nan")


def print_seed(name: str, figures: dict, row: dict) -> None:
    best, start = figures["grid"], figures["start"]
    nan = float("nan")
    tuner, random = row.get("bayesian", nan), row.get("random", nan)
    print(f"{name:6} seed {row['seed']}: start {start:8.1f}  tuner {tuner:8.1f}  random {random:8.1f}  "
          f"grid {best:8.1f}  tuner/best {_over(tuner, best):5.2f}  tuner/start {_over(tuner, start):6.2f}  "
          f"time tuner {row.get('bayesian_s', nan):6.0f} s ({row.get('bayesian_trials', 0)} trials), "
          f"random {row.get('random_s', nan):6.0f} s ({row.get('random_trials', 0)} trials)", flush=True)


def print_medians(figures: dict) -> None:
    rows = figures["seeds"]
    nan = float("nan")
    med = {k: statistics.median(r.get(k, nan) for r in rows) for k in ("bayesian", "random", "bayesian_s", "random_s")}
    ratio_best = statistics.median(_over(r.get("bayesian", nan), figures["grid"]) for r in rows)
    ratio_start = statistics.median(_over(r.get("bayesian", nan), figures["start"]) for r in rows)
    beats = sum(1 for r in rows if r.get("bayesian", nan) > r.get("random", nan))
    reach = sum(1 for r in rows if r.get("bayesian", nan) >= 0.95 * figures["grid"])
    print(f"{figures['name']:6} median: start {figures['start']:8.1f}  tuner {med['bayesian']:8.1f}  "
          f"random {med['random']:8.1f}  grid {figures['grid']:8.1f} ({figures['grid_points']} points, "
          f"{figures['grid_s']:.0f} s)  tuner/best {ratio_best:5.2f}  tuner/start {ratio_start:6.2f}  "
          f"time tuner {med['bayesian_s']:.0f} s, random {med['random_s']:.0f} s; tuner >= 95 % of grid in "
          f"{reach} of {len(rows)} seeds, beats random in {beats}", flush=True)


def _stop_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C, so that each start's sandbox is stopped by its finally."""
    import signal

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def main() -> int:
    _stop_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", default="worst,stock", help="worst, stock or both (comma-separated)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=15, help="trials per search")
    parser.add_argument("--grid-dims", default=None,
                        help=f"dimensions of the grid (comma-separated; default {GRID_DIMS}, with "
                             f"--allow-mpm-switch {MPM_GRID_DIMS})")
    parser.add_argument("--allow-mpm-switch", action="store_true",
                        help="the MPM as a dimension: prefork, worker and event (a switch is a full restart)")
    parser.add_argument("--tls", action="store_true", help="the sandbox serves HTTPS and the load uses it")
    parser.add_argument("--rtt", type=float, default=0.0, help="the clients' round trip in ms (tune --rtt)")
    parser.add_argument("--levels", type=int, default=3, help="levels per numeric grid dimension")
    parser.add_argument("--duration", type=float, default=3.0, help="measured seconds per knee probe (tune's default)")
    parser.add_argument("--max-probes", type=int, default=4, help="probes per knee search from a known peak")
    parser.add_argument("--start-rate", type=float, default=10.0, help="sessions/s of the first probe")
    parser.add_argument("--ram-workers", type=int, default=256, help="the RAM bound on MaxRequestWorkers")
    parser.add_argument("--seed-list", default=None, help="these seeds (comma-separated) instead of 0..--seeds-1")
    parser.add_argument("--searches", default="bayesian,random", help="which searches to run per seed")
    parser.add_argument("--skip-grid", action="store_true", help="no grid (a diagnostic run)")
    parser.add_argument("--json", default=None, help="append each start's figures to this file (JSON lines)")
    parser.add_argument("--cpu-quota", type=float, default=None, help="percent of core 0 for httpd (root)")
    parser.add_argument("--confirm", type=int, default=0,
                        help="then measure each search's best point and the grid's this many times more, interleaved")
    parser.add_argument("--confirm-seeds", type=int, default=0,
                        help="confirm each seed's tuner and random points this many rounds each, interleaved, "
                             "as soon as its searches end (one JSON line a seed in --json)")
    parser.add_argument("--from", dest="from_file", default=None,
                        help="summarise the seed lines of this --json file; measure nothing")
    parser.add_argument("--confirm-from", default=None,
                        help="no searches: confirm the points of the starts in this --json file")
    args = parser.parse_args()
    if args.from_file:
        from seed_confirm import summarise

        print("\n".join(summarise([json.loads(line) for line in Path(args.from_file).read_text().splitlines()
                                   if line.strip()])))
        return 0
    if args.confirm_seeds == 1:
        parser.error("--confirm-seeds needs at least 2 rounds (a paired interval)")
    if args.grid_dims is None:
        args.grid_dims = MPM_GRID_DIMS if args.allow_mpm_switch else GRID_DIMS
    unknown = set(args.starts.split(",")) - set(START_DIRECTIVES)
    if unknown:
        parser.error(f"--starts: unknown {', '.join(sorted(unknown))} (worst, stock)")
    work = Path(tempfile.mkdtemp(prefix="aa-tune-bench-"))
    t0 = time.monotonic()
    try:
        if args.confirm_from:
            args.confirm = args.confirm or 3
            for line in Path(args.confirm_from).read_text().splitlines():
                figures = json.loads(line)
                if figures["name"] in args.starts.split(","):
                    confirm(figures["name"], START_DIRECTIVES[figures["name"]], figures, args, work)
            return 0
        for name in args.starts.split(","):
            figures = one_start(name, START_DIRECTIVES[name], args, work)
            if args.confirm:
                confirm(name, START_DIRECTIVES[name], figures, args, work)
            print_medians(figures)
            print(f"{name:6} figures: " + json.dumps({k: v for k, v in figures.items() if k != "seeds"}, default=str),
                  flush=True)
            if args.json:
                with open(args.json, "a") as out:
                    out.write(json.dumps(figures, default=str) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"total {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
