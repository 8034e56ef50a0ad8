"""A generated access log with a known arrival process and known hold times.

Poisson arrivals at `rate` per second with one burst (`burst_rate` for
`burst_seconds` starting at `burst_at`), each request holding its worker a
lognormal time of mean `mean_hold` and coefficient of variation `cv`,
written in a LogFormat with %D (microseconds). Seeded. The truth is kept per
second, computed from the exact (fractional) arrival times, for tests to
compare the command's figures with: what `capacity --log` must recover.
"""

from __future__ import annotations

import gzip
import math
import random
import time
from dataclasses import dataclass, field

FORMAT = '%h %l %u %t "%r" %>s %b %D'
START = 1_767_225_600  # 2026-01-01 00:00:00 UTC


@dataclass
class Truth:
    requests: int = 0
    arrivals: dict[int, int] = field(default_factory=dict)
    busy: dict[int, float] = field(default_factory=dict)
    hold_sum: float = 0.0
    holds: list[float] = field(default_factory=list)

    def add(self, when: float, hold: float) -> None:
        self.requests += 1
        second = int(when)
        self.arrivals[second] = self.arrivals.get(second, 0) + 1
        self.hold_sum += hold
        if len(self.holds) < 200_000:
            self.holds.append(hold)
        end = when + hold
        t = when
        while t < end:
            cut = min(end, math.floor(t) + 1)
            self.busy[int(t)] = self.busy.get(int(t), 0.0) + cut - t
            t = cut


def _clf(epoch: int) -> str:
    return time.strftime("[%d/%b/%Y:%H:%M:%S +0000]", time.gmtime(epoch))


def lines(seconds: int, rate: float, *, mean_hold: float = 0.05, cv: float = 1.0, burst_at: int | None = None,
          burst_seconds: int = 0, burst_rate: float = 0.0, seed: int = 1, truth: Truth | None = None,
          start: int = START):
    """The log's lines, in arrival order (a few ms apart lines stay in order)."""
    rng = random.Random(seed)
    sigma = math.sqrt(math.log(1 + cv * cv))
    mu = math.log(mean_hold) - sigma * sigma / 2
    t = 0.0
    stamp_cache = (-1, "")
    while True:
        in_burst = burst_at is not None and burst_at <= t < burst_at + burst_seconds
        current = burst_rate if in_burst else rate
        t += rng.expovariate(current)
        if t >= seconds:
            return
        hold = rng.lognormvariate(mu, sigma)
        micros = max(int(round(hold * 1e6)), 1)
        hold = micros / 1e6
        if truth is not None:
            truth.add(start + t, hold)
        second = start + int(t)
        if stamp_cache[0] != second:
            stamp_cache = (second, _clf(second))
        yield f'10.0.{rng.randrange(256)}.{rng.randrange(1, 255)} - - {stamp_cache[1]} "GET /page/{rng.randrange(100)} HTTP/1.1" 200 {rng.randrange(200, 9000)} {micros}\n'


def write_log(path, seconds: int, rate: float, *, gz: bool = False, **kwargs) -> None:
    opener = gzip.open if gz else open
    with opener(path, "wt", encoding="utf-8") as handle:
        for line in lines(seconds, rate, **kwargs):
            handle.write(line)


def split_rotated(log, directory) -> None:
    """The lines of `log` as a rotated set in `directory`: access.log.2.gz
    (oldest, gzipped), access.log.1, access.log (newest), a third each."""
    from pathlib import Path

    lines = Path(log).read_text().splitlines(keepends=True)
    third = len(lines) // 3
    directory = Path(directory)
    with gzip.open(directory / "access.log.2.gz", "wt") as handle:
        handle.writelines(lines[:third])
    (directory / "access.log.1").write_text("".join(lines[third:2 * third]))
    (directory / "access.log").write_text("".join(lines[2 * third:]))
