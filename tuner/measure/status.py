"""HTTP to the staging server: health checks and mod_status `?auto`.

The lowest layer of the tuner: it imports nothing else of it, so the sandbox,
the targets, the metrics collector and the trials can all use it without
importing each other. `requests` is imported inside the functions: it is slow
to import and the CLI must start fast.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Generic, TypeVar

from advisor.errors import AdvisorError

Reading = TypeVar("Reading")

# Scoreboard keys as mod_status prints them.
SCOREBOARD_KEYS = {
    "_": "waiting", "S": "starting", "R": "reading", "W": "sending", "K": "keepalive",
    "D": "dns", "C": "closing", "L": "logging", "G": "graceful", "I": "idle_cleanup", ".": "open",
}


def staging_verify(url: str) -> bool:
    """Whether to check the server's certificate: never for a staging server.

    The sandbox's certificate is self-signed, made at `staging up`, and a
    staging server is one the admin names; what is checked here is its
    health and its counters, not its identity. The warning urllib3 prints
    for every such request is turned off once.
    """
    if not url.lower().startswith("https:"):
        return True
    import warnings

    warnings.filterwarnings("ignore", message="Unverified HTTPS request")
    return False


def wait_healthy(url: str, timeout: float = 10.0, busy_timeout: float = 0.0) -> int:
    """GET `url` until it answers below 500; raise a one-line error otherwise.
    While the requests time out (a server that accepts but is still busy)
    it keeps trying for `busy_timeout` seconds if that is longer."""
    import requests

    started = time.monotonic()
    deadline, busy_deadline = started + timeout, started + max(timeout, busy_timeout)
    last = "no answer"
    verify = staging_verify(url)
    while True:
        try:
            response = requests.get(url, timeout=min(3.0, max(0.5, timeout)), verify=verify)
            if response.status_code < 500:
                return response.status_code
            last = f"HTTP {response.status_code}"
        except requests.RequestException as exc:
            last = _short_reason(exc)
        if time.monotonic() >= (busy_deadline if last == "timed out" else deadline):
            raise AdvisorError(f"staging server at {url} is not healthy: {last}",
                               hint="start it (apache-advisor staging up) or check --url")
        time.sleep(0.1)


def _short_reason(exc: Exception) -> str:
    text = str(exc)
    for marker in ("Connection refused", "timed out", "Name or service not known", "No route to host",
                   "wrong version number", "Connection reset by peer"):
        if marker in text:
            return marker.lower()
    return type(exc).__name__


@dataclass
class StatusSnapshot:
    """mod_status `?auto`: worker counts and the scoreboard mix."""

    busy: int
    idle: int
    scoreboard: dict[str, int]
    generation: int | None = None
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def slots(self) -> int:
        return sum(self.scoreboard.values())


def parse_status(text: str) -> StatusSnapshot | None:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    if "BusyWorkers" not in fields:
        return None
    board = fields.get("Scoreboard", "")
    counts = {key: board.count(key) for key in SCOREBOARD_KEYS}
    generation = fields.get("ParentServerConfigGeneration")
    return StatusSnapshot(
        busy=int(fields.get("BusyWorkers", 0)), idle=int(fields.get("IdleWorkers", 0)),
        scoreboard=counts, generation=int(generation) if generation and generation.isdigit() else None,
        fields=fields,
    )


def fetch_page(url: str, timeout: float = 1.0, session=None) -> str | None:
    """The body of a 200 answer to GET `url`, or None (no answer, or another status)."""
    import requests

    try:
        response = (session or requests).get(url, timeout=timeout, verify=staging_verify(url))
    except requests.RequestException:
        return None
    return response.text if response.status_code == 200 else None


def fetch_status(url: str, timeout: float = 1.0, session=None) -> StatusSnapshot | None:
    page = fetch_page(url, timeout, session)
    return parse_status(page) if page is not None else None


class PeriodicReader(Generic[Reading]):
    """Calls `read(elapsed seconds)` every `interval` seconds in a thread of
    its own, at most `max_reads` times, and keeps the readings that are not
    None; `stop()` returns them. The trial's other samplers (php-fpm's pool,
    mod_http2's sessions) read beside the collector this way."""

    def __init__(self, name: str, read: Callable[[float], Reading | None], interval: float = 1.0,
                 max_reads: int = 600):
        self.name = name
        self.read = read
        self.interval = interval
        self.max_reads = max_reads
        self.reads = 0  # attempts, answered or not
        self.readings: list[Reading] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set() and self.reads < self.max_reads:
            reading = self.read(time.monotonic() - self._t0)
            self.reads += 1
            if reading is not None:
                self.readings.append(reading)
            self._stop.wait(self.interval)

    def stop(self) -> list[Reading]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        return list(self.readings)
