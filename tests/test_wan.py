"""WAN conditions on the link the tool made (`staging up --isolated`, `--wan-*`).

The isolated sandbox is httpd in a network namespace the tool creates,
reached over one veth pair; `--wan-rate` puts tbf on both ends of that pair,
`--wan-delay`/`--wan-jitter`/`--wan-loss` put netem on the clients' end.
Nothing else is ever touched: a target without such a link is refused.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import assert_one_line_error
from advisor.errors import UsageError
from advisor.tuner.staging.wan import WanSpec
from test_bench_support import SandboxRun, cli, require, two_cores, work_dir


def test_wan_options_are_read_as_tc_would_and_nonsense_is_refused():
    spec = WanSpec.parse("40ms", "5ms", "0.1%", "100mbit")
    assert (spec.delay_ms, spec.jitter_ms, spec.loss_pct, spec.rate_bits) == (40.0, 5.0, 0.1, 100e6)
    assert WanSpec.parse("0.2s", None, None, "10mbps").delay_ms == 200.0
    assert WanSpec.parse(None, None, None, "10mbps").rate_bits == 80e6 and not WanSpec.parse(
        None, None, None, "10mbps").needs_netem
    assert WanSpec.parse(None, None, None, None) is None
    for args, fragment in [(("fast", None, None, None), "--wan-delay 'fast' is not a time"),
                           (("10ms", "20ms", None, None), "is more than --wan-delay"),
                           ((None, "5ms", None, None), "--wan-jitter varies a delay"),
                           ((None, None, "120%", None), "outside 0..100"),
                           ((None, None, None, "lots"), "--wan-rate 'lots' is not a rate")]:
        with pytest.raises(UsageError) as caught:
            WanSpec.parse(*args)
        assert fragment in caught.value.render()


def _links() -> str:
    return subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout


def _namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


@pytest.mark.netns
def test_staging_up_isolated_makes_a_namespace_and_a_link_and_down_removes_them():
    require("apache2")
    work = work_dir()
    up = cli("staging", "up", "--workdir", str(work), "--isolated", "--mpm", "prefork", "--format", "json")
    info = json.loads(up.stdout)
    try:
        link = info["isolated"]
        assert info["url"] == f"http://{link['server_addr']}:8080"
        assert link["netns"] in _namespaces() and link["client_if"] in _links()
        # The server is reached from this machine over the link, and only there.
        trial = json.loads(cli("bench", "--workdir", str(work), "--rate", "20", "--duration", "1",
                               "--format", "json").stdout.splitlines()[0])
        assert trial["httperf"]["replies"] >= 15
    finally:
        cli("staging", "down", "--workdir", str(work))
        shutil.rmtree(work, ignore_errors=True)
    assert link["netns"] not in _namespaces() and link["client_if"] not in _links()


def test_wan_options_are_refused_on_a_link_the_tool_did_not_make(tmp_path):
    require("apache2")
    with SandboxRun(mpm="prefork") as run:
        result = run.bench("--wan-delay", "40ms", "--rate", "5", "--duration", "1", check=False)
        assert_one_line_error(result, "--wan-* changes qdiscs only on a link the tool made", "staging up --isolated")
        tuned = cli("tune", "--workdir", str(run.dir), "--wan-rate", "10mbit", "--yes", "--report",
                    str(tmp_path / "report"), check=False)
        assert_one_line_error(tuned, "--wan-* changes qdiscs only on a link the tool made", "staging up --isolated")
        assert not (tmp_path / "report").exists()
        run.assert_stock_restored()


@pytest.mark.netns
@pytest.mark.load
def test_wan_rate_holds_the_link_to_its_rate_and_goes_away_after(tmp_path):
    """1 MB files: about 60 MB/s unshaped here, 1 MB/s (8 mbit) with tbf on both ends."""
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="prefork", isolated=True) as run:
        link = run.state.isolated
        # No warm-up: 2 MB/s offered fills the 1 MB/s link within the window's
        # first second anyway, and a warm-up's transfers queued on the shaped
        # link had to drain before the window.
        args = ["--workload", "1m", "--rate", "2", "--duration", "3", "--timeout", "15", "--client-cpus", "1",
                "--warmup", "0", "--format", "json"]
        free = json.loads(run.bench(*args).stdout.splitlines()[0])
        shaped_run = run.bench(*args, "--wan-rate", "8mbit")
        shaped = json.loads(shaped_run.stdout.splitlines()[0])
        run.assert_stock_restored()
        qdiscs = subprocess.run(["tc", "qdisc", "show", "dev", link["client_if"]], capture_output=True,
                                text=True).stdout
    assert "wan: rate 8 mbit/s each way" in shaped_run.stderr, shaped_run.stderr
    free_kbs, shaped_kbs = free["httperf"]["net_io_kbps"], shaped["httperf"]["net_io_kbps"]
    print(f"\n1 MB files at 2/s: {free_kbs:.0f} KB/s unshaped, {shaped_kbs:.0f} KB/s at 8 mbit")
    assert shaped_kbs <= 8e6 / 8 / 1000 * 1.1, shaped_kbs  # httperf's KB is 1,000 bytes
    assert shaped_kbs >= 8e6 / 8 / 1000 * 0.5, shaped_kbs  # and the link was used, not stalled
    assert free_kbs > 1.5 * shaped_kbs, (free_kbs, shaped_kbs)
    assert "tbf" not in qdiscs, qdiscs  # the command took its qdiscs away


@pytest.mark.netns
@pytest.mark.load
def test_wan_delay_adds_two_round_trips_to_a_connection_or_says_the_kernel_lacks_netem(tmp_path):
    """With netem: 50 ms on what the clients send adds about 2 x 50 ms to a
    one-request connection (the handshake and the request each wait once).
    Without it (this kernel has no sch_netem): one line, exit 2, and the
    link and the managed include are as they were."""
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="prefork", isolated=True) as run:
        link = run.state.isolated
        args = ["--workload", "1k", "--rate", "20", "--duration", "2", "--client-cpus", "1", "--warmup", "0",
                "--format", "json"]
        near = json.loads(run.bench(*args).stdout.splitlines()[0])
        far_run = run.bench(*args, "--wan-delay", "50ms", check=False)
        run.assert_stock_restored()
        qdiscs = subprocess.run(["tc", "qdisc", "show", "dev", link["client_if"]], capture_output=True,
                                text=True).stdout
    assert "netem" not in qdiscs, qdiscs
    if far_run.returncode == 2:
        assert_one_line_error(far_run, "this kernel has no netem qdisc (sch_netem)", "modprobe sch_netem")
        return
    assert far_run.returncode == 0, far_run.stderr
    far = json.loads(far_run.stdout.splitlines()[0])
    added = far["httperf"]["connection_time_ms"]["avg"] - near["httperf"]["connection_time_ms"]["avg"]
    print(f"\nconnection time: +{added:.0f} ms with 50 ms on the clients' side")
    assert 80 <= added <= 130, added
