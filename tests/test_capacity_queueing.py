"""The MMPP/G/1/K*PS model: closed forms, the Markov chain, the simulator.

The simulator is checked against exact results it does not share code with:
the M/M/1/K closed form (which by PS insensitivity also holds for
deterministic and heavy-tailed service under Poisson arrivals), and the
MMPP/M/1/K chain, itself checked against a dense linear solve.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.capacity.queueing_model import (
    MMPP2,
    PAPER_L1_FACTOR,
    Arrivals,
    Service,
    SimulationOptions,
    _arrival_times,
    curve_rates,
    mm1k,
    mm1k_arrays,
    mmpp_m1k,
    mmpp_m1k_many,
    predict,
    predict_many,
    simulate,
)

# Student t 99.95 % points: the tests compare many estimates at once, and at
# 95 % one comparison in twenty would fail by chance alone.
T9995 = {9: 4.781, 11: 4.437, 15: 4.073}
T975 = {9: 2.262, 11: 2.201, 15: 2.131}


def widen(half_width: float, replications: int) -> float:
    df = replications - 1
    return half_width * T9995[df] / T975[df]


def brute_mm1k(rate: float, x: float, k: int) -> tuple[float, float]:
    rho = rate * x
    weights = [rho**n for n in range(k + 1)]
    total = sum(weights)
    return weights[k] / total, sum(n * w for n, w in enumerate(weights)) / total


def dense_mmpp_chain(m: MMPP2, x: float, k: int) -> tuple[float, float]:
    """Build the 2(K+1)-state generator and solve pi Q = 0 directly."""
    mu = 1.0 / x
    size = 2 * (k + 1)
    q = np.zeros((size, size))

    def idx(phase: int, n: int) -> int:
        return 2 * n + phase

    lam = (m.lam1, m.lam2)
    switch = (m.r1, m.r2)
    for n in range(k + 1):
        for phase in (0, 1):
            i = idx(phase, n)
            q[i, idx(1 - phase, n)] += switch[phase]
            if n < k:
                q[i, idx(phase, n + 1)] += lam[phase]
            if n > 0:
                q[i, idx(phase, n - 1)] += mu
            q[i, i] = -q[i].sum()
    a = np.vstack([q.T, np.ones(size)])
    b = np.zeros(size + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(a, b, rcond=None)[0]
    mean_n = sum(n * (pi[idx(0, n)] + pi[idx(1, n)]) for n in range(k + 1))
    blocking = (m.lam1 * pi[idx(0, k)] + m.lam2 * pi[idx(1, k)]) / m.mean_rate
    return blocking, mean_n


# ---- closed forms -------------------------------------------------------------


@pytest.mark.parametrize("rho", [0.3, 0.95, 1.0, 1.0 + 1e-9, 1.05, 3.0])
@pytest.mark.parametrize("k", [1, 5, 40])
def test_mm1k_matches_direct_sum(rho, k):
    x = 0.01
    pb, mean_n = brute_mm1k(rho / x, x, k)
    got = mm1k(rho / x, x, k)
    assert got.blocking == pytest.approx(pb, rel=1e-6, abs=1e-12)
    assert got.mean_in_system == pytest.approx(mean_n, rel=1e-6)
    # Little's law ties the outputs together.
    assert got.response_time * got.throughput == pytest.approx(got.mean_in_system, rel=1e-9)
    assert got.throughput == pytest.approx(rho / x * (1 - pb), rel=1e-9)


def test_mm1k_stays_finite_for_large_k_and_overload():
    r = mm1k(1000.0, 0.01, 20_000)  # rho = 10, rho^K overflows a double
    assert r.blocking == pytest.approx(0.9, rel=1e-9)
    assert r.throughput == pytest.approx(100.0, rel=1e-9)
    assert r.response_time == pytest.approx(20_000 * 0.01, rel=1e-3)


@settings(max_examples=60, deadline=None)
@given(rate=st.floats(0.1, 500), x=st.floats(1e-4, 0.1), k=st.integers(1, 3000))
def test_vectorised_closed_form_agrees(rate, x, k):
    scalar = mm1k(rate, x, k)
    pb, n, h, t = mm1k_arrays(np.array([rate]), x, k)
    assert pb[0] == pytest.approx(scalar.blocking, rel=1e-6, abs=1e-12)
    assert n[0] == pytest.approx(scalar.mean_in_system, rel=1e-6, abs=1e-9)
    assert h[0] == pytest.approx(scalar.throughput, rel=1e-6)
    assert t[0] == pytest.approx(scalar.response_time, rel=1e-6)


# ---- MMPP ---------------------------------------------------------------------


def test_mmpp_paper_parametrisation():
    m = MMPP2.from_mean(100.0)
    # Equation (1) gives the mean back; equation (2) puts the burst at 5.75x.
    assert m.mean_rate == pytest.approx(100.0)
    assert m.lam1 == pytest.approx(PAPER_L1_FACTOR * 100.0)
    assert m.lam2 == pytest.approx(575.0)
    assert m.burst_fraction == pytest.approx(0.05)
    assert m.rate_variance == pytest.approx(0.05 * 0.95 * (75.0 - 575.0) ** 2)


def test_mmpp_rejects_a_negative_burst_rate():
    with pytest.raises(ValueError, match="negative"):
        MMPP2.from_mean(10.0, 0.05, 0.95, 1.2)


def test_simulated_mmpp_arrivals_have_the_mean_rate():
    rng = np.random.default_rng(7)
    horizon = 4000.0  # about 190 calm/burst cycles
    times = _arrival_times(rng, Arrivals("mmpp"), 50.0, horizon)
    assert np.all(np.diff(times) >= 0) and times[-1] < horizon
    # Count per 200 s window: the window means must straddle 50/s.
    counts = np.histogram(times, bins=20, range=(0, horizon))[0] / 200.0
    half = 2.093 * counts.std(ddof=1) / math.sqrt(len(counts))
    assert abs(counts.mean() - 50.0) <= half * 2.0
    # Bursty: far more variable per second than Poisson (variance = mean).
    per_second = np.histogram(times, bins=int(horizon), range=(0, horizon))[0]
    assert per_second.var() > 5 * per_second.mean()


@pytest.mark.parametrize("rate", [20.0, 100.0, 141.0, 170.0, 400.0])
def test_mmpp_chain_matches_dense_solve(rate):
    m = MMPP2.from_mean(rate)
    blocking, mean_n = dense_mmpp_chain(m, 0.00708, 60)
    got = mmpp_m1k(m, 0.00708, 60)
    assert got.blocking == pytest.approx(blocking, rel=1e-7, abs=1e-12)
    assert got.mean_in_system == pytest.approx(mean_n, rel=1e-7)


def test_mmpp_chain_with_equal_rates_is_mm1k():
    for rate in (50.0, 170.0, 3000.0):
        flat = mmpp_m1k(MMPP2(rate, rate, 0.05, 0.95), 0.00708, 208)
        ref = mm1k(rate, 0.00708, 208)
        assert flat.blocking == pytest.approx(ref.blocking, rel=1e-8, abs=1e-15)
        assert flat.mean_in_system == pytest.approx(ref.mean_in_system, rel=1e-8)


def test_mmpp_chain_many_equals_single():
    rates = [10.0, 90.0, 150.0, 500.0]
    many = mmpp_m1k_many(rates, 0.008, 120, Arrivals("mmpp"))
    for rate, got in zip(rates, many):
        one = mmpp_m1k(MMPP2.from_mean(rate), 0.008, 120)
        assert got.blocking == pytest.approx(one.blocking, rel=1e-12, abs=1e-15)
        assert got.response_time == pytest.approx(one.response_time, rel=1e-12)


def test_burstiness_raises_blocking_at_the_same_mean():
    # The paper's A1 parameters (Table 2): x = 7.08 ms, K = 208.
    for rate in (60.0, 100.0, 130.0):
        poisson = mm1k(rate, 0.00708, 208).blocking
        bursty = mmpp_m1k(MMPP2.from_mean(rate), 0.00708, 208).blocking
        assert bursty > poisson + 0.01
    # And the simulator sees the same with heavy-tailed service.
    opts = SimulationOptions(replications=6, arrivals_per_replication=20_000, min_horizon_cycles=20, seed=3)
    sim_poisson = simulate(100.0, 0.00708, 208, Arrivals("poisson"), Service("lognormal", 2.0), opts)
    sim_bursty = simulate(100.0, 0.00708, 208, Arrivals("mmpp"), Service("lognormal", 2.0), opts)
    gap = sim_bursty.blocking.value - sim_poisson.blocking.value
    assert gap > sim_bursty.blocking.half_width + sim_poisson.blocking.half_width


# ---- the simulator against exact results --------------------------------------


@pytest.mark.parametrize("rho", [0.8, 1.5])
@pytest.mark.parametrize(
    "service",
    [Service("exponential"), Service("deterministic"), Service("lognormal", 2.0), Service("pareto", 1.5)],
    ids=lambda s: s.kind,
)
def test_simulator_agrees_with_mm1k_by_insensitivity(rho, service):
    x, k = 0.01, 10
    reps = 10
    exact = mm1k(rho / x, x, k)
    sim = simulate(rho / x, x, k, Arrivals("poisson"), service,
                   SimulationOptions(replications=reps, arrivals_per_replication=20_000, seed=11))
    assert abs(sim.blocking.value - exact.blocking) <= widen(sim.blocking.half_width, reps)
    assert abs(sim.mean_in_system.value - exact.mean_in_system) <= widen(sim.mean_in_system.half_width, reps)
    assert abs(sim.response_time.value - exact.response_time) <= widen(sim.response_time.half_width, reps)
    # The intervals must be tight enough for the comparison to mean something.
    assert sim.blocking.half_width < 0.25 * exact.blocking
    assert sim.mean_in_system.half_width < 0.1 * exact.mean_in_system


def test_simulator_agrees_with_the_mmpp_chain():
    x, k, rate = 0.01, 30, 60.0
    reps = 12
    exact = mmpp_m1k(MMPP2.from_mean(rate), x, k)
    sim = simulate(rate, x, k, Arrivals("mmpp"), Service("exponential"),
                   SimulationOptions(replications=reps, arrivals_per_replication=60_000, seed=5))
    assert abs(sim.blocking.value - exact.blocking) <= widen(sim.blocking.half_width, reps)
    assert abs(sim.mean_in_system.value - exact.mean_in_system) <= widen(sim.mean_in_system.half_width, reps)
    assert sim.blocking.half_width < 0.3 * exact.blocking


def test_simulated_service_laws_have_the_requested_mean():
    rng = np.random.default_rng(1)
    for service in (Service("exponential"), Service("deterministic"), Service("lognormal", 3.0),
                    Service("pareto", 2.5)):
        draws = service.sample(rng, 0.02, 400_000)
        assert draws.min() > 0
        assert draws.mean() == pytest.approx(0.02, rel=0.03), service.kind
    lognormal = Service("lognormal", 3.0).sample(rng, 1.0, 400_000)
    assert lognormal.std() / lognormal.mean() == pytest.approx(3.0, rel=0.15)


# ---- dispatch -----------------------------------------------------------------


def test_predict_uses_the_cheapest_exact_method():
    assert predict(100, 0.008, 50, Arrivals("poisson"), Service("pareto")).method == "closed form"
    assert predict(100, 0.008, 50, Arrivals("mmpp"), Service("exponential")).method == "Markov chain"
    fast = SimulationOptions(replications=3, arrivals_per_replication=3000, seed=1)
    sim = predict(100, 0.008, 50, Arrivals("mmpp"), Service("deterministic"), fast)
    assert sim.method.startswith("simulation") and sim.blocking.half_width > 0


def test_predict_many_matches_predict():
    rates = [30.0, 125.0, 300.0]
    many = predict_many(rates, 0.008, 64, Arrivals("mmpp"))
    for rate, got in zip(rates, many):
        assert got.response_time.value == pytest.approx(predict(rate, 0.008, 64).response_time.value, rel=1e-12)


def test_curve_rates_include_requested_and_pass_capacity():
    grid = curve_rates(0.01, [42.0, 400.0])
    assert 42.0 in grid and 400.0 in grid
    assert max(grid) >= 2.5 * 100 and grid == sorted(grid)


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        Service("uniform")
    with pytest.raises(ValueError):
        Service("lognormal", -1.0)
    with pytest.raises(ValueError):
        Arrivals("fractal")
    with pytest.raises(ValueError):
        predict(10, 0.01, 0)
    with pytest.raises(ValueError):
        simulate(10, -0.01, 5)


def test_control_variate_agrees_with_plain_simulation_and_is_tighter():
    # MMPP with heavy-tailed service has no closed form; the corrected
    # estimate must agree with plain simulation and be much more precise.
    args = (60.0, 0.01, 30, Arrivals("mmpp"), Service("lognormal", 2.0))
    plain = simulate(*args, SimulationOptions(replications=10, arrivals_per_replication=40_000,
                                              control_variate=False, seed=21))
    corrected = simulate(*args, SimulationOptions(replications=6, arrivals_per_replication=20_000, seed=22))
    assert "control variate" in corrected.method
    for name in ("blocking", "mean_in_system"):
        a, b = getattr(plain, name), getattr(corrected, name)
        assert abs(a.value - b.value) <= 1.5 * (a.half_width + b.half_width), name
    assert corrected.blocking.half_width < 0.5 * plain.blocking.half_width
