"""What a tuning session found, as data: the plan, the trials, the
recommendation and its diff, the measured gain, the bottleneck before and
after, the effect of each change and the curves the plots draw.

Every decision the report makes is made in this module and the three it
gathers (search.recommend, session.gain, search.surrogate); the formatters
(advisor.output.tune_files) and the plots (session.report_plots) only
render a `TuneReport`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from advisor.tuner.search.optimizer import Observation
from advisor.tuner.search.recommend import FOLLOWS, FileDiff, Recommendation, diffs, recommend
from advisor.tuner.search.space import Space, Value
from advisor.tuner.search.surrogate import (MIN_TRIALS_FOR_SURROGATE, Curve, Sensitivity, Surrogate, curves,
                                            sensitivities)
from advisor.tuner.session.figure_check import check_figures, later_runs
from advisor.tuner.session.gain import Gain, Replicates, measure_gain
from advisor.tuner.session.refusals import LintRefusal, refusals_summary

if TYPE_CHECKING:
    from advisor.config.model import Config


# --------------------------------------------------------------------------
# What the measured studies say about each directive (docs/evidence.md)


@dataclass(frozen=True)
class Citation:
    author: str
    year: int
    section: str
    figure: str
    """The measured figure, quoted as docs/evidence.md gives it ("" when the
    study observed a direction but gave no number)."""

    @property
    def reference(self) -> str:
        return f"{self.author} ({self.year}, {self.section})"


_AW = "Arlitt & Williamson"
_POOL = Citation(_AW, 2004, "sec. 5.1.5, Fig. 9",
                 "every static pool (StartServers = MinSpare = MaxSpare = MaxClients, 128 to 1,024) "
                 "peaked lower than the dynamic default")
_PERSISTENT = Citation(_AW, 2004, "sec. 5.1.6",
                       "2, 4 and 8 requests per connection: 9,600, 10,400 and 11,200 replies/s against "
                       "7,300 with one (+32 % at two)")
# Almeida et al.: the seed carries no date; 1996 is the year tuner/load/workload.py cites.
EVIDENCE: dict[str, tuple[Citation, ...]] = {
    "MaxConnectionsPerChild": (
        Citation(_AW, 2004, "sec. 5.1.3",
                 "MaxRequestsPerChild 1,000: peak cut in half or worse; 10,000: about 15 % lower; "
                 "0 (unlimited): the best"),),
    "KeepAlive": (_PERSISTENT,
                  Citation("Almeida et al.", 1996, "sec. 4.1",
                           "TCP TIME_WAIT timers took about 51 % of kernel time for small files")),
    "MaxKeepAliveRequests": (_PERSISTENT,),
    "EnableMMAP": (Citation(_AW, 2004, "sec. 5.1.4", "MMapFile, one file mapped at start-up by mod_file_cache "
                                                     "(not EnableMMAP): 5,700 to 7,300/s, +28 %"),),
    "EnableSendfile": (Citation("Hu, Nanda & Yang", 1999, "abstract",
                                "seven of eight proposed changes raised throughput by 61 %; sending from the "
                                "file cache to the network was the further step, not measured"),),
    "BufferedLogs": (Citation(_AW, 2004, "sec. 5.1.2",
                              "an access log cost about 10 % of the peak (5,700 to 5,200/s)"),
                     Citation("Almeida et al.", 1996, "sec. 4.2",
                              "updating the log took about 23 ms per connection")),
    "MaxRequestWorkers": (
        Citation(_AW, 2004, "sec. 5.1.5", "MaxClients 150 or 1,024: the same peak; the larger pool "
                                          "degraded more smoothly past it"),
        Citation("Andersson et al.", 2003, "sec. IV", "MaxClients bounds the worst response time; it does "
                                                      "not change the maximum throughput"),
        Citation("Kegel", 1997, "32 MB server", "150 server processes in 32 MB made the machine unresponsive; "
                                                "100 ran sluggishly")),
    "StartServers": (_POOL,), "MinSpareServers": (_POOL,), "MaxSpareServers": (_POOL,),
    "ListenBacklog": (Citation(_AW, 2004, "sec. 5.1.7", "little effect while the CPU is the bottleneck"),),
}


def citations_for(directive: str) -> tuple[Citation, ...]:
    return EVIDENCE.get(FOLLOWS.get(directive, directive), ())


# --------------------------------------------------------------------------
# The facts the session hands over


@dataclass
class SessionFacts:
    """What the session was asked to do and how it went (the plan summary)."""

    workload: str = ""
    objective: str = "peak sustainable rate under the SLO"
    unit: str = "replies/s"
    budget: int = 0
    max_time_s: float | None = None
    search: str = "bayesian"
    seed: int = 0
    stop_reason: str = ""
    elapsed_s: float = 0.0
    planned_s: float | None = None
    """The plan's estimate of the session, said before the first trial."""
    target: str = ""
    round_trip: str = ""
    """The clients' round trip (--rtt) and how the trials show it; "" without."""
    produced_at: str = ""
    """ISO 8601 time the session ended; filled in by build_report when empty."""
    producer: str = "apache-advisor tune"


# --------------------------------------------------------------------------
# Bottleneck verdicts


@dataclass
class VerdictSummary:
    label: str
    evidence: dict[str, Any]
    summary: str
    """"server CPU (97 %)": the label with the figures that show it."""
    count: int
    """Runs of this point that gave this label ..."""
    runs: int
    """... out of this many."""


def verdict_evidence(details: Mapping[str, Any]) -> dict[str, Any]:
    """The evidence dict inside a trial's details, wherever the trial put it:
    a Verdict.to_dict() under "verdict", a KneeResult.to_dict()'s
    "limiting_verdict", a bare "evidence", or the simulated model's working."""
    # The trial's own level first, then one level down ({"knee": KneeResult.to_dict()} ...).
    levels = [details] + [v for v in details.values() if isinstance(v, Mapping)]
    for level in levels:
        for key in ("verdict", "limiting_verdict"):
            value = level.get(key)
            if isinstance(value, Mapping) and isinstance(value.get("evidence"), Mapping):
                return dict(value["evidence"])
        if isinstance(level.get("evidence"), Mapping):
            return dict(level["evidence"])
    return {k: details[k] for k in ("cpu_us_per_request", "connections_per_session") if k in details}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _figure(evidence: Mapping[str, Any], key: str, template: str) -> str | None:
    value = _number(evidence.get(key))
    return template.format(value) if value is not None else None


def _per_device(evidence: Mapping[str, Any], key: str, template: str) -> list[str | None]:
    """One figure per interface or disk from a {device: number} evidence entry."""
    values = evidence.get(key)
    if not isinstance(values, Mapping):
        return []
    return [template.format(device, float(v)) for device, v in values.items() if _number(v) is not None]


def evidence_phrase(label: str, evidence: Mapping[str, Any]) -> str:
    """The two or three figures that show a verdict, in words."""
    picks: list[str | None] = []
    if label == "server CPU":
        picks = [_figure(evidence, "quota_used_pct_mean", "{:.0f} % of its CPU quota"),
                 _figure(evidence, "server_cpu_busy_pct_mean", "{:.0f} %"),
                 _figure(evidence, "run_queue_max", "run queue {:.0f}")]
    elif label == "process churn":
        picks = [_figure(evidence, "retired_per_s", "{:g} children retired/s"),
                 _figure(evidence, "spawned_per_s", "{:g} forked/s"),
                 _figure(evidence, "httpd_cpu_pct_mean", "httpd {:.0f} % of a core")]
    elif label in ("worker pool exhausted", "keep-alive holding workers", "logging"):
        board = evidence.get("scoreboard_mean") if isinstance(evidence.get("scoreboard_mean"), Mapping) else {}
        picks = [_figure(evidence, "busy_workers_mean", "{:.0f} busy"),
                 _figure(evidence, "idle_workers_mean", "{:.0f} idle"),
                 _figure(board, "K", "{:.0f} in keep-alive wait") if label != "logging"
                 else _figure(board, "L", "{:.0f} logging"),
                 _figure(evidence, "accept_queue_max", "accept queue up to {:.0f}")]
    elif label == "network":
        picks = _per_device(evidence, "mbit_per_s_mean", "{} {:g} Mbit/s")
    elif label == "memory/swap":
        picks = [_figure(evidence, "swap_pages_per_s_max", "{:.0f} pages swapped/s"),
                 _figure(evidence, "mem_available_pct_min", "{:.0f} % RAM available")]
    elif label == "disk":
        picks = _per_device(evidence, "disk_util_pct_max", "{} {:.0f} % busy")
    elif label == "connections closed by server":
        picks = [str(evidence["config"]) if evidence.get("config") else None]
    elif label == "name lookups":
        picks = [str(evidence["config"]) if evidence.get("config") else None,
                 _figure(evidence, "lookups_per_s", "{:.0f} lookups/s"),
                 _figure(evidence, "lookup_workers_mean", "{:g} workers in a lookup")]
    cause = evidence.get("miss_cause")
    if label == "process churn" and isinstance(cause, Mapping):
        picks.append(str(evidence["config"]) if evidence.get("config") else None)
    elif label == "worker pool exhausted" and isinstance(cause, Mapping) and cause.get("cause") == "held pool":
        # The pool ran out while the CPU idled: the lines its workers waited on.
        picks.append(f"httpd {cause.get('httpd_cpu_share_pct')} % of its CPU, held by "
                     + ", ".join(str(c.get("config")) for c in cause.get("causes", []) if isinstance(c, Mapping)))
    elif label == "none" and isinstance(cause, Mapping) and cause.get("summary"):
        # Missed the SLO with nothing saturated: the nearest limit, or what the trial lacked.
        picks = [str(cause["summary"])]
    parts = evidence.get("cpu_us_per_request")
    if not [p for p in picks if p] and isinstance(parts, Mapping) and parts:
        # The simulated model: where each request's CPU goes.
        numbers = {k: float(v) for k, v in parts.items() if _number(v)}
        top = sorted(numbers.items(), key=lambda kv: -kv[1])[:2]
        shares = " and ".join(f"{value:.0f} µs {name}" for name, value in top)
        picks = [f"{sum(numbers.values()):.0f} µs CPU per request, {shares}",
                 _figure(evidence, "connections_per_session", "connections per session: {:g}")]
    shown = [p for p in picks if p][:3]
    return f"{label} ({', '.join(shown)})" if shown else label


def summarise_verdicts(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> VerdictSummary | None:
    """The label most runs of one point gave, with the evidence of the latest
    run that gave it."""
    if not runs:
        return None
    counts = Counter(label for label, _ in runs)
    latest = {label: index for index, (label, _) in enumerate(runs)}
    label = max(counts, key=lambda name: (counts[name], latest[name]))  # a tie goes to the later label
    count = counts[label]
    details = next(d for l, d in reversed(runs) if l == label)
    evidence = verdict_evidence(details)
    return VerdictSummary(label, evidence, evidence_phrase(label, evidence), count, len(runs))


def _key(space: Space, point: Mapping[str, Value]) -> tuple:
    return tuple(point.get(name) for name in space.names)


def _runs_of(space: Space, observations: Iterable[Observation], point: Mapping[str, Value]
             ) -> list[tuple[str, dict[str, Any]]]:
    key = _key(space, point)
    return [(o.verdict, o.details) for o in observations if o.valid and _key(space, o.point) == key]


# --------------------------------------------------------------------------
# A session that cannot tell its points apart

# Trials whose objectives all lie within this share of their median measured
# the same point as far as the session can tell: a 3 s probe repeated on one
# config moves by a few per cent (the replicates show how much, and widen it).
FLAT_SPREAD = 0.05
MEASUREMENT_ARTEFACT = "a measurement artefact"
CLIENT_LIMIT = "a client limit"
NOT_STRESSED = "a workload that does not stress what the space changes"


@dataclass
class NoResponse:
    """Why the session does not recommend: the objective did not respond to the space."""

    finding: str
    """What the trials showed: every trial the same within noise, or the
    winner's peak set by probes that missed the SLO with no resource named."""
    cause: str
    """The likely cause: MEASUREMENT_ARTEFACT, CLIENT_LIMIT, NOT_STRESSED, or a
    missed SLO's own cause ("unexplained ..." when the trials lacked the readings)."""
    detail: str
    spread: float | None = None
    """(max - min) / median of the valid trials' objectives."""

    @property
    def sentence(self) -> str:
        return f"the objective did not respond to the space: {self.finding}; likely cause: {self.cause} ({self.detail})"


def _limiting(details: Mapping[str, Any]) -> tuple[str | None, dict[str, Any], list[str]]:
    """The label, evidence and SLO failures of the probe that missed the SLO in
    one run (a knee search's first failure above its peak, or a fixed-rate
    run that missed); (None, {}, []) when the run missed nothing."""
    knee = details.get("knee")
    if isinstance(knee, Mapping):
        verdict = knee.get("limiting_verdict")
        limiting = details.get("limiting") if isinstance(details.get("limiting"), Mapping) else {}
        if isinstance(verdict, Mapping):
            return (str(verdict.get("label")), dict(verdict.get("evidence") or {}),
                    list(limiting.get("slo_failures") or []))
        return None, {}, []
    failures = list(details.get("slo_failures") or [])
    verdict = details.get("verdict") if isinstance(details.get("verdict"), Mapping) else {}
    if failures:
        return str(verdict.get("label")), dict(verdict.get("evidence") or {}), failures
    return None, {}, []


def _noise_band(replicates: Replicates | None) -> float:
    """FLAT_SPREAD, or twice the replicates' own spread when that is wider."""
    band = FLAT_SPREAD
    if replicates is None:
        return band
    for runs in (replicates.start, replicates.winner):
        if len(runs) >= 2 and sum(runs) > 0:
            band = max(band, 2.0 * (max(runs) - min(runs)) / (sum(runs) / len(runs)))
    return band


def told_apart(gain: Gain | None, ablations=None) -> bool:
    """Whether interleaved runs measured two points apart beyond noise: the
    gain, or an ablation (a gain or a loss). A resumed sandbox session once
    kept four changes on a gain of x6.79 and still headed its report
    "recommended: nothing: the objective did not respond", because the
    winner's probes had missed the SLO with no resource named."""
    if gain is not None and gain.excludes_one:
        return True
    effects = getattr(ablations, "effects", None) or {}
    return any(effect.beyond_noise or effect.a_loss for effect in effects.values())


def unnamed_misses(space: Space, observations: Sequence[Observation], winner: Mapping[str, Value],
                   replicates: Replicates | None) -> tuple[list[tuple[str, dict[str, Any], list[str]]], list]:
    """(the winner's runs whose peak a probe set that missed the SLO with
    verdict "none", every run of the winner)."""
    winner_runs = _runs_of(space, observations, winner) + list(replicates.winner_verdicts if replicates else [])
    missed = [_limiting(d) for _, d in winner_runs]
    return [(label, ev, failures) for label, ev, failures in missed if label == "none" and failures], winner_runs


def no_response(space: Space, observations: Sequence[Observation], winner: Mapping[str, Value],
                replicates: Replicates | None, gain: Gain | None, ablations=None) -> NoResponse | None:
    """Whether the session could tell its points apart; None when it could.

    It could not when every valid trial measured the same within noise
    (FLAT_SPREAD, or the replicates' spread), or when the winner's peak was
    set by probes that missed the SLO with verdict "none": what held them
    back is not what the space changes, as far as the trials can say;
    unless interleaved runs (the gain, an ablation) told points apart
    beyond noise (told_apart). The likely cause is named from the trials
    themselves.
    """
    if told_apart(gain, ablations):
        return None
    valid = [o for o in observations if o.valid and o.objective is not None and not o.replicate]
    unnamed, winner_runs = unnamed_misses(space, observations, winner, replicates)
    values = sorted(float(o.objective) for o in valid)  # type: ignore[arg-type]
    spread = None
    if len(values) >= 3:
        middle = values[len(values) // 2]
        spread = (values[-1] - values[0]) / middle if middle > 0 else 0.0
    points = {_key(space, o.point) for o in valid}
    flat = spread is not None and len(points) >= 2 and spread <= _noise_band(replicates)
    if not flat and not (winner_runs and len(unnamed) * 2 > len(winner_runs)):
        return None
    if flat:
        finding = (f"{len(valid)} trials of {len(points)} points measured {values[0]:,.1f} to {values[-1]:,.1f}, "
                   f"{100 * spread:.1f} % apart, within the noise of a trial")  # type: ignore[operator]
    else:
        finding = (f"the winner's peak was set by probes that missed the SLO with no resource saturated "
                   f"(verdict \"none\") in {len(unnamed)} of {len(winner_runs)} runs")
    cause, detail = _likely_cause(valid, winner_runs, unnamed)
    return NoResponse(finding, cause, detail, round(spread, 4) if spread is not None else None)


def misses_told_apart(space: Space, observations: Sequence[Observation], winner: Mapping[str, Value],
                      replicates: Replicates | None) -> list[str]:
    """The note a recommendation carries when the winner's probes mostly
    missed the SLO with no resource named, yet interleaved runs told the
    points apart: the measured difference stands, its cause is unnamed."""
    unnamed, winner_runs = unnamed_misses(space, observations, winner, replicates)
    if not winner_runs or len(unnamed) * 2 <= len(winner_runs):
        return []
    return [f"the winner's peak was set by probes that missed the SLO with no resource saturated (verdict "
            f"\"none\") in {len(unnamed)} of {len(winner_runs)} runs; the interleaved runs measured the "
            "difference all the same, so the recommendation stands on them, with what held the probes back "
            "unnamed"]


def _likely_cause(valid: Sequence[Observation], winner_runs: Sequence[tuple[str, Mapping[str, Any]]],
                  unnamed: Sequence[tuple[str, dict[str, Any], list[str]]]) -> tuple[str, str]:
    client = [o for o in valid if o.verdict == "client-bound"] + \
        [o for o in valid if isinstance(o.details.get("knee"), Mapping) and o.details["knee"].get("lower_bound_only")]
    if client:
        return CLIENT_LIMIT, f"the load generator set the pace in {len(client)} of {len(valid)} trials"
    limits = [_limiting(o.details) for o in valid]
    failures = [f for _, _, fs in limits for f in fs]
    if failures and all(f.startswith("reply rate") for f in failures):
        return MEASUREMENT_ARTEFACT, ("the probes that set the peaks failed on the reply rate alone, every request "
                                      "answered within the SLO's reply time and error share")
    if unnamed:
        summaries = [str(ev.get("miss_cause", {}).get("summary")) for _, ev, _ in unnamed
                     if isinstance(ev.get("miss_cause"), Mapping) and ev["miss_cause"].get("summary")]
        if summaries:
            top = Counter(summaries).most_common(1)[0][0]
            return top, "the missed SLO's own cause, from the winner's runs"
        return "unexplained", "the runs record no cause for the missed SLO"
    labels = Counter(o.verdict for o in valid)
    label, count = labels.most_common(1)[0] if labels else ("none", 0)
    if label == "none" and count == len(valid):
        return NOT_STRESSED, ("no trial saturated any resource: every point served the load it was offered, "
                              "so the load does not reach what the space changes")
    if label != "none" and count == len(valid):
        runs = [d for lab, d in winner_runs if lab == label]
        phrase = evidence_phrase(label, verdict_evidence(runs[-1])) if runs else label
        return NOT_STRESSED, f"every trial was held by {phrase}, which no dimension of the space relieves"
    return NOT_STRESSED, "the trials' bottlenecks differ, yet no point moved the objective beyond the noise"


# --------------------------------------------------------------------------
# The trials table


@dataclass
class TrialRow:
    trial: int
    objective: float | None
    best_so_far: float | None
    """The best mean of any point measured up to this trial."""
    verdict: str
    replicate: bool
    valid: bool
    is_start: bool
    is_winner: bool
    changed: dict[str, str]
    """The dimensions where this point differs from the start, as httpd writes them."""
    elapsed_s: float
    upper_bound: bool = False
    """The knee search stopped early, below the incumbent: the figure is what it served while failing."""
    uncertainty: dict[str, Any] | None = None
    """The trial's measured uncertainty (trial/precision.py: rel_sd, bound, components)."""


def trial_rows(space: Space, observations: Sequence[Observation], winner: Mapping[str, Value]) -> list[TrialRow]:
    start_key, winner_key = _key(space, space.start), _key(space, winner)
    values: dict[tuple, list[float]] = {}
    rows = []
    for o in observations:
        key = _key(space, o.point)
        if o.valid and o.objective is not None:
            values.setdefault(key, []).append(float(o.objective))
        # A replicate can pull a point's mean down: the best is recomputed, not a running maximum.
        best = max((sum(v) / len(v) for v in values.values()), default=None)
        mpm = space.mpm_of(o.point)  # a directive of another MPM is not part of this point
        changed = {d.name: space.value_text(d.name, o.point[d.name]) for d in space.free
                   if o.point.get(d.name) != space.start.get(d.name) and mpm in d.mpms}
        rows.append(TrialRow(o.trial, o.objective, best, o.verdict, o.replicate, o.valid, key == start_key,
                             key == winner_key, changed, o.elapsed_s,
                             upper_bound=isinstance(o.details, Mapping) and o.details.get("bound") == "upper",
                             uncertainty=o.details.get("uncertainty") if isinstance(o.details, Mapping) else None))
    return rows


# --------------------------------------------------------------------------
# The whole report


@dataclass
class TuneReport:
    facts: SessionFacts
    space: dict[str, Any]
    """Space.to_dict() and the plan's lines (Space.describe())."""
    trials: list[TrialRow]
    recommendation: Recommendation
    diffs: list[FileDiff]
    gain: Gain | None
    start_verdict: VerdictSummary | None
    winner_verdict: VerdictSummary | None
    sensitivity: list[Sensitivity]
    evidence: dict[str, list[Citation]]
    curves: list[Curve]
    start_level: float | None
    """The start's mean objective (replicates when measured): the convergence plot's dashed line."""
    notes: list[str] = field(default_factory=list)
    ablations: dict[str, Any] | None = None
    """session/ablation.py Ablations.to_dict(): each kept change's measured effect."""
    suppressions: dict[str, str] = field(default_factory=dict)
    """directive -> the suppression comment the include writes before its line."""
    lint_comparison: dict[str, Any] | None = None
    """`lint` of the start's tree and of the tuned tree, at the admin's --fail-on."""
    no_response: NoResponse | None = None
    """Set when the session could not tell its points apart: it then recommends nothing."""
    figure_checks: dict[str, Any] | None = None
    """session/figure_check.py FigureChecks.to_dict(): the searched figures against their points' later runs."""
    lint_refused: list[dict[str, Any]] = field(default_factory=list)
    """Each point the candidate lint refused before any trial (refusals.LintRefusal.report_entry):
    mpm, origin, changed (from the start), first_error, errors (how many)."""

    @property
    def verdict_line(self) -> str:
        before = self.start_verdict.summary if self.start_verdict else "not measured"
        after = self.winner_verdict.summary if self.winner_verdict else "not measured"
        return f"before: {before}; after: {after}"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["verdict_line"] = self.verdict_line
        if self.gain is not None:
            data["gain"]["excludes_one"] = self.gain.excludes_one
        for change, raw in zip(self.recommendation.changes, data["recommendation"]["changes"]):
            raw["where"] = change.where
            raw["line"] = change.line
        data["evidence"] = {name: [dict(asdict(c), reference=c.reference) for c in cites]
                            for name, cites in self.evidence.items()}
        if self.no_response is not None:
            data["no_response"]["sentence"] = self.no_response.sentence
        return data


def build_report(cfg: "Config", space: Space, observations: Sequence[Observation], winner: Mapping[str, Value],
                 facts: SessionFacts, *, replicates: Replicates | None = None, surrogate: Surrogate | None = None,
                 seed: int = 0, notes: Sequence[str] = (), ablations=None,
                 suppressions: Mapping[str, str] | None = None, lint=None,
                 lint_refused: Sequence[LintRefusal] = ()) -> TuneReport:
    """Everything the report says, decided once.

    `winner`: the point recommended (the search's best less the changes the
    trials do not back: session/simplify.py); `notes`: what that left out and why.
    `replicates`: the interleaved runs of start and winner after the search.
    `lint_refused`: the points lint refused, never tried (refusals.py).
    `surrogate`: a model to ask (Surrogate.from_optimizer); by default a GP
    is fitted to the observations and the replicates, which tell it the
    noise of a trial.
    """
    if not facts.produced_at:
        from datetime import datetime, timezone

        facts.produced_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if surrogate is None:
        runs = [(space.start, v) for v in replicates.start] + [(winner, v) for v in replicates.winner] \
            if replicates is not None else []
        surrogate = Surrogate.fit(space, observations, extra=runs, seed=seed)
    gain = None
    notes = list(notes)
    refused = [refusal.report_entry(space) for refusal in lint_refused]
    refused_line = refusals_summary(refused)
    if refused_line is not None:
        notes.append(refused_line)
    if replicates is not None and min(len(replicates.start), len(replicates.winner)) >= 2:
        try:
            gain = measure_gain(replicates)
        except ValueError as exc:  # a start that met the SLO at no rate: no ratio to speak of
            notes.append(f"the gain could not be measured: {exc}")
    elif replicates is not None:
        notes.append("too few valid replicates to measure the gain (two of each at the least)")
    unresponsive = no_response(space, observations, winner, replicates, gain, ablations)
    if unresponsive is None:
        notes += misses_told_apart(space, observations, winner, replicates)
    # A session that cannot tell its points apart recommends nothing: the start is kept.
    recommendation = recommend(cfg, space, winner)
    if unresponsive is not None:
        recommendation = replace(recommendation, changes=[], winner=dict(space.start),
                                 notes=[f"No recommendation: {unresponsive.sentence}."])
    start_runs = _runs_of(space, observations, space.start) + list(replicates.start_verdicts if replicates else [])
    winner_runs = _runs_of(space, observations, winner) + list(replicates.winner_verdicts if replicates else [])
    if replicates is not None and replicates.start:
        start_level: float | None = sum(replicates.start) / len(replicates.start)
    else:
        measured = [float(o.objective) for o in observations  # type: ignore[arg-type]
                    if o.valid and o.objective is not None and _key(space, o.point) == _key(space, space.start)]
        start_level = sum(measured) / len(measured) if measured else None
    if surrogate is None:
        notes.append(f"fewer than {MIN_TRIALS_FOR_SURROGATE} valid trials: no model for sensitivity "
                     "or partial dependence")
    evidence = {c.directive: list(citations_for(c.directive)) for c in recommendation.changes
                if citations_for(c.directive)}
    return TuneReport(
        facts=facts,
        space={**space.to_dict(), "plan": space.describe(), "free": space.names},
        trials=trial_rows(space, observations, winner),
        recommendation=recommendation,
        diffs=diffs(cfg, recommendation),
        gain=gain,
        start_verdict=summarise_verdicts(start_runs),
        winner_verdict=summarise_verdicts(winner_runs),
        sensitivity=sensitivities(surrogate, recommendation),
        evidence=evidence,
        curves=curves(surrogate, observations, winner, space.start, seed=seed),
        start_level=start_level,
        notes=notes,
        ablations=ablations.to_dict() if ablations is not None else None,
        suppressions=dict(suppressions or {}),
        lint_comparison=lint_comparison(lint, winner, suppressions or {}) if lint is not None else None,
        no_response=unresponsive,
        figure_checks=check_figures(space, observations, later_runs(space, winner, replicates, ablations)).to_dict(),
        lint_refused=refused,
    )


def lint_comparison(lint, winner: Mapping[str, Value], suppressions: Mapping[str, str]) -> dict[str, Any]:
    """What the admin's `lint --fail-on` says of the start's tree and of the
    tuned one (the start's tree with the recommended lines read last):
    findings gone, findings added (a finding the include suppresses carries
    the comment's measured reason), and the exit code of each."""
    start_findings = lint.tree_findings(None)
    tuned_findings = lint.tree_findings(winner)
    for finding in tuned_findings:
        comment = suppressions.get(finding["directive"] or "")  # keyed by the include's directive
        if comment and finding["code"] in comment.split("--", 1)[0]:
            finding["suppressed"] = True
            finding["reason"] = comment.split("--", 1)[1].strip()
    # The same finding is the same code at the same place, or the same code
    # with the same message: under another MPM the tuned tree is judged on
    # its own, and what the start's tree says through httpd's defaults
    # (ServerTokens Full) stands at another line there.
    start_keys = {(f["code"], f["where"]) for f in start_findings} | \
        {(f["code"], f["message"]) for f in start_findings}
    tuned_keys = {(f["code"], f["where"]) for f in tuned_findings} | \
        {(f["code"], f["message"]) for f in tuned_findings}
    failing = set(lint.policy.failing(lint.fail_on))

    def exit_code(found: list[dict[str, Any]]) -> int:
        return 1 if any(f["severity"] in failing and not f["suppressed"] for f in found) else 0

    return {
        "fail_on": lint.fail_on, "profile": lint.profile, "settings": lint.settings.path,
        "start_exit": exit_code(start_findings), "tuned_exit": exit_code(tuned_findings),
        "gone": [f for f in start_findings if not {(f["code"], f["where"]), (f["code"], f["message"])} & tuned_keys],
        "added": [f for f in tuned_findings if not {(f["code"], f["where"]), (f["code"], f["message"])} & start_keys],
    }
