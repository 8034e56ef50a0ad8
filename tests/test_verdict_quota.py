"""The server-CPU verdict under a CPU quota (cgroup), from synthetic samples.

A CGI server under a fifth of a core: its children's CPU reaches httpd's
tree only when they are reaped, so httpd's own figure wanders below the
quota while the cgroup runs out of it in every period, and the pool (slow
to fork when throttled) looks exhausted. The throttling is the evidence.
"""

from __future__ import annotations

from advisor.tuner.measure.metrics import Sample
from advisor.tuner.trial.verdict import decide


def _samples(throttled: float, httpd: list[float]) -> list[Sample]:
    out = []
    for i, cpu in enumerate(httpd):
        # No idle worker and a growing accept queue from the second sample on.
        out.append(Sample(t=0.5 * (i + 1), httpd_cpu_pct=cpu, cpu_throttled_pct=throttled, status_ok=True,
                          busy_workers=20, idle_workers=0 if i else 5, accept_queue=10 * i,
                          scoreboard={"W": 20} if i else {"W": 15, "_": 5}))
    return out


WANDERING = [4.0, 16.7, 12.1, 14.4, 16.0, 18.9, 11.7, 7.0]  # the mean (12.6) is under 85 % of 20


def test_a_cgroup_throttled_in_nearly_every_period_is_the_servers_cpu():
    verdict = decide(_samples(100.0, WANDERING), server_cpus=[0], interval=0.5, client_limits=[], cpu_quota_pct=20)
    assert verdict.label == "server CPU", verdict
    assert verdict.evidence["cpu_throttled_pct_mean"] == 100.0


def test_near_miss_a_cgroup_throttled_in_half_its_periods_leaves_the_pool_named():
    verdict = decide(_samples(55.0, WANDERING), server_cpus=[0], interval=0.5, client_limits=[], cpu_quota_pct=20)
    assert verdict.label == "worker pool exhausted", verdict


def test_without_a_quota_throttling_is_not_read():
    verdict = decide(_samples(100.0, WANDERING), server_cpus=[0], interval=0.5, client_limits=[], cpu_quota_pct=None)
    assert verdict.label == "worker pool exhausted", verdict
