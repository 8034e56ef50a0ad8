"""One seed of bench/tune_bench.py confirmed, and the seeds summed up (issue 56).

After a seed's two searches, the tuner's and random search's best points run
again, `rounds` times each, one of each per round in an order drawn for that
round (randomized interleaved trials: Abedi & Brecht, ICPE 2017), every run a
knee search from the point's own peak with no ceiling. The tuner's point
against random's is the paired 95 % interval of the rounds' log ratios
(advisor.tuner.stats.ratio.paired_interval): "ahead" when it lies above 1,
"behind" below, else "within noise". The tuner's searched figure for its
point is held to the confirmed mean as a session's report holds its
figures (session/figure_check): within 2 x its own uncertainty combined
with the run-to-run spread the confirmation runs pooled.
"""

from __future__ import annotations

import math
import random
import statistics
from typing import Any, Callable

from advisor.tuner.session.figure_check import pooled_log_sd
from advisor.tuner.stats.ratio import paired_interval
from advisor.tuner.trial.objective import point_key
from advisor.tuner.trial.precision import CHECK_FACTOR, agrees

KINDS = ("bayesian", "random")


def observation(point, outcome):
    """A trial's outcome as the optimizer's Observation, for the objective to learn its peak."""
    from advisor.tuner.search.optimizer import Observation

    return Observation(trial=0, point=dict(point), objective=outcome.objective, valid=outcome.valid,
                       verdict=outcome.verdict, details=outcome.details)


def confirm_seed(space, fresh: Callable[..., Any], row: dict, rounds: int, seed: int) -> dict:
    """Run the seed's two best points `rounds` times each, interleaved; the
    comparison and the searched figure's check, as a dict for the JSON line."""
    points = {kind: row.get(f"{kind}_point") for kind in KINDS if row.get(f"{kind}_point")}
    if len(points) < 2:
        return {"confirm": None, "why": "a search ended without a best point"}
    objective = fresh()
    objective.uncapped = True
    base = objective.base
    calls = base.wsess[1] if base.wsess else max(1, base.num_calls)
    for kind, point in points.items():
        searched = (row.get(f"{kind}_searched") or {}).get("figure") or row.get(kind)
        if searched:
            objective.peaks[point_key(space, point)] = [float(searched) / calls]
    order_rng = random.Random(f"confirm {seed}")
    runs: dict[str, list[float]] = {kind: [] for kind in points}
    orders = []
    for number in range(rounds):
        order = list(points)
        order_rng.shuffle(order)
        orders.append(order)
        for kind in order:
            outcome = objective(dict(points[kind]))
            objective.learn(observation(points[kind], outcome))
            runs[kind].append(float(outcome.objective) if outcome.valid and outcome.objective else float("nan"))
            print(f"  confirm {number + 1}/{rounds} {kind}: {runs[kind][-1]:8.1f} replies/s", flush=True)
    return {"confirm": runs, "orders": orders, **judge(row, runs)}


def judge(row: dict, runs: dict[str, list[float]]) -> dict:
    """The comparison and the check from the confirmation runs (pure: the summary recomputes it)."""
    pairs = [(r, b) for b, r in zip(runs.get("bayesian", []), runs.get("random", []))
             if b == b and r == r and b > 0 and r > 0]
    out: dict[str, Any] = {"pairs": len(pairs)}
    if len(pairs) >= 2:
        interval = paired_interval(pairs)
        out.update(ratio=interval.ratio, low=interval.low, high=interval.high,
                   verdict="ahead" if interval.low > 1 else "behind" if interval.high < 1 else "within noise")
    else:
        out["verdict"] = "undetermined"
    spread = run_to_run([v for v in runs.values()])
    out["run_to_run"] = spread
    searched = row.get("bayesian_searched")
    mine = [v for v in runs.get("bayesian", []) if v == v and v > 0]
    if searched and searched.get("rel_sd") is not None and mine:
        mean = statistics.fmean(mine)
        own = float(searched["rel_sd"])
        count = max(1, int(searched.get("count") or 1))
        held = math.sqrt(own ** 2 + (spread or 0.0) ** 2 * (1.0 / count + 1.0 / len(mine)))
        out["searched_check"] = {"figure": searched["figure"], "own_rel_sd": own, "held_to": held,
                                 "confirmed": mean, "gap": mean / float(searched["figure"]) - 1.0,
                                 "within": agrees(float(searched["figure"]), mean,
                                                  {"rel_sd": held, "bound": searched.get("bound")})}
    return out


def run_to_run(groups: list[list[float]]) -> float | None:
    """The pooled deviation of the log figures of each point's runs (failed runs left out)."""
    pooled = pooled_log_sd([[math.log(v) for v in values if v == v and v > 0] for values in groups])
    return pooled.sd if pooled else None


def summarise(lines: list[dict]) -> list[str]:
    """The issue's criteria per start, over the seed lines of a --json file."""
    seeds = [line for line in lines if line.get("kind") == "seed" and line.get("confirm")]
    out = ["| start | seeds | tuner >= random (ahead or within noise) | ahead | behind | "
           "geometric mean tuner/random | searched figure within its uncertainty | tuner trials, min |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in sorted({line["name"] for line in seeds}):
        mine = [line for line in seeds if line["name"] == name]
        judged = [judge(line, line["confirm"]) for line in mine]
        ratios = [j["ratio"] for j in judged if j.get("ratio")]
        verdicts = [j["verdict"] for j in judged]
        checks = [j["searched_check"]["within"] for j in judged if j.get("searched_check")]
        minutes = statistics.median(line.get("bayesian_s", 0.0) for line in mine) / 60
        geometric = math.exp(statistics.fmean(math.log(r) for r in ratios)) if ratios else float("nan")
        out.append(f"| {name} | {len(mine)} ({', '.join(str(line['seed']) for line in mine)}) | "
                   f"{sum(v in ('ahead', 'within noise') for v in verdicts)} of {len(verdicts)} | "
                   f"{verdicts.count('ahead')} | {verdicts.count('behind')} | x{geometric:.3f} | "
                   f"{sum(checks)} of {len(checks)} (2 x the combined deviation; factor {CHECK_FACTOR:g}) | "
                   f"{minutes:.1f} |")
    out += ["", "| start | seed | tuner confirmed | random confirmed | tuner/random (95 % CI) | verdict | "
                "tuner searched | gap | held to | within |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for line in sorted(seeds, key=lambda one: (one["name"], one["seed"])):
        j = judge(line, line["confirm"])
        conf = {kind: statistics.fmean(v for v in line["confirm"][kind] if v == v) for kind in KINDS}
        check = j.get("searched_check") or {}
        interval = (f"x{j['ratio']:.3f} ({j['low']:.3f} to {j['high']:.3f})" if j.get("ratio") else "-")
        out.append(f"| {line['name']} | {line['seed']} | {conf['bayesian']:,.1f} | {conf['random']:,.1f} | "
                   f"{interval} | {j['verdict']} | {check.get('figure', float('nan')):,.1f} | "
                   f"{100 * check.get('gap', float('nan')):+.1f} % | ± {100 * check.get('held_to', float('nan')):.1f} % | "
                   f"{check.get('within', '-')} |")
    return out
