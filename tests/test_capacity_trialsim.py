"""The trial replay (advisor.capacity.workerpool_trialsim) and the CPU-bound end in
closed form (workerpool_model.cpu_end_arrays), held to results they share no code with."""

from __future__ import annotations

import pytest

from advisor.capacity.queueing_model import mm1k_arrays
from advisor.capacity.workerpool_model import ServerModel, cpu_end_arrays, pool_throughputs, solve
from advisor.capacity.workerpool_trialsim import TrialSpec, replay_trial


@pytest.mark.parametrize("cores", [0.5, 1.0, 2.0, 3.5])
@pytest.mark.parametrize("workers, queue", [(4, 0), (16, 32), (200, 512)])
def test_the_cpu_end_in_closed_form_is_the_birth_death_chain(cores, workers, queue):
    d = 0.01
    rates = [1.0, 10.0, 40.0, 99.0, 100.0 * cores, 100.0 * cores * (1 + 1e-7), 200.0, 380.0, 1000.0, 1e5]
    exact = solve(rates, ServerModel(d, 0.0, cores, queue), workers)
    blocking, mean_n, throughput, response = cpu_end_arrays(rates, d, cores, workers + queue)
    for e, b, n, h, t in zip(exact, blocking, mean_n, throughput, response):
        assert b == pytest.approx(e.blocking, rel=1e-4, abs=1e-12)
        assert n == pytest.approx(e.mean_in_system, rel=1e-4)
        assert h == pytest.approx(e.throughput, rel=1e-4)
        assert t == pytest.approx(e.response_time, rel=1e-4)


def test_on_one_core_the_cpu_end_is_andersson_et_al_s_queue():
    rates = [10.0, 45.0, 50.0, 300.0]
    ours = cpu_end_arrays(rates, 0.01, 0.5, 40)
    theirs = mm1k_arrays(rates, 0.02, 40)
    for a, b in zip(ours, theirs):
        assert list(a) == pytest.approx(list(b), rel=1e-9)


def test_paced_requests_below_capacity_never_queue():
    # 4 workers, 200 ms asleep: 20/s is the limit; 16/s paced leaves a gap.
    model = ServerModel(0.0, 0.2, 1.0, 4)
    replay = replay_trial(model, TrialSpec(16, 6, 0.9, 4, 4))
    assert replay.replies == 96 and replay.turned_away == 0
    assert replay.reply_time == pytest.approx(0.2)
    assert replay.busy_workers == pytest.approx(16 * 0.2, rel=0.02)
    assert replay.test_duration == pytest.approx(95 / 16 + 0.2)


def test_past_capacity_the_full_listen_queue_turns_the_excess_away():
    model = ServerModel(0.0, 0.2, 1.0, 4)
    replay = replay_trial(model, TrialSpec(40, 20, 0.9, 4, 4))
    # The fluid limit: 20/s served, half turned away, 4 + 4 places full.
    assert replay.turned_away == pytest.approx(0.5, abs=0.02)
    assert replay.reply_time == pytest.approx(8 / 20, rel=0.05)
    assert replay.busy_workers == pytest.approx(4, rel=0.02)
    # httperf divides by the whole test: the last refused connection times out.
    assert replay.test_duration == pytest.approx(799 / 40 + 0.9)


def test_a_refused_syn_comes_back_a_second_later_if_the_client_still_waits():
    model = ServerModel(0.0, 0.8, 1.0, 0)
    spec = TrialSpec(2, 1, 2.0, 1, 0)  # connections at 0 s and 0.5 s
    patient = replay_trial(model, spec)
    # The second SYN is dropped at 0.5 s, sent again at 1.5 s, served at once.
    assert patient.refused_attempts == 1
    assert patient.replies == 2 and patient.reply_time == pytest.approx(0.8)
    impatient = replay_trial(model, TrialSpec(2, 1, 0.9, 1, 0))
    assert impatient.replies == 1 and impatient.turned_away == pytest.approx(0.5)


def test_a_cpu_quota_throttles_by_period_not_by_speed():
    # 15 ms of CPU under half a core in 10 ms periods: 5 ms run, 5 ms wait,
    # 5 run, 5 wait, 5 run = 25 ms; a fluid half core would take 30 ms.
    model = ServerModel(0.015, 0.0, 0.5, 4)
    quota = replay_trial(model, TrialSpec(1, 1, 0.9, 1, 4, burst_cores=1.0, quota_period=0.01), cpu_demand_cv=0)
    fluid = replay_trial(model, TrialSpec(1, 1, 0.9, 1, 4), cpu_demand_cv=0)
    assert quota.reply_time == pytest.approx(0.025)
    assert fluid.reply_time == pytest.approx(0.030)
    # Two a millisecond apart share the core while each period's budget
    # lasts: 30 ms of CPU and five 5 ms pauses; they end at 54 and 55 ms.
    pair = replay_trial(model, TrialSpec(1000, 0.002, 0.9, 2, 4, burst_cores=1.0, quota_period=0.01),
                        cpu_demand_cv=0)
    assert pair.replies == 2
    assert pair.reply_time == pytest.approx(0.054)


def test_saturated_the_replay_serves_what_the_product_form_says():
    # Saturated, the c workers cycle between the CPU and the wait: a closed
    # network whose throughput is insensitive to the service laws.
    model = ServerModel(0.01, 0.03, 1.0, 4)
    expected = float(pool_throughputs(0.01, 0.03, 1.0, 4)[-1])
    replay = replay_trial(model, TrialSpec(300, 120, 5.0, 4, 4, arrivals="poisson"))
    served = (replay.replies) / 120
    assert served == pytest.approx(expected, rel=0.03)
    assert served < min(model.cpu_limit(), model.pool_limit(4))


@pytest.mark.parametrize("cpu_demand, wait, workers, mixed", [
    (0.0177, 0.151, 8, True), (0.0226, 0.149, 8, True), (0.005, 0.1, 4, False)])
def test_workers_that_start_together_stay_in_step_near_the_floor(cpu_demand, wait, workers, mixed):
    # Equal demands under processor sharing: requests that start together
    # finish their CPU phase together, wait together, and take their next
    # requests from the full listen queue together. Offered at 2,000/s the
    # first requests arrive half a millisecond apart, so the replay's pool
    # runs close to step: never below ServerModel.in_step_capacity, and
    # within a fifth above it (measured: 5-15 %, the arrival gaps drift the
    # phases apart). With spread demands the same trial serves clearly more
    # when the pool both computes and waits (the two mixed servers of
    # docs/capacity.md).
    model = ServerModel(cpu_demand, wait, 1.0, 8)
    # A short listen queue and a timeout under a second: the queue stays
    # full, every queued request is answered in time, refused ones are not
    # retried within the timeout.
    floor = model.in_step_capacity(workers)
    assert floor < model.capacity(workers)

    def steady_rate(cv: float) -> float:
        # Replies per second of load, the start and the drain taken out.
        short, long = (replay_trial(model, TrialSpec(2000, seconds, 0.9, workers, workers), cpu_demand_cv=cv)
                       for seconds in (4.0, 10.0))
        return (long.replies - short.replies) / 6.0

    in_step = steady_rate(0.0)
    assert floor * 0.98 <= in_step <= floor * 1.2
    if mixed:
        assert steady_rate(0.25) > 1.1 * in_step


def test_the_in_step_floor_meets_the_limits_at_the_two_ends():
    # Nothing to share (no CPU): in step or not, c workers each held w.
    assert ServerModel(0.0, 0.2, 1.0, 4).in_step_capacity(4) == pytest.approx(4 / 0.2)
    # Nothing to wait for: the CPU is busy all the time either way.
    assert ServerModel(0.01, 0.0, 1.0, 4).in_step_capacity(4) == pytest.approx(100.0)
    assert ServerModel(0.01, 0.0, 0.5, 4).in_step_capacity(4) == pytest.approx(50.0)
    # Between them it is below the model's capacity.
    model = ServerModel(0.0177, 0.151, 1.0, 8)
    assert model.in_step_capacity(8) == pytest.approx(8 / (8 * 0.0177 + 0.151))
    assert model.in_step_capacity(8) < 0.75 * model.capacity(8)
