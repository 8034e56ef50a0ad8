"""The recommendation keeps only the changes the trials back (tuner/session/simplify.py)."""

from __future__ import annotations

import pytest

from advisor.tuner.search.optimizer import Observation
from advisor.tuner.search.simulated import SimulatedObjective
from advisor.tuner.search.space_lint import CandidateLint
from advisor.tuner.search.surrogate import Surrogate
from advisor.tuner.session.simplify import simplify

from test_tune_core import HOST, load_stock


@pytest.fixture(scope="module")
def stock(tmp_path_factory):
    cfg, space = load_stock(tmp_path_factory.mktemp("stock"))
    return cfg, space, CandidateLint(cfg, space)


class Model:
    """A stand-in for the fitted GP: the modelled effect of each dimension's
    change, as `Surrogate.ratio` reports it. The decision rule is what is
    under test here; the GP's fit is tested with the report."""

    def __init__(self, effects):
        self.effects = effects

    def ratio(self, point, other):
        changed = [name for name in point if point[name] != other[name]]
        assert len(changed) == 1
        return self.effects.get(changed[0], (1.0, 0.9, 1.1))


def test_inert_lint_worse_and_unmeasured_changes_go_back_to_the_start(stock):
    cfg, space, lint = stock
    assert space.start["KeepAlive"] == "On" and space.start["HostnameLookups"] == "Off"
    best = dict(space.start, KeepAlive="Off", KeepAliveTimeout=9000, MaxKeepAliveRequests=500,
                HostnameLookups="On", ListenBacklog=300, MaxRequestWorkers=400)
    model = Model({"KeepAlive": (1.6, 1.2, 2.1), "MaxRequestWorkers": (1.01, 0.97, 1.05),
                   "ListenBacklog": (1.0, 0.95, 1.05), "HostnameLookups": (1.03, 0.9, 1.2)})
    result = simplify(space, best, lint=lint, surrogate=model)
    kept = result.point
    assert kept["KeepAlive"] == "Off"  # lint's P102 disagrees, the trials measured a gain: kept
    assert kept["KeepAliveTimeout"] == space.start["KeepAliveTimeout"]
    assert kept["MaxKeepAliveRequests"] == space.start["MaxKeepAliveRequests"]
    assert kept["HostnameLookups"] == "Off"
    assert kept["ListenBacklog"] == space.start["ListenBacklog"]
    assert kept["MaxRequestWorkers"] == space.start["MaxRequestWorkers"]
    reasons = {r.dimension: r.why for r in result.reverted}
    assert "no effect while KeepAlive is Off" in reasons["KeepAliveTimeout"]
    assert "P107" in reasons["HostnameLookups"]
    assert "no effect of it" in reasons["ListenBacklog"]
    assert set(reasons) == {"KeepAliveTimeout", "MaxKeepAliveRequests", "HostnameLookups", "ListenBacklog",
                            "MaxRequestWorkers"}
    assert not lint.check(kept).errors
    assert any(note.startswith("HostnameLookups stays Off (the search's best point had On)")
               for note in result.notes())


def test_without_a_model_lint_decides_and_a_measured_gain_is_never_dropped(stock):
    cfg, space, lint = stock
    best = dict(space.start, KeepAlive="Off", MaxRequestWorkers=400)
    # Too few trials for a model: the change lint calls worse goes back, the other stays.
    plain = simplify(space, best, lint=lint)
    assert plain.point["KeepAlive"] == "On" and plain.point["MaxRequestWorkers"] == 400
    assert "too few trials for a model" in plain.reverted[0].why
    # A clear gain is kept whatever lint says.
    measured = simplify(space, best, lint=lint, surrogate=Model({"KeepAlive": (1.3, 1.05, 1.6),
                                                                 "MaxRequestWorkers": (1.2, 1.1, 1.3)}))
    assert measured.point == best and measured.reverted == []


def test_a_real_model_of_simulated_trials_keeps_what_it_measured(stock):
    """The GP of the surrogate (search/surrogate.py) on trials of the simulated host: a change
    it models as a gain with an interval above 1.0 is never taken back."""
    cfg, space, lint = stock
    sim = SimulatedObjective(space, HOST, seed=4)
    best = dict(space.start, MaxRequestWorkers=min(space.dimension("MaxRequestWorkers").high, 400))
    observations = []
    for number, point in enumerate([dict(space.start), dict(best)] * 4, start=1):
        outcome = sim(point)
        observations.append(Observation(number, point, outcome.objective, outcome.valid, outcome.verdict))
    surrogate = Surrogate.fit(space, observations, seed=0)
    ratio, low, high = surrogate.ratio(best, space.start)
    result = simplify(space, best, lint=lint, surrogate=surrogate)
    if low > 1.0:
        assert result.point["MaxRequestWorkers"] == best["MaxRequestWorkers"]
    else:
        assert result.point["MaxRequestWorkers"] == space.start["MaxRequestWorkers"] or abs(ratio - 1) > 0.02


def test_settings_the_winners_mpm_ignores_go_back_to_the_start_without_a_note(stock, tmp_path):
    """An event winner from a prefork start carries the prefork settings the
    search drew for it; they are never written, so they are no change: left
    in, a session ablated each (StartServers, MinSpareServers...) and
    measured the winner again under their names (50 ablation runs where 20
    were needed)."""
    from advisor.tuner.search.space_derive import derive_space

    cfg, _, _ = stock
    space = derive_space(cfg, {"prefork": 150, "worker": 900, "event": 900}, allow_mpm_switch=True)
    winner = dict(space.start, MPM="event", StartServers=9, MinSpareServers=20, MaxSpareServers=60,
                  ThreadsPerChild=50, KeepAlive="Off")
    measured = {"MPM": (1.5, 1.3, 1.7), "ThreadsPerChild": (1.2, 1.1, 1.3), "KeepAlive": (1.3, 1.1, 1.5)}
    result = simplify(space, winner, surrogate=Model(measured))
    for name in ("StartServers", "MinSpareServers", "MaxSpareServers"):
        assert result.point[name] == space.start[name]
    assert not any(r.dimension in ("StartServers", "MinSpareServers", "MaxSpareServers") for r in result.reverted)
    # What the event MPM does read stays for the measurements to judge.
    assert result.point["MPM"] == "event" and result.point["ThreadsPerChild"] == 50


def test_with_ablations_to_follow_the_model_sends_no_change_back(stock):
    """The HTTPS session at 50 ms: the GP's intervals for MaxRequestWorkers,
    KeepAliveTimeout, MaxKeepAliveRequests and ListenBacklog were all
    x1.00 to x1.00 (the model ignoring them), simplify sent the four back,
    and the simplified winner measured 1,172-1,246 replies/s against
    1,673-2,006 for the search's best point. With ablations to follow, each
    change waits for its measured effect; only what cannot matter goes back."""
    cfg, space, lint = stock
    best = dict(space.start, MaxRequestWorkers=547, KeepAliveTimeout=1255, MaxKeepAliveRequests=500,
                ListenBacklog=300, KeepAlive="On")
    ignored = Model({name: (1.0, 1.0, 1.0) for name in best})
    on_the_model = simplify(space, best, lint=lint, surrogate=ignored, judge_lint=False)
    assert {r.dimension for r in on_the_model.reverted} >= {"MaxRequestWorkers", "ListenBacklog"}
    measured = simplify(space, best, lint=lint, surrogate=ignored, judge_lint=False, judge_model=False)
    assert measured.reverted == []
    assert measured.point == best
    # ...listed for one ablation of them together.
    assert {r.dimension for r in measured.deferred} == {r.dimension for r in on_the_model.reverted}
    assert all("no effect of it" in r.why for r in measured.deferred)
    # Structural returns still happen without the model.
    off = dict(best, KeepAlive="Off")
    structural = simplify(space, off, lint=lint, surrogate=ignored, judge_lint=False, judge_model=False)
    assert {r.dimension for r in structural.reverted} == {"KeepAliveTimeout", "MaxKeepAliveRequests"}
