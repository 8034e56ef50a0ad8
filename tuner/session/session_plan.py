"""The plan a tuning session prints before its first trial (`Plan`), and the
words it is made of: the search space's starts, how each trial measures, who
loads the server, and how the lint holds the recommendation."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from advisor.tuner.search.space import Space, Value
from advisor.tuner.session.ablation_choice import MAX_SINGLE_ABLATIONS
from advisor.tuner.session.estimate import duration
from advisor.tuner.session.session_context import SessionSettings
from advisor.tuner.staging.target import offered_load_text
from advisor.tuner.trial.objective_spec import ObjectiveSpec, ProbeSettings
from advisor.tuner.trial.session_workload import SessionWorkload


@dataclass
class Plan:
    """What the session will do, shown before the first trial."""

    target: dict[str, Any]
    config: str
    mpm: str
    dimensions: list[dict[str, Any]]
    notes: list[str]
    workload: str
    objective: str
    measurement: str
    budget: int
    max_time_s: float | None
    search: str
    seed: int
    gain_replicates: int
    estimate_s: float
    journal: str
    report_dir: str
    resumed: int = 0
    pending_restore: bool = False
    load: str = ""
    """Who loads what, and the most any trial will offer (said before the first)."""
    round_trip: str = ""
    """The clients' round trip (--rtt) and how the trials show it; "" without."""
    mpm_searched: bool = False
    """--allow-mpm-switch put the MPM in the space: the rounds ablate it alone."""
    ablation_rounds: int = 0
    lint_gate: str = ""
    """How the recommendation is held to the admin's lint (said before the first trial)."""
    estimate_extras: str = ""
    """What the estimate leaves out, and what each case would add."""
    precision: dict[str, Any] | None = None
    """What precision a trial's figure should have on this host (plan_precision)."""

    def lines(self) -> list[str]:
        out = [f"target: {self.target.get('kind')} at {self.target.get('url')}; config {self.config} ({self.mpm})",
               f"search space ({len([d for d in self.dimensions if not d['fixed']])} dimensions):"]
        for d in self.dimensions:
            out.append(f"  - {d['text']}")
            if not d["fixed"]:
                out.append(f"      starts at {d['start']}")
        out += [f"  note: {note}" for note in self.notes]
        out.append(f"workload: {self.workload}")
        out.append(f"objective: {self.objective}")
        out.append(f"each trial: {self.measurement}")
        if self.precision:
            out.append(f"precision: {self.precision['text']}")
        if self.load:
            out.append(f"load: {self.load}")
        if self.round_trip:
            out.append(f"round trip: {self.round_trip}")
        limit = f", stopping after {duration(self.max_time_s)}" if self.max_time_s else ""
        resumed = f" ({self.resumed} already in the journal)" if self.resumed else ""
        out.append(f"budget: {self.budget} trials{resumed}, {self.search} search, seed {self.seed}{limit}")
        if self.ablation_rounds:
            alone = ("the MPM on its own, the other changes together" if self.mpm_searched else
                     f"up to {MAX_SINGLE_ABLATIONS} changes one at a time (the pool's size and what the seeds "
                     "measured large first), the others together")
            out.append(f"then: {self.ablation_rounds} interleaved rounds of the winner and the winner less its "
                       f"changes ({alone}), so each change the recommendation keeps has a measured effect, its "
                       "own or its group's; a change within noise goes back to the start's value (when two or "
                       "more are, the round's point that sent back the most of them and beat the start)"
                       + ("; the starting config runs in each round too, and gives the gain when a round's point "
                          "is the one recommended" if self.gain_replicates else ""))
        if self.gain_replicates:
            out.append(("then, when no round measured the point recommended: " if self.ablation_rounds else "then: ")
                       + f"{self.gain_replicates} interleaved replicates each of the starting config and "
                       "the winner, for the gain and its 95 % confidence interval")
        if self.lint_gate:
            out.append(f"lint: {self.lint_gate}")
        out.append(f"estimated time: about {duration(self.estimate_s)}"
                   + (f" ({self.estimate_extras})" if self.estimate_extras else ""))
        out.append(f"journal: {self.journal} (continue an interrupted session with --resume)")
        out.append(f"report: {self.report_dir}")
        if self.pending_restore:
            out.append("an interrupted run left a candidate in the managed include: it is put back before "
                       "the first trial (the space above reads the candidate)")
        return out

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def lint_gate_text(lint) -> str:
    """How the recommendation is held to the admin's lint, for the plan ("" without a lint)."""
    if lint is None:
        return ""
    if lint.fail_on == "never":
        return "--fail-on never: the recommendation is not held to lint"
    settings = f"settings {lint.settings.path}" if lint.settings.path else "no settings file"
    return (f"a change that brings a finding at or above --fail-on {lint.fail_on} (profile {lint.profile}, "
            f"{settings}) is kept only with a measured gain beyond noise, and then with a suppression "
            "comment that gives the figure; otherwise it goes back to the start's value")


def measurement_text(probes: ProbeSettings, objective: ObjectiveSpec, workload: SessionWorkload) -> str:
    """How one trial measures its point."""
    p = probes
    warm = "a warm-up until the pool is steady" if p.warmup_s is None else (
        "no warm-up" if p.warmup_s == 0 else f"{p.warmup_s:g} s of warm-up")
    if objective.kind == "peak":
        return (f"a knee search for the highest rate that meets the SLO: the first from {p.start_rate:g} "
                f"{workload.unit} (up to {p.first_max_probes} probes), each later one up from the "
                f"incumbent's peak until a probe fails (up to {p.max_probes} probes); each probe "
                f"{p.duration_s:g} s of load after {warm}")
    return f"one run of {p.duration_s:g} s at {objective.rate:g} {workload.unit} after {warm}"


def plan_precision(target, probes: ProbeSettings, objective: ObjectiveSpec,
                   settings: SessionSettings) -> dict[str, Any]:
    """The uncertainty a trial's figure should carry here (trial/precision.py),
    before any trial: the knee's bracket at the tolerance, and how steady
    the CPU-speed reference reads on the server's cores over a fraction of a
    second (five readings, 0.1 to 0.2 s). What the trials add of their own,
    the drift while they run and capacity readings that disagree, only a
    trial can measure: each one reports its own."""
    from advisor.tuner.stats.ratio import bracket_sd

    bracket = bracket_sd(probes.tolerance) if objective.kind == "peak" else None
    remote = not getattr(target, "on_this_machine", True)
    reference = cost = None
    if not remote:
        from advisor.tuner.measure.cpu_reference import reference_spread

        reference, cost = reference_spread(settings.server_cpus)
    rel_sd = math.sqrt((bracket or 0.0) ** 2 + (reference or 0.0) ** 2)
    parts = []
    if bracket is not None:
        parts.append(f"the knee's {100 * probes.tolerance:g} % bracket ± {100 * bracket:.1f} %")
    if reference is not None:
        parts.append(f"the CPU-speed reference on the server's cores ± {100 * reference:.1f} % from one reading "
                     "to the next here")
    else:
        parts.append("no CPU-speed reference: the server's cores are on another host")
    best = f"about ± {100 * rel_sd:.1f} % at best" if rel_sd > 0 else "not known before the trials"
    text = (f"each figure {best} ({'; '.join(parts)}); the speed the server's "
            "cores drift by during a trial and capacity readings that disagree add to it, measured trial by "
            "trial (a climb that never failed is reported as a floor)")
    return {"rel_sd": rel_sd, "bracket": bracket, "reference": reference,
            "reference_cost_ms": round(cost, 1) if cost is not None else None, "text": text}


def load_text(target, probes: ProbeSettings, objective: ObjectiveSpec, workload: SessionWorkload,
              settings: SessionSettings) -> str:
    """Who loads what, and the most any trial will offer."""
    p = probes
    peak = p.max_rate if objective.kind == "peak" else objective.rate
    clients = settings.clients
    described = target.describe()
    tool = {"h2": "h2load", "mix": "h2load and httperf"}.get(objective.protocol, "httperf")
    requests_per_session: float = workload.calls
    if workload.name == "browser":  # a visit's pages bring their assets
        from advisor.tuner.load.browser_pages import ASSETS_PER_PAGE

        requests_per_session = workload.calls * (1 + ASSETS_PER_PAGE)
    text = offered_load_text(described.get("url", "?"),
                             settings.client_cpus if settings.client_here else None, peak,
                             workload.unit, requests_per_session,
                             generators=clients.describe() if clients is not None else None, tool=tool)
    tls = described.get("tls")
    if isinstance(tls, dict):
        resume = ("each visitor's later connections resume its TLS session" if p.tls_resume == "session"
                  else "every connection a full TLS handshake (--tls-resume never)")
        text += f"; HTTPS: {tls.get('version')}, {tls.get('key_type') or 'unknown'} key, {resume}"
    if objective.protocol == "h2":
        text += "; HTTP/2: h2load, one connection a visitor, a page's assets as streams"
    elif objective.protocol == "mix":
        text += (f"; a protocol mix: {objective.h2_share:.0%} of the visitors on HTTP/2 (h2load), "
                 "the rest on HTTP/1.1 (httperf), at once")
    return text


def plan_start_text(space: Space, dim) -> str | None:
    """The start as the config writes it, and what stands for it in the search when it lies outside."""
    text = start_text(dim, space.as_written(space.start).get(dim.name))
    if dim.name in space.start_written:
        text = f"{text}, as written ({start_text(dim, space.start.get(dim.name))} stands for it in the search)"
    return text


def start_text(dim, value: Value | None) -> str | None:
    """A dimension's starting value in the plan's units (the top of an
    "unlimited at top" range is httpd's 0)."""
    if value is None:
        return None
    if dim.kind == "choice":
        return str(value)
    if dim.unlimited_at_top and value == dim.high:
        return "0 (unlimited)"
    return f"{int(value):,}" + (f" {dim.unit}" if dim.unit else "")
