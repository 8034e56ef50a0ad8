"""HTTPS targets: what the server negotiates, what a handshake costs it, and how many it made.

Three readings, all taken on the server's side or from one client connection:

- `probe`: one TLS connection, as httperf's OpenSSL would make it: the
  negotiated version and the certificate's key type. A port that answers
  plain HTTP is refused in one line here, before any load.
- `calibrate`: the server's CPU for a batch of bare connections, of full
  handshakes and of resumed ones (each closed at once, no request): the
  CPU one handshake costs on this server, measured rather than taken from
  `openssl speed` (which counts the signature and the key exchange alone,
  about a tenth of what mod_ssl spends on a handshake here).
- `cache_counters` / `count_handshakes`: mod_ssl's session cache counters
  in mod_status `?auto` before and after a trial's window. With
  `SSLSessionTickets off` (Debian's ssl.conf, the sandbox) every resumed
  handshake is a cache hit (CacheRetrieveHitCount), and every full
  handshake stores its session: once in TLS 1.2, once per ticket OpenSSL
  sends in TLS 1.3 (two after a full handshake, one after a resumed one).
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import asdict, dataclass
from typing import Callable

from advisor.errors import AdvisorError

# OpenSSL's TLS 1.3 server sends this many tickets (stateful sessions, each
# stored in the cache) after a full handshake, and one after a resumed one
# (SSL_CTX_set_num_tickets, default 2).
TLS13_TICKETS_FULL = 2
TLS13_TICKETS_RESUMED = 1
CALIBRATION_CONNECTIONS = 60


@dataclass
class TlsInfo:
    """What one connection negotiated."""

    version: str  # "TLSv1.3"
    cipher: str
    key_type: str | None  # "ECDSA P-256", "RSA-2048"


def _context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # a staging server's self-signed certificate
    return context


class TlsProbeTimeout(AdvisorError):
    """The connection was made but the handshake did not finish in time: a
    server alive but still busy (its workers serving a trial's backlog)."""


def probe(host: str, port: int, url: str, timeout: float = 3.0) -> TlsInfo:
    """One TLS connection to host:port; a one-line error when it is not TLS."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw:
            with _context().wrap_socket(raw, server_hostname=host) as conn:
                version = conn.version() or "?"
                cipher = (conn.cipher() or ("?",))[0]
                der = conn.getpeercert(binary_form=True)
    except ssl.SSLError as exc:
        text = str(exc)
        if any(mark in text for mark in ("WRONG_VERSION_NUMBER", "wrong version number", "record layer failure",
                                         "packet length too long", "http request")):
            raise AdvisorError(f"{url}: the server at {host}:{port} answers plain HTTP, not TLS",
                               hint="use an http:// URL for it, or serve HTTPS there: staging up --tls") from None
        raise AdvisorError(f"{url}: no TLS handshake with {host}:{port}: {exc.reason or text}",
                           hint="check that the server speaks TLS 1.2 or 1.3 on that port") from None
    except TimeoutError as exc:
        # Not "cannot connect": a stopped server refuses at once, while this
        # one is busy (its accept queue full), hung, or out of reach.
        raise TlsProbeTimeout(f"{url}: no TLS handshake with {host}:{port} within {timeout:g} s",
                              hint="the server is overloaded or hung (check its error log), or the "
                                   "address is out of reach") from None
    except OSError as exc:
        raise AdvisorError(f"{url}: cannot connect to {host}:{port}: {exc.strerror or exc}",
                           hint="start the server or check the URL") from None
    return TlsInfo(version=version, cipher=cipher, key_type=key_type_of(der))


def key_type_of(der: bytes | None) -> str | None:
    """The certificate's key type, read with the openssl command (None if it cannot tell)."""
    import shutil
    import subprocess

    binary = shutil.which("openssl")
    if not der or binary is None:
        return None
    try:
        out = subprocess.run([binary, "x509", "-inform", "DER", "-noout", "-text"], input=der,
                             capture_output=True, timeout=10).stdout.decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        if "Public-Key:" in line and "rsaEncryption" in out:
            return "RSA-" + line.split("(")[-1].split()[0]
    if "id-ecPublicKey" in out:
        curve = "P-256" if ("prime256v1" in out or "P-256" in out) else "P-384" if "secp384r1" in out else "EC"
        return f"ECDSA {curve}"
    if "ED25519" in out.upper():
        return "Ed25519"
    return None


def plain_server(host: str, port: int, url: str, timeout: float = 3.0) -> None:
    """Raise a one-line error when host:port speaks TLS: an http:// URL cannot load it."""
    try:
        probe(host, port, url, timeout)
    except AdvisorError:
        return
    raise AdvisorError(f"{url}: the server at {host}:{port} speaks TLS, not plain HTTP",
                       hint="use an https:// URL for it")


# -- the server's cost of a handshake ----------------------------------------

@dataclass
class HandshakeCost:
    """Server CPU (ms) per full and per resumed handshake, a bare connection's taken off."""

    full_ms: float | None
    resumed_ms: float | None
    bare_ms: float | None  # a TCP connection opened and closed with no TLS
    connections: int


def calibrate(host: str, port: int, server_cpu_s: Callable[[], float | None],
              connections: int = CALIBRATION_CONNECTIONS, timeout: float = 3.0) -> HandshakeCost | None:
    """The server's CPU for `connections` bare connections, full handshakes and
    resumed ones, one at a time; None when its CPU cannot be read."""
    context = _context()
    session = _session(host, port, context, timeout)

    def batch(kind: str) -> float | None:
        before = server_cpu_s()
        for _ in range(connections):
            try:
                with socket.create_connection((host, port), timeout=timeout) as raw:
                    if kind == "bare":
                        continue
                    reuse = session if kind == "resumed" else None
                    with context.wrap_socket(raw, server_hostname=host, session=reuse):
                        pass
            except OSError:
                return None
        time.sleep(0.05)  # the workers finish their closes
        after = server_cpu_s()
        if before is None or after is None:
            return None
        return max(0.0, (after - before) * 1000.0 / connections)

    bare = batch("bare")
    full = batch("full")
    resumed = batch("resumed") if session is not None else None
    if bare is None or full is None:
        return None
    return HandshakeCost(full_ms=round(max(0.0, full - bare), 4),
                         resumed_ms=round(max(0.0, resumed - bare), 4) if resumed is not None else None,
                         bare_ms=round(bare, 4), connections=connections)


def _session(host: str, port: int, context: ssl.SSLContext, timeout: float):
    """A session to resume: TLS 1.3 sends its tickets after the handshake, so one
    request is read to the end first. None when the server gives none."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw:
            with context.wrap_socket(raw, server_hostname=host) as conn:
                conn.sendall(f"HEAD / HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
                while conn.recv(4096):
                    pass
                return conn.session
    except OSError:
        return None


# -- handshakes counted by the server ---------------------------------------

CACHE_FIELDS = ("CacheStoreCount", "CacheRetrieveHitCount", "CacheRetrieveMissCount")


def cache_counters(fields: dict[str, str] | None) -> dict[str, int] | None:
    """mod_ssl's session cache counters from mod_status `?auto` fields, or None."""
    if not fields or "CacheStoreCount" not in fields:
        return None
    try:
        return {name: int(fields.get(name, "0")) for name in CACHE_FIELDS}
    except ValueError:
        return None


def count_handshakes(before: dict[str, int], after: dict[str, int], version: str | None) -> tuple[int, int]:
    """(full, resumed) handshakes between two readings of the cache counters."""
    resumed = max(0, after["CacheRetrieveHitCount"] - before["CacheRetrieveHitCount"])
    stores = max(0, after["CacheStoreCount"] - before["CacheStoreCount"])
    if version == "TLSv1.3":
        full = max(0, stores - TLS13_TICKETS_RESUMED * resumed) // TLS13_TICKETS_FULL
    else:
        full = stores
    return full, resumed


@dataclass
class TlsTrial:
    """A trial's TLS figures: what was negotiated, what the server counted, what it cost."""

    version: str | None
    key_type: str | None
    cipher: str | None
    resume: str  # "session" (httperf resumes within a session) or "never" (--ssl-no-reuse)
    full_handshakes: int | None
    resumed_handshakes: int | None
    window_s: float
    counted_by: str  # how the server's counts were read
    server_cpu_s: float | None  # the server's CPU over the window
    replies: int
    cost: HandshakeCost | None

    @property
    def full_per_s(self) -> float | None:
        return self.full_handshakes / self.window_s if self.full_handshakes is not None and self.window_s > 0 else None

    @property
    def resumed_per_s(self) -> float | None:
        return (self.resumed_handshakes / self.window_s
                if self.resumed_handshakes is not None and self.window_s > 0 else None)

    @property
    def cpu_per_reply_ms(self) -> float | None:
        if self.server_cpu_s is None or self.replies <= 0:
            return None
        return 1000.0 * self.server_cpu_s / self.replies

    @property
    def handshake_cpu_s(self) -> float | None:
        """The server CPU the window's handshakes took, at the calibrated cost."""
        if self.cost is None or self.cost.full_ms is None or self.full_handshakes is None:
            return None
        resumed = (self.resumed_handshakes or 0) * (self.cost.resumed_ms or 0.0)
        return (self.full_handshakes * self.cost.full_ms + resumed) / 1000.0

    @property
    def handshake_share(self) -> float | None:
        """The share of the server's CPU that went to handshakes (0-1)."""
        spent = self.handshake_cpu_s
        if spent is None or not self.server_cpu_s:
            return None
        return min(1.0, spent / self.server_cpu_s)

    def to_dict(self) -> dict[str, object]:
        def rounded(value, digits=3):
            return round(value, digits) if value is not None else None

        return {
            "version": self.version, "key_type": self.key_type, "cipher": self.cipher, "resume": self.resume,
            "full_handshakes": self.full_handshakes, "resumed_handshakes": self.resumed_handshakes,
            "full_handshakes_per_s": rounded(self.full_per_s, 1),
            "resumed_handshakes_per_s": rounded(self.resumed_per_s, 1),
            "window_s": rounded(self.window_s), "counted_by": self.counted_by,
            "server_cpu_s": rounded(self.server_cpu_s, 4),
            "server_cpu_per_reply_ms": rounded(self.cpu_per_reply_ms, 4),
            "server_cpu_per_full_handshake_ms": self.cost.full_ms if self.cost else None,
            "server_cpu_per_resumed_handshake_ms": self.cost.resumed_ms if self.cost else None,
            "handshake_cpu_share": rounded(self.handshake_share),
            "calibration": asdict(self.cost) if self.cost else None,
        }
