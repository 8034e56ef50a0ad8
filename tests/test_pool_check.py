"""check_pool on synthetic scoreboards: a full prefork pool that keeps losing
a child or two at its knee is at its limit; one still hundreds short is not,
unless the server's CPU was full meanwhile (then the CPU limited the run)."""

from __future__ import annotations

from advisor.tuner.measure.metrics import Sample
from advisor.tuner.staging.poolconfig import PoolConfig
from advisor.tuner.trial.poolcheck import check_pool
from advisor.tuner.trial.runner import cpu_kept_the_pool_small
from advisor.tuner.trial.verdict import decide

STOCK = PoolConfig(mpm="prefork", workers=256, server_limit=257, thread_limit=1, threads_per_child=1,
                   keepalive=True, keepalive_timeout_s=5.0)


def full(workers: list[int], *, throttled: list[float] | None = None, httpd: list[float] | None = None) -> list[Sample]:
    """Seconds with every worker busy, most of them kept alive."""
    return [Sample(t=float(i + 1), status_ok=True, busy_workers=n, idle_workers=0,
                   scoreboard={"K": n - 5, "W": 5}, scoreboard_raw="K" * (n - 5) + "W" * 5,
                   cpu_throttled_pct=throttled[i] if throttled else None, httpd_cpu_pct=httpd[i] if httpd else None)
            for i, n in enumerate(workers)]


def test_a_pool_a_child_or_two_short_of_its_limit_at_the_knee_is_at_its_limit():
    # What the README's session refused: 253-257 of 257 in the seconds the pool was full.
    check = check_pool(full([257, 255, 253, 256, 257]), STOCK, True, "keep-alive holding workers")
    assert check.reasons == [] and not check.not_grown


def test_near_miss_a_pool_tens_short_is_still_in_doubt():
    check = check_pool(full([241, 245, 246, 244]), STOCK, True, "keep-alive holding workers")
    assert check.not_grown
    assert check.reasons and "had not grown to its limit" in check.reasons[0]
    # 250 of 257 is the floor at 3 %: one fewer is short.
    assert check_pool(full([249] * 4), STOCK, True, "keep-alive holding workers").reasons
    assert not check_pool(full([250] * 4), STOCK, True, "keep-alive holding workers").reasons


def test_a_small_pool_gets_no_slack():
    small = PoolConfig(mpm="prefork", workers=16, server_limit=17, thread_limit=1, threads_per_child=1,
                       keepalive=True, keepalive_timeout_s=5.0)
    assert check_pool(full([16] * 4), small, True, "keep-alive holding workers").reasons


def test_a_pool_that_could_not_grow_under_a_full_cpu_quota_is_a_cpu_verdict():
    """The winner less its MPM in the README's session: prefork allowed 2,868
    workers and held about 414, all busy, under a quota it used whole. The
    kept-alive slots fill first, the quota saturates too: the CPU, not the
    pool's size, limited the run."""
    big = PoolConfig(mpm="prefork", workers=2867, server_limit=2868, thread_limit=1, threads_per_child=1,
                     keepalive=True, keepalive_timeout_s=5.0)
    # The kept-alive slots fill in the first second, the quota from the second on.
    samples = full([414, 416, 418, 418, 418], throttled=[10.0, 85.0, 85.0, 85.0, 85.0],
                   httpd=[30.0, 49.0, 49.0, 49.0, 49.0])
    first = decide(samples, server_cpus=[0], interval=1.0, client_limits=[], cpu_quota_pct=50.0)
    assert first.label == "keep-alive holding workers"
    assert "server CPU" in [c["label"] for c in first.consequences]
    assert check_pool(samples, big, True, first.label).not_grown
    pool = check_pool(samples, big, True, first.label)
    verdict, again = cpu_kept_the_pool_small(first, pool, samples, big, True, server_cpus=[0], interval=1.0,
                                             cpu_quota_pct=50.0)
    assert verdict.label == "server CPU" and again.reasons == []
    assert "could not grow" not in verdict.note and "forking more takes the same CPU" in verdict.note
    # Near miss: with the quota unused, the pool's verdict and its doubt stay.
    idle_cpu = full([414, 416, 418, 418, 418], throttled=[0.0] * 5, httpd=[10.0] * 5)
    pool_only = decide(idle_cpu, server_cpus=[0], interval=1.0, client_limits=[], cpu_quota_pct=50.0)
    doubt = check_pool(idle_cpu, big, True, pool_only.label)
    kept, same = cpu_kept_the_pool_small(pool_only, doubt, idle_cpu, big, True, server_cpus=[0], interval=1.0,
                                         cpu_quota_pct=50.0)
    assert kept.label == pool_only.label and same.reasons == doubt.reasons != []
