"""HTTP/2 trials (`bench --protocol h2 --workload browser`, issue 57) on a real httpd with a real h2load.

Each test loads the sandbox for two seconds at three visitors a second: what
is checked is what the trial says it sent and got, against the server's own
access log (`%H` the protocol, `%{remote}p` the client's port, one port a
connection), and the refusals, not a rate.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest

from advisor.tuner.staging.sandbox import Sandbox
from advisor.tuner.staging.target import SandboxTarget
from advisor.tuner.trial.browser_load import ProtocolNotNegotiated
from advisor.tuner.trial.result import TrialInputs, with_rate
from advisor.tuner.trial.runner import run_trial
from test_bench_support import cli, one_error_line, require, work_dir

pytestmark = pytest.mark.httpd

VISIT = ["--workload", "browser", "--num-calls", "2", "--think", "0.3"]
BRIEF = ["--rate", "3", "--duration", "2", "--warmup", "0", "--format", "json"]


@contextmanager
def _sandbox(*up_args: str):
    directory = work_dir()
    try:
        cli("staging", "up", "--workdir", str(directory), "--tls", *up_args)
        yield directory
    finally:
        cli("staging", "down", "--workdir", str(directory), check=False)
        shutil.rmtree(directory, ignore_errors=True)


def _logged_bench(directory: Path, protocol: str, *extra: str) -> tuple[dict, list[tuple[str, str]]]:
    """One brief trial with the server logging each request's protocol and
    client port; (the trial's document, (protocol, port) of each page or asset)."""
    log = directory / "logs" / f"protocols-{protocol}.log"
    run = cli("bench", "--workdir", str(directory), "--tls", *VISIT, *BRIEF, "--protocol", protocol, *extra,
              "--set", 'LogFormat "%H %{remote}p %U" protocols', "--set", f"CustomLog {log} protocols")
    document = json.loads(run.stdout.splitlines()[0])
    # The collector's status page and the TLS probes are logged too; the visits ask for /almeida/ only.
    rows = [tuple(line.split()[:2]) for line in log.read_text().splitlines() if " /almeida/" in line]
    return document, rows


def test_an_h2_trial_is_one_connection_a_visitor_with_its_requests_as_streams_as_the_server_logs_it():
    require("apache2", "openssl", "h2load")
    with _sandbox("--mpm", "event", "--h2") as directory:
        h2, h2_rows = _logged_bench(directory, "h2")
        h1, h1_rows = _logged_bench(directory, "h1")
        mix, mix_rows = _logged_bench(directory, "mix", "--h2-share", "0.5")
        # h2load appends to its request log: each run starts it afresh, so the
        # mix's reply times are its own, not the h2 run's before it too.
        h2load_rows = len((directory / "h2load-requests.tsv").read_text().splitlines())
    assert h2["protocol"]["asked"] == "h2" and h2["protocol"]["served"] == "h2"
    assert {protocol for protocol, _ in h2_rows} == {"HTTP/2.0"}
    visitors = h2["protocol"]["connections"]
    assert visitors == 6  # 3 a second for 2 seconds
    # One connection (client port) a visitor, and every request the trial counts is one the server logged.
    assert len({port for _, port in h2_rows}) == visitors
    assert len(h2_rows) == h2["httperf"]["replies"]
    assert h2["protocol"]["requests_per_connection"] == pytest.approx(len(h2_rows) / visitors, abs=0.01)
    assert len(h2_rows) / visitors > 2  # a page's assets rode on the visitor's connection
    # The same visits over HTTP/1.1: several connections a visitor, at most httperf's four.
    assert {protocol for protocol, _ in h1_rows} == {"HTTP/1.1"}
    ports_per_visit = len({port for _, port in h1_rows}) / h1["httperf"]["session"]["total"]
    assert 1 < ports_per_visit <= 4
    assert h1["protocol"] == {"asked": "h1", "served": "http/1.1", "connections": h1["httperf"]["connections"],
                              "requests_per_connection": pytest.approx(h1["httperf"]["replies"]
                                                                       / h1["httperf"]["connections"], abs=0.01)}
    # A mix: half the six visitors on each protocol at once, each part as the server logged it.
    parts = mix["protocol"]["parts"]
    logged = Counter(protocol for protocol, _ in mix_rows)
    assert parts["h2"]["connections"] == 3 and logged["HTTP/2.0"] == parts["h2"]["replies"] == h2load_rows
    assert logged["HTTP/1.1"] == parts["http/1.1"]["replies"] > 0
    assert len({port for protocol, port in mix_rows if protocol == "HTTP/2.0"}) == 3
    # Each trial counts the requests its visits were to send, assets included:
    # at 3 visitors a second nothing is lost, so every planned request was logged.
    for document, rows in ((h2, h2_rows), (h1, h1_rows), (mix, mix_rows)):
        assert document["errors"]["requests_planned"] == len(rows) == document["httperf"]["replies"]
        assert document["errors"]["pct"] == 0.0


def test_an_h2_trial_on_prefork_is_refused_and_a_mix_there_is_served_http1():
    require("apache2", "openssl", "h2load")
    with _sandbox("--mpm", "prefork", "--h2") as directory:
        managed = (directory / "conf" / "managed.conf").read_text()
        line = one_error_line(cli("bench", "--workdir", str(directory), "--tls", *VISIT, *BRIEF, "--protocol", "h2",
                                  "--set", "KeepAliveTimeout 3", check=False))
        assert "http/1.1" in line and "h2 trial would measure HTTP/1.1" in line
        assert (directory / "conf" / "managed.conf").read_text() == managed
        # Below the command's check, a trial whose server answers over HTTP/1.1 is refused by the trial itself.
        inputs = TrialInputs(workload="browser", uri="/", rate=3, duration_s=1, wsess=(1, 2, 0.3),
                             uri_list=str(directory / "almeida.wlog"), protocol="h2", warmup_s=0)
        with pytest.raises(ProtocolNotNegotiated, match="answered with http/1.1"):
            run_trial(SandboxTarget(Sandbox(directory)), with_rate(inputs, 3))
        # A mix is measured: its HTTP/2 share falls back to HTTP/1.1, and the trial says so.
        mixed = json.loads(cli("bench", "--workdir", str(directory), "--tls", *VISIT, *BRIEF, "--protocol", "mix",
                               "--h2-share", "0.5").stdout.splitlines()[0])
        assert mixed["protocol"]["asked"] == "mix" and mixed["protocol"]["served"] == "http/1.1"
        assert "h2 not negotiated here" in mixed["session_connections"]


def test_protocol_bad_input_is_one_line_each():
    require("apache2", "openssl", "h2load")
    with _sandbox("--mpm", "event", "--h2") as directory:
        base = ["bench", "--workdir", str(directory), "--tls", *BRIEF]
        unknown = one_error_line(cli(*base, *VISIT, "--protocol", "h3", check=False))
        assert "--protocol 'h3' is not one of h1, h2" in unknown
        wrong_workload = one_error_line(cli(*base, "--workload", "1k", "--protocol", "h2", check=False))
        assert "measures the browser workload" in wrong_workload
        for share, says in (("1", "strictly between 0 and 1"), ("-0.2", "strictly between 0 and 1"),
                            (None, "needs --h2-share")):
            given = ["--h2-share", share] if share is not None else []
            assert says in one_error_line(cli(*base, *VISIT, "--protocol", "mix", *given, check=False))
        assert "add --protocol mix" in one_error_line(cli(*base, *VISIT, "--h2-share", "0.5", check=False))
    plain = work_dir()
    try:
        cli("staging", "up", "--workdir", str(plain), "--mpm", "event")
        line = one_error_line(cli("bench", "--workdir", str(plain), *VISIT, *BRIEF, "--protocol", "h2", check=False))
        assert "needs TLS" in line
    finally:
        cli("staging", "down", "--workdir", str(plain), check=False)
        shutil.rmtree(plain, ignore_errors=True)


def test_tune_with_http2_visitors_checks_its_options_and_leaves_prefork_out_of_the_switch():
    require("apache2", "openssl", "h2load")
    with _sandbox("--mpm", "event", "--h2") as directory:
        base = ["tune", "--workdir", str(directory), "--tls", "--dry-run", "--budget", "3"]
        assert "measures the browser workload" in one_error_line(cli(*base, "--protocol", "h2", check=False))
        assert "strictly between 0 and 1" in one_error_line(
            cli(*base, "--workload", "browser", "--protocol", "mix", "--h2-share", "2", check=False))
        plan = cli(*base, "--workload", "browser", "--protocol", "h2", "--allow-mpm-switch").stdout
        assert "MPM: worker | event." in plan and "prefork left out of the MPM switch" in plan
        assert "visits of 3 pages and their assets" in plan
        assert "load: h2load on this host -> " in plan and "httperf on this host" not in plan
        # mod_http2 closes a connection idle past KeepAliveTimeout and h2load does not reconnect:
        # the timeout's floor is half again the 1 s think time between pages.
        assert "KeepAliveTimeout: 1,500..15,000 ms" in plan and "- KeepAlive: On | Off" in plan
        # 20,000 visits a second of 3 pages, each page with its assets (4.2 on average).
        assert "at most 20,000 sessions/s (312,500 requests/s)" in plan
        # A mix keeps prefork: there its HTTP/2 share falls back to HTTP/1.1, as browsers do.
        mixed = cli(*base, "--workload", "browser", "--protocol", "mix", "--h2-share", "0.6",
                    "--allow-mpm-switch").stdout
        assert "MPM: prefork | worker | event." in mixed and "prefork left out" not in mixed
        assert "60% of the visitors on HTTP/2 (h2load)" in mixed
        assert "load: h2load and httperf on this host -> " in mixed
        assert "KeepAliveTimeout: 1,500..15,000 ms" in mixed  # worker and event points serve h2
