"""Load test: a trial's reported uncertainty grows when the server's speed
moves during the trial (issue 56).

Real apache2 (prefork) pinned to core 0 under a CPU quota of half a core,
real httperf on core 1. The same knee search runs twice: once on a steady
server, once with the quota cut to a tenth of a core right after its first
probe, which is what a drifting host does to a trial, only larger. The cut
is made in the probe callback, between the first probe's measured window
and the second's start, rather than from a thread at some moment: the
search then meets the move at the same place in every run. The
uncertainty is what TrialObjective journals (knee_trial_uncertainty, with
the CPU-speed reference read before and after).
"""

from __future__ import annotations

import time

import pytest

from advisor.tuner.measure.cpu_reference import ReferenceDrift, read_reference
from advisor.tuner.staging.managed_config import ManagedConfig
from advisor.tuner.staging.target import SandboxTarget
from advisor.tuner.trial.knee import knee_search
from advisor.tuner.trial.objective import knee_trial_uncertainty
from advisor.tuner.trial.result import TrialInputs
from test_bench_support import SandboxRun, require, require_cgroup_cpu, two_cores

pytestmark = [pytest.mark.load, pytest.mark.httpd]

QUOTA_PCT = 50
MOVED_PCT = 10
TOLERANCE = 0.2
MAX_PROBES = 4
# Above what half a core serves here (2,250-3,000 replies/s of 1 KiB, one
# request a connection): the first probe saturates, and its served rate is
# a reading of the server's speed before the move.
START = 3200.0
# A pool large enough from the start that no probe measures prefork's spawn
# ramp, and no idle child retired between probes (as test_bench_findings).
POOL = ["StartServers 40", "MinSpareServers 40", "MaxSpareServers 256", "KeepAlive Off"]


def _search(run: SandboxRun, move_to: float | None) -> tuple[dict, list[tuple]]:
    target = SandboxTarget(run.sandbox)
    quota = run.sandbox.cpu_quota()
    assert quota is not None
    inputs = TrialInputs(workload="1k", uri="/1k.html", rate=START, duration_s=2.0, num_calls=1, timeout_s=2.0,
                         server_cpus=[0], client_cpus=[1], directives=POOL, warmup_s=0)

    def after_probe(result) -> None:
        # Synchronously after the first probe's measured window: the rest of
        # the trial meets a server of a different speed (a cgroup write).
        if move_to is not None and result is probes_seen[0]:
            quota.with_pct(move_to)

    probes_seen: list = []
    before = read_reference([0])
    try:
        with ManagedConfig(target) as managed:
            managed.apply(POOL)
            knee = knee_search(target, inputs, start_rate=START, max_rate=2 * START, min_rate=10, tolerance=TOLERANCE,
                               max_probes=MAX_PROBES, retries=1, step=2.0, interval=0.4,
                               on_trial=lambda r: (probes_seen.append(r), after_probe(r)))
    finally:
        quota.with_pct(QUOTA_PCT)
    drift = ReferenceDrift(before, read_reference([0])).to_dict()
    uncertainty = knee_trial_uncertainty(knee, TOLERANCE, None, drift, remote=False).to_dict()
    shown = [(p.inputs.rate, round(p.served_rate), p.meets_slo, p.verdict.label) for p in knee.probes]
    return uncertainty, shown


def test_a_trial_on_a_server_whose_speed_moved_reports_a_larger_uncertainty():
    require("apache2", "httperf")
    require_cgroup_cpu()
    two_cores()
    started = time.monotonic()
    with SandboxRun(mpm="prefork", cpu_quota_pct=QUOTA_PCT) as run:
        steady, steady_probes = _search(run, None)
        moved, moved_probes = _search(run, MOVED_PCT)
    print(f"\nsteady: {steady}\n  probes {steady_probes}\nmoved: {moved}\n  probes {moved_probes}\n"
          f"{time.monotonic() - started:.0f} s")
    assert steady["rel_sd"] > 0 and moved["rel_sd"] > 0
    # The move shows in what the trial itself read of the server's capacity.
    assert (moved["components"]["capacity"] or 0.0) > 0.1, moved
    assert moved["rel_sd"] > 2 * steady["rel_sd"], (steady, moved)
    # The reference was read on the server's core, before and after.
    assert steady["reference"]["before_ms"] > 0 and steady["reference"]["cpus"] == [0]
