"""`apache-advisor capacity` end to end: text, JSON, what-ifs, fit, plot, bad input."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLES, assert_one_line_error

DEBIAN = str(SAMPLES / "debian" / "apache2.conf")
CLI = [sys.executable, "-m", "advisor"]
MIB = 1024 * 1024
GIB = 1024 * MIB
# Fixed inputs so the figures do not depend on this host.
FIXED = ["--no-measure", "--connection-memory", "64K"]


def run_cli(args: list[str]) -> tuple[int, str, str]:
    """In-process run of the Typer app (fast); AdvisorError propagates."""
    from typer.testing import CliRunner

    from advisor.cli import app

    result = CliRunner().invoke(app, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def run_json(args: list[str]) -> dict:
    code, out, err = run_cli(["capacity", *args, "--format", "json"])
    assert code == 0, err
    return json.loads(out)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def event_config(tmp_path: Path, body: str = "") -> Path:
    return write(tmp_path / "httpd.conf",
                 "LoadModule mpm_event_module modules/mod_mpm_event.so\n"
                 "ServerName localhost\n" + body)


# ---- sizing -------------------------------------------------------------------


def expected_prefork(ram: int) -> int:
    """Kegel's sum with the assumed sizes, re-derived here from its terms:
    OS 256 MiB + 2 % of RAM, an 8 MiB parent, 8 MiB children, 64 KiB sockets."""
    os_reserve = int(256 * MIB + 0.02 * ram)
    return (ram - os_reserve - 8 * MIB) // (8 * MIB + 64 * 1024)


@pytest.mark.parametrize("ram", ["2G", "8G", "64G"])
def test_debian_sample_on_small_medium_large_hosts(ram):
    report = run_json([DEBIAN, "--ram", ram, *FIXED])
    ram_bytes = {"2G": 2, "8G": 8, "64G": 64}[ram] * GIB
    prefork = report["recommendations"]["prefork"]
    assert report["applies_to"] == "prefork"
    assert prefork["max_request_workers"] == expected_prefork(ram_bytes)
    assert prefork["server_limit"] == prefork["max_request_workers"]
    assert prefork["total_bytes"] <= ram_bytes
    for name in ("worker", "event"):
        threaded = report["recommendations"][name]
        assert threaded["max_request_workers"] % 25 == 0
        assert threaded["server_limit"] == math.ceil(threaded["max_request_workers"] / 25)
        assert threaded["max_request_workers"] > prefork["max_request_workers"]
    # The sample writes 400 with no ServerLimit: httpd runs 256.
    assert report["settings"]["max_request_workers"] == 256
    assert report["settings"]["written_max_request_workers"] == 400
    assert report["current_fits"] == (ram != "2G")


def test_text_output_shows_the_sum_the_table_and_predictions():
    code, out, _ = run_cli(["capacity", DEBIAN, "--ram", "2G", *FIXED, "--service-time", "0.008",
                            "--rate", "50", "--rate", "150"])
    assert code == 0
    n = expected_prefork(2 * GIB)
    assert f"Kegel's sum at the recommended prefork pool (MaxRequestWorkers {n})" in out
    for term in ("OS and kernel", "httpd parent", "hot document set", f"{n} x child", f"{n} x TCP connection"):
        assert term in out
    assert re.search(r"prefork ← this config\s*│\s*%d\s*│\s*%d" % (n, n), out)
    assert "apache2buddy" in out and "which apache2buddy leaves out" in out
    assert "does not fit" in out  # 256 workers of 8 MiB on 2 GiB
    assert "lowers it to 256" in out
    rows = [line for line in out.splitlines() if re.match(r"\s+(50|150) │", line)]
    assert len(rows) == 2
    assert "Markov chain" in out


def test_docroot_and_reserve_enter_the_sum(tmp_path):
    docs = tmp_path / "www"
    docs.mkdir()
    (docs / "big.bin").write_bytes(b"\0" * (3 * MIB))
    base = run_json([DEBIAN, "--ram", "2G", *FIXED])
    more = run_json([DEBIAN, "--ram", "2G", *FIXED, "--docroot", str(docs), "--reserve", "512M"])
    assert more["memory"]["doc_set"]["bytes"] == 3 * MIB
    assert more["memory"]["services"][0]["bytes"] == 512 * MIB
    lost = base["recommendations"]["prefork"]["max_request_workers"] - more["recommendations"]["prefork"]["max_request_workers"]
    assert lost == pytest.approx((515 * MIB) / (8 * MIB + 64 * 1024), abs=1)
    # apache2buddy subtracts the other services but not the document set.
    assert more["recommendations"]["prefork"]["apache2buddy"]["remaining"] == 2 * GIB - 512 * MIB


def test_threaded_config_reads_its_directives(tmp_path):
    conf = event_config(tmp_path, "ThreadsPerChild 50\nThreadLimit 50\nServerLimit 8\nMaxRequestWorkers 300\n"
                                  "AsyncRequestWorkerFactor 1\n")
    report = run_json([str(conf), "--ram", "4G", *FIXED])
    s = report["settings"]
    assert (s["mpm"], s["threads_per_child"], s["max_request_workers"], s["async_factor"]) == ("event", 50, 300, 1.0)
    event = report["recommendations"]["event"]
    assert event["threads_per_child"] == 50 and event["max_request_workers"] % 50 == 0
    assert event["connections_per_worker"] == 2.0


# ---- the model through the command --------------------------------------------


def test_what_if_flags_change_the_prediction():
    base = run_json([DEBIAN, "--ram", "8G", *FIXED, "--service-time", "0.008", "--rate", "100"])
    row = base["predictions"][0]
    assert base["model"]["k_current"] == 256 and row["current"]["method"] == "Markov chain"
    fewer = run_json([DEBIAN, "--ram", "8G", *FIXED, "--service-time", "0.008", "--rate", "100",
                      "--max-workers", "50"])
    assert fewer["model"]["k_current"] == 50
    assert fewer["predictions"][0]["current"]["blocking"]["value"] > row["current"]["blocking"]["value"]
    assert fewer["predictions"][0]["current"]["response_time"]["value"] < row["current"]["response_time"]["value"]
    poisson = run_json([DEBIAN, "--ram", "8G", *FIXED, "--service-time", "0.008", "--rate", "100",
                        "--arrivals", "poisson"])
    assert poisson["predictions"][0]["current"]["method"] == "closed form"
    assert poisson["predictions"][0]["current"]["blocking"]["value"] < 1e-6
    calm = run_json([DEBIAN, "--ram", "8G", *FIXED, "--service-time", "0.008", "--rate", "100",
                     "--burst", "0.05,0.95,0.95"])
    assert calm["predictions"][0]["current"]["blocking"]["value"] < row["current"]["blocking"]["value"]
    sim = run_json([DEBIAN, "--ram", "8G", *FIXED, "--service-time", "0.008", "--rate", "100",
                    "--service-dist", "lognormal:3"])
    cur = sim["predictions"][0]["current"]
    assert cur["method"].startswith("simulation") and cur["response_time"]["half_width"] > 0
    assert sim["model"]["service"] == "lognormal (CV 3)"


def test_default_rates_span_capacity():
    report = run_json([DEBIAN, "--ram", "8G", *FIXED, "--service-time", "0.01"])
    assert [row["rate"] for row in report["predictions"]] == [50, 80, 95, 120, 200]
    assert report["model"]["worst_response_current"] == pytest.approx(2.56)


def _bench_trial(rate: float, result, workers: int, duration: float = 6.0) -> dict:
    """A trial as bench writes it, with what the pool model predicts as the measurement."""
    samples = [{"busy_workers": round(result.busy_workers) + 1, "httpd_cpu_pct": 100 * result.cpu_cores_used}] * 5
    return {"kind": "trial", "valid": True, "request_rate": rate, "reply_rate": result.throughput,
            "reply_time_ms": result.response_time * 1000,
            "inputs": {"rate": rate, "duration_s": duration, "num_calls": 1, "server_cpus": [0],
                       "server_cpu_quota_pct": None, "directives": [f"MaxRequestWorkers {workers}"]},
            "httperf": {"replies": round(result.throughput * duration)},
            "pool": {"configured": workers}, "metrics": samples}


def test_fit_from_bench_json_drives_the_pool_model(tmp_path):
    """The issue's ramp: four workers, a sleeping endpoint. Fitted on the
    model's own numbers, the fit is wait-bound and its K counts the workers
    and the listen queue, never a negative queue, never K = 1."""
    from advisor.capacity.workerpool_model import ServerModel, solve

    truth = ServerModel(0.008, 0.2, cores=1, backlog=512)
    rates = [5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
    trials = [_bench_trial(r, p, 4) for r, p in zip(rates, solve(rates, truth, 4))]
    bench = write(tmp_path / "ramp.json", "\n".join(json.dumps(t) for t in trials))
    args = [DEBIAN, "--ram", "8G", *FIXED, "--fit", str(bench), "--max-workers", "4",
            "--rate", "10", "--rate", "14", "--rate", "30"]
    report = run_json(args)
    fit = report["fit"]
    assert fit["regime"] == "wait-bound"
    assert fit["model"]["cpu_demand"] == pytest.approx(0.008, rel=0.05)
    assert fit["capacity"] == pytest.approx(truth.capacity(4), rel=0.05)
    assert len(fit["comparisons"]) == 6
    model = report["model"]
    assert model["listen_queue"] > 0 and model["k_current"] == 4 + model["listen_queue"]
    at_10 = report["predictions"][0]["current"]
    assert at_10["throughput"]["value"] == pytest.approx(10, rel=0.02)
    assert at_10["blocking"]["value"] < 0.01
    text = run_cli(["capacity", *args])[1]
    assert "wait-bound" in text and "Measured vs predicted" in text and "K=1 " not in text
    assert "MaxRequestWorkers -" not in text
    # --service-time still wins as a what-if (on the processor-sharing model).
    what_if = run_json([DEBIAN, "--ram", "8G", *FIXED, "--fit", str(bench), "--service-time", "0.02"])
    assert what_if["model"]["service_time"] == 0.02 and what_if["model"]["service_time_source"] == "--service-time"


def _replayed_bench_trial(rate: float, replay, workers: int, listen_backlog: int, duration: float,
                          timeout: float) -> dict:
    """A paced trial as bench writes it, measured by the trial replay itself."""
    samples = [{"busy_workers": replay.busy_workers + 1, "httpd_cpu_pct": 100 * 0.008 * replay.reply_rate}] * 5
    return {"kind": "trial", "valid": True, "request_rate": rate, "reply_rate": replay.reply_rate,
            "reply_time_ms": replay.reply_time * 1000,
            "inputs": {"rate": rate, "duration_s": duration, "num_calls": 1, "timeout_s": timeout,
                       "server_cpus": [0], "server_cpu_quota_pct": None,
                       "directives": [f"MaxRequestWorkers {workers}", f"ListenBacklog {listen_backlog}"]},
            "httperf": {"replies": replay.replies},
            "pool": {"configured": workers}, "metrics": samples}


def test_fit_on_paced_trials_replays_them_and_checks_the_held_out_ones(tmp_path):
    """Trials bench ran (paced, with a timeout) are replayed as run: fitted on
    the rates below the knee, the model predicts the ones above it, and says
    the config's pool is not the one measured."""
    from advisor.capacity.workerpool_model import ServerModel
    from advisor.capacity.workerpool_trialsim import TrialSpec, replay_trial

    truth = ServerModel(0.008, 0.2, cores=1, backlog=4)
    trials = [_replayed_bench_trial(r, replay_trial(truth, TrialSpec(r, 6, 0.9, 4, 4)), 4, 3, 6, 0.9)
              for r in (4.0, 8.0, 12.0, 16.0, 26.0, 32.0, 40.0)]
    fit_file = write(tmp_path / "fit.json", "\n".join(json.dumps(t) for t in trials[:4]))
    check_file = write(tmp_path / "check.json", "\n".join(json.dumps(t) for t in trials[4:]))
    report = run_json([DEBIAN, "--ram", "8G", *FIXED, "--fit", str(fit_file), "--check", str(check_file)])
    fit = report["fit"]
    assert "replayed" in fit["method"]
    assert fit["regime"] == "wait-bound"
    assert fit["model"]["wait"] == pytest.approx(0.2, rel=0.03)
    assert [row["rate"] for row in fit["held_out"]] == [26.0, 32.0, 40.0]
    for row in fit["held_out"]:
        assert row["throughput_predicted"] == pytest.approx(row["throughput"], rel=0.03)
        assert row["response_time_predicted"] == pytest.approx(row["response_time"], rel=0.03)
        assert row["turned_away_predicted"] == pytest.approx(row["turned_away"], abs=0.02)
    assert any("the trials ran with MaxRequestWorkers 4" in note for note in report["notes"])
    text = run_cli(["capacity", DEBIAN, "--ram", "8G", *FIXED, "--fit", str(fit_file), "--check", str(check_file)])[1]
    assert "held out" in text and "replayed as bench ran it" in text


def test_fit_plot_draws_the_measured_points(tmp_path):
    from advisor.capacity.workerpool_model import ServerModel, solve

    truth = ServerModel(0.02, 0.1, cores=1, backlog=5)
    trials = []
    for workers in (4, 8):
        rates = [8.0, 16.0, 24.0, 40.0]
        trials += [_bench_trial(r, p, workers) for r, p in zip(rates, solve(rates, truth, workers))]
    bench = write(tmp_path / "ramp.json", json.dumps(trials))
    target = tmp_path / "fit.png"
    code, out, err = run_cli(["capacity", DEBIAN, "--ram", "2G", *FIXED, "--fit", str(bench), "--plot", str(target)])
    assert code == 0, err
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "mixed" in out or "wait-bound" in out or "CPU-bound" in out


def test_plot_is_written(tmp_path):
    target = tmp_path / "capacity.png"
    code, out, _ = run_cli(["capacity", DEBIAN, "--ram", "2G", *FIXED, "--service-time", "0.008",
                            "--rate", "60", "--rate", "150", "--plot", str(target)])
    assert code == 0 and f"plot written to {target}" in out
    data = target.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert not list(tmp_path.glob(".capacity-*"))  # no temporary file left behind


def test_json_has_only_plain_values():
    text = run_cli(["capacity", DEBIAN, "--ram", "2G", *FIXED, "--service-time", "0.008", "--format", "json"])[1]
    assert "NaN" not in text and "Infinity" not in text
    report = json.loads(text)
    assert isinstance(report["predictions"][0]["current"]["throughput"]["value"], float)


# ---- bad input: one line on stderr, exit 2 ------------------------------------


def run_real(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + ["capacity", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)


def test_unreadable_config(tmp_path):
    assert_one_line_error(run_real(str(tmp_path / "missing.conf")), str(tmp_path / "missing.conf"))


def test_bad_directive_value_points_at_its_line(tmp_path):
    conf = event_config(tmp_path, "\nMaxRequestWorkers lots\n")
    assert_one_line_error(run_real(str(conf), "--ram", "1G"), f"{conf}:4:", "MaxRequestWorkers takes a whole number")


def test_bad_size_string():
    assert_one_line_error(run_real(DEBIAN, "--ram", "2 gigs"), "--ram", "is not a size", "512M")


def test_bad_fit_file(tmp_path):
    bad = write(tmp_path / "bench.json", '{"trials": [{"request_rate": 1}')
    assert_one_line_error(run_real(DEBIAN, "--ram", "1G", "--fit", str(bad)), str(bad), "not valid JSON")


def test_too_few_trials_to_fit(tmp_path):
    few = write(tmp_path / "few.csv", "rate,response_time,throughput\n10,0.01,10\n20,0.02,20\n")
    assert_one_line_error(run_real(DEBIAN, "--ram", "1G", "--fit", str(few)), str(few), "at least three")


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--rate", "100"], ["need a mean service time", "--service-time"]),
        (["--service-time", "0.01", "--burst", "0.05,0.95"], ["--burst", "three numbers"]),
        (["--service-time", "0.01", "--burst", "0.05,0.95,9"], ["--burst", "negative"]),
        (["--arrivals", "poisson", "--burst", "1,1,0.5"], ["--burst describes MMPP"]),
        (["--format", "yaml"], ["--format 'yaml'"]),
        (["--service-dist", "weibull"], ["unknown service distribution"]),
        (["--rate", "-5", "--service-time", "0.01"], ["--rate -5"]),
        (["--service-time", "0.01", "--plot", "/nonexistent-dir/x.png"], ["does not exist"]),
        (["--service-time", "0.01", "--plot", "out.svg"], ["PNG"]),
        (["--reserve-process", "no-such-daemon-xyz"], ["no running process"]),
        (["--docroot", "/nonexistent-docroot"], ["not a directory"]),
        (["--doc-set", "1G", "--docroot", "/tmp"], ["not both"]),
        (["--mpm", "winnt"], ["--mpm 'winnt'"]),
        (["--check", "trials.json"], ["--check compares trials with a fitted model", "--fit"]),
    ],
)
def test_bad_flags(args, fragments):
    assert_one_line_error(run_real(DEBIAN, "--ram", "1G", "--no-measure", *args), *fragments)


def test_bad_service_samples(tmp_path):
    samples = write(tmp_path / "times.txt", "0.01\n0.02\nslow\n")
    assert_one_line_error(run_real(DEBIAN, "--ram", "1G", "--service-samples", str(samples)),
                          f"{samples}:3:", "not a number")


def test_response_time_target_caps_the_recommendation():
    report = run_json([DEBIAN, "--ram", "8G", *FIXED, "--service-time", "0.008", "--target-response", "0.5"])
    prefork = report["recommendations"]["prefork"]
    assert prefork["max_request_workers"] == 62  # floor(0.5 / 0.008)
    assert prefork["limited_by"] == "the 0.5 s response-time target"
    assert any(note.startswith(f"RAM allows {expected_prefork(8 * GIB)}") for note in prefork["notes"])
    event = report["recommendations"]["event"]
    assert event["max_request_workers"] == 50  # whole children of 25 threads
    assert report["model"]["worst_response_recommended"] <= 0.5


def test_service_samples_give_a_fitted_lognormal(tmp_path):
    import numpy as np

    rng = np.random.default_rng(8)
    draws = rng.lognormal(np.log(0.01) - 0.5 * np.log1p(4.0), np.sqrt(np.log1p(4.0)), 4000)  # CV 2
    samples = write(tmp_path / "times.txt", "# seconds\n" + "\n".join(f"{v:.6f}" for v in draws) + "\n")
    report = run_json([DEBIAN, "--ram", "8G", *FIXED, "--service-samples", str(samples), "--rate", "50"])
    model = report["model"]
    cv = float(re.search(r"CV ([0-9.]+)", model["service"]).group(1))
    assert cv == pytest.approx(2.0, rel=0.15)
    assert model["service_time"] == pytest.approx(float(draws.mean()), rel=1e-6)
    assert model["service_time_source"] == "mean of --service-samples"
    assert "control variate" in report["predictions"][0]["current"]["method"]
