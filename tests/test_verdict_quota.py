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


def test_httpd_cpu_is_dated_by_its_own_walk_and_held_to_its_quota():
    """The "177 % of its CPU quota" case: a walk of a large tree that ended
    0.8 s after the kernel counters were read, against one that ended at
    once, charged 1.8 s of the server's CPU to a 1 s interval."""
    from advisor.tuner.measure.cgroup import CpuQuota
    from advisor.tuner.measure.metrics import httpd_share

    a = {"time": 10.0, "httpd_time": 10.0, "httpd": (5.0, 40)}
    b = {"time": 11.0, "httpd_time": 11.8, "httpd": (5.0 + 0.9, 40)}  # half a core for 1.8 s
    assert httpd_share(a, b) == 50.0
    undated = ({k: v for k, v in a.items() if k != "httpd_time"}, {k: v for k, v in b.items() if k != "httpd_time"})
    assert httpd_share(*undated) == 90.0  # what the kernel counters' dates made of it
    quota = CpuQuota("/sys/fs/cgroup/cpu/x", 1, 50.0)
    assert httpd_share(*undated, quota) == 50.5  # the quota plus the one period that straddles the start
    assert httpd_share(a, b, quota) == 50.0
