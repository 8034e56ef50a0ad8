"""The worker-pool model (advisor.capacity.workerpool_model) against closed forms it
shares no code with, and its fit (advisor.capacity.fit_workerpool) on data the
model itself generates."""

from __future__ import annotations

import math

import pytest

from advisor.capacity.fit_inputs import Observation
from advisor.capacity.fit_workerpool import fit_pool
from advisor.capacity.queueing_model import Arrivals, mm1k, mmpp_m1k_many
from advisor.capacity.workerpool_model import ServerModel, erlang_b, erlang_c, mmck, pool_throughputs, predict_pool, solve


def erlang_b_by_sum(servers: int, offered: float) -> float:
    terms = [offered**k / math.factorial(k) for k in range(servers + 1)]
    return terms[-1] / sum(terms)


@pytest.mark.parametrize("servers,rate", [(1, 3.0), (4, 10.0), (8, 30.0), (8, 80.0), (30, 120.0)])
def test_pure_wait_with_no_listen_queue_is_erlangs_loss_system(servers, rate):
    hold = 0.2
    model = ServerModel(0.0, hold, cores=1, backlog=0)
    got = solve([rate], model, servers)[0]
    expected = erlang_b_by_sum(servers, rate * hold)
    assert erlang_b(servers, rate * hold) == pytest.approx(expected, rel=1e-12)
    assert got.blocking == pytest.approx(expected, rel=1e-9)
    # No queue: the response time is the hold, whatever the load.
    assert got.response_time == pytest.approx(hold, rel=1e-9)
    assert got.busy_workers == pytest.approx(rate * hold * (1 - expected), rel=1e-9)


@pytest.mark.parametrize("servers,rate", [(2, 6.0), (4, 15.0), (8, 36.0)])
def test_pure_wait_with_a_long_queue_is_erlangs_delay_system(servers, rate):
    hold = 0.2
    a = rate * hold
    got = solve([rate], ServerModel(0.0, hold, backlog=5000), servers)[0]
    c = erlang_c(servers, a)
    # Erlang C: mean wait C / (c mu - lambda), response = wait + hold.
    assert got.response_time == pytest.approx(hold + c / (servers / hold - rate), rel=1e-6)
    assert got.blocking < 1e-12


@pytest.mark.parametrize("servers,backlog,rate", [(4, 5, 15.0), (4, 5, 40.0), (8, 3, 30.0), (1, 10, 9.0)])
def test_pure_wait_with_a_short_queue_is_mmck(servers, backlog, rate):
    hold = 0.2
    blocking, mean_n = mmck(rate, hold, servers, servers + backlog)
    got = solve([rate], ServerModel(0.0, hold, backlog=backlog), servers)[0]
    assert got.blocking == pytest.approx(blocking, rel=1e-9)
    assert got.mean_in_system == pytest.approx(mean_n, rel=1e-9)


@pytest.mark.parametrize("rate", [20.0, 90.0, 100.0, 150.0, 400.0])
def test_pure_cpu_on_one_core_is_anderssons_ps_queue(rate):
    """No wait: the workers share one CPU, K = workers + listen queue."""
    x, workers, backlog = 0.01, 30, 40
    got = solve([rate], ServerModel(x, 0.0, cores=1, backlog=backlog), workers)[0]
    ref = mm1k(rate, x, workers + backlog)
    assert got.blocking == pytest.approx(ref.blocking, rel=1e-9, abs=1e-15)
    assert got.response_time == pytest.approx(ref.response_time, rel=1e-9)


def test_mmpp_chain_with_constant_rates_is_the_papers_chain():
    arrivals = Arrivals()
    model = ServerModel(0.008, 0.0, cores=1, backlog=60)
    got = solve([50.0, 120.0, 200.0], model, 40, arrivals)
    ref = mmpp_m1k_many([50.0, 120.0, 200.0], 0.008, 100, arrivals)
    for g, r in zip(got, ref):
        assert g.blocking == pytest.approx(r.blocking, rel=1e-9)
        assert g.response_time == pytest.approx(r.response_time, rel=1e-9)


def test_mmpp_chain_for_a_pool_agrees_with_poisson_when_bursts_vanish():
    """r1, r2 large and l1 = 1: the MMPP is Poisson."""
    model = ServerModel(0.01, 0.15, cores=1, backlog=6)
    smooth = Arrivals("mmpp", 50.0, 50.0, 1.0)
    got = solve([20.0, 35.0], model, 6, smooth)
    ref = solve([20.0, 35.0], model, 6)
    for g, r in zip(got, ref):
        assert g.blocking == pytest.approx(r.blocking, rel=1e-6)
        assert g.response_time == pytest.approx(r.response_time, rel=1e-6)


def test_closed_network_throughput_by_brute_force():
    """X(n) of the CPU + delay network against the CTMC on k (jobs at the CPU)."""
    import numpy as np

    d, w, cores = 0.03, 0.1, 1.5
    x = pool_throughputs(d, w, cores, 6)
    for n in range(1, 7):
        q = np.zeros((n + 1, n + 1))
        for k in range(n + 1):
            if k < n:
                q[k, k + 1] = (n - k) / w  # a waiting job comes back to the CPU
            if k > 0:
                q[k, k - 1] = min(k, cores) / d
            q[k, k] = -q[k].sum()
        a = np.vstack([q.T, np.ones(n + 1)])
        pi = np.linalg.lstsq(a, np.r_[np.zeros(n + 1), 1.0], rcond=None)[0]
        expected = sum(pi[k] * min(k, cores) / d for k in range(n + 1))
        assert x[n - 1] == pytest.approx(expected, rel=1e-9)
    # Two ends of the one formula: more workers than the CPU can feed stop helping.
    assert x[-1] < cores / d and x[0] == pytest.approx(1 / (d + w))


def test_regimes():
    assert ServerModel(0.001, 0.2).regime(4) == "wait-bound"
    assert ServerModel(0.02, 0.0).regime(4) == "CPU-bound"
    assert ServerModel(0.02, 0.15).regime(8) == "mixed"


def _observations(model: ServerModel, rates, workers: int, with_cpu: bool = True):
    out = []
    for p in solve(rates, model, workers):
        out.append(Observation(p.rate, p.response_time, p.throughput, f"{p.rate}", turned_away=p.blocking,
                               workers=workers, cores=model.cores, busy_workers=p.busy_workers,
                               cpu_cores=p.cpu_cores_used if with_cpu else None))
    return out


@pytest.mark.parametrize("truth,workers,regime", [
    (ServerModel(0.008, 0.2, cores=1, backlog=5), 4, "wait-bound"),
    (ServerModel(0.02, 0.0005, cores=0.5, backlog=9), 8, "CPU-bound"),
    (ServerModel(0.025, 0.15, cores=1, backlog=5), 8, "mixed"),
])
def test_fit_recovers_the_model_and_predicts_past_the_knee(truth, workers, regime):
    capacity = truth.capacity(workers)
    rates = [capacity * f for f in (0.3, 0.6, 0.85)]
    fit = fit_pool(_observations(truth, rates, workers), workers, 1.0, truth.backlog)
    assert fit.regime == regime
    assert fit.model.cpu_demand == pytest.approx(truth.cpu_demand, rel=1e-6)
    assert fit.model.hold_time == pytest.approx(truth.hold_time, rel=0.02)
    assert fit.rms_log_error < 0.02
    assert [row.rate for row in fit.comparisons] == pytest.approx(rates)
    # The floor of workers in step goes with the fit, below its capacity.
    assert fit.capacity_in_step == pytest.approx(fit.model.in_step_capacity(workers))
    assert fit.capacity_in_step <= fit.capacity
    held_out = [capacity * f for f in (1.2, 1.6)]
    for want, got in zip(solve(held_out, truth, workers), solve(held_out, fit.model, workers)):
        assert got.throughput == pytest.approx(want.throughput, rel=0.02)
        assert got.response_time == pytest.approx(want.response_time, rel=0.05)
        assert abs(got.blocking - want.blocking) < 0.01


def test_fit_without_cpu_figures_fits_the_demand_too():
    truth = ServerModel(0.01, 0.1, cores=1, backlog=5)
    rates = [truth.capacity(8) * f for f in (0.3, 0.6, 0.9, 1.3, 1.8)]
    fit = fit_pool(_observations(truth, rates, 8, with_cpu=False), 8, 1.0, 5)
    assert not fit.cpu_measured and any("CPU demand was fitted" in w for w in fit.warnings)
    assert fit.model.hold_time == pytest.approx(truth.hold_time, rel=0.1)
    assert fit.capacity == pytest.approx(truth.capacity(8), rel=0.1)


def test_predictions_count_the_listen_queue_in_k():
    model = ServerModel(0.005, 0.2, backlog=512)
    pred = predict_pool([10.0], model, 4)[0]
    assert pred.k == 4 + 512 and "c = 4 workers" in pred.method


def _paced_trials(reply: float, hold: float, cpu: float, rates, busy_read=lambda busy: busy):
    """Trials of a pool of 8 below its knee under paced arrivals: nothing
    queues or is turned away, each request holds a worker for `hold`, and
    httperf's reply rate is 96 % of the rate (it counts the drain too)."""
    served = [0.96 * rate for rate in rates]
    return [Observation(rate, reply, x, f"{rate}", turned_away=0.0, workers=8, cores=1.0,
                        busy_workers=busy_read(x * hold), cpu_cores=x * cpu) for rate, x in zip(rates, served)]


def test_busy_counts_read_in_step_with_paced_arrivals_are_not_a_reply_tail():
    # A 1 Hz scoreboard reader in step with paced arrivals reads the same
    # point of the cycle every second. A CI ramp of 8 workers x 200 ms read
    # the ceiling of the true mean in the trials with 2 or more busy (4, 5
    # and 7 for 3.2, 4.8 and 6.3), a 24 ms "tail", and the held-out
    # replies/s came 11 % low.
    reply, cpu = 0.2065, 0.0059
    in_step = lambda busy: math.ceil(busy) if busy >= 2 else busy  # noqa: E731
    fit = fit_pool(_paced_trials(reply, reply, cpu, [8.0, 16.0, 24.0, 32.0], busy_read=in_step), 8, 1.0, 8)
    assert fit.model.reply_tail == 0.0
    # The counts still weigh in the wait's least squares, and pull it a little.
    assert fit.model.hold_time == pytest.approx(reply, rel=0.05)
    assert fit.capacity == pytest.approx(8 / reply, rel=0.05)
    # A tail past a whole worker per trial is still seen: a worker held
    # 150 ms after each reply, against a resolution of 83 ms (three trials
    # with two or more busy, 36 replies/s between them).
    fit = fit_pool(_paced_trials(reply, reply + 0.15, cpu, [4.0, 8.0, 12.0, 16.0]), 8, 1.0, 8)
    assert fit.model.reply_tail == pytest.approx(0.15, rel=0.05)
