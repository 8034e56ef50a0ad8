"""`bench --host deploy@... --become` (issue 59): the staging host reached as a
deploy user who escalates with `sudo -n` (netns_topology.LOGIN_USERS): the
config read, the managed include written and put back, the config test, the
reload, the process table and the metrics sampler all run there under sudo.

The sandbox's config is made 0640 root, as a hardened host's is, and its
managed include 0640 root:www-data: the deploy user alone can read neither,
so the run without --become fails on the first read, and the one with it
reads and writes them through sudo. One short trial."""

from __future__ import annotations

import json
import os

import pytest

from advisor.tuner.staging.sandbox import INSTRUMENT_HEADER
from conftest import assert_one_line_error
from test_bench_support import SandboxRun, cli, require, two_cores

pytestmark = [pytest.mark.netns, pytest.mark.httpd, pytest.mark.load]

PORT = 8080


def test_bench_as_a_deploy_user_with_become_runs_a_trial_and_restores_the_include(netns_topology):
    require("apache2", "httperf")
    two_cores()
    topo = netns_topology
    host = f"deploy@{topo.server.addr}"
    with SandboxRun(mpm="prefork", netns=topo.server.netns, host=topo.server.addr, port=PORT,
                    status_allow=["127.0.0.1", topo.root_addr]) as run:
        run.sandbox.instrument_path.write_text(INSTRUMENT_HEADER)  # an admin's server: no compensation
        managed = run.sandbox.managed_path
        os.chown(managed, 0, 33)  # root:www-data 0640, not what a new file would get
        os.chmod(managed, 0o640)
        os.chmod(run.sandbox.config_path, 0o640)
        before = os.stat(managed)
        args = ["--host", host, "--allow-host", topo.server.addr, "--identity", str(topo.user_key)]
        for option in topo.ssh_options():
            args += ["--ssh-option", option]
        args += ["--config", str(run.sandbox.config_path), "--managed", str(managed),
                 "--reload-cmd", f"{run.state.binary} -f {run.sandbox.config_path} -k graceful",
                 "--url", f"http://{topo.server.addr}:{PORT}/index.html", "--client-cpus", "1",
                 "--workload", "1k", "--rate", "20", "--duration", "1", "--warmup", "0", "--format", "json"]
        refused = cli("bench", *args, check=False, timeout=120)
        assert_one_line_error(refused, f"cannot read {host}:{run.sandbox.config_path}: ", "Permission denied",
                              "--become")
        result = cli("bench", *args, "--become", "--set", "KeepAliveTimeout 7", check=False, timeout=180)
        assert result.returncode == 0, result.stderr[-2000:]
        trials = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        assert len(trials) == 1
        trial = trials[0]
        assert trial["inputs"]["directives"] == ["KeepAliveTimeout 7"]  # written to the include, then measured
        assert trial["httperf"]["replies"] > 0 and trial["errors"]["total"] == 0, trial["errors"]
        # The sampler ran on the host under sudo for the whole window.
        assert trial["metrics"] and not trial["metrics_lost"]
        assert all(sample["httpd_processes"] >= 2 for sample in trial["metrics"])
        # Put back as it was: the text, and root's owner, group and mode (not the login user's, not 0644).
        assert managed.read_text() == run.stock
        after = os.stat(managed)
        assert (after.st_uid, after.st_gid, after.st_mode) == (before.st_uid, before.st_gid, before.st_mode)
        assert not [p.name for p in managed.parent.iterdir() if ".tmp." in p.name]
        assert not managed.with_name(managed.name + ".journal").exists()
