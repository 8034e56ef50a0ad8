"""What makes a probe pass: a server that met the SLO with less than its
config claims (a pool short of its limit) met it; only a failure is in doubt."""

from __future__ import annotations

from advisor.tuner.load.httperf import HttperfResult
from advisor.tuner.trial.poolcheck import PoolCheck
from advisor.tuner.trial.result import TrialInputs, TrialResult
from advisor.tuner.trial.verdict import CLOSED_BY_SERVER, Verdict

SHORT = "the pool held 6 workers in 3 of 3 seconds it was full, not the 65 the server should run"


def probe(replies: int, *, pool_reasons=(), label="worker pool exhausted", reply_ms=2.0) -> TrialResult:
    inputs = TrialInputs(workload="1k", uri="/", rate=100.0, duration_s=3.0)
    run = HttperfResult(connections=300, requests=300, replies=replies, test_duration_s=3.0,
                        reply_response_ms=reply_ms, errors={"total": 300 - replies})
    pool = PoolCheck(64, 65, 0, 3, 3, 6, 0, list(pool_reasons))
    return TrialResult(inputs, run, [], [], Verdict(label, {}), 0, 0, 0.0, 3.0, pool=pool)


def test_a_short_pool_does_not_turn_a_pass_into_a_failure():
    passed = probe(300, pool_reasons=[SHORT])
    assert not passed.valid and passed.invalid_reasons == [SHORT]  # still reported
    assert passed.meets_slo


def test_a_short_pool_keeps_a_failure_in_doubt_and_a_full_one_is_plain():
    failed = probe(200, pool_reasons=[SHORT])
    assert not failed.meets_slo and not failed.valid
    assert probe(200).valid and not probe(200).meets_slo


def test_a_client_bound_or_closed_connection_run_never_passes():
    assert not probe(300, label="client-bound").meets_slo
    assert not probe(300, label=CLOSED_BY_SERVER).meets_slo


def test_a_failure_on_a_short_pool_is_worth_another_attempt_only_when_asked():
    """tune asks (a pool still growing after its reload is not the setting);
    bench keeps its documented retries for disturbed probes only."""
    from advisor.tuner.trial.knee import worth_another_attempt

    short = probe(200, pool_reasons=[SHORT], label="keep-alive holding workers")
    assert worth_another_attempt(short, retry_short_pool=True)
    assert not worth_another_attempt(short)
    assert not worth_another_attempt(probe(200, label="keep-alive holding workers"), retry_short_pool=True)


def test_a_probe_whose_httperf_died_never_passes_and_is_worth_another_attempt():
    from advisor.tuner.trial.knee import worth_another_attempt

    died = probe(0, label="none")
    died.client_failed = "httperf died of SIGSEGV before its report"
    assert not died.meets_slo and not died.valid
    assert died.invalid_reasons[0].startswith("httperf died of SIGSEGV before its report: the load generator failed")
    assert worth_another_attempt(died)
    # Near miss: the same failure with a live client is a plain result.
    assert not worth_another_attempt(probe(0, label="none"))


def test_a_miss_the_round_trips_alone_explain_is_not_run_again_even_when_disturbed():
    """Other programs can only take capacity away: a probe whose added round
    trips alone take the SLO's reply time fails at any rate and any calm."""
    from advisor.tuner.measure.metrics import Sample
    from advisor.tuner.trial.knee import worth_another_attempt

    def disturbed(evidence: dict) -> TrialResult:
        result = probe(300, label="none", reply_ms=150.0)
        result.verdict = Verdict("none", evidence)
        result.samples = [Sample(t=0.0), Sample(t=1.0, httperf_cpu_pct=30.0), Sample(t=2.0)]
        return result

    floor = disturbed({"miss_cause": {"cause": "round trips", "round_trip_ms_per_reply": 150.0}})
    assert floor.interference["disturbed"] and not floor.meets_slo
    assert not worth_another_attempt(floor)
    # Near miss: the same disturbed miss with no such cause may be the disturbance's doing.
    assert worth_another_attempt(disturbed({}))
