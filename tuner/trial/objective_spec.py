"""What a trial measures and how: the objective (`ObjectiveSpec`: the peak
under the SLO, throughput or latency at a fixed rate) and the probes'
settings (`ProbeSettings`: bench's knobs), checked as the command reads them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.errors import UsageError

OBJECTIVES = ("peak", "throughput", "latency")


@dataclass(frozen=True)
class ObjectiveSpec:
    """What a trial measures; every kind is told to the optimizer as higher-is-better."""

    kind: str = "peak"
    rate: float | None = None
    """throughput and latency: the offered rate (sessions or connections per second)."""
    slo_ms: float = 100.0
    slo_errors_pct: float = 1.0
    rtt_ms: float = 0.0
    """The clients' round trip (--rtt): with it the SLO and the latency
    objective judge the client-perceived reply time."""
    rtt_how: str = ""
    """advisor.tuner.load.roundtrips.RTT_ADDED or RTT_ON_LINK (with rtt_ms)."""
    protocol: str = "h1"
    """h1 (httperf), h2 (h2load) or mix: advisor.tuner.trial.browser_load."""
    h2_share: float = 0.0
    """mix: the share of visitors on HTTP/2."""

    def __post_init__(self) -> None:
        if self.kind not in OBJECTIVES:
            raise UsageError(f"unknown --objective {self.kind!r}", hint=f"choose {', '.join(OBJECTIVES)}")
        if self.kind != "peak" and (self.rate is None or self.rate <= 0):
            raise UsageError(f"--objective {self.kind} measures at a fixed offered rate", hint="give it with --rate R")
        if self.slo_ms <= 0 or not 0 < self.slo_errors_pct <= 100:
            raise UsageError("the SLO needs --slo-ms > 0 and 0 < --slo-errors <= 100")

    def identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = {"kind": self.kind, "rate": self.rate if self.kind != "peak" else None,
                                    "slo_ms": self.slo_ms, "slo_errors_pct": self.slo_errors_pct}
        if self.rtt_ms:  # only then: a journal written before --rtt existed still resumes
            identity["rtt_ms"] = self.rtt_ms
        if self.protocol != "h1":  # likewise for a journal written before --protocol
            identity["protocol"] = self.protocol
            if self.protocol == "mix":
                identity["h2_share"] = self.h2_share
        return identity

    @property
    def reply(self) -> str:
        """The reply time the SLO reads."""
        return f"client-perceived reply (RTT {self.rtt_ms:g} ms)" if self.rtt_ms else "reply"

    def rtt_text(self) -> str:
        """The plan's and the report's line on the round trip ("" without --rtt)."""
        from advisor.tuner.load.roundtrips import RTT_ON_LINK

        if not self.rtt_ms:
            return ""
        if self.rtt_how == RTT_ON_LINK:
            return (f"{self.rtt_ms:g} ms, measured: netem delays the clients' link by it; the SLO reads the "
                    "reply time plus connection set-up per reply")
        return (f"{self.rtt_ms:g} ms, added (this link cannot delay packets): the server sees every think time "
                f"lengthened by {self.rtt_ms:g} ms; the SLO reads the measured reply time plus {self.rtt_ms:g} ms "
                "per TCP connection, TLS handshake round trip and request, spread over the replies")

    def label(self, unit: str) -> str:
        slo = f"mean {self.reply} < {self.slo_ms:g} ms, errors < {self.slo_errors_pct:g} %"
        if self.kind == "peak":
            return f"peak sustainable rate under the SLO ({slo})"
        if self.kind == "throughput":
            return (f"throughput at {self.rate:g} {unit}, scaled down by mean reply time / {self.slo_ms:g} ms "
                    "past the bound")
        return f"mean {self.reply} time at {self.rate:g} {unit}, told as its inverse, 1000 / mean ms (higher is faster)"

    def short_label(self, unit: str) -> str:
        """The label for the report and its plots' axes."""
        rtt = f", RTT {self.rtt_ms:g} ms" if self.rtt_ms else ""
        if self.kind == "peak":
            return f"peak rate under the SLO ({self.slo_ms:g} ms, {self.slo_errors_pct:g} % errors{rtt})"
        if self.kind == "throughput":
            return f"throughput at {self.rate:g} {unit} (bound {self.slo_ms:g} ms{rtt})"
        return f"inverse mean {self.reply} time at {self.rate:g} {unit}"

    @property
    def unit(self) -> str:
        return "1/s" if self.kind == "latency" else "replies/s"


@dataclass
class ProbeSettings:
    """How each measurement is run (bench's knobs)."""

    duration_s: float = 3.0
    warmup_s: float | None = None
    """None: until the server's pool is steady (trial/warmup.py decides); 0: none."""
    timeout_s: float = 2.0
    start_rate: float = 10.0
    """The first knee search starts here (later ones at the incumbent's peak)."""
    max_rate: float = 20000.0
    max_probes: int = 4
    """Probes per knee search once an incumbent's peak is known."""
    first_max_probes: int = 10
    """Probes of the first knee search, which starts from nothing."""
    tolerance: float = 0.1
    retries: int = 1
    interval: float | None = None
    tls_resume: str = "session"
    """HTTPS targets: session (httperf resumes within a visitor's session) or never (--ssl-no-reuse)."""

    def check(self) -> None:
        if self.tls_resume not in ("session", "never"):
            raise UsageError(f"unknown --tls-resume {self.tls_resume!r}", hint="choose session or never")
        if not 0 < self.duration_s <= 600:
            raise UsageError("--duration must be between 0 and 600 seconds")
        if self.warmup_s is not None and not 0 <= self.warmup_s <= 120:
            raise UsageError("--warmup must be between 0 and 120 seconds", hint="leave it out to warm up until the pool is steady")
        if self.max_probes < 1 or self.first_max_probes < 1:
            raise UsageError("--max-probes must be at least 1")
        if not 0 < self.start_rate <= self.max_rate:
            raise UsageError("need 0 < --start-rate <= --max-rate")

    @property
    def sample_interval(self) -> float:
        return self.interval or (1.0 if self.duration_s >= 10 else max(0.25, self.duration_s / 6))
