"""A point whose round trips alone miss the SLO is not probed down to the floor.

Real HTTPS sandbox (prefork, KeepAlive Off) and real httperf, one request per
connection, with --rtt added: at 50 ms a reply costs a TCP, a TLS 1.3 and a
request round trip, 150 ms, over the 100 ms SLO at any rate. The knee search
stops at its first probe, with the round trips as the cause and not the
HostnameLookups On the config also sets. The near miss, 20 ms (60 ms a
reply), finds a peak.
"""

from __future__ import annotations

import pytest

from advisor.tuner.load.roundtrips import RTT_ADDED
from advisor.tuner.staging.managed_config import ManagedConfig
from advisor.tuner.staging.target import SandboxTarget
from advisor.tuner.trial.knee import knee_search
from advisor.tuner.trial.result import TrialInputs, with_rtt
from test_bench_support import SandboxRun, require, two_cores

pytestmark = [pytest.mark.load, pytest.mark.httpd]

DIRECTIVES = ["KeepAlive Off", "HostnameLookups On"]


def _search(target, rtt_ms: float):
    base = TrialInputs(workload="1k", uri="/1k.html", rate=20, duration_s=2.0, timeout_s=2.0,
                       server_cpus=[0], client_cpus=[1], directives=DIRECTIVES, warmup_s=0)
    return knee_search(target, with_rtt(base, rtt_ms, RTT_ADDED), start_rate=20, max_rate=40, max_probes=4,
                       interval=0.5)


def test_round_trips_over_the_slo_end_the_knee_search_at_its_first_probe():
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="prefork", tls=True) as run:
        target = SandboxTarget(run.sandbox)
        with ManagedConfig(target) as managed:
            managed.apply(DIRECTIVES)
            far = _search(target, 50.0)
            near = _search(target, 20.0)
        run.assert_stock_restored()
    assert len(far.probes) == 1, [p.inputs.rate for p in far.probes]
    assert far.peak_rate is None
    assert far.stop_reason.startswith("the round trips alone take the SLO's reply time")
    cause = far.probes[0].verdict.evidence["miss_cause"]
    assert cause["cause"] == "round trips" and cause["round_trip_ms_per_reply"] >= 100.0, cause
    assert far.probes[0].verdict.label == "none"
    # Near miss: 20 ms a round trip leaves the SLO within reach.
    assert near.peak_rate is not None and near.peak_rate >= 20, [(p.inputs.rate, p.slo_failures()) for p in near.probes]
