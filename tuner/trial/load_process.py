"""The load process of a warm-up or a trial: httperf on this machine, or
one share on each load client, and its report."""

from __future__ import annotations

from advisor.tuner.load import httperf
from advisor.tuner.load.remote_clients import GroupRun
from advisor.tuner.staging.target import StagingTarget


def start_load(target: StagingTarget, spec: httperf.HttperfSpec, clients):
    """httperf here (recorded beside the target), or one share on each load client."""
    if clients is not None and clients.several:
        return clients.start(spec)
    return httperf.start(spec, record=target.load_record)


def load_result(process, timeout: float) -> httperf.HttperfResult:
    """The load process's report, waiting at most `timeout` seconds for it to end."""
    if isinstance(process, GroupRun):  # every client's report, merged
        return process.result(timeout)
    return httperf.finish(process, timeout=timeout)
