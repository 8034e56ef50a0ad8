"""tune's search space: derived per MPM from corpus configs, narrowed by a
--space file, refused with one clear line when that file is wrong, and
never proposing a point lint would call an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.config import LoadOptions, load_config
from advisor.errors import UsageError
from advisor.tuner.search.space_derive import derive_space
from advisor.tuner.search.space_narrow import narrow_from_file
from advisor.tuner.search.space_lint import CandidateLint
from conftest import SAMPLES

M = "/usr/lib/apache2/modules"


def load(main: str, root: str):
    return load_config(str(SAMPLES / main), LoadOptions(server_root=str(SAMPLES / root)))


def write_config(tmp_path: Path, body: str, name: str = "httpd.conf"):
    path = tmp_path / name
    path.write_text(body)
    return load_config(str(path), LoadOptions(server_root=str(tmp_path)))


@pytest.fixture(scope="module")
def debian():
    return load("debian/apache2.conf", "debian")


def settings_ok(space, point) -> None:
    """The consistency httpd would otherwise fix silently at start-up."""
    s = space.settings(point)
    assert s["ServerLimit"] * (s.get("ThreadsPerChild") or 1) >= s["MaxRequestWorkers"]
    if "ThreadsPerChild" in s:
        assert s["MaxRequestWorkers"] % s["ThreadsPerChild"] == 0
        assert s["ThreadLimit"] >= s["ThreadsPerChild"]
        assert s["MaxSpareThreads"] >= s["MinSpareThreads"] + s["ThreadsPerChild"]
    else:
        assert s["MaxSpareServers"] > s["MinSpareServers"]
        assert s["StartServers"] <= s["MaxRequestWorkers"]
    assert s["MaxRequestWorkers"] <= space.ram_workers[space.mpm_of(point)]
    for value in s.values():
        assert type(value) in (int, str)


# ---- derivation per MPM --------------------------------------------------------


def test_prefork_space_from_the_debian_sample(debian):
    space = derive_space(debian, 300)
    assert space.mpm == "prefork"
    names = set(space.names)
    assert {"MaxRequestWorkers", "StartServers", "MinSpareServers", "MaxSpareServers",
            "MaxConnectionsPerChild", "KeepAlive", "KeepAliveTimeout", "MaxKeepAliveRequests",
            "EnableSendfile", "EnableMMAP", "HostnameLookups", "ListenBacklog", "BufferedLogs"} == names
    mrw = space.dimension("MaxRequestWorkers")
    assert (mrw.low, mrw.high) == (16, 300) and "RAM" in mrw.why


def test_over_https_the_space_leaves_enable_sendfile_out_and_says_why(debian):
    """Trials whose every request is HTTPS cannot move EnableSendfile (httpd
    sends no file with sendfile() over TLS: test_tls_sendfile.py)."""
    space = derive_space(debian, 300, over_tls=True)
    assert "EnableSendfile" not in space.names and "EnableSendfile" not in space.start
    assert {"EnableMMAP", "HostnameLookups", "ListenBacklog"} <= set(space.names)
    note = next(n for n in space.notes if n.startswith("EnableSendfile left out"))
    assert "sendfile() over TLS" in note
    # The config's own value is never written: no directive for it in any point.
    assert not any(line.startswith("EnableSendfile") for line in space.directives(space.evidence_point()))
    # Near miss: plain HTTP keeps it.
    assert "EnableSendfile" in derive_space(debian, 300).names
    assert all(d.why for d in space.dimensions)
    # The sample writes MaxRequestWorkers 400 and MaxConnectionsPerChild 500:
    # both are outside the guards, and the start says where it was clipped.
    assert space.start["MaxRequestWorkers"] == 300
    assert space.start["MaxConnectionsPerChild"] == 1001
    assert any("mpm_prefork.conf:6" in note for note in space.start_notes)
    assert space.start["KeepAliveTimeout"] == 15_000  # "KeepAliveTimeout 15" in apache2.conf
    # The start is measured as written: the clipped value stands for the
    # config's own, which RAM's bound on the pool still holds.
    assert space.start_written == {"MaxRequestWorkers": 400, "MaxConnectionsPerChild": 500}
    lines = space.directives(space.start)
    assert lines[:2] == ["ServerLimit 300", "MaxRequestWorkers 300"]
    assert "KeepAliveTimeout 15" in lines and "MaxConnectionsPerChild 500" in lines
    # A drop-in does not repeat the config's own line; moving off the start (the clip) writes the new value.
    assert not any(line.startswith("MaxConnectionsPerChild") for line in space.directives(space.start, own_lines=False))
    mcpc = space.dimension("MaxConnectionsPerChild")
    assert "MaxConnectionsPerChild 1001" in space.directives(dict(space.start, MaxConnectionsPerChild=mcpc.low + 1)) \
        or "MaxConnectionsPerChild 1002" in space.directives(dict(space.start, MaxConnectionsPerChild=mcpc.low + 1))
    assert "MaxConnectionsPerChild 0" in space.directives(dict(space.start, MaxConnectionsPerChild=mcpc.high))


def test_worker_space_from_the_upstream_sample():
    cfg = load("upstream/conf/httpd.conf", "upstream")
    space = derive_space(cfg, 1000)
    assert space.mpm == "worker"
    assert {"ThreadsPerChild", "MinSpareThreads", "MaxSpareThreads"} <= set(space.names)
    assert not {"StartServers", "MinSpareServers", "ServerLimit", "ThreadLimit"} & set(space.names)
    assert space.start["MaxRequestWorkers"] == 400 and space.start["ThreadsPerChild"] == 25
    settings = space.settings(space.start)
    assert settings["ServerLimit"] == 16 and settings["ThreadLimit"] == 25
    # A pool that is not a whole number of children is rounded down, as httpd would.
    odd = dict(space.start, MaxRequestWorkers=437, ThreadsPerChild=30)
    assert space.settings(odd)["MaxRequestWorkers"] == 420
    assert space.settings(odd)["ServerLimit"] == 14


def test_event_space_from_the_vhosts_sample_has_no_bufferedlogs_without_an_access_log():
    cfg = load("vhosts/httpd.conf", "vhosts")
    space = derive_space(cfg, 500)
    assert space.mpm == "event"
    assert space.start["ThreadsPerChild"] == 50 and space.start["MinSpareThreads"] == 50
    assert "BufferedLogs" not in space.names
    assert any("BufferedLogs" in note for note in space.notes)


def test_the_mpm_is_a_dimension_only_when_switching_is_allowed(debian):
    assert derive_space(debian, 300).dimension("MPM") is None
    space = derive_space(debian, {"prefork": 120, "worker": 900, "event": 900}, allow_mpm_switch=True)
    assert space.dimension("MPM").choices == ("prefork", "worker", "event")
    assert space.dimension("MaxRequestWorkers").high == 900
    point = dict(space.start, MPM="prefork", MaxRequestWorkers=900)
    # Each MPM keeps its own RAM bound, and only its own directives.
    lines = space.directives(point)
    assert "MaxRequestWorkers 120" in lines and not any(l.startswith("ThreadsPerChild") for l in lines)
    event = space.directives(dict(point, MPM="event"))
    assert any(l.startswith("ThreadsPerChild") for l in event)
    assert not any(l.startswith("MinSpareServers") for l in event)


def test_with_http2_visitors_prefork_is_not_a_point_of_the_mpm_switch(debian):
    # mod_http2 never negotiates h2 under prefork (AH10034): an h2 visitor would get HTTP/1.1.
    space = derive_space(debian, {"worker": 900, "event": 900}, allow_mpm_switch=True, http2=True)
    assert space.dimension("MPM").choices == ("worker", "event")
    assert any("prefork left out" in note and "AH10034" in note for note in space.notes)
    assert "MinSpareServers" not in space.names  # prefork's own directives leave with it


def test_the_ram_bound_must_cover_every_mpm_when_switching(debian):
    with pytest.raises(UsageError, match="no RAM sizing for the worker, event MPM"):
        derive_space(debian, {"prefork": 100}, allow_mpm_switch=True)
    with pytest.raises(UsageError, match="no prefork worker fits in RAM"):
        derive_space(debian, 0)


def test_a_config_without_an_mpm_is_refused(tmp_path):
    cfg = write_config(tmp_path, "KeepAlive On\n")
    with pytest.raises(UsageError) as caught:
        derive_space(cfg, 100)
    assert str(caught.value).startswith(str(tmp_path / "httpd.conf"))
    assert "no MPM" in str(caught.value)


def test_httpd_defaults_start_the_search_when_the_config_is_silent(tmp_path):
    cfg = write_config(tmp_path, f"LoadModule mpm_event_module {M}/mod_mpm_event.so\n"
                                 "MaxRequestsPerChild 20000\nHostnameLookups Double\n")
    space = derive_space(cfg, 2000)
    start = space.start
    assert start["MaxRequestWorkers"] == 400 and start["ThreadsPerChild"] == 25
    assert (start["MinSpareThreads"], start["MaxSpareThreads"]) == (75, 250)
    assert (start["KeepAlive"], start["KeepAliveTimeout"], start["MaxKeepAliveRequests"]) == ("On", 5000, 100)
    assert (start["EnableSendfile"], start["EnableMMAP"], start["ListenBacklog"]) == ("Off", "On", 511)
    assert start["MaxConnectionsPerChild"] == 20000  # the old spelling is read
    assert start["HostnameLookups"] == "On"  # Double is the costly end of the same dimension


def test_every_point_is_consistent_and_plain_python(debian):
    for cfg, bound in ((debian, 150), (load("upstream/conf/httpd.conf", "upstream"), 700)):
        space = derive_space(cfg, bound)
        for point in space.random_points(200, seed=7) + [space.start]:
            assert space.contains(point)
            settings_ok(space, point)
            safe = space.settings(point, reload_safe=True)
            assert safe["ServerLimit"] * safe.get("ThreadsPerChild", 1) >= safe["MaxRequestWorkers"]


def test_reload_safe_limits_do_not_depend_on_the_point(debian):
    space = derive_space(load("upstream/conf/httpd.conf", "upstream"), 700)
    limits = {(s["ServerLimit"], s["ThreadLimit"])
              for s in (space.settings(p, reload_safe=True) for p in space.random_points(50, seed=3))}
    assert limits == {(88, 64)}  # ceil(700 / 8 threads), the largest ThreadsPerChild


def test_top_of_a_limit_is_written_as_unlimited(debian):
    space = derive_space(debian, 300)
    point = dict(space.start, MaxConnectionsPerChild=1_000_000, MaxKeepAliveRequests=1000, KeepAliveTimeout=250)
    lines = space.directives(point)
    assert "MaxConnectionsPerChild 0" in lines and "MaxKeepAliveRequests 0" in lines
    assert "KeepAliveTimeout 250ms" in lines


def test_skopt_values_come_back_as_plain_python(debian):
    import numpy as np

    space = derive_space(debian, 300)
    values = [np.int64(v) if isinstance(v, int) else np.str_(v) for v in space.to_values(space.start)]
    point = space.to_point(values)
    assert point == space.start
    assert all(type(v) in (int, str) for v in point.values())
    assert len(space.skopt_dimensions()) == len(space.free)


# ---- lint never sees an error from a point of the space ----------------------


def test_no_point_of_the_space_is_a_lint_error(debian):
    space = derive_space(debian, 300)
    lint = CandidateLint(debian, space)
    for point in [space.start] + space.random_points(12, seed=11):
        verdict = lint.check(point)
        assert verdict.ok, verdict.errors
        assert lint.check(point, reload_safe=True).ok


def test_lint_refuses_a_candidate_outside_the_guard(debian):
    space = derive_space(debian, 300)
    verdict = CandidateLint(debian, space).check(dict(space.start, MaxConnectionsPerChild=500))
    assert not verdict.ok
    assert len(verdict.errors) == 1 and verdict.errors[0].startswith("candidate line ")
    assert "P101" in verdict.errors[0]


def test_lint_judges_an_mpm_switch_under_the_new_mpm(debian):
    space = derive_space(debian, {"prefork": 150, "worker": 600, "event": 600}, allow_mpm_switch=True)
    lint = CandidateLint(debian, space)
    for point in space.random_points(6, seed=5):
        assert lint.check(point).ok


# ---- --space FILE ---------------------------------------------------------------


def space_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "space.toml"
    path.write_text(text)
    return str(path)


def test_narrow_and_fix_dimensions(tmp_path, debian):
    space = derive_space(debian, 300)
    path = space_file(tmp_path, '[MaxRequestWorkers]\nlow = 50\nhigh = 200\n\n[keepalive]\nvalue = "off"\n'
                                "[HostnameLookups]\nvalue = false\n[ListenBacklog]\nlow = 511\nhigh = 511\n")
    narrowed = narrow_from_file(space, path)
    mrw = narrowed.dimension("MaxRequestWorkers")
    assert (mrw.low, mrw.high, mrw.is_fixed) == (50, 200, False)
    assert narrowed.dimension("KeepAlive").fixed == "Off"
    assert narrowed.dimension("HostnameLookups").fixed == "Off"
    assert narrowed.dimension("ListenBacklog").fixed == 511
    assert "KeepAlive" not in narrowed.names and "ListenBacklog" not in narrowed.names
    # The start moves into the narrowed range, and says so.
    assert narrowed.start["MaxRequestWorkers"] == 200 and narrowed.start["KeepAlive"] == "Off"
    assert any("space.toml" in note and "MaxRequestWorkers" in note for note in narrowed.start_notes)
    assert "KeepAlive Off" in narrowed.directives(narrowed.start)
    # The original is untouched.
    assert space.dimension("MaxRequestWorkers").high == 300 and "KeepAlive" in space.names
    # A narrowed top no longer stands for "unlimited".
    capped = narrow_from_file(space, space_file(tmp_path, "[MaxConnectionsPerChild]\nhigh = 50000\n"))
    assert "MaxConnectionsPerChild 50000" in capped.directives(dict(capped.start, MaxConnectionsPerChild=50000))
    fixed = narrow_from_file(space, space_file(tmp_path, "[MaxConnectionsPerChild]\nvalue = 0\n"))
    assert "MaxConnectionsPerChild 0" in fixed.directives(fixed.start)


@pytest.mark.parametrize("text, line, fragment", [
    ("[MaxRequestWorkers]\nlow = 50\nhigh = 5000\n", 1, "MaxRequestWorkers high = 5000 is outside its guard 16..300"),
    ("[MaxConnectionsPerChild]\nvalue = 500\n", 1, "outside its guard 1,001..1,000,000"),
    ("# narrow\n[MaxClientz]\nlow = 1\n", 2, "MaxClientz is not a dimension of this prefork search"),
    ("[ThreadsPerChild]\nlow = 8\n", 1, "ThreadsPerChild is not a dimension of this prefork search"),
    ("[ServerLimit]\nvalue = 10\n", 1, "ServerLimit cannot be set on its own"),
    ("[KeepAlive]\nlow = 1\n", 1, "KeepAlive is one of On/Off: it has no low or high"),
    ('[KeepAlive]\nvalue = "sometimes"\n', 1, "KeepAlive value must be one of On/Off"),
    ("[MaxRequestWorkers]\nlow = 100\nhigh = 50\n", 1, "low = 100 is above high = 50"),
    ('[MaxRequestWorkers]\nlow = "many"\n', 1, "MaxRequestWorkers low must be a whole number"),
    ("[MaxRequestWorkers]\nlow = 20.5\n", 1, "must be a whole number"),
    ("[KeepAliveTimeout]\nhigh = 1.5\n", 1, "must be a whole number in ms"),
    ("[MaxRequestWorkers]\nlo = 20\n", 1, "[MaxRequestWorkers] has no setting 'lo'"),
    ("[MaxRequestWorkers]\nvalue = 20\nlow = 10\n", 1, "gives both value and low/high"),
    ("MaxRequestWorkers = 20\n", 1, "MaxRequestWorkers must be a table"),
    ("[MaxRequestWorkers]\n", 1, "[MaxRequestWorkers] is empty"),
    ("[MaxRequestWorkers]\nlow = 10\nlow = 20\n", 3, "not valid TOML"),
    ("[MaxRequestWorkers\nlow = 10\n", 1, "not valid TOML"),
])
def test_bad_space_files_are_one_line_with_file_and_line(tmp_path, debian, text, line, fragment):
    space = derive_space(debian, 300)
    path = space_file(tmp_path, text)
    with pytest.raises(UsageError) as caught:
        narrow_from_file(space, path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:{line}: "), message
    assert fragment in message


def test_unreadable_space_files(tmp_path, debian):
    space = derive_space(debian, 300)
    missing = str(tmp_path / "nope.toml")
    with pytest.raises(UsageError, match="no such --space file") as caught:
        narrow_from_file(space, missing)
    assert str(caught.value).startswith(missing + ": ")
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe[x]\n")
    with pytest.raises(UsageError, match="not UTF-8"):
        narrow_from_file(space, str(binary))
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    with pytest.raises(UsageError, match="cannot read the --space file"):
        narrow_from_file(space, str(folder))


def test_fixing_everything_leaves_nothing_to_tune(tmp_path, debian):
    space = derive_space(debian, 300)
    text = "".join(f"[{d.name}]\nvalue = {d.low if d.kind == 'int' else repr(d.choices[0]).replace(chr(39), chr(34))}\n"
                   for d in space.dimensions)
    with pytest.raises(UsageError, match="nothing to tune"):
        narrow_from_file(space, space_file(tmp_path, text))


def test_the_evidence_point_applies_lints_fixes(debian, tmp_path):
    space = derive_space(debian, 300)
    point = space.evidence_point()
    assert (point["EnableSendfile"], point["EnableMMAP"], point["HostnameLookups"], point["BufferedLogs"]) == \
        ("On", "On", "Off", "On")
    assert point["MaxConnectionsPerChild"] == 1_000_000 and point["MaxRequestWorkers"] == 300
    assert point["KeepAliveTimeout"] == 5000  # the sample's 15 s, down to lint P104's limit
    assert CandidateLint(debian, space).check(point).ok
    # Applied to another point, KeepAlive stays as it is (it is what the search
    # weighs), and a spare band too narrow to ride out a burst is widened (P105).
    other = dict(space.start, KeepAlive="Off", MinSpareServers=40, MaxSpareServers=12)
    fixed = space.evidence_point(other)
    assert fixed["KeepAlive"] == "Off" and fixed["MaxSpareServers"] == 45
    # A dimension the admin fixed is left alone.
    narrowed = narrow_from_file(space, space_file(tmp_path, '[EnableSendfile]\nvalue = "Off"\n'))
    assert narrowed.evidence_point()["EnableSendfile"] == "Off"


def test_a_note_names_the_unlimited_top_as_httpds_0(debian, tmp_path):
    """The search keeps "never recycle" as its top value; a note that a
    change stays at the start must say 0, what the admin wrote (a README
    session said "MaxConnectionsPerChild stays 1000000" of a config with 0)."""
    space = derive_space(debian, 300)
    by_name = {d.name: d for d in space.dimensions}
    for name in ("MaxConnectionsPerChild", "MaxKeepAliveRequests"):
        top = by_name[name].high
        assert space.value_text(name, top) == "0"
        assert space.value_text(name, top - 1) == str(top - 1)
    # Near miss: a --space file's narrower top is a number like any other, in
    # the notes as in the directives (the dimension says so, not the name).
    narrowed = narrow_from_file(space, space_file(tmp_path, "[MaxConnectionsPerChild]\nhigh = 50000\n"))
    assert narrowed.value_text("MaxConnectionsPerChild", 50000) == "50000"
    assert narrowed.settings(dict(narrowed.start, MaxConnectionsPerChild=50000))["MaxConnectionsPerChild"] == 50000
