"""What every phase of a tuning session shares: the session's settings
(`SessionSettings`), what it tells its display (`SessionEvents`), and the
`SessionContext` the phases after the plan read (the space, the lint of a
candidate, the settings, the model of the trials), with the few questions
they all ask of a point."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from advisor.errors import UsageError
from advisor.tuner.search.optimizer import Observation, TrialOutcome
from advisor.tuner.search.space import Space, Value
from advisor.tuner.trial.objective import TrialEvents

SEARCHES = ("bayesian", "random")


@dataclass
class SessionSettings:
    session_dir: Path
    budget: int = 15
    max_time_s: float | None = None
    seed: int = 0
    search: str = "bayesian"
    resume: bool = False
    gain_replicates: int = 5
    ablation_replicates: int | None = None
    """Rounds of the ablations (the winner less one change at a time);
    None: as many as the gain's replicates; 0: none (the report then shows
    the model's figures only, as hints)."""
    lint_policy: Any = None
    """advisor.tuner.search.space_lint.LintPolicy: the admin's lint settings,
    profile and --fail-on, by which the recommendation is judged."""
    space_file: str | None = None
    allow_mpm_switch: bool = False
    ram_bytes: int | None = None
    server_cpus: list[int] | None = None
    client_cpus: list[int] | None = None
    clients: Any = None
    """advisor.tuner.load.remote_clients.LoadClients: several load generators (--client-host)."""
    client_here: bool = True
    """Whether an httperf runs on this machine (on client_cpus)."""

    def check(self) -> None:
        if self.budget < 1:
            raise UsageError(f"--budget {self.budget}: a session needs at least one trial",
                             hint="give --budget 1 or more (15 is a good start)")
        if self.max_time_s is not None and self.max_time_s <= 0:
            raise UsageError("--max-time must be more than 0 seconds")
        if self.search not in SEARCHES:
            raise UsageError(f"unknown --search {self.search!r}", hint=f"choose {' or '.join(SEARCHES)}")
        if self.gain_replicates < 0:
            raise UsageError("--gain-replicates must be 0 (no gain measured) or more")
        if self.ablation_replicates is not None and self.ablation_replicates < 0:
            raise UsageError("--ablation-replicates must be 0 (no ablation) or more")

    @property
    def ablation_rounds(self) -> int:
        return self.gain_replicates if self.ablation_replicates is None else self.ablation_replicates


class SessionEvents(TrialEvents):
    """What a session tells its display; every method may be left as is."""

    def note(self, text: str) -> None: ...

    def trial_started(self, number: int, total: int, point: Mapping[str, Value], origin: str) -> None: ...

    def trial_done(self, observation: Observation, best: float | None, eta_s: float | None) -> None: ...

    def replicate_done(self, index: int, total: int, role: str, outcome: TrialOutcome) -> None: ...

    def ablation_done(self, index: int, total: int, role: str, outcome: TrialOutcome) -> None: ...


@dataclass
class SessionContext:
    """What the phases after the plan read: none of them keeps state of its own between calls."""

    space: Space
    lint: Any
    """advisor.tuner.search.space_lint.CandidateLint (None: candidates are not linted)."""
    settings: SessionSettings
    events: SessionEvents
    model: Any = None
    """advisor.tuner.search.surrogate.Surrogate, once the search's best point was
    simplified: it ranks the single ablations (None: no model)."""
    workload_name: str = ""
    rtt_ms: float = 0.0
    """The clients' round trip (--rtt), named in a suppression's figure."""


def changed_names(space: Space, point: Mapping[str, Value]) -> list[str]:
    """The free dimensions where `point` differs from the start (under the point's MPM)."""
    return [d.name for d in space.free if point.get(d.name) != space.start.get(d.name)
            and space.mpm_of(point) in d.mpms]


def model_strength(context: SessionContext, winner: Mapping[str, Value], name: str) -> float:
    """|log| of the model's ratio of the winner to the winner with `name`
    at the start's value (0: no model, or a point it cannot place)."""
    surrogate = context.model
    if surrogate is None:
        return 0.0
    without = dict(winner)
    without[name] = context.space.start[name]
    try:
        ratio, _, _ = surrogate.ratio(winner, without)
    except Exception:  # a point the model cannot place: no credit
        return 0.0
    return abs(math.log(ratio)) if ratio and ratio > 0 and math.isfinite(ratio) else 0.0


def point_text(space: Space, point: Mapping[str, Value]) -> str:
    """The dimensions where `point` differs from the start, as httpd.conf writes them."""
    changed = []
    mpm = space.mpm_of(point)
    for d in space.free:
        value = point.get(d.name)
        if value is None or value == space.start.get(d.name) or mpm not in d.mpms:
            continue  # unchanged, or a directive the point's MPM does not have
        changed.append(f"{d.name} {space.value_text(d.name, value)}")
    return ", ".join(changed) if changed else "the starting config"
