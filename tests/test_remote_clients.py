"""Several load generators as one: shares that add up, reports that merge,
and a start that the tool gives (not the clocks), in the client namespaces.

No httperf runs here: the merge reads httperf reports written for the test,
and the start is shown with `date`, whose output is the moment it ran.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from advisor.errors import UsageError
from advisor.tuner.load.httperf import HttperfSpec, parse
from advisor.tuner.load.remote_clients import ClientGroup, LoadClient, merge, parse_clients, share
from advisor.tuner.transport.ssh import HostSpec, SshConnection
from test_bench_support import wait_for


def test_clients_are_this_machine_unless_named():
    assert parse_clients(None) == [LoadClient("local")]
    clients = parse_clients(["local", "root@10.0.0.7:2222"])
    assert clients[1].spec == HostSpec("10.0.0.7", "root", 2222) and not clients[1].local and clients[0].local
    with pytest.raises(UsageError, match="named twice"):
        parse_clients(["h1", "h1"])


def test_shares_add_up_to_the_whole():
    spec = HttperfSpec(host="10.0.0.1", port=80, rate=100, num_conns=100, binary="httperf")
    parts = [share(spec, i, 3) for i in range(3)]
    assert sum(p.rate for p in parts) == pytest.approx(100)
    assert [p.num_conns for p in parts] == [34, 33, 33]
    assert "--client=1/3" in parts[1].argv() and "--num-conns=33" in parts[1].argv()
    sessions = HttperfSpec(host="h", port=80, rate=10, wsess=(101, 5, 0.2), binary="httperf")
    assert [share(sessions, i, 2).wsess for i in range(2)] == [(51, 5, 0.2), (50, 5, 0.2)]
    assert share(spec, 0, 1) is spec and not any(a.startswith("--client") for a in spec.argv())


REPORT = """httperf --client={i}/2 --timeout=2 --server=10.0.0.1 --port=8080 --rate=50 --num-conns={conns} --num-calls=1
Maximum connect burst length: 1

Total: connections {conns} requests {conns} replies {replies} test-duration {duration} s

Connection rate: {conn_rate} conn/s (20.0 ms/conn, <={concurrent} concurrent connections)
Connection time [ms]: min {tmin} avg {tavg} max {tmax} median 1.5 stddev 0.3
Connection time [ms]: connect {connect}
Connection length [replies/conn]: 1.000

Request rate: {conn_rate} req/s (20.0 ms/req)
Request size [B]: 70.0

Reply rate [replies/s]: min 0.0 avg 0.0 max 0.0 stddev 0.0 (0 samples)
Reply time [ms]: response {response} transfer 0.1
Reply size [B]: header 250.0 content 1024.0 footer 0.0 (total 1274.0)
Reply status: 1xx=0 2xx={replies} 3xx=0 4xx=0 5xx=0

CPU time [s]: user 0.50 system 1.40 (user 25.0% system 70.0% total 95.0%)
Net I/O: 65.6 KB/s (0.5*10^6 bps)

Errors: total {timeouts} client-timo {timeouts} socket-timo 0 connrefused 0 connreset 0
Errors: fd-unavail 0 addrunavail 0 ftab-full 0 other 0
"""


def test_reports_merge_by_summing_and_weighting():
    first = parse(REPORT.format(i=0, conns=100, replies=100, duration=2.0, conn_rate=50.0, concurrent=3,
                                tmin=0.5, tavg=1.0, tmax=4.0, connect=0.2, response=0.8, timeouts=0))
    second = parse(REPORT.format(i=1, conns=150, replies=140, duration=2.1, conn_rate=71.4, concurrent=900,
                                 tmin=0.7, tavg=3.0, tmax=2000.0, connect=0.6, response=2.0, timeouts=10))
    both = merge([first, second], ["local", "client1"])
    assert (both.connections, both.requests, both.replies) == (250, 250, 240)
    assert both.reply_rate == pytest.approx(100 / 2.0 + 140 / 2.1)
    assert both.connection_rate == pytest.approx(121.4) and both.request_rate == pytest.approx(121.4)
    assert both.max_concurrent_connections == 903  # held together, the clients add up
    assert both.errors["client-timo"] == 10 and both.errors["total"] == 10 and both.error_total == 10
    assert both.status["2xx"] == 240
    assert both.reply_response_ms == pytest.approx((100 * 0.8 + 140 * 2.0) / 240)
    assert both.reply_time_ms == pytest.approx((100 * 0.8 + 140 * 2.0) / 240 + 0.1)
    assert both.connection_time_ms == {"min": 0.5, "max": 2000.0, "avg": pytest.approx((100 * 1.0 + 150 * 3.0) / 250)}
    assert both.connect_time_ms == pytest.approx((100 * 0.2 + 150 * 0.6) / 250)
    assert merge([first]) is first


def _group(topo, names=("local", "client1", "client2")):
    clients, connections = [], {}
    for name in names:
        if name == "local":
            clients.append(LoadClient("local"))
            continue
        node = next(n for n in topo.clients if n.role == name)
        spec = HostSpec(node.addr, "root")
        clients.append(LoadClient(name, spec))
        connections[name] = SshConnection(spec, options=topo.ssh_options(), identity=str(topo.user_key))
        connections[name].connect()
    return ClientGroup(clients, connections), connections


@pytest.mark.netns
def test_clients_start_when_the_tool_says_go(netns_topology):
    group, connections = _group(netns_topology)
    try:
        # Each client prints the moment its command ran, and, half a second later (waiting
        # for the end must not stop it), the addresses it ran with.
        command = ["sh", "-c", "date +%s.%N; sleep 0.5; hostname -I"]
        slow_start = time.time()
        group.start([command] * 3)
        go_wall = time.time()
        outputs = group.finish(timeout=20)
    finally:
        group.stop()
        for conn in connections.values():
            conn.close()
    started = [float(out.split()[0]) for out in outputs]
    assert all(t >= go_wall - 0.05 for t in started), (started, go_wall)  # nothing ran before `go`
    assert max(started) - min(started) < 0.25, started
    assert go_wall - slow_start > 0  # the ready phase (ssh sessions opened) came first
    addresses = [out.split()[1:] for out in outputs]
    assert netns_topology.clients[0].addr in addresses[1] and netns_topology.clients[1].addr in addresses[2]


@pytest.mark.netns
def test_interrupt_asks_each_command_to_report(netns_topology):
    group, connections = _group(netns_topology, ("local", "client2"))
    # As httperf does on SIGINT: stop and print what it has. Each command marks the moment
    # its handler is in place: a SIGINT that arrives while python3 still starts (0.5 s was
    # not enough on a slow CI host) kills it in `import site`, which is not what is tested.
    markers = netns_topology.work / "interrupt-markers"
    markers.mkdir(mode=0o777, exist_ok=True)
    markers.chmod(0o777)
    program = ("import pathlib, sys, time\ntry:\n    pathlib.Path(sys.argv[1]).touch()\n    time.sleep(43.5)\n"
               "except KeyboardInterrupt:\n    print('reported after SIGINT')")
    commands = [["python3", "-c", program, str(markers / f"ready-{i}")] for i in range(2)]
    try:
        group.start(commands)
        assert wait_for(lambda: all((markers / f"ready-{i}").exists() for i in range(2)), 30.0, step=0.05), \
            "a command did not start within 30 s"
        group.interrupt()
        outputs = group.finish(timeout=10)
    finally:
        group.stop()
        for conn in connections.values():
            conn.close()
    assert [out.strip().splitlines()[0] for out in outputs] == ["reported after SIGINT"] * 2
    # ... and the wrapper's own last line: the command's CPU time and run time.
    assert all(out.strip().splitlines()[-1].startswith("apache-advisor-client-cpu ") for out in outputs), outputs
    assert [p.returncode for p in group.processes] == [0, 0]


def _alive(pattern: str) -> bool:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 0


@pytest.mark.netns
def test_stop_and_a_dead_tool_end_every_client(netns_topology):
    group, connections = _group(netns_topology, ("local", "client1"))
    try:
        group.start([["sleep", "41.5"], ["sleep", "41.5"]])
        assert wait_for(lambda: _alive("sleep 41.5"), 10.0, step=0.05)
        t0 = time.monotonic()
        group.stop()
        assert time.monotonic() - t0 < 6
        time.sleep(0.3)
        assert not _alive("sleep 41.5")
        # The tool's side of a remote client dies (kill -9): the host ends the command.
        other, _ = _group(netns_topology, ("client2",))
        other.start([["sleep", "42.5"]])
        assert wait_for(lambda: _alive("sleep 42.5"), 10.0, step=0.05)
        os.kill(other.processes[0].pid, signal.SIGKILL)
        deadline = time.monotonic() + 8
        while _alive("sleep 42.5") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive("sleep 42.5")
        other.stop(grace=1)
    finally:
        for conn in connections.values():
            conn.close()
        SshConnection(HostSpec(netns_topology.clients[1].addr, "root"), options=netns_topology.ssh_options(),
                      identity=str(netns_topology.user_key)).close()


def test_each_clients_cpu_is_read_from_its_wrappers_last_line_and_a_starved_one_disturbs_the_trial():
    from advisor.tuner.load.remote_clients import CPU_LINE, client_cpu_pct

    text = f"httperf --client=0/2 ...\nTotal: connections 800\n{CPU_LINE} 3.600 4.000\n"
    assert client_cpu_pct(text) == 90.0
    assert client_cpu_pct("Total: connections 800\n") is None  # an older wrapper, or httperf killed
    assert client_cpu_pct(f"{CPU_LINE} 1.0 0\n") is None
    from advisor.tuner.load.httperf import HttperfResult
    from advisor.tuner.trial.result import TrialInputs, TrialResult
    from advisor.tuner.trial.verdict import Verdict

    def run(shares):
        inputs = TrialInputs(workload="1k", uri="/", rate=100.0, duration_s=3.0)
        result = HttperfResult(connections=300, requests=300, replies=300, test_duration_s=3.0)
        return TrialResult(inputs, result, [], [], Verdict("none", {}), 0, 0, 0.0, 3.0,
                           client_cpu_pct=shares).interference

    calm = run({"root@a": 99.0, "root@b": 97.5})
    assert not calm["disturbed"] and calm["load_clients_cpu_pct"] == {"root@a": 99.0, "root@b": 97.5}
    starved = run({"root@a": 99.0, "root@b": 41.0})
    assert starved["disturbed"] and starved["reasons"] == [
        "httperf on load client root@b got only 41 % of its core on average"]
