"""Load tests: two seed findings reproduced in direction, and injected bottlenecks.

Real apache2 pinned to core 0, real httperf pinned to core 1, on loopback (and,
for the network case, across a veth pair into a namespace this test creates).
The machine is shared with other test suites, so every comparison repeats each
arm, alternates the order and compares medians with a wide margin.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

import pytest

from advisor.tuner.staging.managed_config import ManagedConfig
from advisor.tuner.staging.target import SandboxTarget
from advisor.tuner.trial.knee import knee_search
from advisor.tuner.trial.result import TrialInputs
from advisor.tuner.trial.verdict import CHURN_CAUSE_PER_S
from test_bench_support import IN_CI, SandboxRun, require, require_cgroup_cpu, two_cores

pytestmark = [pytest.mark.load, pytest.mark.httpd]

ROUNDS = 2  # each arm runs this many times, alternating with the other arm
# Enough prefork children from the start: a 2-second probe must not measure
# the pool's spawn ramp (32 children/s at most) instead of the factor. And no
# idle child retired (MaxSpareServers at httpd's own ServerLimit, 256): an
# overloaded probe (KeepAlive Off at 16,000/s) grows the pool past 80, and
# prefork then retires the idle ones one a second, so the next probe's quiet
# wait watched the pool shrink until its 20 s bound (three probes of the
# first Off search here, 60 s of its 100). The probes that follow ask for
# fewer workers than the pool already holds.
PREFORK_POOL = ["StartServers 40", "MinSpareServers 40", "MaxSpareServers 256"]
# Half a core for the keep-alive comparison: prefork closing every connection
# is about as fast on its core as httperf is on its own, so without a quota
# the KeepAlive Off peak would measure httperf (Arlitt & Williamson made
# their clients faster than the server for the same reason).
KEEPALIVE_QUOTA_PCT = 50


KNEE_MAX_RATE = 16000
KNEE_TOLERANCE = 0.2


def _knee(run: SandboxRun, directives: list[str], *, num_calls: int = 1, start: float = 250.0,
          max_rate: float = KNEE_MAX_RATE, tolerance: float = KNEE_TOLERANCE, step: float = 2.0,
          warmup_s: float | None = None) -> dict:
    target = SandboxTarget(run.sandbox)
    inputs = TrialInputs(workload="1k", uri="/1k.html", rate=start, duration_s=2.0, num_calls=num_calls,
                         timeout_s=2.0, server_cpus=[0], client_cpus=[1], directives=directives, warmup_s=warmup_s)
    with ManagedConfig(target) as managed:
        managed.apply(directives)
        knee = knee_search(target, inputs, start_rate=start, max_rate=max_rate, min_rate=10, tolerance=tolerance,
                           max_probes=8, retries=1, interval=0.4, step=step)
    run.assert_stock_restored()
    return {"peak_rate": knee.peak_rate or 0.0, "reply_rate": knee.peak_reply_rate or 0.0,
            "lower_bound": knee.lower_bound_only, "stop": knee.stop_reason,
            "limit": knee.limiting.label if knee.limiting else None,
            "limit_evidence": knee.limiting.evidence if knee.limiting else None,
            "probes": [(p.inputs.rate, round(p.httperf.reply_rate), p.verdict.label,
                        "disturbed" if p.interference["disturbed"] else "", _cost(p)) for p in knee.probes]}


def _cost(probe) -> str:
    """Where a probe's seconds went: the quiet wait, the warm-up (and why it
    stopped) with its drain, the measured run."""
    warm = probe.warmup
    return (f"quiet {probe.quiet_wait_s:.1f} s, warm-up {warm.seconds if warm else 0:.1f} s "
            f"({warm.stopped_by if warm else 'none'}) + drain {warm.drain_s if warm else 0:.1f} s, run {probe.wall_s:.1f} s")


def _compare(run: SandboxRun, arm_a: dict, arm_b: dict, rounds: int = ROUNDS) -> tuple[list[dict], list[dict]]:
    """Each arm's knee, `rounds` times, alternating which arm goes first.

    After an arm's first measured peak, its later searches start there and
    step by their tolerance, as the tuner's replicated runs do: a peak that
    moved less than that is bracketed (a passing and a failing probe) in two
    probes, where a search from afar took five to seven. Each round's peak
    is still its own pass/fail bracket; only the probes that would confirm
    what the first round already showed are left out.
    """
    results_a, results_b = [], []
    for round_index in range(rounds):
        order = [(arm_a, results_a), (arm_b, results_b)]
        if round_index % 2:
            order.reverse()
        for arm, sink in order:
            measured = [r for r in sink if r["peak_rate"] and not r["lower_bound"]
                        and r["peak_rate"] < arm.get("max_rate", KNEE_MAX_RATE)]
            if measured:
                tolerance = arm.get("tolerance", KNEE_TOLERANCE)
                arm = {**arm, "start": measured[-1]["peak_rate"], "step": 1 + tolerance}
            sink.append(_knee(run, **arm))
    return results_a, results_b


def _brief(results: list[dict]) -> str:
    def cause(r: dict) -> str:
        miss = (r["limit_evidence"] or {}).get("miss_cause")
        return f"; {miss['summary']}" if miss else ""
    return "\n".join(f"  peak {r['reply_rate']:.0f} replies/s at {r['peak_rate']:g}/s ({r['stop']}; limit {r['limit']}{cause(r)}) "
                     f"probes {r['probes']}" for r in results)


def test_max_connections_per_child_10_has_a_clearly_lower_peak_than_0():
    """Arlitt & Williamson 5.1.3: a small per-child limit turns prefork into a forking server.

    The unlimited arm stops at 1,000/s (a lower bound by design): it only has
    to stay far above the limited one, whose peak is bracketed by failing
    probes the verdict puts down to process churn.
    """
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="prefork") as run:
        # The unlimited arm starts at its cap: it passed 250, 500 and 1,000/s
        # in every run here, and only its passing 1,000/s counts (a failure
        # there still bisects down to a measured peak). That cap is over
        # four times the limited arm's highest peak seen (54 to 108
        # replies/s), room enough for the factor of two asserted; at 2,000/s
        # the pool of 40 grew, and each probe's warm-up waited 3.9 s for it
        # to settle. At 1,000/s it runs none: nothing asserted hangs on the
        # pool of a lower bound. The limited arm
        # starts below the peaks seen here (54 to 108 replies/s) and doubles
        # once past them. Started above them it collapsed: at 120/s it
        # served 15-20 replies/s, so the next probe went down to 95 % of
        # that, one more crept up by 5 %, and the pool took 11-12 s to calm
        # after the collapse (7 probes and 45 s a search, where 4 or 5
        # probes bracket the peak from below).
        unlimited, limited = _compare(run, {"directives": PREFORK_POOL + ["MaxConnectionsPerChild 0"], "max_rate": 1000,
                                            "start": 1000.0, "warmup_s": 0},
                                      {"directives": PREFORK_POOL + ["MaxConnectionsPerChild 10"], "max_rate": 2000,
                                       "start": 40.0})
    peak_0 = statistics.median(r["reply_rate"] for r in unlimited)
    peak_10 = statistics.median(r["reply_rate"] for r in limited)
    print(f"\nMaxConnectionsPerChild 0:\n{_brief(unlimited)}\nMaxConnectionsPerChild 10:\n{_brief(limited)}")
    print(f"median peak replies/s: 0 -> {peak_0:.0f} (at least), 10 -> {peak_10:.0f}, ratio {peak_0 / max(1, peak_10):.1f}")
    assert peak_0 > 0 and peak_10 > 0
    # Even the best limited run stays under half of the worst unlimited one.
    assert max(r["reply_rate"] for r in limited) * 2 < min(r["reply_rate"] for r in unlimited)
    # The limited peak is a measured one (a failing probe above it), and the
    # failure is put down to churn: children retired and replaced. A search
    # whose failing probe only just missed (87 % of its rate, say) may find no
    # cause clear enough to name; the runs together must name churn.
    for result in limited:
        assert not result["lower_bound"], result
    churn = [figures for figures in map(_churn_named, limited) if figures]
    assert churn, limited
    for figures in churn:
        # A pool trimmed to MaxSpareServers loses at most one child a second;
        # churn is retirement well past that. A count alone would hang on the
        # run's length (a 2.2 s run at 4.1/s retired 9 children).
        assert figures["children_retired"] > 0, figures
        assert figures["retired_per_s"] > CHURN_CAUSE_PER_S, figures


def _churn_named(result: dict) -> dict | None:
    """The churn figures of a limited run whose verdict names child churn, or None.

    Churn names itself when children retired fast enough to count as
    saturated (5/s); at a peak of about 50 connections/s and 10 per child
    they retire right at that rate, and the same probe may read as "worker
    pool exhausted" with the pool held by the MaxConnectionsPerChild line
    (the held-pool cause, as the tuner reports it). Either names churn.
    """
    evidence = result["limit_evidence"] or {}
    if result["limit"] == "process churn":
        return evidence
    cause = evidence.get("miss_cause") or {}
    if result["limit"] == "worker pool exhausted" and cause.get("cause") == "held pool":
        return next((row for row in cause.get("causes", []) if row.get("label") == "process churn"), None)
    return None


def test_keepalive_with_8_requests_per_connection_beats_keepalive_off():
    """Arlitt & Williamson 5.1.6: 8 requests per connection, 7,300 -> 11,200 replies/s."""
    require("apache2", "httperf")
    two_cores()
    require_cgroup_cpu()
    with SandboxRun(mpm="prefork", cpu_quota_pct=KEEPALIVE_QUOTA_PCT) as run:
        # Three rounds: the absolute peaks move with what else the machine
        # runs (3,500 to 8,000/s for Off here); the ratio within a run holds.
        # Both arms bracket their peaks within 10 %: at 20 % each median
        # could sit up to a fifth below its peak, and a true ratio of 1.5
        # then measured anywhere from 1.25 to 1.8 (a fresh-clone CI run
        # read 1.20 with On bracketed at 1,707-2,000 sessions/s).
        # Each arm's first search starts a little below the knees measured
        # on 2026-12-07 (Off 2,470-2,640 replies/s; On 487-563 sessions/s,
        # x8 replies) and moves by 1.25 first, squared on each further move
        # the same way: a faster machine is still reached in a few probes
        # (1.25, 1.56, then doubling). Started above them (Off 4,000/s, On
        # 1,000/s) an overloaded prefork served less than its capacity (On:
        # 348 of 1,000 sessions/s, peak near 500), and each first search
        # took 8 probes, 16 of the test's 27.
        # No warm-up: half a core sets both peaks, with a few of the pool's
        # 40 children busy (PREFORK_POOL; none retired), so a warm-up had no
        # pool to grow and ended at its 1.2 s least or at the server's full
        # CPU, 1.2 to 2.9 s of each probe's 4. (A pool the load fills does
        # need it: a 200 ms endpoint's 32 workers, fresh from a reload,
        # served 51 of 80/s without one, test_slow_endpoint.py 79 with.)
        # Both changes together: 132.7 -> 84.3 s, 27 -> 25 probes, the
        # ratio 1.82 and 1.70 (2026-12-07, the same hour).
        off, on = _compare(run, {"directives": PREFORK_POOL + ["KeepAlive Off"], "num_calls": 1, "start": 2000.0,
                                 "step": 1.25, "tolerance": 0.1, "warmup_s": 0},
                           {"directives": PREFORK_POOL + ["KeepAlive On", "MaxKeepAliveRequests 100"], "num_calls": 8,
                            "start": 400.0, "step": 1.25, "tolerance": 0.1, "warmup_s": 0}, rounds=3)
    peak_off = statistics.median(r["reply_rate"] for r in off)
    peak_on = statistics.median(r["reply_rate"] for r in on)
    print(f"\nKeepAlive Off:\n{_brief(off)}\nKeepAlive On x8:\n{_brief(on)}")
    print(f"median peak replies/s: off -> {peak_off:.0f}, on x8 -> {peak_on:.0f}, ratio {peak_on / max(1, peak_off):.2f}")
    assert peak_off > 0
    # Off must be a measured peak, limited by the server: a lower bound set by
    # the client would say nothing about which arm is faster. (Its label is
    # "server CPU" when the machine is calm; a probe disturbed by other
    # programs can read "worker pool exhausted".)
    for result in off:
        assert not result["lower_bound"] and result["limit"] not in (None, "client-bound"), result
    # Medians of three alternating runs, apart by more than the knee search's
    # 10 % resolution (measured here: 1.41 to 1.72; Arlitt: 1.53).
    assert peak_on > 1.3 * peak_off


def _verdict(run: SandboxRun, *args: str) -> dict:
    docs = run.bench_json(*args)
    trial = next(d for d in docs if d["kind"] == "trial")
    run.assert_stock_restored()
    return trial


def _show(name: str, trial: dict) -> None:
    verdict = trial["verdict"]
    print(f"\n{name}: {verdict['label']} reply_rate={trial['reply_rate']} target={trial['inputs']['rate']} "
          f"evidence={verdict['evidence']}")


def test_cpu_bound_cgi_is_server_cpu():
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="prefork") as run:
        trial = _verdict(run, "--workload", "cgi", "--cgi-n", "300000", "--rate", "120", "--duration", "4",
                         "--timeout", "10")
    _show("cgi", trial)
    assert trial["verdict"]["label"] == "server CPU"
    assert trial["verdict"]["evidence"]["server_cpu_busy_pct_mean"] >= 90
    assert trial["reply_rate"] < 0.95 * trial["inputs"]["rate"]


def test_two_workers_and_a_slow_endpoint_exhaust_the_worker_pool():
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="prefork") as run:
        trial = _verdict(run, "--workload", "slow", "--sleep-ms", "300", "--rate", "10", "--duration", "2",
                         "--timeout", "10", "--set", "MaxRequestWorkers 2", "--set", "ServerLimit 2",
                         "--set", "StartServers 2", "--set", "MinSpareServers 1", "--set", "MaxSpareServers 2")
    _show("worker pool", trial)
    assert trial["verdict"]["label"] == "worker pool exhausted"
    assert trial["verdict"]["evidence"]["accept_queue_max"] > 0
    # httpd itself idles (the core may not: the machine is shared).
    assert trial["verdict"]["evidence"]["httpd_cpu_pct_mean"] < 50


def test_idle_keepalive_sessions_on_prefork_hold_the_workers():
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="prefork") as run:
        trial = _verdict(run, "--rate", "15", "--duration", "2", "--num-calls", "2", "--think", "2",
                         "--timeout", "20", "--set", "KeepAliveTimeout 30", "--set", "MaxRequestWorkers 10",
                         "--set", "StartServers 10", "--set", "MinSpareServers 10", "--set", "MaxSpareServers 10")
    _show("keep-alive", trial)
    assert trial["verdict"]["label"] == "keep-alive holding workers"
    mix = trial["verdict"]["evidence"]["scoreboard_mean"]
    assert mix.get("K", 0) > mix.get("W", 0)


SLOW_LOGGER = """#!/usr/bin/perl
# A piped access log that writes 10 lines a second at most.
while (my $line = <STDIN>) { select(undef, undef, undef, 0.1); }
"""


def test_a_slow_piped_access_log_is_logging():
    """Workers block writing 8 KB log lines into a full pipe: the scoreboard fills with L."""
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="prefork") as run:
        logger = run.dir / "slowlog.pl"
        logger.write_text(SLOW_LOGGER)
        logger.chmod(0o755)
        padding = "x" * 8000
        trial = _verdict(run, "--rate", "40", "--duration", "1", "--timeout", "10",
                         "--set", "LoadModule setenvif_module /usr/lib/apache2/modules/mod_setenvif.so",
                         "--set", 'SetEnvIf Request_URI "^/server-status" nolog',  # the collector's reads
                         "--set", f'LogFormat "%h %t %r %>s {padding}" padded',
                         "--set", f'CustomLog "|{logger}" padded env=!nolog',
                         "--set", "MaxRequestWorkers 10", "--set", "StartServers 10",
                         "--set", "MinSpareServers 10", "--set", "MaxSpareServers 10")
    _show("logging", trial)
    assert trial["verdict"]["label"] == "logging"
    mix = trial["verdict"]["evidence"]["scoreboard_mean"]
    assert mix.get("L", 0) >= 0.5 * trial["verdict"]["evidence"]["busy_workers_mean"] > 0
    assert trial["verdict"]["evidence"]["httpd_cpu_pct_mean"] < 50


def test_more_idle_sessions_than_httperf_can_hold_is_client_bound():
    """1,600 concurrent sessions: past httperf's FD_SETSIZE cap while event httpd idles."""
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="event") as run:
        # No warm-up: the cap is httperf's, reached inside the window, and a
        # warm-up would hold 400 sessions a second for 5 s first.
        trial = _verdict(run, "--rate", "400", "--duration", "4", "--num-calls", "2", "--think", "4",
                         "--timeout", "10", "--warmup", "0")
    _show("client-bound", trial)
    assert trial["verdict"]["label"] == "client-bound"
    assert trial["valid"] is False
    assert any(c["check"] in ("FD_SETSIZE cap", "fd-unavail/addrunavail") for c in trial["client_limits"])


def test_a_cpu_hog_on_the_server_core_marks_the_trial_disturbed():
    """Another program on the server's core is measured, not mistaken for the server."""
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="event") as run:
        # Bounded: the hog spins for 8 s at most, and is killed after the trial.
        hog = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c",
                                "import time\nend = time.time() + 8\nwhile time.time() < end: pass"])
        try:
            trial = _verdict(run, "--rate", "200", "--duration", "3")
        finally:
            hog.kill()
            hog.wait()
    interference = trial["interference"]
    print(f"\nhog: {interference} verdict={trial['verdict']['label']}")
    assert interference["disturbed"] is True
    assert interference["server_foreign_cpu_pct_mean"] >= 40
    assert any("server's cores" in reason for reason in interference["reasons"])
    assert trial["verdict"]["label"] == "none"  # a full core, but not the server's work


def test_shared_core_is_client_bound_whatever_the_rate():
    require("apache2", "httperf")
    with SandboxRun(mpm="event") as run:
        trial = _verdict(run, "--rate", "50", "--duration", "1", "--client-cpus", "0")
    assert trial["verdict"]["label"] == "client-bound"
    assert "shares a core with the server" in trial["verdict"]["evidence"]


NETNS = f"aa-bench-{os.getpid()}"
VETH_HOST, VETH_NS = f"aah{os.getpid() % 100000}", f"aan{os.getpid() % 100000}"
# RFC 2544's benchmarking range, used only inside the namespace this test makes.
HOST_ADDR, NS_ADDR = "198.18.0.1", "198.18.0.2"


def _sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=30)


@pytest.fixture
def shaped_netns():
    require("ip", "tc", "nsenter")
    if os.geteuid() != 0:
        pytest.fail("the network test needs root for ip netns") if IN_CI else pytest.skip("needs root")
    _sh("ip", "netns", "add", NETNS)
    try:
        _sh("ip", "link", "add", VETH_HOST, "type", "veth", "peer", "name", VETH_NS)
        _sh("ip", "link", "set", VETH_NS, "netns", NETNS)
        _sh("ip", "addr", "add", f"{HOST_ADDR}/30", "dev", VETH_HOST)
        _sh("ip", "link", "set", VETH_HOST, "up")
        _sh("ip", "netns", "exec", NETNS, "ip", "addr", "add", f"{NS_ADDR}/30", "dev", VETH_NS)
        _sh("ip", "netns", "exec", NETNS, "ip", "link", "set", VETH_NS, "up")
        _sh("ip", "netns", "exec", NETNS, "ip", "link", "set", "lo", "up")
        # 40 Mbit/s from the server: a 1 MB reply takes about 0.2 s.
        _sh("ip", "netns", "exec", NETNS, "tc", "qdisc", "add", "dev", VETH_NS, "root", "tbf",
            "rate", "40mbit", "burst", "32kb", "latency", "100ms")
        yield NETNS
    finally:
        subprocess.run(["ip", "link", "del", VETH_HOST], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", NETNS], capture_output=True, timeout=30)


def test_rate_limited_link_with_1mb_files_is_network(shaped_netns):
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="event", netns=shaped_netns, host=NS_ADDR, port=8080,
                    status_allow=["127.0.0.1", HOST_ADDR]) as run:
        trial = _verdict(run, "--workload", "1m", "--rate", "8", "--duration", "3", "--timeout", "15")
    _show("network", trial)
    assert trial["verdict"]["label"] == "network"
    utilisation = trial["verdict"]["evidence"]["link_util_pct_max"]
    assert max(utilisation.values()) >= 85
    assert trial["reply_rate"] < 8
