"""h2load's report read into figures, and the browser-like visits written for both load generators."""

from __future__ import annotations

import pytest

from advisor.errors import AdvisorError
from advisor.tuner.load import browser_pages, h2load

# Printed by Debian's h2load 1.52.0 on this machine: 3 visitors of 4 requests
# against an event httpd over TLS with Protocols h2 http/1.1.
REPORT = """starting benchmark...
spawning thread #0: 3 total client(s). 12 total requests
progress: 33% of clients started
progress: 100% of clients started
TLS Protocol: TLSv1.3
Cipher: TLS_AES_128_GCM_SHA256
Server Temp Key: X25519 253 bits
Application protocol: h2

finished in 224.04ms, 53.56 req/s, 31.15KB/s
requests: 12 total, 12 started, 12 done, 12 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 12 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 6.98KB (7146) total, 657B (657) headers (space savings 74.30%), 6.02KB (6162) data
                     min         max         mean         sd        +/- sd
time for request:      578us      2.90ms      1.73ms       893us    58.33%
time for connect:     5.68ms     14.42ms     10.18ms      4.38ms    66.67%
time to 1st byte:    17.17ms     17.52ms     17.33ms       177us    66.67%
req/s           :      18.01       18.14       18.08        0.06    66.67%
"""


def test_every_line_of_a_report_is_read():
    report = h2load.parse(REPORT)
    assert report.unparsed == []
    assert report.application_protocol == "h2" and report.tls_protocol == "TLSv1.3"
    assert report.finished_s == pytest.approx(0.22404)
    assert report.request_rate == pytest.approx(53.56)  # a parsed figure, not a measured rate
    assert report.requests == {"total": 12, "started": 12, "done": 12, "succeeded": 12, "failed": 0,
                               "errored": 0, "timeout": 0}
    assert report.status["2xx"] == 12 and report.traffic_bytes == {"total": 7146, "headers": 657, "data": 6162}
    assert report.times_ms["request"] == pytest.approx({"min": 0.578, "max": 2.9, "mean": 1.73, "sd": 0.893})
    assert report.times_ms["connect"]["mean"] == pytest.approx(10.18)


def test_a_line_of_a_newer_h2load_is_kept_not_lost():
    report = h2load.parse(REPORT + "streams per connection: 4\n")
    assert report.unparsed == ["streams per connection: 4"]


def test_no_connection_leaves_the_protocol_unknown():
    report = h2load.parse(REPORT.replace("Application protocol: h2\n", ""))
    assert report.application_protocol is None


def test_a_missing_h2load_names_the_package(tmp_path):
    with pytest.raises(AdvisorError) as caught:
        h2load.find_h2load(str(tmp_path / "no-h2load"))
    assert "nghttp2-client" in caught.value.hint


def test_the_spec_asks_for_one_connection_a_visitor_and_streams_or_none():
    spec = h2load.H2loadSpec(script="/s.tsv", visitors=30, rate=10, binary="/usr/bin/h2load",
                             client_cpus=[1])
    argv = spec.argv()
    assert argv[:3] == ["taskset", "-c", "1"]
    assert "--clients=30" in argv and "--max-concurrent-streams=100" in argv
    assert "--rate=1" in argv and "--rate-period=100ms" in argv  # ten a second, evenly spaced


@pytest.mark.parametrize("rate", [0.5, 3, 7, 10, 251.9, 300, 333.3, 1234.5, 20000])
def test_a_rate_becomes_whole_connections_per_whole_milliseconds_within_one_percent(rate):
    count, period = h2load.rate_arguments(rate)
    made = int(count.split("=")[1]) * 1000 / int(period.split("=")[1].removesuffix("ms"))
    assert made == pytest.approx(rate, rel=0.01)
    h1 = h2load.H2loadSpec(script="/s.tsv", visitors=30, rate=10, http1=True, binary="/usr/bin/h2load").argv()
    assert "--h1" in h1 and "--max-concurrent-streams=1" in h1


def test_pages_bring_almeidas_images_per_html_file():
    visits = browser_pages.make_visits(2000, 1)
    images = sum(a.count("/images/") for v in visits for p in v.pages for a in p.assets)
    # Almeida et al. 1996, workload A: 0.754 of accesses images, 0.192 HTML.
    assert images / 2000 == pytest.approx(0.754 / 0.192, rel=0.06)
    assert all(p.html.startswith("/almeida/html/") for v in visits for p in v.pages)


def test_the_session_log_puts_a_pages_assets_in_one_burst():
    visit = browser_pages.Visit((browser_pages.Page("/a.html", ("/x.gif", "/y.gif")),
                                 browser_pages.Page("/b.html", ())))
    text = browser_pages.httperf_session_log([visit, visit], think_s=1.5)
    assert text.split("\n")[:5] == ["/a.html think=1.5", "  /x.gif", "  /y.gif", "/b.html", ""]
    # Six as browsers open, but httperf 0.9.0 refuses more than four a session.
    assert browser_pages.httperf_browser_args() == ["--max-connections=4", "--max-piped-calls=1"]


def test_the_timing_script_sends_assets_after_the_page_and_thinks_between_pages():
    visit = browser_pages.Visit((browser_pages.Page("/a.html", ("/x.gif",)), browser_pages.Page("/b.html", ())))
    rows = [line.split("\t") for line in
            browser_pages.h2load_timing_script(visit, "https://127.0.0.1:8443/", think_s=1.0, rtt_ms=50).splitlines()]
    assert rows[0] == ["0.000", "https://127.0.0.1:8443/a.html"]
    assert rows[1] == ["55.000", "/x.gif"]  # one round trip and the page's service
    assert float(rows[2][0]) == pytest.approx(55 + 50 + 1000) and rows[2][1] == "/b.html"


def test_a_report_reads_as_httperf_would_for_the_trial(tmp_path):
    log = tmp_path / "requests.tsv"
    rows = ["1796638157611216\t200\t2000", "1796638157611217\t200\t4000", "1796638157611218\t-1\t9000"]
    log.write_text("\n".join(rows + ["1796638157611219\t200\t3000"] * 9) + "\n")  # the 12 requests done
    spec = h2load.H2loadSpec(script="/s.tsv", visitors=3, rate=3, binary="/usr/bin/h2load")
    report = h2load.parse(REPORT.replace("0 errored", "2 errored"))
    result = h2load.as_httperf(report, spec, h2load.RequestLog.read(log))
    assert result.reply_time_ms == pytest.approx(3.0)  # the failed stream (-1) is not a reply
    # A log holding other runs' rows besides (h2load appends) is not this run's:
    # h2load's own mean time for a request (1.73 ms) stands instead.
    log.write_text("\n".join(rows * 2 + ["1796638157611219\t200\t3000"] * 9) + "\n")
    assert h2load.as_httperf(report, spec, h2load.RequestLog.read(log)).reply_time_ms == pytest.approx(1.73)
    assert result.replies == 12 and result.reply_rate == pytest.approx(12 / 0.22404)
    assert result.error_total == 2 and result.bad_status == 0
    # Each failure spoils at most one visit: at least one of the three completed.
    assert result.session["completed"] == 1.0 and result.session["connections_per_session"] == 1.0
