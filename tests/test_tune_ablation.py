"""The ablations: which of the winner's changes earned the gain, measured.

The arithmetic is the gain's (Fieller's interval on a ratio of means); what
these tests hold is the order the runs go in, what counts as an effect, and
the decision each effect leads to.
"""

from __future__ import annotations

import pytest

from advisor.tuner.session.ablation import (WINNER, ablation_order, dimension_of, measure_effects,
                                            role_without)


def test_every_round_measures_each_point_once_and_rotates_the_ablations():
    names = ["KeepAlive", "ListenBacklog", "MaxConnectionsPerChild"]
    order = ablation_order(names, 6)
    rounds = [order[i:i + 4] for i in range(0, len(order), 4)]
    for index, r in enumerate(rounds):
        # Every other round backwards: it begins with the point the last one
        # ended on, whose warm pool it keeps.
        assert (r[0] if index % 2 == 0 else r[-1]) == WINNER
        assert sorted(dimension_of(x) for x in r if x != WINNER) == names
        if index:
            assert r[0] == rounds[index - 1][-1]
    # No change is always measured right next to the winner's warm pool.
    beside_winner = [dimension_of(r[1] if index % 2 == 0 else r[-2]) for index, r in enumerate(rounds)]
    assert len(set(beside_winner)) == 3
    with pytest.raises(ValueError):
        ablation_order(["KeepAlive"], 0)


def _runs(winner: list[float], without: dict[str, list[float]]) -> list[tuple[str, float, bool]]:
    order = ablation_order(list(without), len(winner))
    seen = {name: iter(values) for name, values in without.items()}
    values = iter(winner)
    out = []
    for role in order:
        name = dimension_of(role)
        out.append((role, next(values) if name is None else next(seen[name]), True))
    return out


def test_a_change_that_carries_the_gain_is_kept_and_one_within_noise_is_not():
    runs = _runs([640, 655, 631, 648, 660],
                 {"MaxConnectionsPerChild": [122, 118, 130, 125, 119],  # reverting it loses 5x
                  "ListenBacklog": [645, 629, 650, 652, 640]})          # reverting it changes nothing
    result = measure_effects(runs, {"MaxConnectionsPerChild": ("0", "100"), "ListenBacklog": ("136", "511")})
    mcpc, backlog = result.effects["MaxConnectionsPerChild"], result.effects["ListenBacklog"]
    assert mcpc.beyond_noise and mcpc.verdict() == "a gain" and 4.5 < mcpc.ratio < 6.0
    assert mcpc.low > 1.0
    assert not backlog.beyond_noise and backlog.verdict() == "within noise"
    assert backlog.low <= 1.0 <= backlog.high
    assert [e.dimension for e in result.reverted()] == ["ListenBacklog"]
    assert "95 % CI" in mcpc.sentence() and "5 runs of the winner" in mcpc.sentence()


def test_a_change_that_measured_a_loss_is_reverted():
    runs = _runs([500, 505, 498], {"EnableSendfile": [600, 610, 598]})
    effect = measure_effects(runs, {"EnableSendfile": ("Off", "On")}).effects["EnableSendfile"]
    assert effect.verdict() == "a loss" and effect.high < 1.0
    assert not effect.beyond_noise


def test_invalid_runs_count_for_nothing_and_too_few_say_so():
    runs = [(WINNER, 500.0, True), (role_without("KeepAlive"), 100.0, False),
            (WINNER, 510.0, True), (role_without("KeepAlive"), 120.0, True)]
    effect = measure_effects(runs, {"KeepAlive": ("Off", "On")}).effects["KeepAlive"]
    assert not effect.measured and "too few valid runs" in effect.note
    assert effect.verdict() == effect.note


def test_without_the_change_no_rate_met_the_slo_is_a_decisive_gain():
    runs = _runs([300, 310, 305], {"KeepAlive": [0, 0, 0]})
    effect = measure_effects(runs, {"KeepAlive": ("Off", "On")}).effects["KeepAlive"]
    assert effect.beyond_noise and effect.without_served_nothing
    assert "no rate met the SLO" in effect.sentence()
    assert effect.to_dict()["verdict"] == "a gain"
