"""How much more of the log's own demand a pool holds: `capacity --log`'s headroom.

The demand is the log's busiest minute (its rate, and the time a request
held its worker). The model is the worker-pool model of workerpool_model.py
with the log's hold time as the wait of each request: c = MaxRequestWorkers
workers, the listen queue behind them, arrivals Poisson (or the paper's
MMPP-2 bursts around that rate). A CPU the requests share would stretch the
hold time as load grows; the log cannot tell CPU from waiting, so the figure
assumes the hold times stay as logged (say so; `--fit` a bench for the CPU).

The growth factor is the multiple of that rate at which the model first
predicts more than 1 % of connections refused or, with a target, a mean
response time above it. Both grow with the rate, so bisection finds it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.capacity.queueing_model import Arrivals
from advisor.capacity.workerpool_model import ServerModel, solve

BLOCKING_LIMIT = 0.01
# Bisection stops when the bracket is this narrow, relative to the factor.
RELATIVE_PRECISION = 1e-4
MAX_STEPS = 200
LARGEST_FACTOR = 2.0 ** 40


@dataclass
class Headroom:
    """The growth factor for one pool size."""

    label: str
    workers: int
    factor: float
    """Multiple of the base rate where the limit is first passed (inf: never)."""
    rate: float
    """The base rate times the factor (req/s)."""
    limited_by: str
    """'blocking' or 'response time' (or 'hold time' when no load meets the target)."""
    blocking_now: float
    """Blocking the model predicts at the base rate itself."""
    response_now: float
    busy_now: float
    """Busy workers the model predicts at the base rate."""


def violates(rate: float, model: ServerModel, workers: int, arrivals: Arrivals,
             target_response: float | None, blocking_limit: float = BLOCKING_LIMIT) -> str | None:
    """Which limit the model passes at `rate`, or None."""
    result = solve([rate], model, workers, arrivals)[0]
    if result.blocking > blocking_limit:
        return "blocking"
    if target_response is not None and result.response_time > target_response:
        return "response time"
    return None


def growth_factor(base_rate: float, model: ServerModel, workers: int, label: str, *,
                  arrivals: Arrivals = Arrivals("poisson"), target_response: float | None = None,
                  blocking_limit: float = BLOCKING_LIMIT) -> Headroom:
    """The smallest g (to RELATIVE_PRECISION) with the model past a limit at g x base_rate."""
    if not base_rate > 0:
        raise ValueError("the base rate must be > 0")
    now = solve([base_rate], model, workers, arrivals)[0]

    def past(g: float) -> str | None:
        return violates(g * base_rate, model, workers, arrivals, target_response, blocking_limit)

    if target_response is not None and model.hold_time - model.reply_tail > target_response:
        return Headroom(label, workers, 0.0, 0.0, "hold time", now.blocking, now.response_time, now.busy_workers)
    low, high = 0.0, 1.0
    steps = 0
    while past(high) is None:
        low, high = high, high * 2
        steps += 1
        if high > LARGEST_FACTOR or steps > MAX_STEPS:
            return Headroom(label, workers, math.inf, math.inf, "", now.blocking, now.response_time,
                            now.busy_workers)
    while high - low > RELATIVE_PRECISION * high and steps < MAX_STEPS:
        middle = (low + high) / 2
        if past(middle) is None:
            low = middle
        else:
            high = middle
        steps += 1
    return Headroom(label, workers, high, high * base_rate, past(high) or "", now.blocking, now.response_time,
                    now.busy_workers)
