"""The knee search's choice of rates (KneeBracket), on a server whose peak is known.

The policy is pure: it sees whether a rate passed and the share of the offer
the server served. A server of capacity C passes every rate up to C and
serves C of a higher offer; the real searches are in the load tests
(test_slow_endpoint, test_bench_findings).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.tuner.trial.knee import KneeBracket


def search(capacity: float, start: float, step: float, *, hint: bool = True, budget: int = 30,
           served_when_over: float = 1.0):
    """`served_when_over`: the share of its capacity a pool pushed past its peak serves."""
    bracket = KneeBracket(max_rate=20000.0, tolerance=0.1, step=step)
    rate: float | None = start
    rates = []
    while rate is not None and len(rates) < budget:
        rates.append(rate)
        passed = rate <= capacity
        share = 1.0 if passed or not hint else served_when_over * capacity / rate
        rate = bracket.next_rate(rate, passed, share)
    return bracket, rates


def test_a_peak_near_the_guess_is_bracketed_in_fewer_probes_with_small_steps():
    # A replicate starts from the point's own earlier peak, which a run can find 5 % up or down.
    # The SLO is missed by the reply time while every request is served (no share to go by).
    for capacity in (95.0, 100.0, 105.0):
        small, small_rates = search(capacity, 100.0, 1.2, hint=False)
        doubling, doubling_rates = search(capacity, 100.0, 2.0, hint=False)
        assert small.lo <= capacity < small.hi and (small.hi - small.lo) / small.lo <= 0.1
        assert doubling.lo <= capacity < doubling.hi
        assert len(small_rates) <= 4 < len(doubling_rates), (small_rates, doubling_rates)


def test_a_peak_far_below_the_guess_is_reached_through_what_the_server_served():
    # An ablation run of the winner less MaxConnectionsPerChild: a fifth of the winner's peak.
    bracket, rates = search(20.0, 100.0, 1.2)
    assert bracket.lo <= 20.0 < bracket.hi
    assert len(rates) <= 4, rates
    # Without the served share, only the squared steps bring it down: still bounded, but longer.
    blind, blind_rates = search(20.0, 100.0, 1.2, hint=False)
    assert blind.lo <= 20.0 < blind.hi and len(blind_rates) > len(rates)


def test_a_peak_far_above_the_guess_is_reached_by_squared_steps():
    bracket, rates = search(900.0, 100.0, 1.2)
    assert bracket.lo <= 900.0 < bracket.hi
    assert rates[1:4] == pytest.approx([120.0, 172.8, 2 * 172.8])  # 1.2, then 1.44, then at most 2


@settings(max_examples=300, deadline=None)
@given(capacity=st.floats(min_value=2.0, max_value=5000.0), start=st.floats(min_value=1.0, max_value=5000.0),
       step=st.sampled_from([1.2, 1.5, 2.0]), hint=st.booleans())
def test_every_search_ends_with_the_peak_inside_a_bracket_within_the_tolerance(capacity, start, step, hint):
    bracket, rates = search(capacity, start, step, hint=hint)
    assert len(rates) <= 20, rates
    assert bracket.lo is not None and bracket.hi is not None
    assert bracket.lo <= capacity < bracket.hi
    # Integer midpoints can stop a bracket of small rates short of the tolerance.
    assert (bracket.hi - bracket.lo) / bracket.lo <= 0.1 or bracket.reason == "bracket cannot be split further"


def test_a_first_step_of_the_tolerance_brackets_a_peak_within_it_in_two_probes():
    """tune's replicate and ablation runs: the point's own earlier peak was
    the lower end of a bracket of 10 %, so the true one lies within 10 % of
    it, and a first step of 1.1 closes the bracket with the next probe (a
    step of 1.2 needed a third, to halve a bracket of 20 %)."""
    for capacity in (407.75, 420.0, 447.0, 380.0):
        bracket, rates = search(capacity, 407.75, 1.1, hint=False)
        assert bracket.lo <= capacity < bracket.hi
        assert len(rates) == 2, rates
        wide, wide_rates = search(capacity, 407.75, 1.2, hint=False)
        assert len(wide_rates) == 3, wide_rates
    # Near miss: a peak beyond the tolerance takes more probes, and is still bracketed.
    far, far_rates = search(480.0, 407.75, 1.1, hint=False)
    assert far.lo <= 480.0 < far.hi and len(far_rates) > 2


def collapsing_search(capacity: float, start: float, step: float, served_when_over: float) -> list[float]:
    bracket, rates = search(capacity, start, step, served_when_over=served_when_over)
    assert bracket.lo <= capacity < bracket.hi
    return rates


def test_a_start_at_its_own_peak_that_collapses_steps_down_once_not_to_what_it_served():
    """The KeepAlive Off comparison's third round, on a fresh clone: a start at
    the earlier peak (5,893/s) served 3,979/s, the next probe went to 95 % of
    that and took three more to climb back. A replicate's peak moves by a few
    per cent, so one step down brackets it."""
    for capacity in (5600.0, 5800.0, 5400.0):
        rates = collapsing_search(capacity, 5893.0, 1.1, served_when_over=0.65)
        assert rates[1] == pytest.approx(5893.0 / 1.1) and len(rates) <= 3, rates
    # Near miss: a start from a guess (a step beyond the tolerance) still goes
    # down through what the server served, which reaches a peak far below.
    guessed = collapsing_search(1000.0, 5893.0, 1.25, served_when_over=0.9)
    assert guessed[1] == pytest.approx(0.95 * 900.0), guessed
    # An own-peak start whose peak fell to a third is still bracketed (the
    # second failure goes down through what it served), in one probe more.
    fallen = collapsing_search(2000.0, 5893.0, 1.1, served_when_over=0.65)
    assert fallen[2] == pytest.approx(0.95 * 1300.0) and len(fallen) <= 10, fallen
