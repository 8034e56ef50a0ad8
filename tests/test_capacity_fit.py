"""Fitting the mean service time and K, and reading bench / CSV measurements."""

from __future__ import annotations

import json

import numpy as np
import pytest

from advisor.capacity.fit_inputs import Observation, read_measurements
from advisor.capacity.fit_queueing import fit_service_time_and_k
from advisor.capacity.queueing_model import Arrivals, Service, SimulationOptions, fit_lognormal_cv, simulate
from advisor.errors import AdvisorError

RATES_PAST_SATURATION = (20, 45, 70, 90, 105, 115, 125, 140, 170, 220)


def simulated_trials(x: float, k: int, service: Service, seed: int = 0) -> list[Observation]:
    """Load-test the simulator like bench tests a server: fixed offered rates,
    measuring mean response time and throughput at each."""
    out = []
    for i, rate in enumerate(RATES_PAST_SATURATION):
        p = simulate(rate, x, k, Arrivals("poisson"), service,
                     SimulationOptions(replications=3, arrivals_per_replication=12_000, seed=seed + i))
        out.append(Observation(rate, p.response_time.value, p.throughput.value))
    return out


@pytest.mark.parametrize(
    ("x", "k", "service"),
    [(0.008, 60, Service("exponential")), (0.0125, 150, Service("lognormal", 2.0)),
     (0.008, 30, Service("deterministic"))],
    ids=["exp-K60", "lognormal-K150", "deterministic-K30"],
)
def test_fit_recovers_known_service_time_and_k(x, k, service):
    fit = fit_service_time_and_k(simulated_trials(x, k, service, seed=k))
    assert fit.service_time == pytest.approx(x, rel=0.10)
    assert fit.k == pytest.approx(k, rel=0.10)
    assert fit.k_identified and not fit.warnings
    # Standard errors are reported and small when the data saturate the server.
    assert 0 < fit.service_time_se < 0.05 * fit.service_time
    assert 0 < fit.k_se < 0.1 * fit.k


def test_fit_is_exact_on_noise_free_model_output():
    from advisor.capacity.queueing_model import mm1k

    obs = []
    for rate in (30, 80, 120, 160, 300):
        r = mm1k(rate, 0.00708, 208)
        obs.append(Observation(rate, r.response_time, r.throughput))
    fit = fit_service_time_and_k(obs)
    assert fit.service_time == pytest.approx(0.00708, rel=1e-3)
    assert fit.k == 208
    assert fit.rms_log_error < 1e-3


def test_fit_says_when_k_is_not_determined():
    from advisor.capacity.queueing_model import mm1k

    obs = [Observation(r, mm1k(r, 0.01, 100).response_time, r) for r in (10, 30, 50, 70)]
    fit = fit_service_time_and_k(obs)
    assert fit.service_time == pytest.approx(0.01, rel=0.02)
    assert not fit.k_identified
    assert any("not determined" in w for w in fit.warnings)


def test_fit_needs_three_points():
    with pytest.raises(ValueError):
        fit_service_time_and_k([Observation(1, 0.01, 1), Observation(2, 0.01, 2)])


def test_lognormal_shape_is_fitted_from_samples():
    rng = np.random.default_rng(4)
    sigma2 = np.log1p(2.5**2)
    samples = rng.lognormal(-3.0, np.sqrt(sigma2), 20_000)
    assert fit_lognormal_cv(samples.tolist()) == pytest.approx(2.5, rel=0.08)


# ---- reading measurements -----------------------------------------------------


def trial(rate, reply_rate, ms, **extra):
    return {"inputs": {"rate": rate}, "request_rate": rate, "reply_rate": reply_rate,
            "reply_time_ms": ms, **extra}


def test_reads_bench_json_in_its_shapes(tmp_path):
    single = tmp_path / "one.json"
    single.write_text(json.dumps(trial(50, 50, 12.0)))
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([trial(80, 79.5, 20.0), trial(120, 100, 900.0)]))
    wrapped = tmp_path / "ramp.json"
    wrapped.write_text(json.dumps({"trials": [
        {"httperf": {"request_rate": 150, "reply_rate": {"min": 90, "avg": 101, "max": 110},
                     "reply_time_ms": {"response": 1500.0, "transfer": 3.0}}},
        trial(200, 10, 5.0, valid=False, invalid_reason="client-bound: fd-unavail 12"),
        trial(210, 10, 5.0, verdict={"label": "client-bound", "evidence": {}}),
    ]}))
    lines = tmp_path / "trials.jsonl"
    lines.write_text(json.dumps(trial(30, 30, 9.0)) + "\n\n" + json.dumps(trial(60, 60, 14.0)) + "\n")
    obs, skipped = read_measurements([str(single), str(listed), str(wrapped), str(lines)])
    assert [o.rate for o in obs] == [50, 80, 120, 150, 30, 60]
    assert obs[0].response_time == pytest.approx(0.012)
    assert obs[3].throughput == 101 and obs[3].response_time == pytest.approx(1.503)
    assert len(skipped) == 2 and "client-bound" in skipped[0] and "client-bound" in skipped[1]


def test_reads_csv(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("Rate, response_time ,throughput,note\n20,0.011,20,a\n\n140,1.2,125,b\n")
    obs, skipped = read_measurements([str(path)])
    assert [(o.rate, o.response_time, o.throughput) for o in obs] == [(20, 0.011, 20), (140, 1.2, 125)]
    assert not skipped


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("broken.json", '{"trials": [', "not valid JSON"),
        ("fields.json", json.dumps([{"request_rate": 5}]), "lacks request_rate"),
        ("types.json", json.dumps([trial("fast", 5, 3)]), "must be numbers"),
        ("zero.json", json.dumps([trial(5, 0, 3)]), "must be finite and > 0"),
        ("header.csv", "rate,latency\n1,2\n", "CSV header lacks response_time, throughput"),
        ("value.csv", "rate,response_time,throughput\n1,2,3\n4,five,6\n", "must be numbers"),
    ],
)
def test_bad_measurement_files_name_the_file(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(AdvisorError) as info:
        read_measurements([str(path)])
    rendered = info.value.render()
    assert expected in rendered
    assert rendered.startswith(str(path))
    assert "\n" not in rendered
    if name == "value.csv":
        assert info.value.line == 3


def test_missing_measurement_file(tmp_path):
    with pytest.raises(AdvisorError, match="cannot read the measurements"):
        read_measurements([str(tmp_path / "nope.json")])
