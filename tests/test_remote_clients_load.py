"""Load from two client hosts offers what one httperf cannot (issue 14).

Debian's httperf holds at most about 1,020 connections (FD_SETSIZE). 1,600
sessions open at once (400 a second, each two calls 4 s apart) are more than
one can hold: from this machine alone the trial is client-bound. Split over
the test network's two client namespaces (`--client-host`, each running its
own httperf over SSH with --client=I/N, 800 sessions each), the same load is
offered whole and the trial is valid.

The server is the event MPM sandbox in the server namespace, with room for
1,600 idle keep-alive connections and a keep-alive timeout longer than the
think time (so the server never closes a session between its calls).
Its pool is held at 400 threads and its idle connections hold none, so the
trials run no warm-up: one would open sessions for at least one think time
and a second (5 s), then drain them, and leave the measured window to start
from an idle server all the same.
"""

from __future__ import annotations

import json

import pytest

from test_bench_support import SandboxRun, require, two_cores

pytestmark = [pytest.mark.netns, pytest.mark.load, pytest.mark.httpd]

PORT = 8080
SESSIONS = ["--rate", "400", "--duration", "4", "--num-calls", "2", "--think", "4", "--timeout", "10", "--warmup", "0",
            "--set", "KeepAliveTimeout 10", "--set", "ServerLimit 16", "--set", "ThreadsPerChild 25",
            "--set", "MaxRequestWorkers 400", "--set", "AsyncRequestWorkerFactor 4",
            "--set", "StartServers 16", "--set", "MinSpareThreads 400", "--set", "MaxSpareThreads 400"]


def _trial(result) -> dict:
    return next(json.loads(line) for line in result.stdout.splitlines()
                if line.startswith("{") and json.loads(line).get("kind") == "trial")


def _brief(trial: dict) -> str:
    h = trial["httperf"]
    return (f"{trial['verdict']['label']}, valid {trial['valid']}, {h.get('connections')} connections, "
            f"at most {h.get('max_concurrent_connections')} at once, limits "
            f"{[c['detail'] for c in trial['client_limits']]}")


def test_two_client_hosts_offer_what_one_httperf_cannot(netns_topology):
    require("apache2", "httperf")
    two_cores()
    topo = netns_topology
    clients = []
    for node in topo.clients:
        clients += ["--client-host", f"root@{node.addr}"]
    ssh = ["--identity", str(topo.user_key)]
    for option in topo.ssh_options():
        ssh += ["--ssh-option", option]
    with SandboxRun(mpm="event", netns=topo.server.netns, host=topo.server.addr, port=PORT,
                    status_allow=["127.0.0.1", topo.root_addr]) as run:
        common = ["--format", "json", "--allow-host", topo.server.addr, *SESSIONS]
        one = _trial(run.bench(*common, "--client-cpus", "1"))
        run.assert_stock_restored()
        two_run = run.bench(*common, *clients, *ssh)
        run.assert_stock_restored()
    two = _trial(two_run)
    print(f"\none client:  {_brief(one)}\ntwo clients: {_brief(two)}")
    # Before the first trial the tool said who loads what.
    load_line = next(line for line in two_run.stderr.splitlines() if "load: " in line)
    first, second = topo.clients
    assert f"httperf on root@{first.addr}, root@{second.addr}, each 1/2 of the load" in load_line

    assert one["verdict"]["label"] == "client-bound" and not one["valid"], _brief(one)
    assert any(c["check"] in ("FD_SETSIZE cap", "fd-unavail/addrunavail") for c in one["client_limits"]), _brief(one)

    assert two["valid"], (two["invalid_reasons"], _brief(two))
    assert two["verdict"]["label"] != "client-bound", _brief(two)
    assert not two["client_limits"], _brief(two)
    # Together they held more connections than one httperf can, and opened every session.
    assert two["httperf"]["max_concurrent_connections"] > 1100, _brief(two)
    assert two["httperf"]["connections"] >= 0.98 * 1600, _brief(two)
    assert two["httperf"]["errors"].get("fd-unavail", 0) == 0
    # Each client's httperf reported its own CPU (its mean share of a core there).
    shares = two["interference"]["load_clients_cpu_pct"]
    print(f"load clients' httperf CPU: {shares}")
    assert set(shares) == {f"root@{first.addr}", f"root@{second.addr}"}
    assert all(share is not None and 1 <= share <= 110 for share in shares.values()), shares
