"""Trials measure the configuration's steady state, not the transient of its reload (issue 10, item 8).

Real prefork apache2 on core 0, real httperf on core 1. Two ways a trial
measured something else than it claimed: the reload itself (prefork grows
its pool by one child a second for ten cycles after a graceful restart,
while kept-alive sessions pile up), and a pool smaller than configured (a
ServerLimit that a graceful restart keeps, old-generation slots in G, the
collector's own kept-alive status connection).
"""

from __future__ import annotations

import pytest

from test_bench_support import SandboxRun, require, two_cores

pytestmark = [pytest.mark.load, pytest.mark.httpd]


def _brief(trial: dict) -> str:
    return (f"{trial['reply_rate']} replies/s, {trial['reply_time_ms']} ms, errors {trial['errors']['pct']} %, "
            f"verdict {trial['verdict']['label']}, warm-up {trial['warmup']}, pool {trial['pool']}, "
            f"invalid {trial['invalid_reasons']}, interference {trial['interference']['reasons']}")


def test_a_setting_measured_right_after_its_reload_agrees_with_the_next_measure():
    """The first trial runs right after the graceful reload that applied the
    setting, the second right after the first: same setting, same result."""
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="prefork") as run:
        first, second = run.bench_json("--mode", "ramp", "--rates", "20,20", "--num-calls", "4", "--think", "0.3",
                                       "--duration", "4", "--set", "KeepAliveTimeout 5")
    print(f"\nafter reload: {_brief(first)}\nnext:         {_brief(second)}")
    for trial in (first, second):
        assert trial["valid"], trial["invalid_reasons"]
        assert trial["warmup"]["steady"]
        assert trial["errors"]["pct"] < 1.0
        assert trial["httperf"]["errors"]["client-timo"] == 0
    # The reload's transient went into the warm-up, not into the window.
    assert first["warmup"]["children_after"] > first["warmup"]["children_before"]
    assert first["reply_rate"] == pytest.approx(second["reply_rate"], rel=0.1)
    assert first["reply_time_ms"] < 50 and second["reply_time_ms"] < 50


def test_four_workers_are_four_after_a_server_limit_change():
    """MaxRequestWorkers 4 + ServerLimit 4 on a server started with ServerLimit
    256: a graceful restart keeps 256 and leaves old slots in G, and the
    collector's kept-alive status connection would hold one of the four."""
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="prefork") as run:
        trial = run.bench_json("--workload", "slow", "--sleep-ms", "200", "--rate", "20", "--duration", "3",
                               "--timeout", "10", "--set", "MaxRequestWorkers 4", "--set", "ServerLimit 4")[0]
        log = run.sandbox.error_log.read_text()
    print(f"\n4 workers x 200 ms: {_brief(trial)}")
    assert "AH00179" not in log, "ServerLimit went through a graceful restart, which keeps the old value"
    pool = trial["pool"]
    assert pool["configured"] == 4 and pool["collector_held"] == 0
    assert trial["verdict"]["label"] == "worker pool exhausted" and pool["full_samples"] > 0
    assert pool["graceful_slots_max"] == 0 and pool["short_samples"] == 0
    assert trial["valid"], trial["invalid_reasons"]
    # Four workers at 200 ms serve 20/s; three would serve 15/s.
    assert trial["reply_rate"] >= 16.5
