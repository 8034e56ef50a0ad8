"""`capacity --log`: the site's own demand from its access log (issue 31).

A generated log with a known arrival process (Poisson with a burst) and
known hold times (%D lognormal), seeded: the command must recover the rates,
the busiest second and the busy-worker peak within 5 %, and its growth
factor must be where the worker-pool model, run directly (and its textbook
M/M/c/K form), first passes 1 % blocking or the response-time target.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import loggen
from conftest import assert_one_line_error

CLI = [sys.executable, "-m", "advisor"]
FIXED = ["--no-measure", "--ram", "4G", "--worker-memory", "20M", "--connection-memory", "64K"]
SECONDS, RATE, BURST_AT, BURST_SECONDS, BURST_RATE = 600, 200.0, 300, 20, 800.0
MEAN_HOLD, CV = 0.05, 1.0
POOL, BACKLOG = 40, 100


def run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + ["capacity", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)


def run_json(args: list[str]) -> dict:
    result = run([*args, "--format", "json"])
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def prefork_config(path: Path, extra: str = "") -> Path:
    path.write_text("LoadModule mpm_prefork_module modules/mod_mpm_prefork.so\nServerName localhost\n"
                    f"MaxRequestWorkers {POOL}\nListenBacklog {BACKLOG}\n" + extra)
    return path


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    base = tmp_path_factory.mktemp("caplog")
    truth = loggen.Truth()
    log = base / "access.log"
    loggen.write_log(log, SECONDS, RATE, mean_hold=MEAN_HOLD, cv=CV, burst_at=BURST_AT,
                     burst_seconds=BURST_SECONDS, burst_rate=BURST_RATE, seed=7, truth=truth)
    escaped = loggen.FORMAT.replace('"', '\\"')
    config = prefork_config(base / "httpd.conf", f'LogFormat "{escaped}" timed\nCustomLog {base}/access.log timed\n')
    return base, log, config, truth


@pytest.fixture(scope="module")
def report(generated):
    base, log, config, _ = generated
    return run_json([str(config), "--log", str(log), *FIXED])


def busiest_minute(arrivals: dict[int, int]) -> float:
    first, last = min(arrivals), max(arrivals)
    counts = [arrivals.get(s, 0) for s in range(first, last + 1)]
    best = running = sum(counts[:60])
    for i in range(60, len(counts)):
        running += counts[i] - counts[i - 60]
        best = max(best, running)
    return best / 60


def close(value: float, truth: float, share: float = 0.05) -> bool:
    return abs(value - truth) <= share * truth


def test_rates_and_busiest_second_recovered(report, generated):
    truth = generated[3]
    d = report["log"]["demand"]
    span = max(truth.arrivals) - min(truth.arrivals) + 1
    assert d["requests"] == truth.requests
    assert close(d["mean_rate"], truth.requests / span)
    assert close(d["busiest_second_rate"], max(truth.arrivals.values()))
    assert close(d["busiest_minute_rate"], busiest_minute(truth.arrivals))
    # The burst is 4x the base rate: the busiest minute sits over it.
    assert d["busiest_minute_rate"] > 1.5 * RATE
    assert BURST_AT - 60 <= d["busiest_second_at"] - loggen.START < BURST_AT + BURST_SECONDS
    counts = sorted(truth.arrivals.get(s, 0) for s in range(min(truth.arrivals), max(truth.arrivals) + 1))
    assert close(d["p99_second_rate"], counts[math.ceil(0.99 * len(counts)) - 1])


def test_hold_distribution_recovered(report, generated):
    truth = generated[3]
    hold = report["log"]["demand"]["hold"]
    assert hold["source"] == "%D"
    assert close(hold["mean"], truth.hold_sum / truth.requests, 0.01)
    assert close(hold["mean"], MEAN_HOLD)
    assert close(hold["cv"], CV, 0.1)
    ordered = sorted(truth.holds)
    for key, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        assert close(hold[key], ordered[int(q * len(ordered))]), key


def test_busy_worker_peak_by_littles_law(report, generated):
    truth = generated[3]
    d = report["log"]["demand"]
    assert close(d["peak_busy"], max(truth.busy.values()))
    span = max(truth.arrivals) - min(truth.arrivals) + 1
    assert close(d["mean_busy"], sum(truth.busy.values()) / span)
    pool = report["log"]["pool"]
    assert pool["max_request_workers"] == POOL
    assert pool["ram_workers"] == report["recommended_max_request_workers"]
    assert close(pool["peak_share_of_pool"], d["peak_busy"] / POOL, 1e-6)
    # The burst (800/s x 50 ms = 40 workers) fills a pool of 40: those seconds are listed.
    assert report["log"]["full_count"] >= 5
    full_truth = sum(1 for v in truth.busy.values() if v >= 0.95 * POOL)
    assert abs(report["log"]["full_count"] - full_truth) <= max(3, 0.2 * full_truth)
    spells = report["log"]["full_spells"]
    assert spells[0].startswith("2026-01-01 00:0")
    assert sum(int(spell.rsplit("(", 1)[1].split()[0]) for spell in spells) == report["log"]["full_count"]


def mmck(rate: float, hold: float, servers: int, places: int) -> tuple[float, float]:
    """M/M/c/K by its textbook product, summed in logs (large pools overflow a^n / n!):
    (blocking, mean number in the system)."""
    a = rate * hold
    logs = [n * math.log(a) - math.lgamma(n + 1) if n <= servers else
            servers * math.log(a) - math.lgamma(servers + 1) + (n - servers) * math.log(a / servers)
            for n in range(places + 1)]
    top = max(logs)
    weights = [math.exp(v - top) for v in logs]
    total = sum(weights)
    return weights[-1] / total, sum(n * w for n, w in enumerate(weights)) / total


def test_growth_factor_is_where_the_model_passes_one_percent(report):
    from advisor.capacity.workerpool_model import ServerModel, solve

    log = report["log"]
    base = log["base_rate"]
    hold = log["demand"]["hold"]["mean"]
    model = ServerModel(cpu_demand=0.0, wait=hold, backlog=BACKLOG + 1)
    for row in log["headroom"]:
        g, workers = row["factor"], row["workers"]
        assert row["limited_by"] == "blocking"
        at = solve([g * base], model, workers)[0].blocking
        below = solve([g * base * (1 - 1e-3)], model, workers)[0].blocking
        assert below <= 0.01 < at
        # The textbook M/M/c/K agrees (Erlang's system with a waiting room).
        blocking, _ = mmck(g * base, hold, workers, workers + BACKLOG + 1)
        assert abs(blocking - 0.01) < 1e-3
    configured, recommended = log["headroom"]
    assert recommended["workers"] == report["recommended_max_request_workers"] > POOL
    assert recommended["factor"] > configured["factor"] > 1


def test_growth_factor_with_a_response_target(generated):
    base, log, config, _ = generated
    target = 0.06
    out = run_json([str(config), "--log", str(log), "--target-response", str(target), *FIXED])["log"]
    hold = out["demand"]["hold"]["mean"]
    row = out["headroom"][0]
    assert row["limited_by"] == "response time"
    rate = row["rate"]
    blocking, mean_n = mmck(rate, hold, POOL, POOL + BACKLOG + 1)
    assert abs(mean_n / (rate * (1 - blocking)) - target) < 1e-3 * target


def test_rotated_and_gzipped_set_reads_as_one(generated, tmp_path, report):
    _, log, config, _ = generated
    loggen.split_rotated(log, tmp_path)
    out = run_json([str(config), "--log", str(tmp_path / "access.log*"), "--log-format", loggen.FORMAT, *FIXED])
    mine, whole = out["log"]["demand"], report["log"]["demand"]
    assert mine["files"] == ["access.log.2.gz", "access.log.1", "access.log"]
    for key in ("requests", "busiest_second_rate", "busiest_minute_rate", "mean_rate"):
        assert mine[key] == whole[key], key
    assert mine["peak_busy"] == pytest.approx(whole["peak_busy"], rel=1e-9)


def test_text_and_plot(generated, tmp_path):
    _, log, config, _ = generated
    plot = tmp_path / "busy.png"
    result = run([str(config), "--log", str(log), "--plot", str(plot), *FIXED])
    assert result.returncode == 0, result.stderr
    assert "Busy workers per second" in result.stdout and "Headroom" in result.stdout
    assert "count requests only" in result.stdout  # no %k in the format
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def keepalive_log(path: Path, seconds: int = 120, rate: float = 10.0) -> None:
    """One request per connection (%k 0, %X +), 10 ms each, `rate` a second."""
    with open(path, "w") as handle:
        for s in range(seconds):
            stamp = loggen._clf(loggen.START + s)
            for _ in range(int(rate)):
                handle.write(f'10.0.0.1 - - {stamp} "GET / HTTP/1.1" 200 100 10000 0 +\n')


@pytest.mark.parametrize("mpm, counted", [("prefork", True), ("event", False)])
def test_keepalive_idle_holds(tmp_path, mpm, counted):
    log = tmp_path / "ka.log"
    keepalive_log(log)
    config = tmp_path / "httpd.conf"
    config.write_text(f"LoadModule mpm_{mpm}_module m.so\nServerName x\nKeepAliveTimeout 3\n")
    fmt = '%h %l %u %t "%r" %>s %b %D %k %X'
    d = run_json([str(config), "--log", str(log), "--log-format", fmt, *FIXED])["log"]["demand"]
    keep = d["keepalive"]
    assert keep["counted"] is counted
    assert keep["open_share"] == 1.0
    if counted:
        # Little's law: 10 connections/s x 3 s idle = 30 workers, plus 10/s x 10 ms.
        assert keep["connections"] == 1200
        assert d["peak_busy"] == pytest.approx(30.1, rel=0.05)
        assert d["peak_busy_requests"] == pytest.approx(0.1, rel=0.05)
    else:
        assert "hold no worker" in keep["how"]
        assert d["peak_busy"] == pytest.approx(0.1, rel=0.05)


def test_a_few_bad_lines_are_counted(generated, tmp_path):
    _, log, config, _ = generated
    bad = tmp_path / "access.log"
    lines = log.read_text().splitlines(keepends=True)[:5000]
    lines[10:10] = ["garbage line\n", "another\n"]
    bad.write_text("".join(lines))
    d = run_json([str(config), "--log", str(bad), "--log-format", loggen.FORMAT, *FIXED])["log"]["demand"]
    assert d["skipped"] == 2 and d["requests"] == 5000
    assert "access.log:11: does not match" in d["skip_reasons"][0]


# ---- bad input: one line, exit 2 -------------------------------------------------------


def test_log_without_timestamps(tmp_path):
    config = prefork_config(tmp_path / "httpd.conf")
    log = tmp_path / "access.log"
    log.write_text("10.0.0.1 GET / 200 5000\n" * 20)
    assert_one_line_error(run([str(config), "--log", str(log), "--log-format", "%h %m %U %>s %D", *FIXED]),
                          "lacks the time (%t)")
    assert_one_line_error(run([str(config), "--log", str(log), *FIXED]), "access.log:1:", "reads with the log format")


def test_format_that_does_not_match(generated, tmp_path):
    _, log, config, _ = generated
    assert_one_line_error(run([str(config), "--log", str(log), "--log-format", "%t %D %h", *FIXED]),
                          "access.log:1:", "reads with the log format")


def test_empty_log(tmp_path):
    config = prefork_config(tmp_path / "httpd.conf")
    (tmp_path / "access.log").write_text("")
    assert_one_line_error(run([str(config), "--log", str(tmp_path / "access.log"), "--log-format", loggen.FORMAT,
                               *FIXED]), "access.log", "the log is empty")


def test_times_going_backwards(tmp_path):
    config = prefork_config(tmp_path / "httpd.conf")
    new = list(loggen.lines(30, 20, seed=3, start=loggen.START + 3600))
    old = list(loggen.lines(30, 20, seed=4))
    log = tmp_path / "access.log"
    log.write_text("".join(new + old))
    assert_one_line_error(run([str(config), "--log", str(log), "--log-format", loggen.FORMAT, *FIXED]),
                          f"access.log:{len(new) + 1}:", "the time goes back")


def test_no_hold_time_asks_for_service_time(generated, tmp_path):
    _, log, config, _ = generated
    common = '%h %l %u %t "%r" %>s %b'
    short = tmp_path / "access.log"
    short.write_text("".join(line.rsplit(" ", 1)[0] + "\n" for line in log.read_text().splitlines()[:3000]))
    assert_one_line_error(run([str(config), "--log", str(short), "--log-format", common, *FIXED]),
                          "has no %D or %T", "--service-time")
    d = run_json([str(config), "--log", str(short), "--log-format", common, "--service-time", "0.05",
                  *FIXED])["log"]["demand"]
    assert d["hold"] is None
    assert d["mean_busy"] == pytest.approx(d["mean_rate"] * 0.05, rel=0.01)


def test_missing_log_file(tmp_path):
    config = prefork_config(tmp_path / "httpd.conf")
    assert_one_line_error(run([str(config), "--log", str(tmp_path / "nope.log"), *FIXED]), "no such log file")


# ---- lint --log: C202's expected clients from the log ------------------------------------


def lint(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + ["lint", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)


def test_lint_takes_expected_clients_from_the_log(generated, report, tmp_path):
    _, log, _, _ = generated
    config = tmp_path / "httpd.conf"
    config.write_text("LoadModule mpm_prefork_module m.so\nServerName x\nMaxRequestWorkers 10\n")
    common = ["--ram", "16G", "--worker-memory", "20M", "--select", "C202", "--format", "json", "--no-live"]
    without = lint([str(config), *common])
    assert "C202" not in without.stdout
    with_log = lint([str(config), *common, "--log", str(log), "--log-format", loggen.FORMAT])
    assert with_log.returncode in (0, 1), with_log.stderr
    findings = [f for f in json.loads(with_log.stdout) if f["code"] == "C202"]
    clients = math.ceil(report["log"]["demand"]["peak_busy"])
    assert len(findings) == 1 and f"{clients:,} clients are expected" in findings[0]["message"]
    # --expected-clients wins over the log.
    told = lint([str(config), *common, "--log", str(log), "--log-format", loggen.FORMAT, "--expected-clients", "500"])
    assert "500 clients are expected" in told.stdout


def test_lint_log_without_hold_time(generated, tmp_path):
    config = tmp_path / "httpd.conf"
    config.write_text("LoadModule mpm_prefork_module m.so\nServerName x\nMaxRequestWorkers 10\n")
    log = tmp_path / "access.log"
    log.write_text("".join(line.rsplit(" ", 1)[0] + "\n" for line in generated[1].read_text().splitlines()[:100]))
    result = lint([str(config), "--ram", "16G", "--worker-memory", "20M", "--select", "C202", "--no-live",
                   "--log", str(log), "--log-format", '%h %l %u %t "%r" %>s %b'])
    assert_one_line_error(result, "has no %D or %T", "--expected-clients")


# ---- the accumulator on its own ---------------------------------------------------------


def test_lines_logged_out_of_order_count_the_same():
    """httpd writes a line when the request ends, stamped with its start: a slow
    request's line follows faster later ones. Within a few minutes that is order."""
    import random

    from advisor.capacity.logdemand import DemandAccumulator

    rng = random.Random(5)
    events = sorted((1000.0 + rng.uniform(0, 120), rng.expovariate(1 / 0.3)) for _ in range(5000))
    in_order, written = DemandAccumulator(), DemandAccumulator()
    for when, hold in events:
        in_order.add(when, hold)
    for when, hold in sorted(events, key=lambda e: e[0] + e[1]):  # the order httpd writes them
        written.add(when, hold)
    a, _ = in_order.finish(["x"], 5000, 0, [], hold_source="%D", keepalive_how="")
    b, _ = written.finish(["x"], 5000, 0, [], hold_source="%D", keepalive_how="")
    assert a.busiest_second_rate == b.busiest_second_rate and a.seconds == b.seconds
    assert a.peak_busy == pytest.approx(b.peak_busy, rel=1e-9)
    assert a.hold.p99 == b.hold.p99
    # A long request (spanning many seconds) adds one worker to each whole second.
    long = DemandAccumulator()
    long.add(10.5, 5.0)
    long.add(16.25, 0.5)
    d, series = long.finish(["x"], 2, 0, [], hold_source="%D", keepalive_how="")
    assert list(series.busy) == pytest.approx([0.5, 1, 1, 1, 1, 0.5, 0.5])
    assert d.peak_busy == 1 and series.first == 10 and d.seconds == 7


# ---- the protocol mix from the log (issue 57) ---------------------------------------------

H2_FORMAT = '%h %l %u %t "%r" %>s %b %D %k %X %H %{H2_STREAM_ID}e'


def protocol_log(path: Path, seconds: int = 120, *, protocol_field: bool = True) -> None:
    """Each second one HTTP/1.1 connection of 4 requests (%k 0-3, %X +) and one
    HTTP/2 connection of 6 streams (as mod_http2 logs them: %k from 1, %X -,
    stream ids 1, 3, ... 11), 10 ms each."""
    with open(path, "w") as handle:
        for s in range(seconds):
            stamp = loggen._clf(loggen.START + s)
            for k in range(4):
                tail = f" {k} + HTTP/1.1 -" if protocol_field else ""
                handle.write(f'10.0.0.1 - - {stamp} "GET /a{k} HTTP/1.1" 200 100 10000{tail}\n')
            for n in range(6):
                tail = f" {n + 1} - HTTP/2.0 {2 * n + 1}" if protocol_field else ""
                handle.write(f'10.0.0.2 - - {stamp} "GET /b{n} HTTP/2.0" 200 100 10000{tail}\n')


@pytest.mark.parametrize("mpm, idle", [("worker", 6.0), ("event", 0.0)])
def test_protocols_and_http2_connections_from_the_log(tmp_path, mpm, idle):
    log = tmp_path / "h2.log"
    protocol_log(log)
    config = tmp_path / "httpd.conf"
    config.write_text(f"LoadModule mpm_{mpm}_module m.so\nServerName x\nKeepAliveTimeout 3\n")
    whole = run_json([str(config), "--log", str(log), "--log-format", H2_FORMAT, *FIXED])
    d = whole["log"]["demand"]
    assert d["protocols"] == {"source": "%H", "requests": 1200, "h2_requests": 720, "h2_share": 0.6,
                              "h1_connections": 120, "h2_connections": 120}
    keep = d["keepalive"]
    # worker: each second one HTTP/1.1 and one HTTP/2 connection each idle 3 s: 6 threads held.
    assert keep["h2_connections"] == (120 if mpm == "worker" else 0)
    assert d["peak_busy"] == pytest.approx(idle + 0.1, rel=0.05)
    assert d["peak_busy_requests"] == pytest.approx(0.1, rel=0.05)
    mix = whole["protocol_mix"]
    assert mix["share"] == pytest.approx(0.6) and mix["source"].startswith("the log's %H, 720 of 1,200")
    # Without --service-time the mix takes the log's hold time and busiest minute.
    assert mix["at_rates"][0]["rate"] == pytest.approx(10.0)
    assert mix["at_rates"][0]["h2_workers"] == pytest.approx(0.6 * 10 * 0.01)
    text = run([str(config), "--log", str(log), "--log-format", H2_FORMAT, *FIXED]).stdout
    assert "protocols (%H): 60.0 % of 1,200 requests over HTTP/2" in " ".join(text.split())


def test_protocol_from_the_request_line_and_the_flag_wins(tmp_path):
    log = tmp_path / "combined.log"
    protocol_log(log, protocol_field=False)
    config = tmp_path / "httpd.conf"
    config.write_text("LoadModule mpm_event_module m.so\nServerName x\n")
    fmt = '%h %l %u %t "%r" %>s %b %D'
    whole = run_json([str(config), "--log", str(log), "--log-format", fmt, *FIXED])
    counted = whole["log"]["demand"]["protocols"]
    assert counted["source"].startswith("%r") and counted["h2_share"] == pytest.approx(0.6)
    assert counted["h1_connections"] is None and counted["h2_connections"] is None  # no %k, no stream id
    flagged = run_json([str(config), "--log", str(log), "--log-format", fmt, "--h2-share", "0.2", *FIXED])
    assert flagged["protocol_mix"]["share"] == 0.2
    assert any("replaces the log's 60.0 %" in note for note in flagged["notes"])


def test_log_without_the_protocol_assumes_http1(tmp_path):
    log = tmp_path / "bare.log"
    with open(log, "w") as handle:
        for s in range(60):
            handle.write(f"10.0.0.1 {loggen._clf(loggen.START + s)} 10000\n")
    config = tmp_path / "httpd.conf"
    config.write_text("LoadModule mpm_event_module m.so\nServerName x\n")
    whole = run_json([str(config), "--log", str(log), "--log-format", "%h %t %D", *FIXED])
    assert whole["log"]["demand"]["protocols"] is None
    assert whole["protocol_mix"]["share"] == 0.0
    unknown = [note for note in whole["notes"] if "protocol mix is unknown" in note]
    assert len(unknown) == 1 and "HTTP/1.1" in unknown[0]


def test_protocol_and_stream_fields_read():
    from advisor.tuner.load.accesslog import first_h2_stream, protocol_is_h2

    assert [protocol_is_h2(t) for t in ("HTTP/2.0", "GET /x HTTP/2.0", "GET /x HTTP/1.1", "HTTP/1.0", "-", "")] == \
        [True, True, False, False, False, False]
    assert [first_h2_stream(t) for t in ("1", "3", "143-1", "143-11", "-", None)] == \
        [True, False, True, False, None, None]
