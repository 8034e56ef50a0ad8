"""tune --allow-mpm-switch (issue 28): the MPM as a dimension.

The space (threaded dimensions only under threaded MPMs, event's
AsyncRequestWorkerFactor, RAM sizing per MPM, a module that needs prefork
keeping it), the recommendation (the LoadModule lines to change, the new
MPM's pool), and real sessions on apache2: the sandbox and an existing
server with --restart-cmd run trials under several MPMs, each checked with
the server's own mod_status (ServerMPM), and end on the original MPM with
their files as they were, after a normal end, Ctrl-C, or kill -9 followed
by the next run or `staging down`; a server on another host does the same
over ssh. Bad input is one line, exit 2, nothing changed.

No test here asserts a rate: the sessions measure at a fixed 30
connections/s (--objective throughput) only to reach each path.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from advisor.config import LoadOptions, load_config
from advisor.tuner.search.recommend import edited_files, recommend
from advisor.tuner.search.space import THREADS_PER_CHILD_GUARD
from advisor.tuner.search.space_derive import derive_space
from advisor.tuner.session.config_in_use import ram_workers
from advisor.tuner.session.session_context import point_text
from advisor.tuner.staging.sandbox_config import guard_mpm_directives
from advisor.tuner.staging.target import HostKernel
from test_bench_support import CLI_TIMEOUT, HTTPD, SandboxRun, cli, one_error_line, require, wait_for, work_dir

M = "/usr/lib/apache2/modules"
MPM_BOUNDS = {"prefork": 150, "worker": 900, "event": 900}


def write_config(tmp_path: Path, body: str, name: str = "httpd.conf"):
    path = tmp_path / name
    path.write_text(body)
    return load_config(str(path), LoadOptions(server_root=str(tmp_path)))


def names(lines: list[str]) -> set[str]:
    return {line.split()[0] for line in lines}


# ---- the space ------------------------------------------------------------------


def test_thread_dimensions_exist_only_under_the_threaded_mpms(tmp_path):
    cfg = write_config(tmp_path, f"LoadModule mpm_prefork_module {M}/mod_mpm_prefork.so\n"
                                 f"LoadModule cgi_module {M}/mod_cgi.so\nMaxRequestWorkers 100\n")
    alone = derive_space(cfg, 150)
    assert not {"ThreadsPerChild", "MinSpareThreads", "MaxSpareThreads", "AsyncRequestWorkerFactor"} & set(alone.names)
    space = derive_space(cfg, MPM_BOUNDS, allow_mpm_switch=True)
    factor = space.dimension("AsyncRequestWorkerFactor")
    assert factor.mpms == ("event",) and (factor.low, factor.high) == (1, 8)
    assert space.dimension("ThreadsPerChild").mpms == ("worker", "event")
    point = dict(space.start, ThreadsPerChild=16, MaxRequestWorkers=300, AsyncRequestWorkerFactor=5)
    prefork = space.directives(dict(point, MPM="prefork"))
    worker = space.directives(dict(point, MPM="worker"))
    event = space.directives(dict(point, MPM="event"))
    assert not {"ThreadsPerChild", "ThreadLimit", "MinSpareThreads", "AsyncRequestWorkerFactor"} & names(prefork)
    assert {"ThreadsPerChild", "ThreadLimit", "MinSpareThreads", "MaxSpareThreads"} <= names(worker)
    assert "AsyncRequestWorkerFactor" not in names(worker) and "AsyncRequestWorkerFactor 5" in event
    assert not {"StartServers", "MinSpareServers", "MaxSpareServers"} & (names(worker) | names(event))
    # RAM per MPM: the prefork pool stops at prefork's bound, the threaded one at its own.
    assert "MaxRequestWorkers 150" in prefork and "MaxRequestWorkers 288" in event  # whole children of 16
    # The trial's line names only what the point's MPM has.
    shown = point_text(space, dict(point, MPM="prefork"))
    assert "ThreadsPerChild" not in shown and "AsyncRequestWorkerFactor" not in shown
    assert "ThreadsPerChild 16" in point_text(space, dict(point, MPM="event"))


def test_an_event_config_searches_its_async_factor_from_what_it_writes(tmp_path):
    cfg = write_config(tmp_path, f"LoadModule mpm_event_module {M}/mod_mpm_event.so\nAsyncRequestWorkerFactor 3\n")
    space = derive_space(cfg, 500)
    assert space.start["AsyncRequestWorkerFactor"] == 3
    assert "AsyncRequestWorkerFactor 3" in space.directives(space.start)


def test_a_module_that_needs_prefork_keeps_it_and_the_plan_says_why(tmp_path):
    cfg = write_config(tmp_path, f"LoadModule mpm_prefork_module {M}/mod_mpm_prefork.so\n"
                                 "LoadModule php_module /usr/lib/apache2/modules/libphp8.2.so\n")
    space = derive_space(cfg, MPM_BOUNDS, allow_mpm_switch=True)
    assert space.dimension("MPM") is None and space.mpm == "prefork"
    assert "ThreadsPerChild" not in space.names and "AsyncRequestWorkerFactor" not in space.names
    why = space.notes[0]
    assert why.startswith("MPM kept at prefork: ") and f"{tmp_path / 'httpd.conf'}:2 loads php_module" in why
    assert "needs prefork" in why and "\n" not in why


def test_ram_sizes_a_threaded_worker_at_its_costliest_point():
    """A threaded worker costs most with the fewest threads sharing a child:
    sized there, no point's pool outgrows RAM (sized at httpd's 25 threads,
    a point at 8 would need about twice the memory)."""
    from advisor.capacity.sizing import (DEFAULT_CHILD_BYTES, DEFAULT_THREAD_BYTES, MemoryInputs, Quantity,
                                         assumed_child, default_os_reserve, recommend as size_pool)

    class NoModules:
        modules: set = set()

    host = HostKernel(2 * 1024 ** 3, None, 4096, "a test host's")
    bounds, why = ram_workers(NoModules(), ["prefork", "worker", "event"], None, None, host)
    assert "8 threads per child" in why and "AsyncRequestWorkerFactor 8" in why
    ram = Quantity(host.ram_bytes, "test")

    def pool(mpm: str, threads: int, factor: float) -> int:
        inputs = MemoryInputs(ram, default_os_reserve(ram.bytes), [], Quantity(DEFAULT_CHILD_BYTES, "a"),
                              assumed_child(mpm, threads, False), Quantity(DEFAULT_THREAD_BYTES, "a"),
                              Quantity(64 * 1024, "a"), Quantity(0, "a"))
        return size_pool(inputs, mpm, threads, async_factor=factor).max_request_workers

    low = THREADS_PER_CHILD_GUARD[0]
    assert bounds["worker"] == pool("worker", low, 8.0) < pool("worker", 25, 2.0)
    assert bounds["event"] == pool("event", low, 8.0) < bounds["worker"]
    assert bounds["prefork"] == pool("prefork", 1, 2.0) < bounds["worker"]


# ---- the recommendation ---------------------------------------------------------


def test_a_threaded_winner_names_the_mpm_and_cgi_lines_and_carries_its_pool(tmp_path):
    cfg = write_config(tmp_path, "ServerName tune.test\n"
                                 f"LoadModule mpm_prefork_module {M}/mod_mpm_prefork.so\n"
                                 f"LoadModule cgi_module {M}/mod_cgi.so\n"
                                 "<IfModule mpm_prefork_module>\n    MaxRequestWorkers 100\n</IfModule>\n")
    space = derive_space(cfg, MPM_BOUNDS, allow_mpm_switch=True)
    winner = dict(space.start, MPM="event", ThreadsPerChild=25, MaxRequestWorkers=400, MinSpareThreads=25,
                  MaxSpareThreads=75, AsyncRequestWorkerFactor=2)
    rec = recommend(cfg, space, winner)
    lines = {(m.line, m.new_text) for m in rec.module_lines}
    assert lines == {(2, f"LoadModule mpm_event_module {M}/mod_mpm_event.so"),
                     (3, f"LoadModule cgid_module {M}/mod_cgid.so")}
    note = next(n for n in rec.notes if n.startswith("the winner runs the event MPM, not prefork"))
    assert "httpd.conf:2" in note and "httpd.conf:3" in note and "restart in full" in note
    # The event pool as measured, whole, in its own block (even values equal to event's defaults).
    pool = {c.directive: c for c in rec.changes if c.mpm_block == "mpm_event_module"}
    assert {"ServerLimit", "MaxRequestWorkers", "ThreadsPerChild", "ThreadLimit", "MinSpareThreads",
            "MaxSpareThreads", "AsyncRequestWorkerFactor"} <= set(pool)
    assert pool["ThreadsPerChild"].value == "25" and pool["MaxRequestWorkers"].value == "400"
    assert not {"StartServers", "MinSpareServers", "MaxSpareServers"} & {c.directive for c in rec.changes}
    old, new = edited_files(cfg, rec)[str(tmp_path / "httpd.conf")]
    assert new[1:3] == [f"LoadModule mpm_event_module {M}/mod_mpm_event.so", f"LoadModule cgid_module {M}/mod_cgid.so"]
    assert not any("mpm_prefork_module" in line or "mod_cgi.so" in line for line in new[:3])


def test_a_winner_on_the_same_mpm_changes_no_module_line(tmp_path):
    cfg = write_config(tmp_path, f"LoadModule mpm_prefork_module {M}/mod_mpm_prefork.so\n"
                                 f"LoadModule cgi_module {M}/mod_cgi.so\n")
    space = derive_space(cfg, MPM_BOUNDS, allow_mpm_switch=True)
    rec = recommend(cfg, space, dict(space.start, KeepAlive="Off"))
    assert rec.module_lines == [] and not any("MPM" in n for n in rec.notes)


def test_the_sandbox_site_file_reads_under_every_mpm(tmp_path):
    require("apache2")
    flat = ("# from x\nStartServers 2\nMinSpareServers 2\nMaxSpareServers 6\n"
            "ThreadsPerChild 25\nAsyncRequestWorkerFactor 3\nMaxRequestWorkers 40\n")
    site = guard_mpm_directives(flat)
    assert guard_mpm_directives(site) == site  # once guarded, left as it is
    mpms = ("prefork", "worker", "event")
    (tmp_path / "site.conf").write_text(flat)
    assert [config_test(tmp_path, mpm) for mpm in mpms] == [False, False, False]  # each refuses another's line
    (tmp_path / "site.conf").write_text(site)
    assert [config_test(tmp_path, mpm) for mpm in mpms] == [True, True, True]


def config_test(tmp_path: Path, mpm: str) -> bool:
    """httpd -t of a config that loads `mpm` and includes tmp_path/site.conf."""
    conf = tmp_path / f"{mpm}.conf"
    conf.write_text(f'ServerRoot "{tmp_path}"\nServerName t\nListen 127.0.0.1:1\nPidFile "{tmp_path}/pid"\n'
                    f'ErrorLog "{tmp_path}/error.log"\n'
                    f'LoadModule mpm_{mpm}_module "{M}/mod_mpm_{mpm}.so"\nInclude "{tmp_path}/site.conf"\n')
    result = subprocess.run([HTTPD, "-t", "-f", str(conf)], capture_output=True, text=True, timeout=30)
    return result.returncode == 0


# ---- real sessions --------------------------------------------------------------

SHORT = ("--objective", "throughput", "--rate", "30", "--duration", "1", "--warmup", "0", "--gain-replicates", "0",
         "--search", "random", "--seed", "3", "--yes")
# Whatever the search, its first points are the start, the evidence point,
# then the evidence point under each other MPM: four trials reach every MPM
# and end under the last one tried, so the restore has an MPM to switch
# back. (With six, the two after them were random prefork points that
# reached no other path: a third of each session's time.)
SWITCH_BUDGET = "4"


class MpmWatch:
    """Polls the server's mod_status for ServerMPM while a session runs."""

    def __init__(self, status_url: str):
        self.url = status_url
        self.seen: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import requests

        deadline = time.monotonic() + CLI_TIMEOUT
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                text = requests.get(self.url, timeout=1.0).text
            except requests.RequestException:
                text = ""
            for line in text.splitlines():
                if line.startswith("ServerMPM:"):
                    mpm = line.split(":", 1)[1].strip()
                    if not self.seen or self.seen[-1] != mpm:
                        self.seen.append(mpm)
            self._stop.wait(0.1)

    def __enter__(self) -> "MpmWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def server_mpm(status_url: str) -> str | None:
    """What mod_status says the server runs; None while it does not answer (a restart)."""
    import requests

    try:
        text = requests.get(status_url, timeout=3).text
    except requests.RequestException:
        return None
    return next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("ServerMPM:")), None)


def journal_trials(report: Path) -> list[dict]:
    records = [json.loads(line) for line in (report / "journal.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("kind") == "trial"]


def check_trials_ran_their_mpm(report: Path) -> set[str]:
    trials = [t for t in journal_trials(report) if isinstance(t.get("details"), dict)
              and "server_mpm" in t["details"]]
    assert trials, "no trial recorded the server's MPM"
    for trial in trials:
        assert trial["details"]["server_mpm"] == trial["point"]["MPM"], trial["point"]
    return {t["details"]["server_mpm"] for t in trials}


@pytest.fixture
def prefork_sandbox(tmp_path):
    require("apache2", "httperf")
    source = tmp_path / "source.conf"
    source.write_text(f"LoadModule mpm_prefork_module {M}/mod_mpm_prefork.so\nStartServers 2\n"
                      "MinSpareServers 2\nMaxSpareServers 6\nMaxRequestWorkers 40\n")
    with SandboxRun(mpm="prefork", source_config=str(source)) as run:
        conf = run.sandbox.conf_dir
        run.files = {p: p.read_bytes() for p in (conf / "httpd.conf", conf / "site.conf")}
        yield run


def assert_sandbox_restored(run) -> None:
    run.assert_stock_restored()
    for path, data in run.files.items():
        assert path.read_bytes() == data, f"{path.name} not restored"
    assert server_mpm(run.state.status_url) == "prefork"
    assert json.loads(run.sandbox.state_path.read_text())["mpm"] == "prefork"


@pytest.mark.httpd
def test_a_sandbox_session_tries_several_mpms_and_ends_on_the_original(prefork_sandbox, tmp_path):
    run = prefork_sandbox
    report = tmp_path / "report"
    with MpmWatch(run.state.status_url) as watch:
        result = cli("tune", "--workdir", str(run.dir), "--report", str(report), "--allow-mpm-switch",
                     "--workload", "1k", "--budget", SWITCH_BUDGET, *SHORT, check=False, timeout=CLI_TIMEOUT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "MPM: prefork | worker | event" in result.stdout
    ran = check_trials_ran_their_mpm(report)
    assert ran == {"prefork", "worker", "event"}, ran
    # Seen by the server itself while the session ran, not only written in the journal.
    assert len(set(watch.seen)) >= 2 and watch.seen[0] == watch.seen[-1] == "prefork", watch.seen
    assert_sandbox_restored(run)


@pytest.mark.httpd
@pytest.mark.parametrize("stop,then", [(signal.SIGINT, None), (signal.SIGKILL, "tune"), (signal.SIGKILL, "down")],
                         ids=["ctrl-c", "kill-9-then-tune", "kill-9-then-staging-down"])
def test_a_session_stopped_under_another_mpm_restores_the_original(prefork_sandbox, tmp_path, stop, then):
    run = prefork_sandbox
    report = tmp_path / "report"
    command = [sys.executable, "-m", "advisor", "tune", "--workdir", str(run.dir), "--report", str(report),
               "--allow-mpm-switch", "--workload", "1k", "--budget", "15", *SHORT]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        switched = wait_for(lambda: server_mpm(run.state.status_url) in ("worker", "event") or process.poll() is not None,
                            timeout=150, step=0.2)
        assert switched and process.poll() is None, "the session never ran another MPM"
        os.killpg(process.pid, stop)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    if stop == signal.SIGINT:
        assert "the original configuration was restored" in stderr
    elif then == "down":
        # Stopping the sandbox puts its files back too (the next `staging up` starts from its own anyway).
        assert run.sandbox.configured_mpm() != "prefork"
        cli("staging", "down", "--workdir", str(run.dir))
        run.assert_stock_restored()
        for path, data in run.files.items():
            assert path.read_bytes() == data, f"{path.name} not restored"
        return
    else:
        # kill -9 left the switch in place; the next run puts everything back before its first trial.
        assert run.sandbox.configured_mpm() != "prefork"
        again = cli("tune", "--workdir", str(run.dir), "--report", str(tmp_path / "again"), "--workload", "1k",
                    "--budget", "1", *SHORT, check=False)
        assert again.returncode == 0, again.stderr[-2000:]
        assert "restored the original managed include left by an interrupted run" in again.stdout + again.stderr
    assert_sandbox_restored(run)


# ---- an existing server with --restart-cmd ----------------------------------------


class ExistingServer:
    """apache2 from a Debian-like tree: the MPM loaded from a symlinked .load file."""

    def __init__(self, modules_dir: str = M, missing: str | None = None):
        self.dir = work_dir()
        self.port = _free_port()
        mods = self.dir / "modules"
        mods.mkdir()
        for name in os.listdir(modules_dir):
            if name != missing:
                (mods / name).symlink_to(os.path.join(modules_dir, name))
        (self.dir / "mods-available").mkdir()
        (self.dir / "mods-enabled").mkdir()
        (self.dir / "docroot").mkdir()
        (self.dir / "docroot" / "index.html").write_text("x" * 1024)
        available = self.dir / "mods-available" / "mpm_prefork.load"
        available.write_text(f"# Depends: mpm_prefork\nLoadModule mpm_prefork_module {mods}/mod_mpm_prefork.so\n")
        self.load_link = self.dir / "mods-enabled" / "mpm_prefork.load"
        self.load_link.symlink_to("../mods-available/mpm_prefork.load")
        self.managed = self.dir / "managed.conf"
        self.config = self.dir / "httpd.conf"
        user = "User www-data\nGroup www-data\n" if os.geteuid() == 0 else ""
        self.config.write_text(
            f'ServerRoot "{self.dir}"\nServerName 127.0.0.1\nListen 127.0.0.1:{self.port}\n'
            f'PidFile "{self.dir}/httpd.pid"\nErrorLog "{self.dir}/error.log"\n{user}'
            f'IncludeOptional "{self.dir}/mods-enabled/*.load"\n'
            f'LoadModule authz_core_module {mods}/mod_authz_core.so\nLoadModule status_module {mods}/mod_status.so\n'
            f'DocumentRoot "{self.dir}/docroot"\n<Directory "{self.dir}/docroot">\n    Require all granted\n'
            '</Directory>\n<Location "/server-status">\n    SetHandler server-status\n</Location>\n'
            "ExtendedStatus Off\n"
            f'IncludeOptional "{self.managed}"\n')
        # Pinned to core 0 as a staging admin would, the restart included: httperf gets core 1.
        base = ["taskset", "-c", "0", HTTPD, "-f", str(self.config), "-k"]
        self.reload_cmd = " ".join(base + ["graceful"])
        restart = self.dir / "restart.sh"
        restart.write_text(f"#!/bin/sh\n{' '.join(base)} stop\nfor i in $(seq 100); do\n"
                           f'  [ -e "{self.dir}/httpd.pid" ] || break\n  sleep 0.1\ndone\n'
                           f"for i in $(seq 30); do\n  {' '.join(base)} start && exit 0\n  sleep 0.2\ndone\nexit 1\n")
        restart.chmod(0o755)
        self.restart_cmd = str(restart)
        self.url = f"http://127.0.0.1:{self.port}/index.html"
        self.status_url = f"http://127.0.0.1:{self.port}/server-status?auto"
        self.files: dict[Path, bytes] = {}

    def __enter__(self) -> "ExistingServer":
        subprocess.run(["taskset", "-c", "0", HTTPD, "-f", str(self.config), "-k", "start"], check=True, timeout=30)
        assert wait_for(lambda: _answers(self.url), timeout=15)
        self.files = {p: p.read_bytes() for p in (self.config, self.load_link.resolve())}
        return self

    def __exit__(self, *exc) -> None:
        subprocess.run([HTTPD, "-f", str(self.config), "-k", "stop"], timeout=30, capture_output=True)
        wait_for(lambda: not (self.dir / "httpd.pid").exists(), timeout=15)
        shutil.rmtree(self.dir, ignore_errors=True)

    def tune(self, report: Path, *args: str) -> subprocess.CompletedProcess:
        return cli("tune", "--config", str(self.config), "--url", str(self.url), "--reload-cmd", self.reload_cmd,
                   "--managed", str(self.managed), "--report", str(report), *args, check=False)

    def assert_unchanged(self) -> None:
        for path, data in self.files.items():
            assert path.read_bytes() == data, f"{path} changed"
        assert self.load_link.is_symlink(), "the .load symlink became a file"
        assert not self.managed.exists() and not self.managed.with_name("managed.conf.journal").exists()
        assert server_mpm(self.status_url) == "prefork"


def _free_port() -> int:
    from advisor.tuner.staging.sandbox import free_port

    return free_port()


def _answers(url: str) -> bool:
    import requests

    try:
        return requests.get(url, timeout=1).status_code == 200
    except requests.RequestException:
        return False


@pytest.mark.httpd
def test_an_existing_server_with_a_restart_command_tries_several_mpms(tmp_path):
    require("apache2", "httperf")
    with ExistingServer() as server:
        report = tmp_path / "report"
        with MpmWatch(server.status_url) as watch:
            result = server.tune(report, "--allow-mpm-switch", "--restart-cmd", server.restart_cmd,
                                 "--workload", "url", "--budget", SWITCH_BUDGET, *SHORT)
        assert result.returncode == 0, result.stderr[-2000:]
        assert check_trials_ran_their_mpm(report) == {"prefork", "worker", "event"}
        assert len(set(watch.seen)) >= 2 and watch.seen[-1] == "prefork", watch.seen
        server.assert_unchanged()


@pytest.mark.httpd
def test_an_existing_server_without_a_restart_command_cannot_switch(tmp_path):
    require("apache2", "httperf")
    with ExistingServer() as server:
        line = one_error_line(server.tune(tmp_path / "r", "--allow-mpm-switch", "--workload", "url", *SHORT))
        assert "--allow-mpm-switch on an existing server needs --restart-cmd" in line
        assert "a graceful reload cannot change the MPM" in line
        server.assert_unchanged()
        assert not (tmp_path / "r").exists()


@pytest.mark.httpd
def test_an_mpm_module_missing_from_the_modules_directory_is_one_line(tmp_path):
    require("apache2", "httperf")
    with ExistingServer(missing="mod_mpm_worker.so") as server:
        line = one_error_line(server.tune(tmp_path / "r", "--allow-mpm-switch", "--restart-cmd",
                                          server.restart_cmd, "--workload", "url", *SHORT))
        assert f"{server.dir}/mods-enabled/mpm_prefork.load:2: mod_mpm_worker.so is not in {server.dir}/modules" \
            in line or f"{server.load_link.resolve()}:2: mod_mpm_worker.so" in line, line
        assert "leave out --allow-mpm-switch" in line
        server.assert_unchanged()


@pytest.mark.httpd
def test_a_plan_on_a_tree_that_loads_mod_php_keeps_prefork(tmp_path):
    require("apache2", "httperf")
    with ExistingServer() as server:
        # A stand-in line: the plan reads the config, it does not load it.
        tree = server.dir / "php.conf"
        tree.write_text(server.config.read_text().replace(
            "LoadModule status_module", "LoadModule php_module /usr/lib/apache2/modules/libphp8.2.so\n"
                                        "LoadModule status_module"))
        result = cli("tune", "--config", str(tree), "--url", server.url, "--reload-cmd", server.reload_cmd,
                     "--restart-cmd", server.restart_cmd, "--managed", str(server.managed), "--report",
                     str(tmp_path / "r"), "--allow-mpm-switch", "--workload", "url", "--dry-run", check=False)
        assert result.returncode == 0, result.stderr[-2000:]
        kept = [line for line in result.stdout.splitlines() if "MPM kept at prefork" in line]
        assert len(kept) == 1 and "loads php_module" in kept[0] and "needs prefork" in kept[0]
        assert "MPM: prefork | worker | event" not in result.stdout and "ThreadsPerChild" not in result.stdout
        server.assert_unchanged()


def test_simplify_keeps_the_thread_settings_a_prefork_start_never_had(tmp_path):
    """Going back to the start's value means nothing for a directive the
    start's MPM lacks: the start's ThreadsPerChild is a stand-in, never run."""
    from advisor.tuner.search.optimizer import Observation
    from advisor.tuner.search.surrogate import Surrogate
    from advisor.tuner.session.simplify import simplify

    cfg = write_config(tmp_path, f"LoadModule mpm_prefork_module {M}/mod_mpm_prefork.so\n")
    space = derive_space(cfg, MPM_BOUNDS, allow_mpm_switch=True)
    points = space.random_points(14, seed=2) + [dict(space.start)]
    observations = [Observation(trial=i + 1, point=p, objective=2000.0 if p["MPM"] == "event" else 1000.0,
                                valid=True, verdict="server CPU") for i, p in enumerate(points)]
    surrogate = Surrogate.fit(space, observations, seed=0)
    winner = dict(space.start, MPM="event", ThreadsPerChild=20, MinSpareThreads=40, KeepAliveTimeout=900)
    assert winner["ThreadsPerChild"] != space.start["ThreadsPerChild"]
    simplified = simplify(space, winner, surrogate=surrogate)
    reverted = {r.dimension for r in simplified.reverted}
    assert simplified.point["MPM"] == "event" and "KeepAliveTimeout" in reverted  # the model saw only the MPM matter
    assert not {"ThreadsPerChild", "MinSpareThreads"} & reverted
    assert simplified.point["ThreadsPerChild"] == 20


@pytest.mark.netns
@pytest.mark.httpd
def test_a_server_on_another_host_switches_over_ssh_and_is_restored(netns_topology, tmp_path):
    """--host: the MPM line is edited, the restart run and the file put back
    on the host, through ssh only; the server's mod_status says what ran."""
    require("apache2", "httperf")
    topo = netns_topology
    with SandboxRun(mpm="prefork", netns=topo.server.netns, host=topo.server.addr, port=8080,
                    status_allow=["127.0.0.1", topo.root_addr]) as run:
        config = run.sandbox.config_path
        original = config.read_bytes()
        base = f"{run.state.binary} -f {config} -k"
        # Stop, wait for the pid file to go, start (again while the old listener lingers): bounded loops.
        restart = (f"sh -c '{base} stop; for i in $(seq 100); do [ -e {run.sandbox.pid_path} ] || break; "
                   f"sleep 0.1; done; for i in $(seq 30); do {base} start && exit 0; sleep 0.2; done; exit 1'")
        args = ["--host", f"root@{topo.server.addr}", "--allow-host", topo.server.addr,
                "--identity", str(topo.user_key)]
        for option in topo.ssh_options():
            args += ["--ssh-option", option]
        args += ["--config", str(config), "--managed", str(run.sandbox.managed_path),
                 "--reload-cmd", f"{base} graceful", "--restart-cmd", restart,
                 "--url", f"http://{topo.server.addr}:8080/index.html"]
        report = tmp_path / "report"
        with MpmWatch(run.state.status_url) as watch:
            result = cli("tune", *args, "--report", str(report), "--allow-mpm-switch", "--workload", "1k",
                         "--budget", SWITCH_BUDGET, "--client-cpus", "1", *SHORT, check=False)
        assert result.returncode == 0, result.stderr[-2000:]
        assert check_trials_ran_their_mpm(report) == {"prefork", "worker", "event"}
        assert len(set(watch.seen)) >= 2 and watch.seen[-1] == "prefork", watch.seen
        assert config.read_bytes() == original
        run.assert_stock_restored()
        assert server_mpm(run.state.status_url) == "prefork"


def test_a_prefork_start_stands_in_httpds_defaults_for_the_thread_settings(tmp_path):
    cfg = write_config(tmp_path, f"LoadModule mpm_prefork_module {M}/mod_mpm_prefork.so\nMaxRequestWorkers 100\n")
    space = derive_space(cfg, MPM_BOUNDS, allow_mpm_switch=True)
    start = space.start
    assert (start["ThreadsPerChild"], start["MinSpareThreads"], start["MaxSpareThreads"]) == (25, 75, 250)
    assert start["AsyncRequestWorkerFactor"] == 2 and start["MaxRequestWorkers"] == 100


def test_the_report_lists_only_the_directives_of_each_trials_mpm(tmp_path):
    from advisor.tuner.search.optimizer import Observation
    from advisor.tuner.session.report_data import trial_rows

    cfg = write_config(tmp_path, f"LoadModule mpm_prefork_module {M}/mod_mpm_prefork.so\n")
    space = derive_space(cfg, MPM_BOUNDS, allow_mpm_switch=True)
    event = dict(space.start, MPM="event", ThreadsPerChild=16, StartServers=9, MinSpareServers=40)
    prefork = dict(space.start, ThreadsPerChild=16, MinSpareServers=40)
    rows = trial_rows(space, [Observation(1, event, 10.0, True, "none"), Observation(2, prefork, 9.0, True, "none")],
                      event)
    assert rows[0].changed == {"MPM": "event", "ThreadsPerChild": "16"}
    assert rows[1].changed == {"MinSpareServers": "40"}
