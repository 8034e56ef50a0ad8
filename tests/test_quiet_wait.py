"""A probe does not wait for an idle prefork pool to shrink.

After a probe that grew prefork's pool, the parent stops the idle children
above MaxSpareServers one a second: 81 children took 25 s to come back to
the spare band. The quiet check before each probe waited for the number of
children to stop moving, so every probe after a large one sat out its whole
20 s bound, the largest cost of a tuning session's probes. A shrinking pool
is no work left over (the next warm-up grows it to what its load needs), so
the wait ends as soon as nothing is queued or served; a pool that grows is
still waited for.

Real prefork apache2 on core 0, real httperf on core 1.
"""

from __future__ import annotations

import pytest

from test_bench_support import SandboxRun, require, two_cores

pytestmark = [pytest.mark.load, pytest.mark.httpd]


def test_the_probe_after_a_large_pool_starts_while_the_idle_children_are_still_being_stopped():
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="prefork") as run:
        # Sessions of 5 requests 0.3 s apart on kept-alive connections hold a
        # child each for about 1.2 s: 50 sessions/s need some 60 children.
        large, small = run.bench_json("--mode", "ramp", "--rates", "50,5", "--num-calls", "5", "--think", "0.3",
                                      "--duration", "3")
    grown = large["warmup"]["children_after"]
    print(f"\nlarge: warm-up {large['warmup']}\nsmall: quiet wait {small['quiet_wait_s']} s, warm-up {small['warmup']}")
    assert grown >= 30, large["warmup"]  # the first probe left a pool far above MaxSpareServers 10
    # The next probe started within a few seconds, while the parent was still stopping idle children
    # (at one a second, 20 or more of them take 20 s or more).
    assert small["quiet"] and small["quiet_wait_s"] < 5.0, small["quiet_wait_s"]
    assert small["warmup"]["children_before"] > 15, small["warmup"]
    # And it measured the setting: a steady pool, every request served in time.
    assert small["valid"], small["invalid_reasons"]
    assert small["warmup"]["steady"], small["warmup"]
    assert small["errors"]["pct"] < 1.0
