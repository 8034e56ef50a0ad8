"""The searches on a simulated host that drifts as this VM does (issue 56, "The optimizer is told each trial's noise").

Not a test. For each start (Debian's stock prefork settings and the issue's
worst practice, as bench/tune_bench.py writes them) and each seed, it runs
at the same trial budget:

- random: random search after the same first points;
- today: the Bayesian search as before issue 56, one learnt white-noise
  level for every trial and replicates only at the end of the budget;
- noise: the GP told each trial's own variance, without the early re-measure;
- new: each trial's variance and the early re-measure of a surprise.

Every search of one seed meets the same host (tuner/search/simulated.py's
`drifting_host`: its speed drifts a few per cent a minute with jumps, each
trial draws its own spread, one in ten is wide, and each reports its spread)
with the same seed. A search's choice is judged by the noise-free,
drift-free peak of the point it chose, as a share of the best of a grid over
the space (the same grid for every search); each row prints it, and the
summary gives the mean, median and worst share, the seeds in which the choice
reached 95 % of the grid's best, and how often each search is at least as
good as random search and as today's search (within 1 %).

    .venv/bin/python bench/search_drift.py --seeds 20 --budget 15 [--starts stock,worst]
    .venv/bin/python bench/search_drift.py --seeds 10 --allow-mpm-switch --grid-levels 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
M = "/usr/lib/apache2/modules"
# Debian's stock prefork settings and the worst practice (tune_bench.py's STOCK and WORST).
STARTS = {
    "stock": ["StartServers 5", "MinSpareServers 5", "MaxSpareServers 10", "MaxRequestWorkers 150",
              "MaxConnectionsPerChild 0", "KeepAlive On", "KeepAliveTimeout 5", "MaxKeepAliveRequests 100",
              "HostnameLookups Off", "CustomLog /var/log/apache2/access.log combined"],
    "worst": ["StartServers 8", "MinSpareServers 8", "MaxSpareServers 8", "MaxRequestWorkers 8", "ServerLimit 8",
              "KeepAlive Off", "MaxConnectionsPerChild 100", "HostnameLookups On",
              "CustomLog /var/log/apache2/access.log combined"],
}
SEARCHES = ("random", "today", "noise", "new")
TIE = 0.01
"""Two choices within 1 % of each other's true peak count as equal."""


def make_space(name: str, work: Path, host, allow_mpm_switch: bool):
    from advisor.config import LoadOptions, load_config
    from advisor.tuner.search.space_derive import derive_space

    folder = work / name
    folder.mkdir(parents=True, exist_ok=True)
    conf = folder / "apache2.conf"
    conf.write_text(f"LoadModule mpm_prefork_module {M}/mod_mpm_prefork.so\n" + "\n".join(STARTS[name]) + "\n")
    cfg = load_config(str(conf), LoadOptions(server_root=str(folder)))
    ram = dict(host.ram_workers) if allow_mpm_switch else host.ram_workers["prefork"]
    return derive_space(cfg, ram, allow_mpm_switch=allow_mpm_switch)


def grid_best(space, host, per_range: int) -> float:
    from advisor.tuner.search.simulated import SimulatedObjective, best_of_grid, default_levels, grid

    levels = default_levels(space, per_range=per_range)
    levels.pop("StartServers", None)  # it shapes only the first seconds after a start
    return best_of_grid(SimulatedObjective(space, host), grid(space, levels))[1]


def one_search(kind: str, space, host, seed: int, budget: int):
    from advisor.tuner.search.optimizer import SearchSettings, make_searcher, run_search
    from advisor.tuner.search.simulated import SimulatedObjective

    settings = SearchSettings(budget=budget, seed=seed)
    if kind == "today":
        settings = replace(settings, observation_noise=False, early_remeasure=False)
    elif kind == "noise":
        settings = replace(settings, early_remeasure=False)
    searcher = make_searcher("random" if kind == "random" else "bayesian", space, settings)
    objective = SimulatedObjective(space, host, seed=seed)
    result = run_search(searcher, objective)
    early = sum(1 for i, o in enumerate(result.observations)
                if o.origin == "replicate" and i > 0 and result.observations[i - 1].point == o.point
                and i < budget - int(settings.replicate_share * budget))
    searched = result.best_objective or 0.0
    return objective.true_value(result.best), searched, early


def run_start(name: str, args, work: Path) -> dict[str, list[float]]:
    from advisor.tuner.search.simulated import drifting_host

    host = drifting_host()
    space = make_space(name, work, host, args.allow_mpm_switch)
    best = grid_best(space, host, args.grid_levels)
    shares: dict[str, list[float]] = {kind: [] for kind in args.searches}
    print(f"\n{name} start: best of grid {best:,.0f}/s; per seed, the chosen point's true peak as a share of it")
    print("seed  " + "  ".join(f"{kind:>14}" for kind in args.searches) + "   early re-measures (new)")
    for seed in args.seed_list:
        row = []
        early_new = 0
        for kind in args.searches:
            true, searched, early = one_search(kind, space, host, seed, args.budget)
            shares[kind].append(true / best)
            row.append(f"{true / best:>7.1%} ({searched / best:>4.0%})")
            if kind == "new":
                early_new = early
        print(f"{seed:>4}  " + "  ".join(f"{cell:>14}" for cell in row) + f"   {early_new}")
    print("(in brackets: the figure the search read for its choice, as a share of the grid's best)")
    return shares


def summary(name: str, shares: dict[str, list[float]]) -> None:
    print(f"\n{name}: {'search':>7} {'mean':>7} {'median':>7} {'worst':>7} {'>=95%':>6} {'>=random':>9} {'>=today':>8}")
    for kind, values in shares.items():
        count = len(values)
        reached = sum(v >= 0.95 for v in values)
        versus = {other: sum(v >= w - TIE for v, w in zip(values, shares[other])) if other in shares else None
                  for other in ("random", "today")}
        cells = [f"{versus[o]}/{count}" if versus[o] is not None else "-" for o in ("random", "today")]
        print(f"{'':>{len(name) + 1}} {kind:>7} {statistics.mean(values):>7.1%} {statistics.median(values):>7.1%} "
              f"{min(values):>7.1%} "
              f"{reached:>3}/{count:<2} {cells[0]:>9} {cells[1]:>8}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=15)
    parser.add_argument("--starts", default="stock,worst")
    parser.add_argument("--searches", default=",".join(SEARCHES))
    parser.add_argument("--allow-mpm-switch", action="store_true")
    parser.add_argument("--grid-levels", type=int, default=3,
                        help="levels per numeric dimension of the reference grid (2 with the MPM switch: "
                             "3 makes 17 million points)")
    args = parser.parse_args(argv)
    args.searches = [s for s in args.searches.split(",") if s]
    starts = [s for s in args.starts.split(",") if s]
    unknown = [s for s in args.searches if s not in SEARCHES] + [s for s in starts if s not in STARTS]
    if unknown or args.seeds < 1 or args.budget < 1:
        print(f"search_drift.py: unknown search or start {unknown}, or no seeds or budget "
              f"(searches: {', '.join(SEARCHES)}; starts: {', '.join(STARTS)})", file=sys.stderr)
        return 2
    args.seed_list = list(range(args.first_seed, args.first_seed + args.seeds))
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="search-drift-") as work:
        results = {name: run_start(name, args, Path(work)) for name in starts}
    for name, shares in results.items():
        summary(name, shares)
    print(f"\n{len(args.seed_list)} seeds, budget {args.budget}, "
          f"{'MPM switch allowed, ' if args.allow_mpm_switch else ''}{time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
