"""The clients' round-trip time (`--rtt`): what a distant visitor waits that loopback hides.

On loopback a round trip costs nothing, so a trial's reply times are the
server's alone. A visitor 50 ms away waits, before each reply, one round
trip per request and, before a connection's first request, one for TCP and
the TLS handshake's own: two for a full TLS 1.2 handshake, one for a
resumed one, one for TLS 1.3 either way (without 0-RTT data). Where the
link can delay packets (netem on the isolated sandbox's link) those waits
are measured; where it cannot they are counted from the trial's own
figures and added, and the server is shown the idle time such a visitor
leaves it: every think time lengthened by the round trip (the reply takes
half of it to reach the visitor, the next request the other half to come
back), so a kept-alive connection holds its worker as long as it would.

Everything here is arithmetic over counts, with no I/O: the trial runner
and the report call it, the unit tests check it by hand.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

from advisor.errors import UsageError

# How the round trips reach a figure.
RTT_NONE = ""
RTT_ADDED = "added"  # counted from the trial's figures and added to the measured reply time
RTT_ON_LINK = "netem"  # the link delays packets: the waits are in httperf's own times

MAX_RTT_MS = 10_000.0


def check_rtt(rtt_ms: float | None) -> float:
    """The --rtt value, checked: 0 <= ms <= 10 s (0 when not given)."""
    if rtt_ms is None:
        return 0.0
    if rtt_ms != rtt_ms or rtt_ms < 0:  # NaN or negative
        raise UsageError(f"--rtt {rtt_ms:g} is not a round-trip time",
                         hint="give the clients' round trip in milliseconds, 0 or more, e.g. --rtt 50")
    if rtt_ms > MAX_RTT_MS:
        raise UsageError(f"--rtt {rtt_ms:g} is over 10 s", hint="a round trip is tens or hundreds of milliseconds")
    return float(rtt_ms)


def refuse_rtt_with_wan_delay(rtt_ms: float, wan_delay_ms: float) -> None:
    """--rtt and a --wan-delay that already delays the link would count the distance twice."""
    if rtt_ms > 0 and wan_delay_ms > 0:
        raise UsageError(f"--rtt {rtt_ms:g} and --wan-delay {wan_delay_ms:g} ms both set the clients' distance",
                         hint="give one: --rtt (delayed on the link where netem exists, added where not) "
                              "or --wan-delay alone")


def handshake_round_trips(version: str | None) -> tuple[int, int]:
    """(full, resumed) handshake round trips for a TLS version ("TLSv1.3", "1.2"...).

    TLS 1.3: one round trip for a full handshake and one for a resumed one
    (no 0-RTT early data). TLS 1.2 and earlier: two for a full handshake,
    one for an abbreviated (resumed) one. No version (plain HTTP): none.
    """
    if not version:
        return 0, 0
    text = str(version).lower().replace("tlsv", "").replace("tls", "").strip()
    if text.startswith("1.3") or text == "13":
        return 1, 1
    return 2, 1


@dataclass(frozen=True)
class RoundTrips:
    """The round trips a trial's counts imply, by cause."""

    tcp: int
    tls_full: int
    tls_resumed: int
    requests: int

    @property
    def total(self) -> int:
        return self.tcp + self.tls_full + self.tls_resumed + self.requests

    @property
    def connection_setup(self) -> int:
        """Those before a connection's first request: TCP and TLS."""
        return self.tcp + self.tls_full + self.tls_resumed


def count_round_trips(connections: int, requests: int, full_handshakes: int = 0, resumed_handshakes: int = 0,
                      tls_version: str | None = None) -> RoundTrips:
    """One round trip per connection (TCP's SYN and SYN-ACK), per request
    (the request and its reply), and the handshake's by version."""
    for name, value in (("connections", connections), ("requests", requests),
                        ("full handshakes", full_handshakes), ("resumed handshakes", resumed_handshakes)):
        if value < 0:
            raise ValueError(f"{name} cannot be negative: {value}")
    full_rt, resumed_rt = handshake_round_trips(tls_version) if (full_handshakes or resumed_handshakes) else (0, 0)
    if (full_handshakes or resumed_handshakes) and not tls_version:
        full_rt, resumed_rt = handshake_round_trips("1.2")  # handshakes counted, version unknown: the costlier
    return RoundTrips(tcp=int(connections), tls_full=int(full_handshakes) * full_rt,
                      tls_resumed=int(resumed_handshakes) * resumed_rt, requests=int(requests))


@dataclass(frozen=True)
class ClientTime:
    """The reply time a visitor `rtt_ms` away perceives, in its measured and added parts."""

    rtt_ms: float
    how: str
    """RTT_ADDED, RTT_ON_LINK or RTT_NONE."""
    measured_ms: float
    """httperf's mean reply time (request sent to reply received), plus on a
    delaying link its connection set-up spread over the replies."""
    added_ms: float
    """The round trips counted and added, per reply (0 on a delaying link)."""
    round_trips: RoundTrips | None
    replies: int
    tls_version: str | None = None

    @property
    def mean_ms(self) -> float:
        return self.measured_ms + self.added_ms

    def parts_text(self) -> str:
        """`62.3 ms (measured 0.8 + added 61.5: 1 TCP, 2 TLS, 1 request round trips per ...)`."""
        if self.how == RTT_ON_LINK:
            return (f"{self.mean_ms:.1f} ms (measured over a link delayed {self.rtt_ms:g} ms by netem: "
                    "reply time plus connection set-up per reply)")
        if self.how != RTT_ADDED or self.round_trips is None:
            return f"{self.mean_ms:.1f} ms (measured)"
        rt = self.round_trips
        per = max(1, self.replies)
        parts = [f"{rt.tcp / per:.2g} TCP"]
        if rt.tls_full or rt.tls_resumed:
            parts.append(f"{(rt.tls_full + rt.tls_resumed) / per:.2g} TLS ({self.tls_version or 'version unknown'})")
        parts.append(f"{rt.requests / per:.2g} request")
        return (f"{self.mean_ms:.1f} ms (measured {self.measured_ms:.1f} + added {self.added_ms:.1f} for "
                f"{' + '.join(parts)} round trips of {self.rtt_ms:g} ms per reply)")

    def to_dict(self) -> dict[str, Any]:
        return {"rtt_ms": self.rtt_ms, "how": self.how or "none", "mean_ms": round(self.mean_ms, 3),
                "measured_ms": round(self.measured_ms, 3), "added_ms": round(self.added_ms, 3),
                "measured": _measured_parts(self.how), "added": _added_parts(self),
                "round_trips": asdict(self.round_trips) | {"total": self.round_trips.total}
                if self.round_trips is not None else None,
                "replies": self.replies, "tls_version": self.tls_version}


def _measured_parts(how: str) -> list[str]:
    parts = ["server time and transfer (httperf's reply time)"]
    if how == RTT_ON_LINK:
        parts += ["request round trips", "connection set-up: TCP (and TLS) round trips (httperf's connect time)"]
    return parts


def _added_parts(time: ClientTime) -> list[str]:
    if time.how != RTT_ADDED:
        return []
    parts = ["one TCP round trip per connection"]
    if time.round_trips is not None and (time.round_trips.tls_full or time.round_trips.tls_resumed):
        parts.append("TLS handshake round trips (full and resumed, by version)")
    parts.append("one round trip per request")
    return parts


def client_time(rtt_ms: float, how: str, *, reply_ms: float, replies: int, connections: int, requests: int,
                connect_ms: float | None = None, tls: Mapping[str, Any] | None = None) -> ClientTime:
    """The client-perceived mean reply time of one trial.

    `how` RTT_ADDED: httperf's reply time plus `rtt_ms` times the round
    trips the counts imply, spread over the replies (the set-up round trips
    fall on a connection's first reply; the mean is over all of them).
    RTT_ON_LINK: the link delayed every packet, so httperf's reply time holds
    each request's round trip; its connect time (per connection) holds the
    set-up's, spread the same way. RTT_NONE: the reply time as measured.
    """
    full, resumed, version = tls_counts(tls)
    if how == RTT_ON_LINK:
        setup = (connect_ms or 0.0) * connections / replies if replies else 0.0
        return ClientTime(rtt_ms, how, reply_ms + setup, 0.0, None, replies, version)
    if how != RTT_ADDED:
        return ClientTime(rtt_ms, RTT_NONE, reply_ms, 0.0, None, replies, version)
    trips = count_round_trips(connections, requests, full, resumed, version)
    # Requests that got no reply waited no round trip the mean covers: the
    # added share is per request sent, and so is the mean.
    per = trips.total / requests if requests else 0.0
    return ClientTime(rtt_ms, how, reply_ms, rtt_ms * per, trips, replies, version)


def tls_counts(tls: Any) -> tuple[int, int, str | None]:
    """(full handshakes, resumed handshakes, version) from a trial's "tls"
    object (a mapping or an object with those attributes); None, or no
    object: plain HTTP, (0, 0, None)."""
    if tls is None:
        return 0, 0, None

    def read(name: str) -> Any:
        return tls.get(name) if isinstance(tls, Mapping) else getattr(tls, name, None)

    full, resumed, version = read("full_handshakes"), read("resumed_handshakes"), read("version")
    return int(full or 0), int(resumed or 0), (str(version) if version else None)


def client_time_of_trial(document: Mapping[str, Any]) -> ClientTime:
    """The client-perceived time of a trial's JSON (bench --format json, one
    trial): its inputs' rtt_ms and rtt_how, httperf's counts, and its "tls"
    object when there is one."""
    inputs = document.get("inputs") or {}
    h = document.get("httperf") or {}
    return client_time(float(inputs.get("rtt_ms") or 0.0), str(inputs.get("rtt_how") or RTT_NONE),
                       reply_ms=float(h.get("reply_response_ms", 0.0)) + float(h.get("reply_transfer_ms", 0.0)),
                       replies=int(h.get("replies", 0)), connections=int(h.get("connections", 0)),
                       requests=int(h.get("requests", 0)), connect_ms=h.get("connect_time_ms"),
                       tls=document.get("tls"))


# -- the idle times a distant visitor leaves the server -----------------------------

def lengthened_think(think_s: float, rtt_ms: float) -> float:
    """A think time as the server sees it from a visitor `rtt_ms` away."""
    return think_s + rtt_ms / 1000.0


def lengthened_session_log(path: str, rtt_ms: float) -> str:
    """A copy of an httperf --wsesslog file with every `think=X` lengthened by
    the round trip, written once beside it (the name carries the RTT)."""
    import os

    source = Path(path)
    target = source.with_name(f"{source.stem}.rtt{rtt_ms:g}ms{source.suffix}")
    if target.exists() and target.stat().st_mtime >= source.stat().st_mtime:
        return str(target)
    out: list[str] = []
    with open(source, encoding="utf-8", errors="surrogateescape") as handle:
        for line in handle:
            words = line.rstrip("\n").split(" ")
            for index, word in enumerate(words):
                if index and word.startswith("think="):
                    words[index] = f"think={lengthened_think(float(word[6:]), rtt_ms):g}"
            out.append(" ".join(words))
    tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
    tmp.write_text("\n".join(out) + "\n", encoding="utf-8", errors="surrogateescape")
    os.replace(tmp, target)
    return str(target)
