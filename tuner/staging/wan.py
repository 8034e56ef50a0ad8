"""Wide-area conditions on the isolated sandbox's link (`--wan-*`).

netem on the clients' end of the link delays (with jitter) and drops what
the clients send, as a far network would; tbf on both ends holds the link
to a rate. Only the link `staging up --isolated` made is ever touched:
the qdiscs go when the command ends, and with the namespace on `staging
down`. A kernel without netem (sch_netem) is one line: the rate alone
needs only tbf.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from advisor.errors import AdvisorError, UsageError
from advisor.tuner.staging.isolated import IsolatedLink

_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s)?\s*$")
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(bit|kbit|mbit|gbit|bps|kbps|mbps|gbps)\s*$", re.I)
_RATE_BITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9}


class NoNetem(AdvisorError):
    """The kernel has no netem qdisc: the link cannot delay or drop packets."""


@dataclass(frozen=True)
class WanSpec:
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    rate_bits: float | None = None

    @classmethod
    def parse(cls, delay: str | None, jitter: str | None, loss: str | None, rate: str | None) -> "WanSpec | None":
        if delay is None and jitter is None and loss is None and rate is None:
            return None
        spec = cls(delay_ms=_time_ms(delay, "--wan-delay"), jitter_ms=_time_ms(jitter, "--wan-jitter"),
                   loss_pct=_percent(loss), rate_bits=_rate(rate))
        if spec.jitter_ms and not spec.delay_ms:
            raise UsageError("--wan-jitter varies a delay", hint="give --wan-delay too")
        if spec.jitter_ms > spec.delay_ms:
            raise UsageError(f"--wan-jitter {jitter} is more than --wan-delay {delay}",
                             hint="keep the jitter under the delay, or packets would be sent back in time")
        return spec

    @property
    def needs_netem(self) -> bool:
        return bool(self.delay_ms or self.loss_pct)

    def describe(self) -> str:
        parts = []
        if self.delay_ms:
            parts.append(f"delay {self.delay_ms:g} ms" + (f" ± {self.jitter_ms:g} ms" if self.jitter_ms else "")
                         + " on what the clients send")
        if self.loss_pct:
            parts.append(f"loss {self.loss_pct:g} % of what the clients send")
        if self.rate_bits:
            parts.append(f"rate {_rate_text(self.rate_bits)} each way")
        return ", ".join(parts)


def _time_ms(text: str | None, option: str) -> float:
    if text is None:
        return 0.0
    match = _TIME.match(text)
    if not match:
        raise UsageError(f"{option} {text!r} is not a time", hint="write it like 40ms, 0.2s or 500us")
    value, unit = float(match.group(1)), match.group(2) or "ms"
    ms = value * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    if ms > 10_000:
        raise UsageError(f"{option} {text} is over 10 s", hint="a WAN delay is tens or hundreds of milliseconds")
    return ms


def _percent(text: str | None) -> float:
    if text is None:
        return 0.0
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        raise UsageError(f"--wan-loss {text!r} is not a percentage", hint="write it like 0.1%") from None
    if not 0 <= value < 100:
        raise UsageError(f"--wan-loss {text} is outside 0..100 %")
    return value


def _rate(text: str | None) -> float | None:
    if text is None:
        return None
    match = _RATE.match(text)
    if not match:
        raise UsageError(f"--wan-rate {text!r} is not a rate", hint="write it like 100mbit, 512kbit or 10mbps (bytes)")
    bits = float(match.group(1)) * _RATE_BITS[match.group(2).lower()]
    if bits < 8_000:
        raise UsageError(f"--wan-rate {text} is under 8 kbit/s")
    return bits


def _rate_text(bits: float) -> str:
    for unit, size in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if bits >= size:
            return f"{bits / size:g} {unit}/s"
    return f"{bits:g} bit/s"


def _tc(link: IsolatedLink, side: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    device = link.client_if if side == "client" else link.server_if
    prefix = [] if side == "client" else ["ip", "netns", "exec", link.netns]
    done = subprocess.run([*prefix, "tc", "qdisc", *args[:1], "dev", device, *args[1:]], capture_output=True,
                          text=True, timeout=30)
    if check and done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        text = said[-1] if said else f"exit {done.returncode}"
        if "qdisc kind is unknown" in text and "netem" in args:
            raise NoNetem(f"this kernel has no netem qdisc (sch_netem), so it cannot delay or drop packets "
                               f"(tc: {text})", hint="load sch_netem (modprobe sch_netem) or use a kernel built with "
                                                     "it; --wan-rate alone needs only tbf")
        raise AdvisorError(f"tc qdisc {args[0]} on {device} failed: {text}",
                           hint="--wan-* needs root and the kernel's netem and tbf qdiscs")
    return done


def _tbf(bits: float) -> list[str]:
    # A burst of at least one full-size packet and 10 ms at the rate, and a
    # queue of 50 ms at the rate before tbf drops.
    burst = max(3000, int(bits / 8 / 100))
    return ["tbf", "rate", f"{int(bits)}bit", "burst", str(burst), "latency", "50ms"]


def apply(link: IsolatedLink, spec: WanSpec) -> None:
    """Put `spec` on the link, replacing whatever the tool put there before."""
    clear(link)
    try:
        if spec.needs_netem:
            netem = ["netem"]
            if spec.delay_ms:
                netem += ["delay", f"{spec.delay_ms:g}ms"] + ([f"{spec.jitter_ms:g}ms"] if spec.jitter_ms else [])
            if spec.loss_pct:
                netem += ["loss", f"{spec.loss_pct:g}%"]
            _tc(link, "client", "add", "root", "handle", "1:", *netem)
            if spec.rate_bits:
                _tc(link, "client", "add", "parent", "1:1", "handle", "10:", *_tbf(spec.rate_bits))
        elif spec.rate_bits:
            _tc(link, "client", "add", "root", "handle", "1:", *_tbf(spec.rate_bits))
        if spec.rate_bits:
            _tc(link, "server", "add", "root", "handle", "1:", *_tbf(spec.rate_bits))
    except BaseException:
        clear(link)
        raise


def set_for_run(link: IsolatedLink | None, spec: WanSpec | None) -> str | None:
    """Before a command's first trial: `spec` on the tool's link, or none
    (taking off what a run killed with -9 left). The line to print, if any."""
    if link is None:
        return None
    if spec is None:
        clear(link)
        return None
    apply(link, spec)
    return f"wan: {spec.describe()} (on {link.client_if}, the clients' end, and {link.server_if})"


def clear(link: IsolatedLink) -> None:
    """Back to the kernel's default qdisc on both ends (quiet when there was none)."""
    for side in ("client", "server"):
        _tc(link, side, "del", "root", check=False)


def qdiscs(link: IsolatedLink) -> dict[str, str]:
    """What `tc qdisc show` says of each end."""
    return {side: _tc(link, side, "show", check=False).stdout.strip() for side in ("client", "server")}
