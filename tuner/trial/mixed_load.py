"""A protocol mix (`--protocol mix --h2-share S`): a share of the visitors on HTTP/2, the rest on HTTP/1.1.

Browsers that reach a TLS site offering h2 speak HTTP/2; the rest (older
clients, proxies, bots, libraries) speak HTTP/1.1. Both kinds arrive at
once, so a trial runs both load generators at once: h2load for S of the
visitors and httperf for 1 - S, each at its share of the rate, on the same
visits. Their reports are merged as several load clients' are (replies,
errors and rates summed, times weighted by replies), and each part is kept.
"""

from __future__ import annotations

import math
import signal
from dataclasses import dataclass, replace

from advisor.errors import UsageError
from advisor.tuner.load import h2load, httperf
from advisor.tuner.load.browser_pages import visitors_split
from advisor.tuner.load.remote_clients import merge


def check_share(share: float | None, protocol: str) -> float:
    """--h2-share: a number strictly between 0 and 1 for a mix (0 and 1 are h1 and h2 alone)."""
    if protocol != "mix":
        if share is not None:
            raise UsageError("--h2-share sets the share of HTTP/2 visitors in a mix", hint="add --protocol mix")
        return 0.0
    if share is None:
        raise UsageError("--protocol mix needs --h2-share", hint="e.g. --h2-share 0.6: 60 % of visitors on HTTP/2")
    if share != share or not 0 < share < 1:
        raise UsageError(f"--h2-share {share:g} is not a share strictly between 0 and 1",
                         hint="0 is --protocol h1 and 1 is --protocol h2; a mix is in between, e.g. 0.6")
    return float(share)


@dataclass(frozen=True)
class MixSpec:
    """The two load generators' runs of one mixed trial."""

    h1: httperf.HttperfSpec
    h2: h2load.H2loadSpec
    share: float

    @classmethod
    def split(cls, h1: httperf.HttperfSpec, h2: h2load.H2loadSpec, share: float) -> "MixSpec":
        """The rate and the visitors divided by the share (each side at least one visitor)."""
        on_h2, sessions = visitors_split(h2.visitors, share)
        h1_part = replace(h1, rate=h1.rate * (1 - share),
                          wsess=(sessions, h1.wsess[1], h1.wsess[2]) if h1.wsess else None,
                          num_conns=sessions)
        return cls(h1=h1_part, h2=replace(h2, visitors=on_h2, rate=h2.rate * share), share=share)

    def sized(self, visitors: int) -> "MixSpec":
        """The same mix for another number of visitors (a warm-up's length)."""
        h2_count = max(1, math.ceil(self.share * visitors))
        h1_count = max(1, visitors - h2_count)
        h1 = replace(self.h1, num_conns=h1_count,
                     wsess=(h1_count, self.h1.wsess[1], self.h1.wsess[2]) if self.h1.wsess else None)
        return replace(self, h1=h1, h2=replace(self.h2, visitors=h2_count))


class MixedRun:
    """Both load generators of a mixed trial, in the shape of a Popen (as GroupRun is)."""

    def __init__(self, spec: MixSpec, record) -> None:
        self.spec = spec
        self.h1 = httperf.start(spec.h1, record=record)
        self.h2 = h2load.start(spec.h2, record=record)
        self.record = record
        self.pid = self.h1.pid  # httperf's: its open descriptors are the ones that hit FD_SETSIZE
        self.pids = [self.h1.pid, self.h2.pid]  # the collector watches both generators' share of their core
        self.parts: dict[str, httperf.HttperfResult] = {}

    def poll(self) -> int | None:
        codes = [self.h1.poll(), self.h2.poll()]
        return None if any(code is None for code in codes) else max(codes)

    def send_signal(self, sig: int) -> None:
        for process in (self.h1, self.h2):
            if process.poll() is None:
                process.send_signal(sig if process is self.h1 else signal.SIGTERM)

    def kill(self) -> None:
        for process in (self.h1, self.h2):
            if process.poll() is None:
                process.kill()

    def wait(self, timeout: float | None = None) -> int | None:
        for process in (self.h1, self.h2):
            process.wait(timeout=timeout)
        return self.poll()

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        outputs = [process.communicate(timeout=timeout)[0] or "" for process in (self.h1, self.h2)]
        self._forget()
        return "\n".join(outputs), ""

    def result(self, timeout: float) -> httperf.HttperfResult:
        from advisor.tuner.trial.browser_load import h2_result

        try:
            h1 = httperf.finish(self.h1, timeout=timeout)
            h2 = h2_result(self.h2, self.spec.h2, timeout)
        finally:
            self._forget()
        self.parts = {"h1": h1, "h2": h2}
        merged = merge([h1, h2], ["http/1.1", "h2"])
        merged.protocol = "mix"
        merged.protocol_parts = {name: {"connections": part.connections, "replies": part.replies,
                                        "reply_time_ms": round(part.reply_time_ms, 2)}
                                 for name, part in (("http/1.1", h1), ("h2", h2))}
        return merged

    def _forget(self) -> None:
        if self.record is not None:
            httperf.forget(self.record, self.h2.pid)
