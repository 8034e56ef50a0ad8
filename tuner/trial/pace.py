"""What a session's measurements cost on this host, measured, for its time estimates.

A fixed guess of a probe's cost was wrong by a factor of two or more from
one host, workload and MPM to the next (the stock session's plan said 14 min
for a session that took 34). So each run of the trial objective is timed,
with the probes its knee search needed, by the kind of run it was; the
session's ETA uses these figures as soon as it has them, and the plan of the
next session on this host, workload and transport starts from the median of
the last sessions' (kept in the cache directory, beside lint's results).
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass, field
from typing import Any, Mapping

# The kinds of runs a session makes: the first knee search (from the start
# rate), a later search trial (from the incumbent's peak), and a replicate
# or ablation run (from the point's own peak, uncapped).
FIRST, SEARCH, OWN = "first", "search", "own"
KINDS = (FIRST, SEARCH, OWN)
PACE_FILE = "tune-pace.json"
# Entries kept in the file (one per host, workload and transport).
KEPT_ENTRIES = 32


@dataclass
class RunCost:
    runs: int = 0
    probes: int = 0
    seconds: float = 0.0

    def add(self, probes: int, seconds: float) -> None:
        self.runs += 1
        self.probes += probes
        self.seconds += seconds

    @property
    def probes_per_run(self) -> float | None:
        return self.probes / self.runs if self.runs else None

    @property
    def seconds_per_run(self) -> float | None:
        return self.seconds / self.runs if self.runs else None


@dataclass
class Pace:
    """Runs, probes and seconds by kind of run; `earlier` is a previous session's figures."""

    costs: dict[str, RunCost] = field(default_factory=lambda: {kind: RunCost() for kind in KINDS})
    earlier: dict[str, Any] = field(default_factory=dict)
    after_search_runs: int | None = None
    """Runs this session made after its search (ablation rounds, gain
    replicates, repeats of invalid runs); None until it is done. How many,
    the search decides (the changes to ablate, whether the point
    recommended is one the rounds ran, whether the rounds settle early), so
    the plan takes the mean of the last sessions here."""

    def record(self, kind: str, probes: int, seconds: float) -> None:
        if probes > 0 and seconds > 0:
            self.costs[kind].add(probes, seconds)

    @property
    def measured(self) -> bool:
        return any(c.runs for c in self.costs.values())

    def probe_s(self) -> float | None:
        """Seconds per probe, reload and settling included: this session's, else the earlier one's.

        The first knee search is left out: its probes start from a small
        pool that grows on demand at each doubling, and foretell little of
        the later runs (a mean that included it said 92 min left where 30
        were)."""
        later = [c for kind, c in self.costs.items() if kind != FIRST and c.runs]
        probes = sum(c.probes for c in later)
        if probes:
            return sum(c.seconds for c in later) / probes
        value = self.earlier.get("probe_s", {}).get("all")
        return float(value) if value else None

    def probes_per_run(self, kind: str) -> float | None:
        own = self.costs[kind].probes_per_run
        if own is not None:
            return own
        value = self.earlier.get("probes_per_run", {}).get(kind)
        return float(value) if value else None

    def run_s(self, kind: str, default_probes: float, default_probe_s: float, apply_s: float) -> float:
        """Expected seconds of one run of `kind`: its own measured mean once it
        ran, else its expected probes at the measured cost of a probe, else
        the defaults."""
        own = self.costs[kind].seconds_per_run
        if own is not None:
            return own
        probe_s = self.probe_s()
        probes = self.probes_per_run(kind) or default_probes
        if probe_s is None:
            return apply_s + probes * default_probe_s
        return probes * probe_s

    def _after_search_totals(self) -> tuple[float, int]:
        """(runs, sessions) of the record here with this session's once
        known, scaled down to the latest RECORD_SESSIONS."""
        runs, sessions = after_search_record(self.earlier)
        if self.after_search_runs is not None:
            runs, sessions = runs + self.after_search_runs, sessions + 1
            if sessions > RECORD_SESSIONS:
                runs, sessions = runs * RECORD_SESSIONS / sessions, RECORD_SESSIONS
        return runs, sessions

    def expected_after_search_runs(self) -> float | None:
        """The mean runs after the search of the sessions on record here,
        this one's included once known; None without a record."""
        runs, sessions = self._after_search_totals()
        return runs / sessions if sessions else None

    def own_figures(self) -> dict[str, Any]:
        """This session's cost of a probe and probes per run (its first knee search's left out of the cost)."""
        probes = {kind: round(c.probes_per_run, 2) for kind, c in self.costs.items() if c.runs}
        later = self.probe_s() if any(c.runs for k, c in self.costs.items() if k != FIRST) else None
        return {"probe_s": round(later, 2) if later else None, "probes_per_run": probes}

    def to_dict(self) -> dict[str, Any]:
        sessions = (past_sessions(self.earlier) + [self.own_figures()])[-PACE_SESSIONS:]
        out: dict[str, Any] = {**planned_figures(sessions), "sessions": sessions,
                               "runs": {kind: c.runs for kind, c in self.costs.items()}}
        runs, sessions = self._after_search_totals()
        if sessions:
            out[RECORD_FIELD] = {"sessions": sessions, "runs": round(runs, 2)}
        return out


# The sessions whose cost of a probe and probes per run the record keeps;
# the next plan takes their median. One session's figures alone once made
# the plan: a session slowed by a neighbour (its probes repeated for doubt,
# 65 s an ablation run where 35 s was usual) left the next one a plan of
# 34:42 for a session of 22:19 (the mix session of 2026-12-07). A slow
# session only ever slows the figures, so of two the lower is taken.
PACE_SESSIONS = 5


def past_sessions(earlier: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The figures of the sessions a saved entry kept; an entry from
    before the sessions were kept counts as one session."""
    kept = earlier.get("sessions") if isinstance(earlier, Mapping) else None
    if isinstance(kept, list):
        return [one for one in kept if isinstance(one, dict)][-PACE_SESSIONS:]
    if isinstance(earlier, Mapping) and ("probe_s" in earlier or "probes_per_run" in earlier):
        cost = earlier.get("probe_s")
        return [{"probe_s": cost.get("all") if isinstance(cost, Mapping) else None,
                 "probes_per_run": earlier.get("probes_per_run") or {}}]
    return []


def _low_median(values: list[Any]) -> float | None:
    numbers = sorted(float(v) for v in values if isinstance(v, (int, float)) and v > 0)
    return statistics.median_low(numbers) if numbers else None


def planned_figures(sessions: list[dict[str, Any]]) -> dict[str, Any]:
    """What the next plan uses: the (lower) median of the sessions' cost of a
    probe, and of their probes per run of each kind."""
    cost = _low_median([one.get("probe_s") for one in sessions])
    kinds = {kind for one in sessions for kind in (one.get("probes_per_run") or {})}
    probes = {}
    for kind in sorted(kinds):
        value = _low_median([(one.get("probes_per_run") or {}).get(kind) for one in sessions])
        if value is not None:
            probes[kind] = value
    return {"probe_s": {"all": cost} if cost else {}, "probes_per_run": probes}


# Sessions the record of runs after the search keeps (older ones are scaled away).
RECORD_SESSIONS = 8
# The record's name. "after_search" counted the runs of sessions before
# 50ca1cf (2026-11-28), whose rounds held five points under an MPM switch and
# whose gain took ten runs of its own after most prunings: 25 and 35 runs,
# where the rounds now take 20. A plan from it would say 30.
RECORD_FIELD = "after_search_rounds"


def after_search_record(earlier: Mapping[str, Any]) -> tuple[float, int]:
    """(runs after the search, summed, sessions) from a saved entry; the sum
    is a weight once older sessions were scaled away."""
    record = earlier.get(RECORD_FIELD) if isinstance(earlier, Mapping) else None
    if not isinstance(record, Mapping):
        return 0.0, 0
    try:
        runs, sessions = float(record.get("runs", 0)), int(record.get("sessions", 0))
    except (TypeError, ValueError):
        return 0.0, 0
    if sessions <= 0 or not runs >= 0:
        return 0.0, 0
    return runs, sessions


def pace_key(target: Mapping[str, Any], workload: str, tls: bool, rtt_ms: float | None, mpm: str | None,
             duration_s: float, warmup_s: float | None) -> str:
    """Host (this machine, or the SSH host), workload, transport, MPM and
    the probe's own length and warm-up: what a probe's cost depends on. (A
    session of 1-s probes without a warm-up left 2 s a probe on record, and
    the next default session here planned 5 minutes for 18.6.)"""
    host = target.get("host") or "local"
    warm = "steady" if warmup_s is None else f"{warmup_s:g}s"
    return (f"{host}|{workload}|{'https' if tls else 'http'}|rtt {rtt_ms or 0:g}|{mpm or '?'}"
            f"|probe {duration_s:g}s warm {warm}")


def _path() -> str | None:
    from advisor.lint.cache import default_directory

    directory = default_directory()
    return os.path.join(directory, PACE_FILE) if directory else None


def load_earlier(key: str) -> dict[str, Any]:
    """The last session's figures for `key`; nothing when there is none or the file is unreadable."""
    path = _path()
    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            entry = json.load(handle).get(key)
    except (OSError, ValueError, AttributeError):
        return {}
    return entry if isinstance(entry, dict) else {}


def save(key: str, pace: Pace) -> None:
    """Keep this session's figures for the next plan. A cache that cannot be written is no error."""
    path = _path()
    if path is None or not pace.measured:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            with open(path, encoding="utf-8") as handle:
                entries = json.load(handle)
            if not isinstance(entries, dict):
                entries = {}
        except (OSError, ValueError):
            entries = {}
        entries.pop(key, None)
        entries[key] = pace.to_dict()
        while len(entries) > KEPT_ENTRIES:
            entries.pop(next(iter(entries)))
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(entries, handle, indent=1)
        os.replace(temporary, path)
    except OSError:
        return
