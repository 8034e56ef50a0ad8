"""Issue 27 on real apache2 and httperf: a slow endpoint's pool is measured,
a flat session says so, and a missed SLO gets its cause.

The `slow` workload's CGI sleeps 200 ms and uses a few milliseconds of
CPU (perl's start-up). A pool of N workers then serves at most N / 0.2 s
replies a second, until the CPU the CGIs need runs out first. httpd on
core 0, httperf on core 1.
"""

from __future__ import annotations

import pytest

from advisor.tuner.load.workload import make_workload
from advisor.tuner.staging.managed_config import ManagedConfig
from advisor.tuner.staging.target import SandboxTarget
from advisor.tuner.trial.knee import knee_search
from advisor.tuner.trial.result import TrialInputs
from advisor.tuner.trial.runner import run_trial
from test_bench_support import SandboxRun, cli, require, require_cgroup_cpu, two_cores

SLEEP_MS = 200
SLO_MS = 400.0


def _knee(run: SandboxRun, workers: int, start: float, top: float):
    """A knee search on one pool, as a tune trial runs it (retrying a probe
    whose pool was still short of its limit)."""
    target = SandboxTarget(run.sandbox)
    work = make_workload("slow", run.dir, sleep_ms=SLEEP_MS)
    # The pool is started at its size and kept there: with the stock spares
    # (5 to 10) prefork retires idle children one a second after each probe,
    # so the next probe first waited for the pool to stop shrinking (up to
    # the 20 s bound for 64) and then warmed it up again, and a pool still
    # growing failed a probe it would pass (then retried). The peak the test
    # asserts is the full pool's.
    directives = [f"MaxRequestWorkers {workers}", f"StartServers {workers}", f"MinSpareServers {workers}",
                  f"MaxSpareServers {workers}"]
    base = TrialInputs(workload="slow", uri=work.uri, rate=start, duration_s=2.0, timeout_s=2.0,
                       server_cpus=[0], client_cpus=[1], directives=directives, slo_reply_ms=SLO_MS)
    with ManagedConfig(target) as managed:
        managed.apply(directives)
        return knee_search(target, base, start_rate=start, max_rate=top, tolerance=0.1, max_probes=7, retries=1,
                           retry_short_pool=True, interval=0.5)


def _probes(knee) -> str:
    return "; ".join(f"{p.inputs.rate:g}/s: {p.served_rate:.1f} served ({p.httperf.reply_rate:.1f} by httperf), "
                     f"{p.httperf.reply_time_ms:.0f} ms, {p.verdict.label}, {p.slo_failures()}" for p in knee.probes)


@pytest.mark.load
@pytest.mark.httpd
def test_a_200_ms_endpoint_peaks_at_the_pool_over_the_service_time():
    """8 workers: near 8 / 0.2 s = 40 replies/s. 32 workers: near four
    times that, or wherever the CGIs' CPU runs out first. httperf's own rate
    over a 2 s probe reads 9 % short at any load (its test time ends with
    the last replies' 200 ms): were that read as overload, no rate would pass.

    The pools are small enough that the small one stays far below the CPU's
    limit on a slow host: with 16 and 64 workers a CI host whose core ran
    the CGIs out at 103 replies/s measured 71 and 103, under the 1.5x
    asserted, though the larger pool did all the CPU let it."""
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="prefork") as run:
        small = _knee(run, 8, start=20, top=80)
        large = _knee(run, 32, start=80, top=320)
    print(f"\n8 workers: peak {small.peak_reply_rate}, {_probes(small)}"
          f"\n32 workers: peak {large.peak_reply_rate}, {_probes(large)}")
    assert small.peak_reply_rate is not None, _probes(small)
    assert 0.8 * 40 <= small.peak_reply_rate <= 1.1 * 40, _probes(small)
    assert large.peak_reply_rate is not None and large.peak_reply_rate >= 1.5 * small.peak_reply_rate, _probes(large)
    # At the CPU: a probe above the peak saw the server's CPU saturate, first
    # or as the consequence of a pool whose replies the full CPU stretched.
    above = [p for p in large.probes if not p.meets_slo and p.inputs.rate > large.peak_rate]
    at_the_cpu = any(p.verdict.label == "server CPU"
                     or any(c["label"] == "server CPU" for c in p.verdict.consequences) for p in above)
    assert large.peak_reply_rate >= 0.75 * 160 or at_the_cpu, _probes(large)
    # Every passing probe's requests were answered, and in time.
    for probe in small.probes + large.probes:
        if probe.meets_slo:
            assert probe.errors == 0 and probe.httperf.reply_time_ms < SLO_MS


@pytest.mark.load
@pytest.mark.httpd
def test_a_session_whose_points_all_serve_the_offered_rate_recommends_nothing():
    """Ten requests a second to a 50 ms endpoint: every point serves them
    all, so no trial can tell one config from another."""
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="prefork") as run:
        result = cli("tune", "--workdir", str(run.dir), "--workload", "slow", "--sleep-ms", "50",
                     "--objective", "throughput", "--rate", "10", "--slo-ms", "400", "--budget", "3",
                     "--gain-replicates", "0", "--duration", "2", "--warmup", "0", "--yes",
                     "--report", str(run.dir / "report"), "--client-cpus", "1")
        report = (run.dir / "report" / "report.md").read_text()
        run.assert_stock_restored()
    print(result.stdout[-1500:])
    assert "recommended: nothing: the objective did not respond to the space" in result.stdout
    assert "a workload that does not stress what the space changes" in result.stdout
    assert "Recommendation: none: the objective did not respond to the space" in report
    assert not (run.dir / "report" / "recommended.conf").exists() or \
        "Nothing to change" in (run.dir / "report" / "recommended.conf").read_text()


@pytest.mark.load
@pytest.mark.httpd
def test_a_missed_slo_names_child_retirement_and_name_lookups_with_their_lines():
    """The issue's case: prefork on half a core, KeepAlive Off,
    MaxConnectionsPerChild 100, HostnameLookups On, 1 KB at 1,200 requests/s."""
    require("apache2", "httperf")
    two_cores()
    require_cgroup_cpu()
    directives = ["KeepAlive Off", "MaxConnectionsPerChild 100", "HostnameLookups On"]
    with SandboxRun(mpm="prefork", cpu_quota_pct=50) as run:
        target = SandboxTarget(run.sandbox)
        inputs = TrialInputs(workload="1k", uri="/1k.html", rate=1200, duration_s=3.0, timeout_s=2.0,
                             server_cpus=[0], client_cpus=[1], directives=directives)
        with ManagedConfig(target) as managed:
            managed.apply(directives)
            result = run_trial(target, inputs, interval=0.5)
        managed_file = str(run.sandbox.managed_path)
    verdict = result.verdict
    print(f"\n{result.httperf.replies} replies to {result.attempted} requests, served {result.served_rate:.0f}/s, "
          f"{result.httperf.reply_time_ms:.1f} ms, {result.slo_failures()}; {verdict.label}: {verdict.note}; "
          f"{verdict.evidence}")
    assert not result.meets_slo
    # Saturated churn (as on this host: 6-8 children retired a second, the
    # accept queue full), a miss with nothing saturated, or (2 of 4 runs here)
    # the pool run out while httpd used 2-3 % of a core, children retired
    # 3.5 times a second: whichever, the lines are named.
    assert verdict.label in ("process churn", "name lookups", "worker pool exhausted"), verdict
    if verdict.label == "worker pool exhausted":
        assert verdict.evidence["miss_cause"]["cause"] == "held pool", verdict
    summary = verdict.evidence["miss_cause"]["summary"]
    assert f"{managed_file}:" in summary
    assert "MaxConnectionsPerChild 100 retires a child every 100 connections" in summary
    assert "HostnameLookups On makes each connection wait on a reverse lookup" in summary
