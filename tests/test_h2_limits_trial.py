"""A trial's verdict names mod_http2's limit with its line (issue 57), on a real httpd with a real h2load.

One brief HTTP/2 trial (three visitors a second for two seconds, two pages
a visit) against the event sandbox with ExtendedStatus On, its managed
include limiting every session to one stream and every child to one h2
worker: what is checked is the verdict's label and the lines it names, and
that mod_http2's state was read, not a rate. (The text report's line is
tests/test_h2_status.py's.)
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from test_bench_support import cli, require, work_dir

pytestmark = [pytest.mark.load, pytest.mark.httpd]


def test_a_trial_names_the_stream_cap_and_the_h2_workers_with_their_lines():
    require("apache2", "openssl", "h2load")
    directory = work_dir()
    try:
        cli("staging", "up", "--workdir", str(directory), "--tls", "--h2", "--mpm", "event", "--extended-status")
        managed = directory / "conf" / "managed.conf"
        run = cli("bench", "--workdir", str(directory), "--tls", "--workload", "browser", "--num-calls", "2",
                  "--think", "0.3", "--rate", "3", "--duration", "2", "--warmup", "0", "--protocol", "h2",
                  "--set", "H2MaxSessionStreams 1", "--set", "H2MaxWorkers 1", "--format", "json")
        document = json.loads(run.stdout.splitlines()[0])
    finally:
        cli("staging", "down", "--workdir", str(directory), check=False)
        shutil.rmtree(directory, ignore_errors=True)
    verdict = document["verdict"]
    # The trial's own lines in the managed include (bench restores it after), in the order given.
    named = re.fullmatch(rf"{re.escape(str(managed))}:(\d+): H2MaxSessionStreams 1", verdict["evidence"]["config"])
    assert named is not None
    assert document["protocol"]["served"] == "h2"
    assert verdict["label"] == "h2 streams per session capped"
    limits = {limit["label"]: limit for limit in verdict["evidence"]["http2_limits"]}
    assert limits["h2 workers exhausted"]["config"] == f"{managed}:{int(named.group(1)) + 1}: H2MaxWorkers 1"
    assert {"label": "h2 workers exhausted", "onset_s": None} in verdict["consequences"]
    # mod_http2's state was read through the window, with the limits in use.
    state = document["http2"]
    assert state["visible"] is True and state["readings"] >= 1 and state["h2_max_workers"] == 1
    assert state["streams_open_per_session_max"] <= 1
