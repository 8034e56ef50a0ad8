"""`--workload log:PATH` (issue 15): sessions, bursts, think times and sizes from an access log.

These tests need no server: a log of known structure is written, derived,
and its httperf session file and sandbox files are read back.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import loggen

from advisor.errors import UsageError
from advisor.tuner.load.accesslog import COMBINED, COMMON, LogFormat, LogReader, expand_paths, format_from_config
from advisor.tuner.load.replay import derive, prepare
from advisor.tuner.load.replay_files import CGI_ENDPOINT, LENGTH_CLASSES
from advisor.tuner.load.replay_sessions import ReplayOptions
from advisor.tuner.load.session_shape import session_shape

T0 = 1_700_000_000  # 2023-11-14 22:13:20 UTC
CLI = [sys.executable, "-m", "advisor"]


def clf_time(t: float) -> str:
    return time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(t))


@dataclass
class KnownLog:
    """What a generated log holds, to compare the derivation with."""

    sessions: list[list[list[tuple[str, int]]]] = field(default_factory=list)  # session -> bursts -> (path, size)
    think_s: int = 0
    noise: Counter = field(default_factory=Counter)
    bad_lines: int = 0
    lines: int = 0

    @property
    def requests(self) -> list[tuple[str, int]]:
        return [r for s in self.sessions for b in s for r in b]


def write_known_log(path: Path, *, clients: int = 12, sessions_each: int = 3, bursts: int = 4, objects: int = 3,
                    think: int = 7, session_spacing: int = 200, combined: bool = True) -> KnownLog:
    """Clients browsing: each burst a page at t and its objects at t and t+1;
    the next burst `think` s after the burst's last request; sessions of a
    client `session_spacing` s apart (far past the 30 s gap). Clients 0 and
    1 share an address and differ by user agent. Noise: a 304, a 404, a
    POST and a line of another format per session."""
    known = KnownLog(think_s=think)
    lines: list[tuple[float, int, str]] = []
    order = 0

    def emit(t: float, address: str, agent: str, request: str, status: int, size: int | str) -> None:
        nonlocal order
        text = f'{address} - - [{clf_time(t)}] "{request}" {status} {size}'
        if combined:
            text += f' "-" "{agent}"'
        lines.append((t, order, text))
        order += 1

    for client in range(clients):
        address = "192.0.2.1" if client < 2 else f"198.51.100.{client}"
        agent = f"Browser/{client} (test)"
        for number in range(sessions_each):
            start = T0 + client * 3 + number * session_spacing
            session: list[list[tuple[str, int]]] = []
            t = start
            for b in range(bursts):
                page = f"/site/section{b}/page{(client + b) % 5}.html"
                if b == bursts - 1:
                    page = f"/search.php?q=term{number}"
                burst = [(page, 900 if "?" in page else 4000 + 100 * ((client + b) % 5))]
                burst += [(f"/img/o{k}.png", 1500 + 50 * k) for k in range(objects)]
                for index, (uri, size) in enumerate(burst):
                    emit(t + (1 if index == len(burst) - 1 else 0), address, agent, f"GET {uri} HTTP/1.1", 200, size)
                session.append(burst)
                t = t + 1 + think
            known.sessions.append(session)
            emit(start + 2, address, agent, "GET /img/o0.png HTTP/1.1", 304, "-")
            emit(start + 2, address, agent, "GET /missing.html HTTP/1.1", 404, 209)
            emit(start + 3, address, agent, "POST /form HTTP/1.1", 200, 120)
            known.noise.update({"status 304": 1, "status 404": 1, "method POST": 1})
            lines.append((start + 3, order, "this line is in another format"))
            order += 1
            known.bad_lines += 1
    lines.sort()
    path.write_text("".join(text + "\n" for _t, _o, text in lines))
    known.lines = len(lines)
    return known


def read_sesslog(path: str) -> list[list[tuple[list[str], float | None]]]:
    """httperf's --wsesslog file -> sessions -> bursts as (URIs, think after)."""
    sessions: list[list[tuple[list[str], float | None]]] = []
    current: list[tuple[list[str], float | None]] = []
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            if current:
                sessions.append(current)
            current = []
            continue
        if line[0].isspace():
            assert current, "an indented line must follow a burst's first line"
            current[-1][0].append(line.strip())
            continue
        words = line.split()
        think = next((float(w[6:]) for w in words[1:] if w.startswith("think=")), None)
        current.append(([words[0]], think))
    if current:
        sessions.append(current)
    return sessions


def _derive(tmp_path: Path, log: Path, options: ReplayOptions | None = None, text: str = COMBINED):
    reader = LogReader([str(log)], LogFormat.compile(text))
    return derive(reader, tmp_path / "out", options or ReplayOptions())


def test_sessions_bursts_think_times_and_sizes_match_the_log(tmp_path):
    log = tmp_path / "access.log"
    known = write_known_log(log)
    replay = _derive(tmp_path, log)
    summary = replay.summary

    assert summary.lines == known.lines
    assert summary.skipped == known.bad_lines
    assert all("does not match the log format" in r for r in summary.skip_reasons)
    assert len(summary.skip_reasons) == 5
    assert summary.left_out == dict(known.noise)
    assert summary.sessions == len(known.sessions) == 36  # clients 0 and 1 share an address, not a session
    per_session = [sum(len(b) for b in s) for s in known.sessions]
    assert summary.requests_per_session_mean == pytest.approx(sum(per_session) / len(per_session))
    assert summary.requests_per_session_p95 == 16
    assert summary.bursts_per_session_mean == 4
    assert summary.requests_per_burst_mean == 4
    assert summary.think_s_mean == known.think_s and summary.think_s_median == known.think_s
    sizes = [size for _uri, size in known.requests]
    assert summary.bytes_per_request == pytest.approx(sum(sizes) / len(sizes), abs=0.1)
    assert summary.replayed == len(sizes)
    assert summary.dynamic_urls == 3 and summary.dynamic_requests == 36  # one search per session
    assert summary.longest_session_s == pytest.approx(3 * known.think_s)
    assert summary.urls == 5 * 4 - 5 + 3 + 3  # pages in three sections, the objects, three searches

    # The session file says the same: sessions, bursts, think times, and
    # behind each URI a file of the logged size.
    replay.install(tmp_path / "docroot")
    sessions = read_sesslog(replay.session_log)
    assert len(sessions) == len(known.sessions)
    assert sorted(len(s) for s in sessions) == sorted(len(s) for s in known.sessions)
    for session in sessions:
        thinks = [think for _uris, think in session]
        assert thinks[:-1] == [known.think_s] * (len(session) - 1) and thinks[-1] is None
        assert [len(uris) for uris, _t in session] == [4, 4, 4, 4]
    replayed_sizes = []
    for session in sessions:
        for uris, _think in session:
            for uri in uris:
                assert uri.startswith("/log/")
                replayed_sizes.append((tmp_path / "docroot" / uri.lstrip("/")).stat().st_size)
    assert Counter(replayed_sizes) == Counter(sizes)
    shape = session_shape(replay.session_log)
    assert list(shape.requests) == [16] * 36
    assert shape.requests_for(40) == 16 * 40  # httperf starts over at the file's end
    assert shape.longest_s == pytest.approx(21)


def test_a_long_log_gives_httperf_at_most_1000_sessions_spread_over_it(tmp_path):
    """httperf 0.9.0 stops with "too many sessions" past 1,000 (wsesslog.c)."""
    log = tmp_path / "access.log"
    log.write_text("".join(f'203.0.{i // 250}.{i % 250} - - [{clf_time(T0 + i)}] "GET /f{i}.bin HTTP/1.1" 200 {100 + i}\n'
                           for i in range(2500)))
    replay = _derive(tmp_path, log, text=COMMON)
    summary = replay.summary
    assert summary.sessions == 2500 and summary.file_sessions == 1000
    assert "the session file holds 1000 of the 2500 sessions" in "\n".join(summary.lines_for_humans())
    uris = [b[0] for s in read_sesslog(replay.session_log) for b, _t in s]
    numbers = [int(u[len("/log/f"):-len(".bin")]) for u in uris]
    assert len(set(numbers)) == 1000 and min(numbers) == 0 and max(numbers) >= 2490
    # Neighbours in the file come from far apart in the log: the first ten
    # sessions, all a short trial sends, span most of it.
    assert max(numbers[:10]) - min(numbers[:10]) > 2000
    assert summary.file_bytes_per_request == pytest.approx(summary.bytes_per_request, rel=0.01)


def test_paths_on_disk_keep_the_logged_names(tmp_path):
    log = tmp_path / "access.log"
    write_known_log(log, clients=2, sessions_each=1)
    replay = _derive(tmp_path, log)
    replay.install(tmp_path / "docroot")
    assert (tmp_path / "docroot/log/site/section0/page0.html").stat().st_size == 4000
    assert (tmp_path / "docroot/log/img/o2.png").stat().st_size == 1600
    searches = list((tmp_path / "docroot/log").glob("search-q*.php"))
    assert len(searches) == 1 and searches[0].stat().st_size == 900
    assert "dynamic URLs (query strings, scripts): 1, 2 requests, served as static files of the logged size" \
        in replay.summary.lines_for_humans()


def test_dynamic_cgi_sends_scripts_to_the_sandbox_endpoint(tmp_path):
    log = tmp_path / "access.log"
    write_known_log(log, clients=2, sessions_each=1)
    replay = _derive(tmp_path, log, ReplayOptions(dynamic="cgi"))
    uris = [u for s in read_sesslog(replay.session_log) for b, _t in s for u in b]
    assert uris.count(CGI_ENDPOINT) == 2
    assert any("sent to the sandbox's CGI endpoint" in line for line in replay.summary.lines_for_humans())


def test_a_file_that_is_also_a_directory_gets_a_name_of_its_own(tmp_path):
    log = tmp_path / "access.log"
    log.write_text("".join(
        f'203.0.113.7 - - [{clf_time(T0 + i)}] "GET {p} HTTP/1.0" 200 {s}\n'
        for i, (p, s) in enumerate([("/blog", 111), ("/blog/one", 222), ("/a%20b.txt", 333), ("/../etc/passwd", 444),
                                    ("/dir/", 555)])))
    replay = _derive(tmp_path, log, text=COMMON)
    replay.install(tmp_path / "docroot")
    uris = [u for s in read_sesslog(replay.session_log) for b, _t in s for u in b]
    sizes = [(tmp_path / "docroot" / unquote_path(u)).stat().st_size for u in uris]
    assert sizes == [111, 222, 333, 444, 555]
    assert "/log/blog/one" in uris and "/log/a%20b.txt" in uris and "/log/dir/index.html" in uris
    assert not any(".." in u for u in uris)
    assert (tmp_path / "docroot/log/blog").is_dir()


def unquote_path(uri: str) -> str:
    from urllib.parse import unquote

    return unquote(uri).lstrip("/")


def test_sessions_split_at_the_gap_and_bursts_at_a_second(tmp_path):
    log = tmp_path / "access.log"
    rows = [(0, "/a"), (0, "/a1"), (1, "/a2"), (5, "/b"), (5, "/b1"), (40, "/c"), (100, "/d")]
    log.write_text("".join(f'203.0.113.9 - - [{clf_time(T0 + t)}] "GET {p} HTTP/1.1" 200 10\n' for t, p in rows))
    replay = _derive(tmp_path, log, ReplayOptions(session_gap_s=30), text=COMMON)
    sessions = read_sesslog(replay.session_log)
    # 0-5 s: two bursts, 4 s between them; 40 s: alone (35 s idle); 100 s: alone.
    assert [[len(b) for b, _t in s] for s in sessions] == [[3, 2], [1], [1]]
    assert sessions[0][0][1] == 4
    wide = _derive(tmp_path, log, ReplayOptions(session_gap_s=60), text=COMMON)
    assert [[len(b) for b, _t in s] for s in read_sesslog(wide.session_log)] == [[3, 2, 1, 1]]


def test_no_client_address_reaches_any_file_or_output(tmp_path):
    log = tmp_path / "access.log"
    write_known_log(log)
    replay = _derive(tmp_path, log, ReplayOptions(anonymize=True))
    replay.install(tmp_path / "docroot")
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    text = "\n".join(p.read_text() for p in written) + "\n".join(replay.summary.lines_for_humans())
    text += json.dumps(replay.summary.to_dict())
    for address in ("192.0.2.1", "198.51.100.", "Browser/"):
        assert address not in text
    # Anonymized: no logged path either, and each hash in its length class.
    for name in ("section0", "page", "search", "img/o"):
        assert name not in text
    uris = [u for s in read_sesslog(replay.session_log) for b, _t in s for u in b]
    names = {u[len("/log"):] for u in uris}
    assert all(len(n) in LENGTH_CLASSES for n in names if not n.startswith("/_/"))
    assert {len(n) for n in names} == {16, 32}  # "/img/o0.png" and "/site/section0/page0.html"-like
    assert all(any(n.endswith(ext) for ext in (".png", ".html", ".php")) for n in names)


def test_rotated_and_gzipped_logs_are_read_in_order(tmp_path):
    log = tmp_path / "whole.log"
    write_known_log(log, clients=4, sessions_each=4)
    loggen.split_rotated(log, tmp_path)
    paths = expand_paths(str(tmp_path / "access.log*"))
    assert [os.path.basename(p) for p in paths] == ["access.log.2.gz", "access.log.1", "access.log"]
    whole = _derive(tmp_path / "w", log).summary
    parts = prepare("log:" + str(tmp_path / "access.log*"), tmp_path / "p", ReplayOptions())[0].summary
    assert (parts.sessions, parts.replayed, parts.bytes_per_request) == (whole.sessions, whole.replayed,
                                                                          whole.bytes_per_request)


def test_a_truncated_gzip_keeps_what_came_before_it(tmp_path):
    log = tmp_path / "whole.log"
    write_known_log(log, clients=4, sessions_each=2)
    packed = gzip.compress(log.read_bytes())
    cut = tmp_path / "access.log.1.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    replay, _source = prepare(f"log:{cut}", tmp_path / "out", ReplayOptions())
    summary = replay.summary
    assert 0 < summary.replayed < len(log.read_text().splitlines())
    assert any("compressed file ends early" in r for r in summary.skip_reasons + [])


def test_the_format_comes_from_the_customlog_that_writes_the_file(tmp_path):
    from advisor.config import LoadOptions, load_config

    conf = tmp_path / "httpd.conf"
    conf.write_text(
        'LogFormat "%a %t \\"%r\\" %>s %B %D" timed\n'
        'LogFormat "%h %l %u %t \\"%r\\" %>s %b" common\n'
        "<VirtualHost *:80>\n"
        '  LogFormat "%h %t \\"%r\\" %>s %B \\"%{User-Agent}i\\"" timed\n'
        f"  CustomLog {tmp_path}/shop.log timed\n"
        "</VirtualHost>\n"
        f"CustomLog {tmp_path}/site.log timed\n")
    cfg = load_config(str(conf), LoadOptions(apache_version="2.4"))
    vhost, _where = format_from_config(cfg, [str(tmp_path / "shop.log.3.gz")])
    assert vhost == '%h %t "%r" %>s %B "%{User-Agent}i"'
    server, where = format_from_config(cfg, [str(tmp_path / "site.log")])
    assert server == '%a %t "%r" %>s %B %D' and where.endswith("httpd.conf:1")
    assert format_from_config(cfg, [str(tmp_path / "other.log")]) is None
    # And the command line uses it: this log is in neither Common nor Combined.
    (tmp_path / "site.log").write_text("".join(
        f'203.0.113.{i % 3} [{clf_time(T0 + i)}] "GET /p{i % 4} HTTP/1.1" 200 {100 * (i % 4)} {i * 7}\n'
        for i in range(32)))
    replay, source = prepare(f"log:{tmp_path}/site.log", tmp_path / "out", ReplayOptions(), config_path=str(conf))
    assert source.startswith("the CustomLog's format") and replay.summary.skipped == 0
    assert replay.summary.sessions == 3 and replay.summary.bytes_per_request == pytest.approx(150)


def test_log_format_option_and_bytes_with_headers(tmp_path):
    log = tmp_path / "odd.log"
    log.write_text("".join(f'{T0 + i} 203.0.113.5 GET /x{i % 2}.css 200 {1250 + 100 * (i % 2)}\n' for i in range(10)))
    replay, source = prepare(f"log:{log}", tmp_path / "out", ReplayOptions(), log_format="%{sec}t %h %m %U%q %>s %O")
    assert source == "--log-format"
    # %O counts the headers: the files are the logged bytes less 250.
    assert replay.summary.bytes_per_request == pytest.approx(1050)
    assert "%O less 250 bytes of headers" in replay.summary.size_source


def test_a_format_without_what_sessions_need_is_refused():
    with pytest.raises(UsageError, match="lacks the client"):
        LogFormat.compile('%t "%r" %>s %b')


@pytest.mark.parametrize("content, fragment", [
    ("", "the log is empty"),
    ("not a log line\nnor this one\n", "no line of 2 matches the log format"),
    (f'203.0.113.1 - - [{clf_time(T0)}] "POST /a HTTP/1.1" 200 5\n', "none of the log's 1 requests is a GET answered 200"),
])
def test_a_log_with_nothing_usable_is_one_line_and_exit_2(tmp_path, content, fragment):
    log = tmp_path / "bad.log"
    log.write_text(content)
    result = subprocess.run(CLI + ["bench", "--workload", f"log:{log}", "--workdir", str(tmp_path / "sandbox")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0] and str(log) in lines[0] and "Traceback" not in result.stderr


def test_a_missing_log_and_a_bad_option_are_one_line_and_exit_2(tmp_path):
    for args, fragment in ((["--workload", f"log:{tmp_path}/none.log"], "no such log file"),
                           (["--workload", f"log:{tmp_path}/none*.log"], "no log file matches"),
                           (["--workload", "log:/dev/null", "--session-gap", "0"], "--session-gap"),
                           (["--workload", "log:/dev/null", "--dynamic", "php"], "--dynamic")):
        result = subprocess.run(CLI + ["bench", *args, "--workdir", str(tmp_path / "sandbox")],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 2, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and fragment in result.stderr, result.stderr


# -- memory: the URL table, not the lines ----------------------------------------

_MEMORY_PROBE = r"""
import json, resource, sys, time
from pathlib import Path
from advisor.tuner.load.accesslog import COMBINED, LogFormat, LogReader
from advisor.tuner.load.replay import derive
from advisor.tuner.load.replay_sessions import ReplayOptions

def write(path, lines, urls):
    # 40 clients at a time, each a session of 10 requests over about 20 s,
    # then a new client: the open sessions stay few however long the log.
    out = []
    with open(path, "w") as handle:
        for second in range(lines // 20):
            stamp = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(1700000000 + second))
            for i in range(second * 20, second * 20 + 20):
                client = (i // 400) * 40 + i % 40
                u = (i * 7919) % urls
                out.append(f'10.{client >> 16 & 255}.{client >> 8 & 255}.{client & 255} - - [{stamp}] '
                           f'"GET /d{u % 50}/f{u}.html HTTP/1.1" 200 {500 + u} "-" "Agent/1.0"\n')
            if len(out) >= 10000:
                handle.write("".join(out)); out = []
        handle.write("".join(out))

def peak_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

work = Path(sys.argv[1]); urls = int(sys.argv[2])
figures = {}
for lines in (25_000, 500_000):
    log = work / f"{lines}.log"
    write(log, lines, urls)
    started = time.monotonic()
    replay = derive(LogReader([str(log)], LogFormat.compile(COMBINED)), work / f"out{lines}", ReplayOptions())
    figures[lines] = {"peak_kb": peak_kb(), "seconds": round(time.monotonic() - started, 1),
                      "sessions": replay.summary.sessions, "urls": replay.summary.urls,
                      "open": replay.summary.peak_open_sessions}
    log.unlink()
print(json.dumps(figures))
"""


def test_half_a_million_lines_stream_in_memory_bounded_by_the_urls(tmp_path):
    """Peak RSS after 25,000 lines and after 500,000 lines of the same
    2,000 URLs: the twenty-fold longer log may not cost more than a few MB
    (a leak of 10 bytes a line would show; a million lines took 42 s of CI)."""
    result = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(tmp_path), "2000"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    figures = {int(k): v for k, v in json.loads(result.stdout).items()}
    small, large = figures[25_000], figures[500_000]
    print("memory probe:", figures)
    assert large["urls"] == small["urls"] == 2000
    assert large["sessions"] >= 19 * small["sessions"]
    assert large["open"] <= 200
    assert large["peak_kb"] - small["peak_kb"] < 4 * 1024


def test_a_trial_on_a_replayed_log_counts_its_requests_and_tail_from_the_file(tmp_path):
    """Sessions of 16 requests in 4 bursts with 7 s of think between them: the
    trial asks for what the file holds, and the sessions' 21 s tail is not
    held against the server."""
    from advisor.tuner.load import httperf
    from advisor.tuner.trial.result import TrialInputs, TrialResult, with_rate

    log = tmp_path / "access.log"
    write_known_log(log)
    replay = _derive(tmp_path, log)
    base = TrialInputs(workload="log:access.log", uri="/", rate=1, duration_s=10, session_log=replay.session_log,
                       wsess=(1, replay.mean_calls, replay.mean_think_s))
    inputs = with_rate(base, 4)
    assert inputs.wsess[0] == 40 and inputs.session_log == replay.session_log
    assert inputs.target_request_rate == pytest.approx(4 * 16)
    spec = httperf.HttperfSpec("127.0.0.1", 8080, wsess=inputs.wsess, session_log=inputs.session_log,
                               binary="/bin/true")
    assert f"--wsesslog=40,7,{replay.session_log}" in spec.argv()
    result = object.__new__(TrialResult)
    result.inputs = inputs
    result.listen_overflows = result.listen_drops = 0
    # The last session starts at 9.75 s and thinks 21 s: every reply in time.
    result.httperf = httperf.HttperfResult(replies=640, test_duration_s=9.75 + 21 + 0.1, reply_response_ms=1.0)
    assert result.attempted == 640 and result.errors == 0
    assert result.served_rate == pytest.approx(640 / (9.75 + 0.1))
    assert result.slo_failures() == []
    result.httperf = httperf.HttperfResult(replies=600, test_duration_s=31.0, reply_response_ms=1.0)
    assert result.errors == 40 and any(f.startswith("errors") for f in result.slo_failures())
