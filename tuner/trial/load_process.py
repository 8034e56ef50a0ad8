"""The load process of a warm-up or a trial: httperf on this machine, or
one share on each load client, and its report."""

from __future__ import annotations

from advisor.errors import UsageError
from advisor.tuner.load import h2load, httperf
from advisor.tuner.load.remote_clients import GroupRun
from advisor.tuner.trial.mixed_load import MixedRun, MixSpec
from advisor.tuner.staging.target import StagingTarget


LoadSpec = httperf.HttperfSpec | h2load.H2loadSpec | MixSpec


def start_load(target: StagingTarget, spec: LoadSpec, clients):
    """httperf (or h2load, for an HTTP/2 trial) here, recorded beside the
    target, or one share of httperf's load on each load client."""
    if isinstance(spec, (h2load.H2loadSpec, MixSpec)):
        if clients is not None and clients.several:
            raise UsageError("HTTP/2 trials run h2load on this machine only",
                             hint="leave out --load-client, or measure with --protocol h1")
        if isinstance(spec, MixSpec):
            return MixedRun(spec, target.load_record)
        process = h2load.start(spec, record=target.load_record)
        process.h2_spec = spec  # type: ignore[attr-defined]  # what load_result reads it against
        return process
    if clients is not None and clients.several:
        return clients.start(spec)
    return httperf.start(spec, record=target.load_record)


def load_result(process, timeout: float) -> httperf.HttperfResult:
    """The load process's report, waiting at most `timeout` seconds for it to end."""
    if isinstance(process, (GroupRun, MixedRun)):  # every client's report (or both protocols'), merged
        return process.result(timeout)
    spec = getattr(process, "h2_spec", None)
    if spec is not None:
        from advisor.tuner.trial.browser_load import h2_result

        return h2_result(process, spec, timeout)
    return httperf.finish(process, timeout=timeout)
