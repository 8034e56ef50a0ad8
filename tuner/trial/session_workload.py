"""What httperf sends in every trial of a tuning session: the session's
workloads (a browser-like session over Almeida's file set, or any of bench's
workloads with calls per connection or think time between a session's
requests), named and described for the plan and the journal."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import UsageError

# A browser-like session over Almeida et al.'s (1996) file set: five requests
# with 0.2 s of think time between them, so that keep-alive (held connections
# against reconnects), KeepAliveTimeout (shorter or longer than the think
# time), the pool size and child recycling all bear on the same load.
SESSION_WORKLOADS: dict[str, tuple[str, int, float]] = {
    "almeida-sessions": ("almeida", 5, 0.2),
    # Visits of three pages and their assets, a second apart
    # (advisor.tuner.load.browser_pages): the workload of --protocol h2 and mix.
    "browser": ("browser", 3, 1.0),
}
DEFAULT_WORKLOAD = "almeida-sessions"


def workload_names() -> tuple[str, ...]:
    from advisor.tuner.load.workload import WORKLOAD_NAMES

    return tuple(SESSION_WORKLOADS) + tuple(name for name in WORKLOAD_NAMES if name not in SESSION_WORKLOADS)


@dataclass(frozen=True)
class SessionWorkload:
    """What httperf sends in every trial of a session."""

    name: str
    uri: str
    uri_list: str | None
    calls: int
    """Requests per session (with think time) or per connection (without)."""
    think_s: float | None
    """Seconds between a session's requests; None: no sessions."""
    description: str
    session_log: str | None = None
    """A replayed access log's --wsesslog file: calls and think_s are then its means."""

    @property
    def wsess(self) -> tuple[int, int, float] | None:
        return (1, self.calls, self.think_s) if self.think_s is not None else None

    @property
    def num_calls(self) -> int:
        return 1 if self.think_s is not None else self.calls

    @property
    def unit(self) -> str:
        return "sessions/s" if self.think_s is not None else "connections/s"

    def identity(self) -> dict[str, Any]:
        """What makes two sessions' trials comparable (the journal's check)."""
        return {"name": self.name, "uri": self.uri,
                "uri_list": os.path.basename(self.uri_list) if self.uri_list else None,
                "calls": self.calls, "think_s": self.think_s}

    def describe(self) -> str:
        if self.name == "browser" and self.think_s is not None:
            shape = f"visits of {self.calls} pages and their assets, {self.think_s:g} s think time between pages"
        elif self.think_s is not None:
            shape = f"sessions of {self.calls} requests, {self.think_s:g} s think time between them"
        elif self.calls > 1:
            shape = f"{self.calls} requests per persistent connection"
        else:
            shape = "one request per connection"
        return f"{self.name}: {self.description}; {shape}"


def make_session_workload(name: str, work_dir: Path | None, *, calls: int | None = None, think_s: float | None = None,
                          uri: str | None = None, cgi_n: int = 100000, sleep_ms: int = 1000) -> SessionWorkload:
    """A session workload by name: "almeida-sessions" or any of bench's workloads
    (with `calls` per connection, or sessions when `think_s` is given)."""
    from advisor.tuner.load.workload import make_workload

    base_name, default_calls, default_think = name, 1, None
    if name in SESSION_WORKLOADS:
        base_name, default_calls, default_think = SESSION_WORKLOADS[name]
    elif name not in workload_names():
        raise UsageError(f"unknown workload {name!r}", hint=f"choose one of {', '.join(workload_names())}")
    if base_name in ("almeida", "browser") and work_dir is None:
        raise UsageError(f"the {name} workload requests the sandbox's Almeida file set",
                         hint="tune the sandbox (--workdir), or give --workload url (the path of --url) or 1k")
    work = make_workload(base_name, work_dir, cgi_n=cgi_n, sleep_ms=sleep_ms, uri=uri)
    calls = calls if calls is not None else default_calls
    think = think_s if think_s is not None else default_think
    if calls < 1:
        raise UsageError("--num-calls must be at least 1")
    if think is not None and not 0 <= think <= 60:
        raise UsageError("--think must be between 0 and 60 seconds")
    description = work.description or work.name
    return SessionWorkload(name, work.uri, work.uri_list, calls, think, description)
