"""What the rest of a session should take: the plan's estimate, what it leaves
out, and the ETA during the session, from this session's measured runs, else
the last session's on this host (trial/pace.py), else rough defaults."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.tuner.search.optimizer import Observation
from advisor.tuner.session.session_context import SessionSettings
from advisor.tuner.trial.objective_spec import ObjectiveSpec, ProbeSettings
from advisor.tuner.trial.pace import Pace
from advisor.tuner.trial.session_workload import SessionWorkload

# Rough costs for the plan's estimate (seconds) when no earlier session on
# this host measured them (trial/pace.py): a reload or restart with its
# settling, and around each probe the quiet wait, the part of the warm-up a
# growing pool adds, and httperf's start and end. A probe took 18 s on
# average in a 15-trial session from the stock config on 2026-11-23, most
# of it the quiet wait timing out on a shrinking pool; since that wait ends
# when nothing is left to serve, a probe on the HTTPS sandbox took 7.4 s
# (1.3 s quiet, 2 s warm-up, 4 s of load window).
APPLY_S = 3.0
PROBE_OVERHEAD_S = 4.0
REPORT_S = 15.0

# Ablations expected per round besides the winner and the start (the plan's
# estimate): the README's HTTPS sessions kept two or three changes the model
# credited (the MPM, MaxRequestWorkers, a keep-alive knob), and the changes
# it saw no effect of are measured together as one. The session of
# 2026-11-27 07:15 ran two; the plan says what each further one costs.
EXPECTED_ABLATED = 2
# With no earlier session on record, the plan counts the gain's own runs at
# one in five. The README's three sessions of 2026-11-27 split two to one,
# all after a pruning of two or more changes that no round ran; such a
# pruning now recommends the round's point that beat the start
# (pruning.measured_pruning), and the gain runs on its own only after a winner of
# one change, or when no round's point beat the start.
DEFAULT_GAIN_ALONE_SHARE = 0.2


@dataclass
class Estimate:
    """The session's time estimates, from its settings and the pace of its runs."""

    settings: SessionSettings
    probes: ProbeSettings
    workload: SessionWorkload
    objective: ObjectiveSpec
    pace: Pace

    def probe_s(self) -> float:
        p = self.probes
        if p.warmup_s is not None:
            warm = p.warmup_s
        else:
            session = (self.workload.calls - 1) * (self.workload.think_s or 0.0)
            warm = max(1.5, session + 1.0) + 1.0
        return warm + p.duration_s + PROBE_OVERHEAD_S

    def trial_s(self, first: bool, uncapped: bool = False) -> float:
        """One run's expected seconds: this session's measured probes and their
        cost when it has them, else the last session's on this host, else
        the defaults below."""
        from advisor.tuner.trial.pace import FIRST, OWN, SEARCH

        if self.objective.kind != "peak":
            kind, probes = (OWN if uncapped else SEARCH), 1.0
        elif first:  # doubling from the start rate, then bisecting: 8 or 9 probes
            kind, probes = FIRST, min(self.probes.first_max_probes, 8)
        elif uncapped:  # a replicate or ablation run: small steps from its own peak (2 to 4)
            kind, probes = OWN, min(self.probes.first_max_probes, 3)
        else:  # from the incumbent's peak; one probe when it fails that clearly
            kind, probes = SEARCH, min(self.probes.max_probes, 3)
        return self.pace.run_s(kind, probes, self.probe_s(), APPLY_S)

    def estimate_s(self, done: int) -> float:
        """Seconds the rest of the session should take (a rough figure for the plan)."""
        left = max(0, self.settings.budget - done)
        search = 0.0
        if left:
            search = self.trial_s(first=done == 0) + (left - 1) * self.trial_s(first=False)
        if self.settings.max_time_s is not None:
            search = min(search, self.settings.max_time_s)
        return search + self.after_search_s() + REPORT_S

    def after_search_s(self) -> float:
        """The ablation rounds and the gain. How many runs they take, the
        search decides: a round is the winner, each change measured on its
        own, the group the model saw no effect of, and the start; the rounds
        may settle early; the gain takes ten runs of its own when no round ran the
        point recommended. A fixed guess was wrong by a third either way:
        28 min said and 20.4 taken on 2026-11-27 07:15, 21 said and 32.8
        taken before it. So the plan takes the mean runs after the search of
        the last sessions on this host, workload and transport (pace.py),
        and without a record the typical rounds (EXPECTED_ABLATED) with the
        gain runs at even odds."""
        return self.after_search_runs() * self.trial_s(first=False, uncapped=True)

    def after_search_runs(self) -> float:
        s = self.settings
        recorded = self.pace.expected_after_search_runs()
        if recorded is not None and (s.ablation_rounds or s.gain_replicates):
            return recorded
        if s.ablation_rounds:
            rounds = s.ablation_rounds * (1 + EXPECTED_ABLATED + (1 if s.gain_replicates else 0))
            return rounds + DEFAULT_GAIN_ALONE_SHARE * 2 * s.gain_replicates
        return 2 * s.gain_replicates

    def estimate_extras(self) -> str:
        """Where the estimate's runs after the search come from, in words."""
        from advisor.tuner.trial.pace import after_search_record

        s = self.settings
        if not s.ablation_rounds:
            return ""
        own = self.trial_s(first=False, uncapped=True)
        runs = self.after_search_runs()
        _, sessions = after_search_record(self.pace.earlier)
        if sessions:
            text = (f"the rounds and the gain about {runs:.0f} runs of {own:.0f} s, the mean of the last "
                    f"{sessions} session{'s' if sessions != 1 else ''} here")
            if s.gain_replicates:
                # The README's session of 2026-11-28 took 35 runs after the
                # search where its plan, from a record of 25, said 20 min.
                text += (f"; {2 * s.gain_replicates} more (about {duration(2 * s.gain_replicates * own)}) when "
                         "no round ran the point recommended and its gain is measured on its own")
            return text
        parts = [f"with {EXPECTED_ABLATED} changes ablated; each change kept beyond {EXPECTED_ABLATED} adds about "
                 f"{duration(s.ablation_rounds * own)}"]
        if s.gain_replicates:
            parts.append(f"a gain measured on its own (when the rounds did not run the point recommended) takes "
                         f"about {duration(2 * s.gain_replicates * own)}, counted at one in five: no session "
                         "here on record")
        return "; ".join(parts)

    # ---- the search --------------------------------------------------------

    def eta(self, observations: list[Observation]) -> float | None:
        """The rest of the session from this session's measured runs: the
        search trials left, then the ablation rounds and the gain replicates.
        The first trial searches from the start rate and foretells little of
        the later ones (a mean that included it said 92 min left where 30
        were): each kind of run is timed on its own (trial/pace.py)."""
        left = max(0, self.settings.budget - len(observations))
        return left * self.trial_s(first=False) + self.after_search_s()


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
