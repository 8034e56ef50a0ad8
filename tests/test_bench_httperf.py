"""The httperf parser on real httperf output, the knee search and the plots."""

from __future__ import annotations

import json

import pytest

from advisor.tuner.load import httperf
from test_bench_support import SandboxRun, require, two_cores

pytestmark = pytest.mark.httpd


def _run(spec: httperf.HttperfSpec) -> httperf.HttperfResult:
    return httperf.finish(httperf.start(spec), timeout=60)


def test_every_line_of_real_httperf_output_is_parsed():
    require("apache2", "httperf")
    with SandboxRun(mpm="event") as run:
        host, port = run.state.host, run.state.port
        plain = _run(httperf.HttperfSpec(host, port, "/1k.html", rate=100, num_conns=100, client_cpus=[1]))
        sessions = _run(httperf.HttperfSpec(host, port, "/1k.html", rate=20, wsess=(10, 3, 0.1)))
        listed = _run(httperf.HttperfSpec(host, port, rate=200, num_conns=200, num_calls=2, burst_length=2,
                                          uri_list=str(run.dir / "almeida.wlog")))
    for result in (plain, sessions, listed):
        assert result.unparsed == [], result.unparsed
        assert result.command.startswith("httperf --")
        assert result.errors["total"] == 0 and set(result.errors) >= {"fd-unavail", "addrunavail", "client-timo"}
    assert plain.connections == plain.requests == plain.replies == 100
    assert plain.status["2xx"] == 100 and plain.reply_size_b["content"] == 1024
    assert plain.reply_rate == pytest.approx(plain.replies / plain.test_duration_s)
    assert plain.reply_rate_samples["samples"] == 0  # under 5 s: why reply_rate is computed
    # The rate line parsed as what it is, connections over the run's length.
    # (Not a band around the 100/s asked for: on a busy host that is timing,
    # and timing is for the `load` tests.)
    assert plain.connection_rate == pytest.approx(plain.connections / plain.test_duration_s, rel=0.02)
    assert sessions.session["completed"] == 10 and sessions.replies == 30
    assert listed.replies == 400 and listed.reply_size_b["content"] > 5000  # heavy-tailed mean, not 1 KB
    assert json.loads(json.dumps(plain.to_dict()))["reply_rate"] == pytest.approx(plain.reply_rate)


@pytest.mark.load  # exact probe sequence and peak: needs the host's cores (run under the load lock)
def test_knee_mode_ramp_mode_and_plots(tmp_path):
    require("apache2", "httperf")
    two_cores()
    with SandboxRun(mpm="event") as run:
        # 2-second probes: in a 1-second one a 50 ms stall of the last
        # connection already costs the 5 % of reply rate the SLO allows.
        # No warm-ups: the event MPM's stock pool serves 400 1 KB files a
        # second from the start, and nothing here is about the warm-up.
        docs = run.bench_json("--mode", "knee", "--start-rate", "100", "--max-rate", "400", "--duration", "2",
                              "--max-probes", "4", "--warmup", "0", "--plot", str(tmp_path / "knee"))
        ramp_run = run.bench("--format", "json", "--mode", "ramp", "--rates", "50,100", "--duration", "1",
                             "--warmup", "0")
    ramp = [json.loads(line) for line in ramp_run.stdout.splitlines() if line.startswith("{")]
    # Before the first trial: the target, the load generator and the highest rate offered.
    load_line = next(line for line in ramp_run.stderr.splitlines() if "load: " in line)
    assert "httperf on this host on cores 1 -> http://127.0.0.1:" in load_line, load_line
    assert load_line.endswith("at most 100 connections/s"), load_line
    trials = [d for d in docs if d["kind"] == "trial"]
    knee = [d for d in docs if d["kind"] == "knee"][0]
    # 100 -> 200 -> 400 doubling; a 1 KB file at 400/s is far under capacity.
    assert [t["inputs"]["rate"] for t in trials] == [100, 200, 400], [
        (t["inputs"]["rate"], t["slo_failures"], t["errors"], t["interference"]) for t in trials]
    assert knee["peak_rate"] == 400 and knee["stop_reason"] == "max rate reached without failing"
    # No probe failed: the figure is a floor, with the CPU-speed reference read on the server's core.
    assert knee["uncertainty"]["bound"] == "lower" and knee["uncertainty"]["reference"]["cpus"] == [0]
    for trial in trials:
        assert {"reply_rate", "request_rate", "connection_rate", "errors", "reply_time_ms", "metrics", "verdict",
                "interference", "quiet_wait_s"} <= set(trial)
        assert trial["verdict"]["label"] == "none" and trial["metrics"]
        assert trial["valid"] and trial["meets_slo"] and trial["quiet"]
        sample = trial["metrics"][-1]
        assert {"cpu", "httpd_cpu_pct", "httpd_spawns", "httpd_exits", "accept_queue", "scoreboard",
                "listen_overflows", "time_wait", "net_bps", "disk_util_pct"} <= set(sample)
    assert [p["attempt"] for p in knee["probes"]] == [1, 1, 1]
    assert [t["inputs"]["rate"] for t in ramp] == [50, 100]
    pngs = sorted(p.name for p in (tmp_path / "knee").iterdir())
    assert pngs == ["rates.png", "trial-01-timeline.png", "trial-02-timeline.png", "trial-03-timeline.png"]
    assert all((tmp_path / "knee" / name).read_bytes()[:4] == b"\x89PNG" for name in pngs)
