"""A trial measures the config it claims (issue 27): a directive the trial
writes to the managed include that a later line of the config, or the
virtual host the trial's URL reaches, overrides is refused before any load
(bench) or left out of the search (tune); the pool check runs on remote
targets too.

The model's answers are checked on written trees first (fast, no server);
then the command line against a real apache2 in a private ServerRoot,
locally and over SSH into the test network's server namespace.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.config import LoadOptions, load_config
from advisor.errors import ConfigError
from advisor.tuner.staging.overrides import find_overrides, reached_vhost
from conftest import assert_one_line_error
from test_bench_support import SandboxRun, cli, require

MODULES = "/usr/lib/apache2/modules"


def _tree(tmp_path: Path, before: str = "", after: str = "", include: str | None = None) -> tuple[str, str]:
    """A main config with the managed include in the middle; returns (main, managed)."""
    managed = tmp_path / "managed.conf"
    main = tmp_path / "httpd.conf"
    (tmp_path / "instrument.conf").write_text("# written by a tool\nMaxRequestWorkers 257\n")
    main.write_text(
        f'ServerRoot "{tmp_path}"\n'
        f"LoadModule mpm_prefork_module {MODULES}/mod_mpm_prefork.so\n"
        "Listen 127.0.0.1:8080\nListen 127.0.0.1:9090\nListen 127.0.0.1:7070\n"
        "KeepAliveTimeout 5\nMaxRequestWorkers 50\n"
        + before
        + (include if include is not None else f'IncludeOptional "{managed}"\n')
        + after)
    return str(main), str(managed)


VHOSTS = ("<VirtualHost 127.0.0.1:8080>\n  ServerName a.example\n  KeepAliveTimeout 1\n</VirtualHost>\n"
          "<VirtualHost 127.0.0.1:8080>\n  ServerName b.example\n  KeepAliveTimeout 3\n</VirtualHost>\n"
          "<VirtualHost *:9090>\n  ServerName c.example\n  KeepAliveTimeout 2\n</VirtualHost>\n"
          "<VirtualHost *:9090>\n  ServerName localhost\n  KeepAliveTimeout 4\n</VirtualHost>\n")


def _overrides(main: str, managed: str, directives: list[str], url: str = "http://127.0.0.1:7070/"):
    cfg = load_config(main, LoadOptions(apache_version="2.4"))
    return find_overrides(cfg, managed, [d.split()[0] for d in directives], url)


def test_a_line_after_the_managed_include_overrides_it(tmp_path):
    main, managed = _tree(tmp_path, after=f'Include "{tmp_path}/instrument.conf"\n')
    found = _overrides(main, managed, ["MaxRequestWorkers 2"])
    assert [(o.file, o.line, o.text) for o in found] == [(f"{tmp_path}/instrument.conf", 2, "MaxRequestWorkers 257")]
    # The same line before the managed include is what the trial replaces.
    main, managed = _tree(tmp_path, before=f'Include "{tmp_path}/instrument.conf"\n')
    assert _overrides(main, managed, ["MaxRequestWorkers 2"]) == []


def test_aliases_false_conditionals_and_additive_directives(tmp_path):
    main, managed = _tree(tmp_path, after="MaxClients 300\n<IfModule no_such_module>\nKeepAlive Off\n</IfModule>\n"
                                          "<IfModule mpm_prefork_module>\nEnableSendfile Off\n</IfModule>\n"
                                          "CustomLog /dev/null common\n")
    found = _overrides(main, managed, ["MaxRequestWorkers 2", "KeepAlive On", "EnableSendfile On",
                                       "CustomLog /tmp/x common"])
    assert [(o.name, o.line) for o in found] == [("MaxRequestWorkers", 9), ("EnableSendfile", 14)]


def test_the_virtual_host_the_url_reaches_overrides_it(tmp_path):
    main, managed = _tree(tmp_path, before=VHOSTS)  # before the managed include: a virtual host wins all the same
    cfg = load_config(main, LoadOptions(apache_version="2.4"))
    # An exact address: the first of its virtual hosts, or the one named by the URL's host.
    assert reached_vhost(cfg, "http://127.0.0.1:8080/").args == ["127.0.0.1:8080"]
    found = find_overrides(cfg, managed, ["KeepAliveTimeout"], "http://127.0.0.1:8080/")
    assert [(o.line, o.text, o.vhost) for o in found] == [(10, "KeepAliveTimeout 1", "<VirtualHost 127.0.0.1:8080>")]
    # Among the virtual hosts of an address, the one whose ServerName is the URL's host.
    assert find_overrides(cfg, managed, ["KeepAliveTimeout"], "http://localhost:9090/")[0].text == "KeepAliveTimeout 4"
    # A wildcard address on another port; and a port no virtual host listens on: the main server.
    assert find_overrides(cfg, managed, ["KeepAliveTimeout"], "http://127.0.0.1:9090/")[0].text == "KeepAliveTimeout 2"
    assert find_overrides(cfg, managed, ["KeepAliveTimeout"], "http://127.0.0.1:7070/") == []


def test_a_config_that_never_reads_the_managed_include_is_refused(tmp_path):
    main, managed = _tree(tmp_path, include=f"# IncludeOptional {tmp_path}/managed.conf\n")
    with pytest.raises(ConfigError, match="no line of the config reads the managed include"):
        _overrides(main, managed, ["KeepAlive Off"])
    # A wildcard include that will read it once it exists counts.
    main, managed = _tree(tmp_path, include=f'IncludeOptional "{tmp_path}/man*.conf"\n', after="KeepAlive On\n")
    assert [o.text for o in _overrides(main, managed, ["KeepAlive Off"])] == ["KeepAlive On"]


# ---- the command line against a real apache2 -------------------------------------------


def _existing(run: SandboxRun, config: Path | None = None) -> list[str]:
    """bench/tune options naming the sandbox's own tree as an existing server's."""
    config = config or run.sandbox.config_path
    return ["--config", str(config), "--managed", str(run.sandbox.managed_path),
            "--reload-cmd", f"{run.state.binary} -f {run.sandbox.config_path} -k graceful",
            "--url", f"{run.state.base_url}/index.html"]


def _accesses(status_url: str) -> int:
    from advisor.tuner.measure.status import fetch_status

    snap = fetch_status(status_url, timeout=5.0)
    assert snap is not None and "Total Accesses" in snap.fields, "mod_status with ExtendedStatus On"
    return int(snap.fields["Total Accesses"])


def _instrument_line(run: SandboxRun) -> int:
    lines = run.sandbox.instrument_path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith("MaxRequestWorkers"))


@pytest.mark.httpd
def test_bench_refuses_a_set_that_a_later_include_overrides_before_any_load():
    require("apache2")
    with SandboxRun(mpm="prefork", extended_status=True) as run:
        line = _instrument_line(run)  # the sandbox's compensation: MaxRequestWorkers N + 1, after the managed include
        before = _accesses(run.state.status_url)
        # The case: a 300 ms endpoint at 20 requests/s.
        result = cli("bench", *_existing(run), "--set", "MaxRequestWorkers 2", "--workload", "slow", "--sleep-ms",
                     "300", "--rate", "20", "--duration", "3", check=False)
        assert_one_line_error(result, f"{run.sandbox.instrument_path}:{line}: MaxRequestWorkers ",
                              "overrides its MaxRequestWorkers", "leave MaxRequestWorkers out")
        assert _accesses(run.state.status_url) - before < 10  # a 3 s trial at 20/s would have sent 60
        run.assert_stock_restored()
        # The sandbox itself recomputes that include after each change: no refusal there.
        from advisor.tuner.staging.overrides import target_overrides
        from advisor.tuner.staging.target import SandboxTarget

        assert target_overrides(SandboxTarget(run.sandbox), ["MaxRequestWorkers 2"]) == []


@pytest.mark.httpd
def test_bench_refuses_a_keepalivetimeout_the_reached_virtual_host_sets(tmp_path):
    require("apache2")
    with SandboxRun(mpm="event", extended_status=True) as run:
        port = run.state.base_url.rsplit(":", 1)[1]
        config = tmp_path / "httpd.conf"
        text = run.sandbox.config_path.read_text()
        vhost = f"<VirtualHost 127.0.0.1:{port}>\n    KeepAliveTimeout 1\n</VirtualHost>\n"
        config.write_text(vhost + text)  # first in the file, before the managed include: it wins all the same
        before = _accesses(run.state.status_url)
        result = cli("bench", *_existing(run, config), "--set", "KeepAliveTimeout 7", "--rate", "50",
                     "--duration", "1", "--warmup", "0", check=False)
        assert_one_line_error(result, f"{config}:2: KeepAliveTimeout 1 in the <VirtualHost 127.0.0.1:{port}>",
                              "remove it from that virtual host")
        assert _accesses(run.state.status_url) - before < 10
        run.assert_stock_restored()
        # A virtual host on another port is not reached: the trial runs.
        config.write_text(f"<VirtualHost 127.0.0.1:1>\n    KeepAliveTimeout 1\n</VirtualHost>\n" + text)
        result = cli("bench", *_existing(run, config), "--set", "KeepAliveTimeout 7", "--rate", "5",
                     "--duration", "1", "--warmup", "0", "--format", "json", check=False)
        assert result.returncode == 0, result.stderr
        run.assert_stock_restored()


@pytest.mark.httpd
def test_tune_leaves_an_overridden_dimension_out_with_the_line_in_its_plan(tmp_path):
    require("apache2")
    with SandboxRun(mpm="prefork") as run:
        line = _instrument_line(run)
        result = cli("tune", *_existing(run), "--dry-run", "--workload", "1k", "--report", str(tmp_path / "r"), "--format", "json",
                     check=False)
        assert result.returncode == 0, result.stderr
        plan = json.loads(result.stdout)
        note = f"MaxRequestWorkers left out: {run.sandbox.instrument_path}:{line}: MaxRequestWorkers "
        assert any(n.startswith(note) for n in plan["notes"]), plan["notes"]
        dims = {d["name"]: d for d in plan["dimensions"]}
        assert dims["MaxRequestWorkers"]["fixed"] and not dims["KeepAlive"]["fixed"]
        run.assert_stock_restored()


@pytest.mark.httpd
def test_tune_refuses_when_nothing_is_left_to_tune(tmp_path):
    require("apache2")
    fixed = {"StartServers": 5, "MinSpareServers": 5, "MaxSpareServers": 10, "MaxConnectionsPerChild": 1000000,
             "KeepAlive": "On", "KeepAliveTimeout": 5000, "MaxKeepAliveRequests": 100, "EnableSendfile": "Off",
             "EnableMMAP": "On", "HostnameLookups": "Off", "ListenBacklog": 511}
    space = tmp_path / "space.toml"
    space.write_text("".join(f"[{name}]\nvalue = {json.dumps(value)}\n" for name, value in fixed.items()))
    with SandboxRun(mpm="prefork") as run:
        line = _instrument_line(run)
        report = tmp_path / "r"
        result = cli("tune", *_existing(run), "--dry-run", "--workload", "1k", "--space", str(space),
                     "--report", str(report), check=False)
        assert_one_line_error(result, f"{run.sandbox.instrument_path}:{line}: nothing is left to tune: "
                                       "MaxRequestWorkers ")
        assert not report.exists()
        run.assert_stock_restored()


def test_the_managed_include_named_through_a_symbolic_link(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    main, managed = _tree(real, after="KeepAlive On\n")
    Path(managed).write_text("# the tool's\n")
    (tmp_path / "link").symlink_to(real)
    cfg = load_config(main, LoadOptions(apache_version="2.4"))
    found = find_overrides(cfg, str(tmp_path / "link" / "managed.conf"), ["KeepAlive"], None)
    assert [o.text for o in found] == ["KeepAlive On"]
    with pytest.raises(ConfigError):  # a remote tree's paths are not this machine's
        find_overrides(cfg, str(tmp_path / "link" / "managed.conf"), ["KeepAlive"], None, same_host=False)


def test_a_left_out_dimension_is_fixed_at_the_start_and_never_written(tmp_path):
    from advisor.tuner.search.recommend import recommend
    from advisor.tuner.search.space_derive import derive_space
    from advisor.tuner.search.space_narrow import leave_out

    main, _managed = _tree(tmp_path)
    cfg = load_config(main, LoadOptions(apache_version="2.4"))
    space = derive_space(cfg, 400)
    before = space.signature()
    assert leave_out(space, "ServerLimit", "x.conf:3: ServerLimit 64 ...").name == "MaxRequestWorkers"
    leave_out(space, "MaxRequestWorkers", "x.conf:2: MaxRequestWorkers 257 ...")
    assert [n for n in space.notes if n.startswith("MaxRequestWorkers left out:")] == [
        "MaxRequestWorkers left out: x.conf:3: ServerLimit 64 ...; x.conf:2: MaxRequestWorkers 257 ..."]
    assert space.dimension("MaxRequestWorkers").fixed == space.start["MaxRequestWorkers"] == 50
    point = dict(space.start, KeepAlive="Off", MaxRequestWorkers=200)
    lines = space.directives(point)
    assert not any(line.split()[0] in ("MaxRequestWorkers", "ServerLimit") for line in lines), lines
    assert "KeepAlive Off" in lines
    assert space.signature() != before  # a journal of the full space does not resume into this one
    changed = [c.directive for c in recommend(cfg, space, point).changes]
    assert "KeepAlive" in changed and "MaxRequestWorkers" not in changed and "ServerLimit" not in changed, changed
