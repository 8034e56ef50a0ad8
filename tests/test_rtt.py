"""The clients' round trip (`--rtt`): the count of round trips a trial
implies, the think times a distant visitor leaves the server, the SLO on the
client-perceived reply time, and the bad input refused.

The arithmetic is checked by hand here; the load tests (real apache2 and
httperf) check that a lengthened think time holds workers longer and that a
reconnect per request costs a visitor the round trips counted.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from conftest import assert_one_line_error
from advisor.errors import UsageError
from advisor.tuner.load.roundtrips import (RTT_ADDED, RTT_NONE, RTT_ON_LINK, check_rtt, client_time,
                                           client_time_of_trial, count_round_trips, handshake_round_trips,
                                           lengthened_session_log, refuse_rtt_with_wan_delay, tls_counts)
from advisor.tuner.trial.result import TrialInputs, with_rate, with_rtt


# -- the count ---------------------------------------------------------------------

def test_plain_http_costs_one_round_trip_per_connection_and_one_per_request():
    trips = count_round_trips(connections=100, requests=500)
    assert (trips.tcp, trips.tls_full, trips.tls_resumed, trips.requests) == (100, 0, 0, 500)
    assert trips.total == 600 and trips.connection_setup == 100


@pytest.mark.parametrize("version, full, resumed", [("TLSv1.2", 2, 1), ("1.2", 2, 1), ("TLSv1.3", 1, 1),
                                                    ("tls1.3", 1, 1), ("TLSv1", 2, 1), (None, 0, 0)])
def test_tls_handshakes_cost_their_versions_round_trips(version, full, resumed):
    assert handshake_round_trips(version) == (full, resumed)


def test_tls_12_full_handshakes_cost_two_and_resumed_ones_one():
    # 20 visitors, each one full handshake and 4 resumed ones, one request per connection.
    trips = count_round_trips(connections=100, requests=100, full_handshakes=20, resumed_handshakes=80,
                              tls_version="TLSv1.2")
    assert (trips.tcp, trips.tls_full, trips.tls_resumed, trips.requests) == (100, 40, 80, 100)
    assert trips.total == 320
    thirteen = count_round_trips(100, 100, 20, 80, "TLSv1.3")
    assert thirteen.total == 100 + 20 + 80 + 100


def test_handshakes_of_an_unknown_version_are_counted_as_tls_12_and_negative_counts_refused():
    assert count_round_trips(10, 10, 10, 0, None).tls_full == 20
    with pytest.raises(ValueError):
        count_round_trips(-1, 10)


# -- the client-perceived time -------------------------------------------------------------

def test_added_time_spreads_the_round_trips_over_the_requests():
    # Sessions of 5 calls on one kept-alive connection, 50 ms away: 6 round trips per 5 replies.
    on = client_time(50.0, RTT_ADDED, reply_ms=0.8, replies=500, connections=100, requests=500)
    assert on.added_ms == pytest.approx(50.0 * 6 / 5)
    assert on.mean_ms == pytest.approx(0.8 + 60.0)
    # KeepAlive Off: a connection per request, 2 round trips per reply.
    off = client_time(50.0, RTT_ADDED, reply_ms=0.5, replies=500, connections=500, requests=500)
    assert off.added_ms == pytest.approx(100.0)
    assert off.mean_ms - on.mean_ms == pytest.approx(40.0 - 0.3)
    doc = off.to_dict()
    assert doc["how"] == "added" and doc["round_trips"] == {"tcp": 500, "tls_full": 0, "tls_resumed": 0,
                                                             "requests": 500, "total": 1000}
    assert doc["measured"] and doc["added"] == ["one TCP round trip per connection", "one round trip per request"]
    assert "measured 0.5 + added 100.0" in off.parts_text()


def test_tls_counts_are_read_from_the_trials_tls_object_and_absent_is_plain_http():
    assert tls_counts(None) == (0, 0, None)
    assert tls_counts({"full_handshakes": 20, "resumed_handshakes": 80, "version": "TLSv1.3"}) == (20, 80, "TLSv1.3")
    assert tls_counts(SimpleNamespace(full_handshakes=3, resumed_handshakes=0, version="TLSv1.2")) == (3, 0, "TLSv1.2")
    https = client_time(50.0, RTT_ADDED, reply_ms=1.0, replies=100, connections=100, requests=100,
                        tls={"full_handshakes": 100, "resumed_handshakes": 0, "version": "TLSv1.2"})
    assert https.added_ms == pytest.approx(50.0 * 4)  # TCP, two for TLS 1.2, the request
    assert "TLS (TLSv1.2)" in https.parts_text()


def test_a_trials_json_gives_its_client_time_with_or_without_a_tls_object():
    trial = {"inputs": {"rtt_ms": 50.0, "rtt_how": RTT_ADDED},
             "httperf": {"reply_response_ms": 1.5, "reply_transfer_ms": 0.5, "replies": 200, "connections": 40,
                         "requests": 200, "connect_time_ms": 0.1}}
    plain = client_time_of_trial(trial)
    assert plain.mean_ms == pytest.approx(2.0 + 50.0 * 240 / 200)
    over_tls = client_time_of_trial({**trial, "tls": {"full_handshakes": 10, "resumed_handshakes": 30,
                                                      "version": "TLSv1.2"}})
    assert over_tls.mean_ms == pytest.approx(2.0 + 50.0 * (240 + 20 + 30) / 200)
    assert client_time_of_trial({"inputs": {}, "httperf": trial["httperf"]}).mean_ms == pytest.approx(2.0)


def test_on_a_delaying_link_nothing_is_added_and_the_set_up_is_measured():
    time = client_time(50.0, RTT_ON_LINK, reply_ms=51.0, replies=100, connections=20, requests=100,
                       connect_ms=50.5)
    assert time.added_ms == 0.0
    assert time.measured_ms == pytest.approx(51.0 + 50.5 * 20 / 100)
    assert time.to_dict()["added"] == [] and "netem" in time.parts_text()
    assert client_time(0.0, RTT_NONE, reply_ms=3.0, replies=1, connections=1, requests=1).mean_ms == 3.0


# -- the think times the server sees ---------------------------------------------------------

def test_with_rtt_lengthens_the_think_time_only_when_the_round_trip_is_added():
    base = TrialInputs(workload="almeida-sessions", uri="/", rate=10, wsess=(30, 5, 0.2))
    added = with_rtt(base, 50.0, RTT_ADDED)
    assert added.wsess == (30, 5, pytest.approx(0.25)) and added.think_added_s == pytest.approx(0.05)
    assert base.wsess == (30, 5, 0.2)  # the base is left as it was
    assert with_rate(added, 20).wsess[2] == pytest.approx(0.25)  # a later probe keeps it
    on_link = with_rtt(base, 50.0, RTT_ON_LINK)
    assert on_link.wsess == (30, 5, 0.2) and on_link.rtt_how == RTT_ON_LINK
    assert with_rtt(base, 0.0, RTT_ADDED).rtt_how == RTT_NONE
    plain = with_rtt(TrialInputs(workload="1k", uri="/1k.html", rate=10), 50.0, RTT_ADDED)
    assert plain.wsess is None and plain.rtt_ms == 50.0


def test_a_replayed_logs_think_times_are_lengthened_in_a_copy(tmp_path):
    log = tmp_path / "replay.sesslog"
    log.write_text("/a.html think=1.5\n\t/a.gif\n/b.html\n\n/c.html think=0.25\n/d.html\n\n")
    copy = lengthened_session_log(str(log), 50.0)
    assert copy != str(log) and log.read_text().count("think=1.5") == 1
    text = open(copy).read()
    assert "/a.html think=1.55\n\t/a.gif\n/b.html\n\n/c.html think=0.3\n/d.html\n" in text
    from advisor.tuner.load.session_shape import session_shape

    assert list(session_shape(copy).spans) == pytest.approx([1.55, 0.3])
    inputs = with_rtt(TrialInputs(workload="log", uri="/", rate=1, wsess=(2, 2, 0.9), session_log=str(log)),
                      50.0, RTT_ADDED)
    assert inputs.session_log == copy


# -- the objective and the plan ----------------------------------------------------------------

def test_the_objective_states_the_rtt_and_a_journal_without_one_still_matches():
    from advisor.tuner.trial.objective_spec import ObjectiveSpec

    plain = ObjectiveSpec("latency", 10.0, 100.0, 1.0)
    far = ObjectiveSpec("latency", 10.0, 100.0, 1.0, rtt_ms=50.0, rtt_how=RTT_ADDED)
    assert "rtt_ms" not in plain.identity() and far.identity()["rtt_ms"] == 50.0
    assert "client-perceived reply (RTT 50 ms)" in far.label("sessions/s")
    assert "RTT 50 ms" in ObjectiveSpec("peak", rtt_ms=50.0).short_label("sessions/s")
    assert "added" in far.rtt_text() and "think time lengthened by 50 ms" in far.rtt_text()
    assert plain.rtt_text() == ""


# -- bad input ---------------------------------------------------------------------------------

def test_rtt_values_are_checked():
    assert check_rtt(None) == 0.0 and check_rtt(0) == 0.0 and check_rtt(50) == 50.0
    for bad, fragment in [(-5, "--rtt -5 is not a round-trip time"), (math.nan, "is not a round-trip time"),
                          (20_000, "is over 10 s")]:
        with pytest.raises(UsageError) as caught:
            check_rtt(bad)
        assert fragment in caught.value.render()
    refuse_rtt_with_wan_delay(50.0, 0.0)
    refuse_rtt_with_wan_delay(0.0, 40.0)
    with pytest.raises(UsageError):
        refuse_rtt_with_wan_delay(50.0, 40.0)


def test_bad_rtt_is_one_line_and_changes_nothing(tmp_path):
    from test_bench_support import SandboxRun, cli, require

    require("apache2")
    with SandboxRun(mpm="prefork") as run:
        for args, fragment in [(("--rtt", "-5"), "--rtt -5 is not a round-trip time"),
                               (("--rtt", "50", "--wan-delay", "40ms"), "--rtt 50 and --wan-delay 40 ms")]:
            result = run.bench(*args, "--set", "KeepAlive Off", "--rate", "5", "--duration", "1", check=False)
            assert_one_line_error(result, fragment)
            report = tmp_path / f"report{len(args)}"
            tuned = cli("tune", "--workdir", str(run.dir), *args, "--yes", "--report", str(report), check=False)
            assert_one_line_error(tuned, fragment)
            assert not report.exists()
            run.assert_stock_restored()


def test_tune_dry_run_plan_states_the_rtt(tmp_path):
    from test_bench_support import SandboxRun, cli, require

    require("apache2")
    with SandboxRun(mpm="prefork") as run:
        plan = cli("tune", "--workdir", str(run.dir), "--rtt", "50", "--dry-run", "--format", "json",
                   "--report", str(tmp_path / "report"))
        run.assert_stock_restored()
    document = json.loads(plan.stdout)
    assert document["round_trip"].startswith("50 ms, added"), document["round_trip"]
    assert "client-perceived reply (RTT 50 ms)" in document["objective"]


def test_the_report_states_the_round_trip():
    from advisor.config import LoadOptions, load_config
    from advisor.output import tune_files
    from advisor.tuner.search.space_derive import derive_space
    from advisor.tuner.trial.objective_spec import ObjectiveSpec
    from advisor.tuner.session.report_data import SessionFacts, build_report
    from conftest import SAMPLES

    cfg = load_config(str(SAMPLES / "debian" / "apache2.conf"), LoadOptions(apache_version="2.4"))
    space = derive_space(cfg, 300)
    objective = ObjectiveSpec("peak", rtt_ms=50.0, rtt_how=RTT_ADDED)
    facts = SessionFacts(workload="almeida-sessions", objective=objective.short_label("sessions/s"),
                         round_trip=objective.rtt_text())
    report = build_report(cfg, space, [], dict(space.start), facts)
    markdown = tune_files.render_markdown(report)
    assert "| round trip | 50 ms, added (this link cannot delay packets)" in markdown, markdown[:2000]
    assert "RTT 50 ms" in markdown
    plain = build_report(cfg, space, [], dict(space.start), SessionFacts(workload="almeida-sessions"))
    assert "round trip" not in tune_files.render_markdown(plain)


def _trial(inputs: TrialInputs, connections: int, requests: int, response_ms: float):
    from advisor.tuner.load.httperf import HttperfResult
    from advisor.tuner.trial.result import TrialResult
    from advisor.tuner.trial.verdict import Verdict

    h = HttperfResult(connections=connections, requests=requests, replies=requests, test_duration_s=2.0,
                      reply_response_ms=response_ms, reply_transfer_ms=0.0, connect_time_ms=0.1)
    return TrialResult(inputs=inputs, httperf=h, samples=[], client_limits=[], verdict=Verdict("none", {}),
                       listen_overflows=0, listen_drops=0, started=0.0, wall_s=2.0)


def test_the_slo_reads_the_client_perceived_time_with_rtt_and_the_measured_one_without():
    plain = TrialInputs(workload="1k", uri="/1k.html", rate=50, duration_s=2.0, slo_reply_ms=80.0)
    near = _trial(plain, 100, 100, 1.0)
    assert near.meets_slo and near.reply_time_for_slo_ms == 1.0 and near.to_dict()["client_time"]["how"] == "none"
    # One request per connection at 50 ms: 2 round trips a reply, 101 ms against an 80 ms SLO.
    far = _trial(with_rtt(plain, 50.0, RTT_ADDED), 100, 100, 1.0)
    assert far.reply_time_for_slo_ms == pytest.approx(101.0)
    assert not far.meets_slo
    assert far.slo_failures() == ["client-perceived reply time 101.0 ms (measured 1.0 + added 100.0 for 1 TCP + "
                                  "1 request round trips of 50 ms per reply) >= 80 ms"]
    # Five requests per connection: 60 ms a reply, within the SLO.
    kept = _trial(with_rtt(replace_inputs(plain, num_calls=5, rate=10), 50.0, RTT_ADDED), 20, 100, 1.0)
    assert kept.meets_slo and kept.reply_time_for_slo_ms == pytest.approx(61.0)
    # Over TLS 1.2 (the trial's tls counts, as the HTTPS trials record them): 20 full handshakes add 40 round trips.
    from advisor.tuner.measure.tls_probe import TlsTrial

    kept.tls = TlsTrial(version="TLSv1.2", key_type="ECDSA P-256", cipher=None, resume="session", full_handshakes=20,
                        resumed_handshakes=0, window_s=2.0, counted_by="test", server_cpu_s=None, replies=100,
                        cost=None)
    assert kept.reply_time_for_slo_ms == pytest.approx(1.0 + 50.0 * (20 + 40 + 100) / 100)
    assert kept.to_dict()["client_time"]["round_trips"]["tls_full"] == 40


def replace_inputs(inputs: TrialInputs, **changes) -> TrialInputs:
    from dataclasses import replace

    return replace(inputs, **changes)


def test_a_knee_searchs_probes_carry_their_client_time_with_rtt():
    from advisor.tuner.trial.knee import KneeResult

    plain = TrialInputs(workload="1k", uri="/1k.html", rate=50, duration_s=2.0, slo_reply_ms=80.0)
    far = _trial(with_rtt(plain, 50.0, RTT_ADDED), 100, 100, 1.0)
    near = _trial(plain, 100, 100, 1.0)
    probes = KneeResult(None, None, False, [far, near], None, "probe budget spent").to_dict()["probes"]
    assert probes[0]["client_time"]["added_ms"] == pytest.approx(100.0) and "client_time" not in probes[1]
