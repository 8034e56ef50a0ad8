"""The interval the gain and the ablations use (tuner/stats/ratio.py): a t
interval on the log ratio, its variance pooled and floored, right with the
two to five runs a side a session affords (issue 56)."""

from __future__ import annotations

import math

import pytest

from advisor.tuner.session.gain import Replicates, measure_gain
from advisor.tuner.stats.ratio import bracket_sd, paired_interval, ratio_interval


def test_a_seventeenfold_gain_in_two_runs_a_side_is_seen():
    """The session that threw away x17: the start read 251.3 twice, the
    event MPM 4,675 and 3,939. Fieller's interval with Welch's single
    degree of freedom read it as -1.48 to 35.75; the log interval holds
    the ratio, stays positive and lies above 1."""
    gain = measure_gain(Replicates([251.3, 251.3], [4675.0, 3939.0]))
    assert gain.ratio == pytest.approx(math.sqrt(4675.0 * 3939.0) / 251.3)
    assert 0 < gain.low < 17.1 < gain.high
    assert gain.low > 1.0 and gain.excludes_one
    assert gain.df == 2  # pooled: two runs a side give two degrees of freedom, not Welch's one


def test_the_old_method_missed_it():
    """The same runs through the copy of the old method kept for the
    simulation: no positive lower bound, so the gain read as noise."""
    from advisor.tuner.stats.coverage import fieller_welch_interval

    _, low, high = fieller_welch_interval([251.3, 251.3], [4675.0, 3939.0])
    assert low is None or low <= 1.0 <= high


def test_identical_runs_on_both_sides_give_the_floors_width():
    floor = bracket_sd(0.1)
    interval = ratio_interval([900.0, 900.0, 900.0], [900.0, 900.0, 900.0], floor_sd=floor)
    assert interval.floored and interval.sd_log == pytest.approx(floor)
    assert interval.ratio == pytest.approx(1.0) and interval.low < 1.0 < interval.high
    assert math.isfinite(interval.low) and math.isfinite(interval.high)
    from scipy.stats import t

    half = t.ppf(0.975, 4) * floor * math.sqrt(2 / 3)
    assert math.log(interval.high) == pytest.approx(half) and math.log(interval.low) == pytest.approx(-half)
    # A wider floor, a wider interval: the floor, not the runs, set it.
    wider = ratio_interval([900.0] * 3, [900.0] * 3, floor_sd=2 * floor)
    assert math.log(wider.high) == pytest.approx(2 * half)


def test_rounds_back_to_back_cancel_a_drift_the_unpaired_interval_cannot():
    """Both sides slow 3 % a round (the host drifting) while the other side
    stays 6 % ahead in every round: the paired interval sees the 6 %
    beyond noise, the unpaired one counts the drift as spread."""
    rounds = 5
    base = [1000.0 * 0.97 ** r for r in range(rounds)]
    other = [1060.0 * 0.97 ** r * (1.0 + 0.004 * (-1) ** r) for r in range(rounds)]
    floor = 0.005  # runs precise to half a per cent
    paired = paired_interval(list(zip(base, other)), floor_sd=floor)
    unpaired = ratio_interval(base, other, floor_sd=floor)
    assert paired.low <= 1.06 <= paired.high and paired.low > 1.0
    assert unpaired.low < 1.0 < unpaired.high
    assert paired.half_width < unpaired.half_width / 3


# ---- the simulation of coverage and power (tuner/stats/coverage.py) -----------------------


@pytest.mark.parametrize("ratio, noise, runs", [(1.0, 0.20, 2), (1.5, 0.10, 3), (1.25, 0.20, 5), (2.0, 0.10, 4)])
def test_the_interval_covers_the_truth_95_times_in_100(ratio, noise, runs):
    """Where the noise is above the floor the floor does not widen the
    interval, and its coverage is the nominal 95 % within chance."""
    from advisor.tuner.stats.coverage import binomial_margin, simulate_cell

    cell = simulate_cell(ratio, noise, runs, comparisons=3000, seed=5)
    assert abs(cell.coverage - 0.95) <= binomial_margin(3000)


def test_identical_runs_on_a_knee_grid_do_not_make_the_interval_overconfident():
    """A base whose runs mostly land on one knee rate: the floor keeps the
    coverage at 95 % or above, where the old method fell below it."""
    from advisor.tuner.stats.coverage import binomial_margin, simulate_cell

    cell = simulate_cell(1.0, 0.03, 4, "quantised", comparisons=3000, seed=5)
    assert cell.coverage >= 0.95 - binomial_margin(3000)
    assert cell.old_coverage < 0.95 - binomial_margin(3000, z=1.0)


def test_two_runs_a_side_see_half_again_more_often_than_the_old_method():
    from advisor.tuner.stats.coverage import simulate_cell

    cell = simulate_cell(1.5, 0.10, 2, comparisons=3000, seed=5)
    assert cell.power > 0.5 > cell.old_power


def test_the_simulation_does_the_sessions_arithmetic():
    """The vectorised bounds are ratio_interval's, row by row, and the old
    method's copy reproduces the session that lost x17."""
    import numpy as np

    from advisor.tuner.stats.coverage import fieller_welch_interval, log_t_bounds

    rng = np.random.default_rng(3)
    base, other = np.exp(rng.normal(7.0, 0.1, (5, 3))), np.exp(rng.normal(7.2, 0.1, (5, 3)))
    low, high = log_t_bounds(base, other, floor_sd=0.02)
    for row in range(5):
        interval = ratio_interval(list(base[row]), list(other[row]), floor_sd=0.02)
        assert (math.log(interval.low), math.log(interval.high)) == pytest.approx((low[row], high[row]))
    ratio, old_low, old_high = fieller_welch_interval([251.3, 251.3], [4675.0, 3939.0])
    assert ratio == pytest.approx(17.14, abs=0.01) and old_low == pytest.approx(-1.47, abs=0.01)
    assert old_high == pytest.approx(35.75, abs=0.01)
