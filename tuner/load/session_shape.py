"""What trials need to know about an httperf session file: each session's
requests and length (the sum of its think times), read once per file version."""

from __future__ import annotations

import math
import os
from array import array
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class SessionShape:
    """Requests and length (sum of think times) of every session, in file order."""

    requests: array
    spans: array

    def requests_for(self, sessions: int) -> int:
        """Requests httperf sends for `sessions` sessions (it cycles through the file)."""
        count = len(self.requests)
        if not count:
            return 0
        full, rest = divmod(sessions, count)
        return full * sum(self.requests) + sum(self.requests[:rest])

    def tail_s(self, sessions: int, rate: float) -> float:
        """How long the run goes on after its last session starts (think times only)."""
        count = len(self.spans)
        if not count or sessions <= 0 or rate <= 0:
            return 0.0
        last_start = (sessions - 1) / rate
        reach = int(math.ceil(max(self.spans) * rate)) + 1
        end = 0.0
        for index in range(max(0, sessions - reach), sessions):
            end = max(end, index / rate + self.spans[index % count])
        return max(0.0, end - last_start)

    @property
    def longest_s(self) -> float:
        return max(self.spans) if self.spans else 0.0

    @property
    def mean_s(self) -> float:
        return sum(self.spans) / len(self.spans) if self.spans else 0.0


def session_shape(path: str) -> SessionShape:
    stat = os.stat(path)
    return _session_shape(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _session_shape(path: str, _mtime: int, _size: int) -> SessionShape:
    requests, spans = array("I"), array("d")
    count, span = 0, 0.0
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        for line in handle:
            if not line.strip():
                if count:
                    requests.append(count)
                    spans.append(span)
                count, span = 0, 0.0
                continue
            if line.startswith("#"):
                continue
            count += 1
            for word in line.split()[1:]:
                if word.startswith("think="):
                    span += float(word[6:])
    if count:
        requests.append(count)
        spans.append(span)
    return SessionShape(requests, spans)
