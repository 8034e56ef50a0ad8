"""The tuning session of `apache-advisor tune`: plan, search, replicate, report.

A session ties the pieces together on one staging target:

1. the config in use (read with advisor.config, after any interrupted run's
   candidate was put back) gives the search space, bounded by capacity's RAM
   sizing of this host and narrowed by `--space`;
2. each point the optimizer asks for is written to the managed include
   (ManagedConfig: validate before apply, roll back a refused reload) and
   measured: by default a knee search for the peak sustainable rate under the
   SLO, started from the incumbent's peak so that it needs a few probes, not
   a full doubling from the bottom;
3. every completed trial is appended to the session's journal as it
   completes, so that `--resume` can tell the optimizer what was measured;
4. after the search the starting config and the winner are measured again,
   interleaved, for the gain and its confidence interval, and the report is
   built (advisor.tuner.session.report_data);
5. whatever happens (success, a refused point, a dead server, Ctrl-C,
   SIGTERM) the server ends on the config it had; after kill -9 the next run
   of tune, bench or `staging down` restores it from ManagedConfig's journal.

Formatting is the command's business: the session tells a `SessionEvents`
what happens and returns data.
"""

from __future__ import annotations

import math
import os
import signal
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from advisor.errors import AdvisorError, ConfigError, UsageError
from advisor.tuner.search.optimizer import Observation, SearchResult, SearchSettings, TrialOutcome, make_searcher, run_search
from advisor.tuner.search.space import Space, Value
from advisor.tuner.staging.target import HostKernel, offered_load_text

# --------------------------------------------------------------------------
# Workloads

# A browser-like session over Almeida et al.'s (1996) file set: five requests
# with 0.2 s of think time between them, so that keep-alive (held connections
# against reconnects), KeepAliveTimeout (shorter or longer than the think
# time), the pool size and child recycling all bear on the same load.
SESSION_WORKLOADS: dict[str, tuple[str, int, float]] = {
    "almeida-sessions": ("almeida", 5, 0.2),
}
DEFAULT_WORKLOAD = "almeida-sessions"
OBJECTIVES = ("peak", "throughput", "latency")
SEARCHES = ("bayesian", "random")
# Points httpd refused in a row before the session stops.
MAX_REFUSED_IN_A_ROW = 3
REFUSED = "config refused"
# Rough costs for the plan's estimate (seconds) when no earlier session on
# this host measured them (session/pace.py): a reload or restart with its
# settling, and around each probe the quiet wait, the part of the warm-up a
# growing pool adds, and httperf's start and end. A probe took 18 s on
# average in a 15-trial session from the stock config on 2026-11-23, most
# of it the quiet wait timing out on a shrinking pool; since that wait ends
# when nothing is left to serve, a probe on the HTTPS sandbox took 7.4 s
# (1.3 s quiet, 2 s warm-up, 4 s of load window).
APPLY_S = 3.0
PROBE_OVERHEAD_S = 4.0
REPORT_S = 15.0
# The first step of an uncapped knee search from a good guess that is not
# the point's own measured peak (see TrialObjective._peak); knee_search
# squares it (1.56, then 2) while the probes keep passing or failing.
GUESS_STEP = 1.25
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
# (_measured_pruning), and the gain runs on its own only after a winner of
# one change, or when no round's point beat the start.
DEFAULT_GAIN_ALONE_SHARE = 0.2
# Changes the ablation rounds measure one by one; the winner's other changes
# are measured together, with those the model saw no effect of. A model
# point of the README's session at 07:38 on 2026-11-27 changed ten
# directives, six of them credited by a model of 15 trials in 16
# dimensions: one ablation each made 10 points a round, 50 runs, about 25
# minutes after the search. With two, a round has at most five points.
MAX_SINGLE_ABLATIONS = 2
# With the MPM among the changes, it is the one change measured alone; the
# new MPM's pool and keep-alive settings are measured together. A round of
# five points under a switch took 25 runs and 14 minutes in the README's
# session of 2026-11-28 (a prefork point after a reload warms up for 12 to
# 14 s while its pool grows), which kept the session above 20 minutes; the
# second single ablation had measured the pool's size within noise there
# and in the session of 2026-11-27. Under another MPM the pool's size means
# threads, not processes: judged with the thread settings it goes with.
SINGLE_ABLATIONS_WITH_MPM = 1


def single_ablations(changed: Sequence[str]) -> int:
    """How many of the changes the ablation rounds measure one by one."""
    return SINGLE_ABLATIONS_WITH_MPM if "MPM" in changed else MAX_SINGLE_ABLATIONS


# Measured one by one before any the model ranks: the MPM, the pool's size,
# and the directives the seeds measured large effects of (Arlitt &
# Williamson 2004: KeepAlive +53 % at 8 requests a connection, sec. 5.1.6;
# MaxRequestsPerChild 1,000 halving the peak, sec. 5.1.3), then
# HostnameLookups and BufferedLogs (work on every request).
FIRST_ABLATED = ("MPM", "MaxRequestWorkers", "KeepAlive", "MaxConnectionsPerChild", "HostnameLookups",
                 "BufferedLogs")


# Recommended only on an ablation of their own: a change whose effect shows
# only in some runs is the one a group's measured gain credits falsely.
# ListenBacklog acts only when the accept queue overflows; in the
# worst-practice session of 2026-11-27 it rode in a group of six whose
# ablation measured +89 %, while MaxConnectionsPerChild alone measured
# +1,307 % (the seeds' finding, Arlitt & Williamson 2004, sec. 5.1.3).
# Each with its reason and the values a change must go to for the rule to
# hold (None: any). The README's no-switch session of 2026-11-27 19:16
# recommended HostnameLookups On inside a group of seven whose measured
# +19.6 % came from the others (on loopback the lookup costs nothing), while
# On -> Off from a worst-practice start only takes work away and may ride
# in a group.
MEASURED_ALONE_ONLY: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "ListenBacklog": ("it acts only when the accept queue overflows", None),
    "HostnameLookups": ("a reverse lookup costs what the resolver takes, and on a staging link /etc/hosts "
                        "answers it for nothing", ("On", "Double")),
}


def split_unseen(unseen: Sequence[str]) -> tuple[list[str], list[str]]:
    """The changes the model saw no effect of: (those measured together as one
    ablation, those of FIRST_ABLATED, which stay candidates to be measured on
    their own). In the worst-practice session of 2026-11-27 a model of five
    trials in twelve dimensions saw no effect of MaxConnectionsPerChild
    100 -> 3,540 (the start lies outside the space, and 1,001 stood for it),
    the change the seeds say halves the peak (Arlitt & Williamson 2004,
    sec. 5.1.3): grouped, its effect had no figure of its own."""
    return ([name for name in unseen if name not in FIRST_ABLATED],
            [name for name in unseen if name in FIRST_ABLATED])


def workload_names() -> tuple[str, ...]:
    from advisor.tuner.load.workload import WORKLOAD_NAMES

    return tuple(SESSION_WORKLOADS) + tuple(WORKLOAD_NAMES)


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
        if self.think_s is not None:
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
    if base_name == "almeida" and work_dir is None:
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


# --------------------------------------------------------------------------
# The objective


@dataclass(frozen=True)
class ObjectiveSpec:
    """What a trial measures; every kind is told to the optimizer as higher-is-better."""

    kind: str = "peak"
    rate: float | None = None
    """throughput and latency: the offered rate (sessions or connections per second)."""
    slo_ms: float = 100.0
    slo_errors_pct: float = 1.0
    rtt_ms: float = 0.0
    """The clients' round trip (--rtt): with it the SLO and the latency
    objective judge the client-perceived reply time."""
    rtt_how: str = ""
    """advisor.tuner.load.roundtrips.RTT_ADDED or RTT_ON_LINK (with rtt_ms)."""

    def __post_init__(self) -> None:
        if self.kind not in OBJECTIVES:
            raise UsageError(f"unknown --objective {self.kind!r}", hint=f"choose {', '.join(OBJECTIVES)}")
        if self.kind != "peak" and (self.rate is None or self.rate <= 0):
            raise UsageError(f"--objective {self.kind} measures at a fixed offered rate", hint="give it with --rate R")
        if self.slo_ms <= 0 or not 0 < self.slo_errors_pct <= 100:
            raise UsageError("the SLO needs --slo-ms > 0 and 0 < --slo-errors <= 100")

    def identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = {"kind": self.kind, "rate": self.rate if self.kind != "peak" else None,
                                    "slo_ms": self.slo_ms, "slo_errors_pct": self.slo_errors_pct}
        if self.rtt_ms:  # only then: a journal written before --rtt existed still resumes
            identity["rtt_ms"] = self.rtt_ms
        return identity

    @property
    def reply(self) -> str:
        """The reply time the SLO reads."""
        return f"client-perceived reply (RTT {self.rtt_ms:g} ms)" if self.rtt_ms else "reply"

    def rtt_text(self) -> str:
        """The plan's and the report's line on the round trip ("" without --rtt)."""
        from advisor.tuner.load.roundtrips import RTT_ON_LINK

        if not self.rtt_ms:
            return ""
        if self.rtt_how == RTT_ON_LINK:
            return (f"{self.rtt_ms:g} ms, measured: netem delays the clients' link by it; the SLO reads the "
                    "reply time plus connection set-up per reply")
        return (f"{self.rtt_ms:g} ms, added (this link cannot delay packets): the server sees every think time "
                f"lengthened by {self.rtt_ms:g} ms; the SLO reads the measured reply time plus {self.rtt_ms:g} ms "
                "per TCP connection, TLS handshake round trip and request, spread over the replies")

    def label(self, unit: str) -> str:
        slo = f"mean {self.reply} < {self.slo_ms:g} ms, errors < {self.slo_errors_pct:g} %"
        if self.kind == "peak":
            return f"peak sustainable rate under the SLO ({slo})"
        if self.kind == "throughput":
            return (f"throughput at {self.rate:g} {unit}, scaled down by mean reply time / {self.slo_ms:g} ms "
                    "past the bound")
        return f"mean {self.reply} time at {self.rate:g} {unit}, told as its inverse, 1000 / mean ms (higher is faster)"

    def short_label(self, unit: str) -> str:
        """The label for the report and its plots' axes."""
        rtt = f", RTT {self.rtt_ms:g} ms" if self.rtt_ms else ""
        if self.kind == "peak":
            return f"peak rate under the SLO ({self.slo_ms:g} ms, {self.slo_errors_pct:g} % errors{rtt})"
        if self.kind == "throughput":
            return f"throughput at {self.rate:g} {unit} (bound {self.slo_ms:g} ms{rtt})"
        return f"inverse mean {self.reply} time at {self.rate:g} {unit}"

    @property
    def unit(self) -> str:
        return "1/s" if self.kind == "latency" else "replies/s"


@dataclass
class ProbeSettings:
    """How each measurement is run (bench's knobs)."""

    duration_s: float = 3.0
    warmup_s: float | None = None
    """None: until the server's pool is steady (trial/runner.py decides); 0: none."""
    timeout_s: float = 2.0
    start_rate: float = 10.0
    """The first knee search starts here (later ones at the incumbent's peak)."""
    max_rate: float = 20000.0
    max_probes: int = 4
    """Probes per knee search once an incumbent's peak is known."""
    first_max_probes: int = 10
    """Probes of the first knee search, which starts from nothing."""
    tolerance: float = 0.1
    retries: int = 1
    interval: float | None = None
    tls_resume: str = "session"
    """HTTPS targets: session (httperf resumes within a visitor's session) or never (--ssl-no-reuse)."""

    def check(self) -> None:
        if self.tls_resume not in ("session", "never"):
            raise UsageError(f"unknown --tls-resume {self.tls_resume!r}", hint="choose session or never")
        if not 0 < self.duration_s <= 600:
            raise UsageError("--duration must be between 0 and 600 seconds")
        if self.warmup_s is not None and not 0 <= self.warmup_s <= 120:
            raise UsageError("--warmup must be between 0 and 120 seconds", hint="leave it out to warm up until the pool is steady")
        if self.max_probes < 1 or self.first_max_probes < 1:
            raise UsageError("--max-probes must be at least 1")
        if not 0 < self.start_rate <= self.max_rate:
            raise UsageError("need 0 < --start-rate <= --max-rate")

    @property
    def sample_interval(self) -> float:
        return self.interval or (1.0 if self.duration_s >= 10 else max(0.25, self.duration_s / 6))


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


# --------------------------------------------------------------------------
# What the command sees


class SessionEvents:
    """What a session tells its display; every method may be left as is."""

    def note(self, text: str) -> None: ...

    def trial_started(self, number: int, total: int, point: Mapping[str, Value], origin: str) -> None: ...

    def probe(self, result) -> None:
        """One httperf run (advisor.tuner.trial.runner.TrialResult) inside a trial."""

    def trial_done(self, observation: Observation, best: float | None, eta_s: float | None) -> None: ...

    def replicate_done(self, index: int, total: int, role: str, outcome: TrialOutcome) -> None: ...

    def ablation_done(self, index: int, total: int, role: str, outcome: TrialOutcome) -> None: ...


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
        if self.load:
            out.append(f"load: {self.load}")
        if self.round_trip:
            out.append(f"round trip: {self.round_trip}")
        limit = f", stopping after {_duration(self.max_time_s)}" if self.max_time_s else ""
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
        out.append(f"estimated time: about {_duration(self.estimate_s)}"
                   + (f" ({self.estimate_extras})" if self.estimate_extras else ""))
        out.append(f"journal: {self.journal} (continue an interrupted session with --resume)")
        out.append(f"report: {self.report_dir}")
        if self.pending_restore:
            out.append("an interrupted run left a candidate in the managed include: it is put back before "
                       "the first trial (the space above reads the candidate)")
        return out

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SessionOutcome:
    """What the session measured; the command writes the report from it."""

    report: Any
    """advisor.tuner.session.report_data.TuneReport (None when no trial was valid)."""
    search: SearchResult
    observations: list[Observation]
    winner: dict[str, Value] | None
    replicates: Any
    normal_stop: bool
    """False: the session was stopped by invalid trials or refused points (see search.advice)."""


class PointRefused(Exception):
    """httpd (or the target) refused a candidate: the trial failed, the session goes on."""

    def __init__(self, error: AdvisorError):
        super().__init__(error.render())
        self.error = error


# --------------------------------------------------------------------------
# The session


class TuneSession:
    _surrogate = None  # the model of the trials, once _simplify fitted it; it ranks the single ablations
    planned_s: float | None = None  # the plan's estimate, for the report beside the time taken
    signalled: int | None = None  # the Ctrl-C or SIGTERM that came while the session held the target

    def __init__(self, target, work_dir: Path | None, workload: SessionWorkload, objective: ObjectiveSpec,
                 probes: ProbeSettings, settings: SessionSettings, events: SessionEvents | None = None) -> None:
        settings.check()
        probes.check()
        self.target = target
        self.work_dir = work_dir
        self.workload = workload
        self.objective = objective
        self.probes = probes
        self.settings = settings
        self.events = events or SessionEvents()
        self.cfg = None
        self.space: Space | None = None
        self.lint = None
        self.managed = None
        self.resumed: list[Observation] = []
        self.registry: list = []  # httperf processes running now (ended on interrupt)
        self.restore_error: AdvisorError | None = None
        """Set when the original config could not be reloaded on the way out."""
        from advisor.tuner.session.pace import Pace

        self.pace = Pace()
        self.pace_key: str | None = None

    # ---- paths -----------------------------------------------------------

    @property
    def journal_path(self) -> Path:
        from advisor.tuner.session.journal import journal_path

        return journal_path(self.settings.session_dir)

    # ---- the server, kept safe -------------------------------------------

    @contextmanager
    def open(self) -> Iterator["TuneSession"]:
        """Hold the target for the session: one run at a time, any interrupted
        run's candidate put back first, the original config restored on the
        way out whatever happened. SIGTERM is turned into KeyboardInterrupt,
        so that it restores like Ctrl-C."""
        from advisor.tuner.staging.target import ManagedConfig

        previous = signal.getsignal(signal.SIGTERM)
        previous_int = signal.getsignal(signal.SIGINT)
        self.signalled = None

        def on_interrupt(signum, frame):
            self.signalled = signum
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, on_interrupt)
        signal.signal(signal.SIGINT, on_interrupt)
        managed = ManagedConfig(self.target)
        try:
            managed.__enter__()
        except BaseException:
            signal.signal(signal.SIGTERM, previous)
            signal.signal(signal.SIGINT, previous_int)
            raise
        self.managed = managed
        if managed.stray_load:
            self.events.note("ended httperf left running by an interrupted run (pid "
                             + ", ".join(str(p) for p in managed.stray_load) + ")")
        if managed.recovered is not None:
            self.events.note("restored the original managed include left by an interrupted run "
                             f"(pid {managed.recovered.pid})")
        failed = False
        try:
            yield self
            self.raise_if_signalled()
        except BaseException:
            failed = True
            raise
        finally:
            # Nothing may interrupt the restore: a second Ctrl-C or SIGTERM is ignored meanwhile.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            try:
                self._end_load()
                self._restore(managed, quiet=failed)
            finally:
                self.managed = None
                signal.signal(signal.SIGINT, previous_int)
                signal.signal(signal.SIGTERM, previous)

    def raise_if_signalled(self) -> None:
        """End the session for a Ctrl-C or SIGTERM whose KeyboardInterrupt was lost.

        Python prints and drops an exception raised where it cannot propagate
        (an at-fork callback, a finalizer), and a signal handled there would
        otherwise let the session run on to its end and exit 0. Checked after
        each trial and when the session's work ends."""
        if self.signalled is not None:
            raise KeyboardInterrupt

    def _end_load(self) -> None:
        for process in list(self.registry):
            if process.poll() is None:
                process.kill()
                try:
                    process.wait(timeout=5)
                except Exception:
                    pass

    def _restore(self, managed, quiet: bool) -> None:
        """Put the original back. When the session already failed (a dead
        server, say), that failure is what the admin must read: a restore
        that could write the file but not reload a dead server stays silent."""
        try:
            managed.restore()
        except AdvisorError as error:
            self.restore_error = error
            if not quiet:
                raise
        finally:
            managed.release()

    # ---- the plan ----------------------------------------------------------

    def prepare(self) -> Plan:
        """Read the config in use, derive and narrow the space, check the
        journal: everything before the first trial, and nothing that changes
        the server."""
        from advisor.tuner.search.space import DEFAULT_SOMAXCONN, derive_space, mpm_kept_by, narrow_from_file
        from advisor.tuner.search.space_lint import CandidateLint
        from advisor.tuner.session.journal import read_journal

        cfg, options = load_config_in_use(self.target)
        if self.settings.allow_mpm_switch and mpm_kept_by(cfg) is None:
            self.target.check_mpm_switch(cfg)  # one line, exit 2, before anything changes
        mpms = ("prefork", "worker", "event") if self.settings.allow_mpm_switch else (cfg.mpm,)
        host = self.target.host_kernel()
        docroot = self._docroot() if self.target.on_this_machine else None
        bounds, why = ram_workers(cfg, [m for m in mpms if m], self.settings.ram_bytes, docroot, host)
        space = derive_space(cfg, bounds, allow_mpm_switch=self.settings.allow_mpm_switch,
                             somaxconn=host.somaxconn or DEFAULT_SOMAXCONN, ram_why=why,
                             over_tls=self.target.base_url.lower().startswith("https:"))
        if self.settings.space_file:
            space = narrow_from_file(space, self.settings.space_file)
        self._leave_out_overridden(cfg, space)
        self.cfg, self.space = cfg, space
        self._load_pace(space)
        sandbox = getattr(self.target, "sandbox", None)
        self.lint = CandidateLint(cfg, space, options if options.root else None, policy=self.settings.lint_policy,
                                  hidden=(str(sandbox.instrument_path),) if sandbox is not None else ())
        # Candidates, and the report's lint of the start's tree, are judged on
        # the tree as it is now: the trials write the managed include (and a
        # switch edits the MPM's lines), so the live tree at the report holds
        # the last run's point, and read as "the start" it made the winner's
        # own P102 look like one the start had.
        self.lint.freeze()
        path = self.journal_path
        if self.settings.resume:
            from advisor.tuner.session.journal import check_compatible

            contents = read_journal(path)
            check_compatible(contents.header, space=space.signature(), workload=self.workload.identity(),
                             objective=self.objective.identity(), path=str(path))
            self.resumed = list(contents.trials)
        elif path.exists():
            raise UsageError("a tuning journal is already here", file=str(path),
                             hint="continue it with --resume, or pick a new --report directory")
        pending = False
        if self.managed is None:
            pending = self.target.state_base.with_name(self.target.state_base.name + ".journal").exists()
        described = self.target.describe()  # a remote target names its config host:path
        self.planned_s = self.estimate_s(len(self.resumed))
        return Plan(
            target=described, config=str(described.get("config") or cfg.main_file), mpm=space.mpm,
            dimensions=[{"name": d.name, "text": d.describe(), "fixed": d.is_fixed,
                         "start": _plan_start_text(space, d)} for d in space.dimensions],
            notes=list(space.notes) + list(space.start_notes),
            workload=self.workload.describe(), objective=self.objective.label(self.workload.unit),
            measurement=self._measurement_text(), budget=self.settings.budget,
            max_time_s=self.settings.max_time_s, search=self.settings.search, seed=self.settings.seed,
            gain_replicates=self.settings.gain_replicates, estimate_s=self.planned_s,
            estimate_extras=self.estimate_extras(),
            ablation_rounds=self.settings.ablation_rounds, lint_gate=self._lint_gate_text(),
            journal=str(path), report_dir=str(self.settings.session_dir), resumed=len(self.resumed),
            pending_restore=pending, load=self._load_text(), round_trip=self.objective.rtt_text(),
            mpm_searched=space.dimension("MPM") is not None)

    def _leave_out_overridden(self, cfg, space) -> None:
        """Dimensions whose directive a later line of the config overrides (or the
        virtual host the URL reaches sets) leave the search, with the line in the
        plan: a trial would measure the config's value under the trial's name.
        When that leaves nothing to search, the session is refused."""
        from advisor.tuner.search.space import leave_out
        from advisor.tuner.staging.overrides import target_overrides

        names = [d.name for d in space.dimensions if d.name != "MPM"] + ["ServerLimit", "ThreadLimit"]
        found = target_overrides(self.target, names, cfg)
        for override in found:
            leave_out(space, override.name, f"{self.target.where(override.file)}:{override.line}: {override.what()}")
        if found and not space.free:
            first = found[0]
            raise ConfigError(f"nothing is left to tune: {first.what()}, and every other dimension is fixed",
                              file=self.target.where(first.file), line=first.line, hint=first.fix())

    def _lint_gate_text(self) -> str:
        lint = self.lint
        if lint is None:
            return ""
        if lint.fail_on == "never":
            return "--fail-on never: the recommendation is not held to lint"
        settings = f"settings {lint.settings.path}" if lint.settings.path else "no settings file"
        return (f"a change that brings a finding at or above --fail-on {lint.fail_on} (profile {lint.profile}, "
                f"{settings}) is kept only with a measured gain beyond noise, and then with a suppression "
                "comment that gives the figure; otherwise it goes back to the start's value")

    def _docroot(self) -> str | None:
        if self.work_dir is not None and (self.work_dir / "docroot").is_dir():
            return str(self.work_dir / "docroot")
        return None

    def _measurement_text(self) -> str:
        p = self.probes
        warm = "a warm-up until the pool is steady" if p.warmup_s is None else (
            "no warm-up" if p.warmup_s == 0 else f"{p.warmup_s:g} s of warm-up")
        if self.objective.kind == "peak":
            return (f"a knee search for the highest rate that meets the SLO: the first from {p.start_rate:g} "
                    f"{self.workload.unit} (up to {p.first_max_probes} probes), each later one from the "
                    f"incumbent's peak to twice it (up to {p.max_probes} probes); each probe {p.duration_s:g} s "
                    f"of load after {warm}")
        return f"one run of {p.duration_s:g} s at {self.objective.rate:g} {self.workload.unit} after {warm}"

    def _load_text(self) -> str:
        p = self.probes
        peak = p.max_rate if self.objective.kind == "peak" else self.objective.rate
        clients = self.settings.clients
        described = self.target.describe()
        text = offered_load_text(described.get("url", "?"),
                                 self.settings.client_cpus if self.settings.client_here else None, peak,
                                 self.workload.unit, self.workload.calls,
                                 generators=clients.describe() if clients is not None else None)
        tls = described.get("tls")
        if isinstance(tls, dict):
            resume = ("each visitor's later connections resume its TLS session" if p.tls_resume == "session"
                      else "every connection a full TLS handshake (--tls-resume never)")
            text += f"; HTTPS: {tls.get('version')}, {tls.get('key_type') or 'unknown'} key, {resume}"
        return text

    def _load_pace(self, space: Space) -> None:
        """The last session's measured costs on this host, workload and transport, for the plan."""
        from advisor.tuner.session.pace import Pace, load_earlier, pace_key

        described = self.target.describe()
        mpm = "any" if space.dimension("MPM") is not None else space.mpm
        self.pace_key = pace_key(described, self.workload.name, isinstance(described.get("tls"), dict),
                                 self.objective.rtt_ms, mpm, self.probes.duration_s, self.probes.warmup_s)
        self.pace = Pace(earlier=load_earlier(self.pace_key))

    def _probe_s(self) -> float:
        p = self.probes
        if p.warmup_s is not None:
            warm = p.warmup_s
        else:
            session = (self.workload.calls - 1) * (self.workload.think_s or 0.0)
            warm = max(1.5, session + 1.0) + 1.0
        return warm + p.duration_s + PROBE_OVERHEAD_S

    def _trial_s(self, first: bool, uncapped: bool = False) -> float:
        """One run's expected seconds: this session's measured probes and their
        cost when it has them, else the last session's on this host, else
        the defaults below."""
        from advisor.tuner.session.pace import FIRST, OWN, SEARCH

        if self.objective.kind != "peak":
            kind, probes = (OWN if uncapped else SEARCH), 1.0
        elif first:  # doubling from the start rate, then bisecting: 8 or 9 probes
            kind, probes = FIRST, min(self.probes.first_max_probes, 8)
        elif uncapped:  # a replicate or ablation run: small steps from its own peak (2 to 4)
            kind, probes = OWN, min(self.probes.first_max_probes, 3)
        else:  # from the incumbent's peak; one probe when it fails that clearly
            kind, probes = SEARCH, min(self.probes.max_probes, 3)
        return self.pace.run_s(kind, probes, self._probe_s(), APPLY_S)

    def estimate_s(self, done: int) -> float:
        """Seconds the rest of the session should take (a rough figure for the plan)."""
        left = max(0, self.settings.budget - done)
        search = 0.0
        if left:
            search = self._trial_s(first=done == 0) + (left - 1) * self._trial_s(first=False)
        if self.settings.max_time_s is not None:
            search = min(search, self.settings.max_time_s)
        return search + self._after_search_s() + REPORT_S

    def _after_search_s(self) -> float:
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
        return self._after_search_runs() * self._trial_s(first=False, uncapped=True)

    def _after_search_runs(self) -> float:
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
        from advisor.tuner.session.pace import after_search_record

        s = self.settings
        if not s.ablation_rounds:
            return ""
        own = self._trial_s(first=False, uncapped=True)
        runs = self._after_search_runs()
        _, sessions = after_search_record(self.pace.earlier)
        if sessions:
            text = (f"the rounds and the gain about {runs:.0f} runs of {own:.0f} s, the mean of the last "
                    f"{sessions} session{'s' if sessions != 1 else ''} here")
            if s.gain_replicates:
                # The README's session of 2026-11-28 took 35 runs after the
                # search where its plan, from a record of 25, said 20 min.
                text += (f"; {2 * s.gain_replicates} more (about {_duration(2 * s.gain_replicates * own)}) when "
                         "no round ran the point recommended and its gain is measured on its own")
            return text
        parts = [f"with {EXPECTED_ABLATED} changes ablated; each change kept beyond {EXPECTED_ABLATED} adds about "
                 f"{_duration(s.ablation_rounds * own)}"]
        if s.gain_replicates:
            parts.append(f"a gain measured on its own (when the rounds did not run the point recommended) takes "
                         f"about {_duration(2 * s.gain_replicates * own)}, counted at one in five: no session "
                         "here on record")
        return "; ".join(parts)

    # ---- the search --------------------------------------------------------

    def run(self) -> SessionOutcome:
        """The trials, the replicates and the report's data. Call inside open(), after prepare()."""
        from advisor.tuner.session.journal import Journal, JournalHeader

        if self.managed is None or self.space is None:
            raise RuntimeError("TuneSession.run needs open() and prepare() first")
        space = self.space
        s = self.settings
        header = JournalHeader(space=space.signature(), workload=self.workload.identity(),
                               objective=self.objective.identity(), seed=s.seed, search=s.search,
                               extra={"target": self.target.describe(), "start": dict(space.start)})
        if s.resume:
            journal, contents = Journal.resume(s.session_dir, space=header.space, workload=header.workload,
                                               objective=header.objective)
            done = list(contents.trials)
            earlier_gain = list(contents.gain_runs)
            earlier_ablation = list(contents.ablation_runs)
        else:
            journal = Journal.create(s.session_dir, header)
            done = []
            earlier_gain = []
            earlier_ablation = []
        settings = SearchSettings(budget=s.budget, max_time_s=s.max_time_s, seed=s.seed)
        searcher = make_searcher(s.search, space, settings)
        searcher.replay(done)
        for obs in done:
            if obs.verdict == REFUSED:
                searcher.reject(obs.point)
        runner = TrialObjective(self.target, self.managed, space, self.workload, self.objective, self.probes,
                                server_cpus=s.server_cpus, client_cpus=s.client_cpus, events=self.events,
                                registry=self.registry, incumbent=lambda: (searcher.incumbent() or (None,))[0],
                                clients=s.clients, pace=self.pace)
        for obs in done:
            runner.learn(obs)
        began = time.monotonic()
        result = self._search(searcher, runner, journal, done, began)
        runner.on_start = None
        observations = result.observations
        winner = result.best
        if winner is None:
            raise AdvisorError(f"no trial measured the server ({result.stop_reason})",
                               hint=result.advice or "see the journal for each trial's reasons")
        normal = result.advice is None
        simplified = self._simplify(observations, winner)
        for note in simplified.notes():
            self.events.note(note)
        winner = simplified.point
        notes = simplified.notes()
        ablations = None
        replicates = None
        if s.ablation_rounds and normal:
            together, first = split_unseen([r.dimension for r in simplified.deferred])
            winner, unmeasured = self._revert_unless_alone(winner, together)
            notes += unmeasured
            # The rounds measure what may be recommended: a change that brings
            # a lint finding and that no round will measure on its own could
            # not earn its suppression, so it goes back before them.
            _, alone, _ = self._single_slots(winner, together)
            winner, _, gated = self._lint_gate(winner, None, None, measured_later=alone)
            for note in gated:
                self.events.note(note)
            notes += gated
            together = [name for name in together if winner.get(name) != self.space.start.get(name)]
            if together:
                self.events.note(f"the model of the trials sees no effect of {', '.join(together)}: "
                                 "measured together, as one ablation, before any goes back")
            # Candidates for an ablation of their own: said only of those that get one.
            first = [name for name in first if name in alone]
            if first:
                self.events.note(f"the model of the trials sees no effect of {', '.join(first)} either, but "
                                 f"{'it is' if len(first) == 1 else 'they are'} among the changes measured one "
                                 "by one first (the MPM, the pool's size, what the seeds measured large)")
            ablations = self._ablate(runner, winner, journal, earlier_ablation, together=together)
        before_pruning = list(notes)
        if ablations is not None:
            winner, reverted = self._drop_unearned(winner, ablations)
            notes += reverted
            replicates = self._gain_from_rounds(winner, ablations)
            if replicates is not None:
                notes.append(replicates.source)
        if s.gain_replicates and normal and replicates is None:
            replicates = self._replicates(runner, winner, journal, earlier_gain)
        if ablations is None and replicates is not None:
            winner, single = self._drop_single_within_noise(winner, replicates)
            notes += single
        if replicates is not None:
            winner, unearned = self._keep_start_without_a_gain(winner, replicates)
            notes += unearned
        whole = self._whole_when_no_part_earns(winner, ablations)
        if whole is not None:
            winner, replicates, why = whole
            notes = before_pruning + [why]
        winner, replicates, suppressions, gated = self._gate_the_gain(winner, ablations, replicates, runner, journal)
        notes += gated
        report = self._report(observations, winner, replicates, result, time.monotonic() - began,
                              notes, ablations=ablations, suppressions=suppressions)
        if not s.resume:  # a resumed session took some of its runs from the journal
            from advisor.tuner.session.pace import OWN

            self.pace.after_search_runs = self.pace.costs[OWN].runs
        if self.pace_key is not None and normal:
            # A session stopped early (disturbed trials, say) measured its host
            # at its worst: the next plan would start from that.
            from advisor.tuner.session.pace import save

            save(self.pace_key, self.pace)
        return SessionOutcome(report, result, observations, winner, replicates, normal)

    def _simplify(self, observations: list[Observation], best: dict[str, Value]):
        """The search's best point less the changes the trials do not back (session/simplify.py)."""
        from advisor.tuner.search.surrogate import Surrogate
        from advisor.tuner.session.simplify import simplify

        surrogate = Surrogate.fit(self.space, observations, seed=self.settings.seed)
        self._surrogate = surrogate
        # With measurements to follow, a change that brings a lint finding is
        # judged on them (the lint gate after the gain), not on the model.
        measured_later = bool(self.settings.gain_replicates or self.settings.ablation_rounds)
        return simplify(self.space, best, lint=self.lint, surrogate=surrogate, judge_lint=not measured_later,
                        judge_model=not self.settings.ablation_rounds)

    def _search(self, searcher, runner: "TrialObjective", journal, done: list[Observation],
                began: float) -> SearchResult:
        """run_search, restarted after each point httpd refused.

        run_search knows valid and invalid trials; a refused point is neither
        (nothing was measured), so the objective raises PointRefused, and the
        refusal is journalled, told to the optimizer as a poor point, and the
        search goes on from where it was; three in a row stop the session.
        """
        observations = list(done)
        refused_in_row = 0
        for obs in reversed(done):
            if obs.verdict != REFUSED:
                break
            refused_in_row += 1
        asking = _Asking(searcher)
        total_time = self.settings.max_time_s
        check = (lambda point: self.lint.check(point).errors) if self.lint is not None else None

        def record(obs: Observation) -> None:
            nonlocal refused_in_row
            journal.append(obs)
            self.raise_if_signalled()
            observations.append(obs)
            runner.learn(obs)
            refused_in_row = refused_in_row + 1 if obs.verdict == REFUSED else 0
            self.events.trial_done(obs, _best_mean(self.space, observations), self._eta(observations))

        runner.on_start = lambda point: self.events.trial_started(
            len(observations) + 1, self.settings.budget, point, asking.last[1] if asking.last else "")
        while True:
            if total_time is not None:
                searcher.settings.max_time_s = max(0.0, total_time - (time.monotonic() - began))
            try:
                return run_search(asking, runner, check=check, on_trial=record, done=observations)
            except PointRefused as refused:
                point, origin = asking.last if asking.last is not None else ({}, "model")
                if origin == "start":
                    raise AdvisorError(f"httpd refused the starting config as the tuner writes it: "
                                       f"{refused.error.message}", file=refused.error.file,
                                       line=refused.error.line,
                                       hint="check the config in use with `apache-advisor lint` and `httpd -t`") \
                        from None
                obs = Observation(trial=len(observations) + 1, point=dict(point), objective=None, valid=False,
                                  verdict=REFUSED, details={"error": refused.error.render(),
                                                            "directives": self.space.directives(point)},
                                  origin=origin, elapsed_s=runner.last_elapsed)
                record(obs)
                searcher.reject(point)
                if refused_in_row >= MAX_REFUSED_IN_A_ROW:
                    best = searcher.incumbent()
                    return SearchResult(observations, best[0] if best else None, best[1] if best else None,
                                        best[2] if best else 0,
                                        f"httpd refused {MAX_REFUSED_IN_A_ROW} points in a row",
                                        refused.error.render(), [], time.monotonic() - began)
                if len(observations) >= self.settings.budget:
                    best = searcher.incumbent()
                    return SearchResult(observations, best[0] if best else None, best[1] if best else None,
                                        best[2] if best else 0, "budget", None, [], time.monotonic() - began)

    def _eta(self, observations: list[Observation]) -> float | None:
        """The rest of the session from this session's measured runs: the
        search trials left, then the ablation rounds and the gain replicates.
        The first trial searches from the start rate and foretells little of
        the later ones (a mean that included it said 92 min left where 30
        were): each kind of run is timed on its own (session/pace.py)."""
        left = max(0, self.settings.budget - len(observations))
        return left * self._trial_s(first=False) + self._after_search_s()

    # ---- the gain ----------------------------------------------------------

    def _replicates(self, runner: "TrialObjective", winner: dict[str, Value], journal, earlier: list):
        """The interleaved gain runs, each journalled as it completes; runs an
        interrupted session journalled for this same start and winner are
        taken from the journal instead of measured again."""
        from advisor.tuner.session.gain import Replicates, replicate_order
        from advisor.tuner.session.journal import GainRun

        space = self.space
        if _key(space, winner) == _key(space, space.start):
            self.events.note("the starting config is the winner: no gain to measure")
            return None
        roles = replicate_order(self.settings.gain_replicates)
        points = {"start": dict(space.start), "winner": dict(winner)}
        # Runs of another winner measured another comparison: none of them counts.
        same = all(_key(space, run.point) == _key(space, points[run.role]) for run in earlier)
        kept = {run.index: run for run in earlier if same and run.index <= len(roles)
                and roles[run.index - 1] == run.role}
        if kept:
            self.events.note(f"{len(kept)} gain run(s) taken from the journal")
        runner.uncapped = True
        runs: list[tuple[str, TrialOutcome]] = []
        for index, role in enumerate(roles, start=1):
            point = points[role]
            if index in kept:
                run = kept[index]
                runs.append((role, TrialOutcome(run.objective if run.objective is not None else 0.0, run.valid,
                                                run.verdict, dict(run.details))))
                continue
            try:
                outcome = runner(dict(point))
                if not outcome.valid:
                    outcome = runner(dict(point))  # once more, as the search does
            except PointRefused as refused:
                self.events.note(f"replicate {index} of the {role} was refused: {refused.error.render()}")
                continue
            journal.append_gain(GainRun(index, role, dict(point), float(outcome.objective), outcome.valid,
                                        outcome.verdict, outcome.details))
            runs.append((role, outcome))
            self.events.replicate_done(index, len(roles), role, outcome)
        return Replicates.from_outcomes(runs)

    # ---- the ablations ----------------------------------------------------

    def _ablate(self, runner: "TrialObjective", winner: dict[str, Value], journal, earlier: list,
                together: Sequence[str] = ()):
        """The winner and the winner less each of its changes, in interleaved
        rounds, each run journalled; runs an interrupted session journalled
        for the same points are taken from the journal. The changes in
        `together` (the model saw no effect of each) are reverted as one."""
        from advisor.tuner.session.ablation import (GROUP_JOIN, MIN_ROUNDS, START, WINNER, ablation_order,
                                                    measure_effects, members, role_without, settled)
        from advisor.tuner.session.journal import GainRun

        space = self.space
        changed, ablated, weaker = self._single_slots(winner, together)
        if len(changed) < 2:
            # One change: the gain's replicates are its ablation.
            return None
        grouped = [name for name in changed if name in together] + weaker
        if weaker:
            measurable = len(ablated) + len(weaker)
            which = ("the MPM is (under a switch it alone is measured on its own)" if ablated == ["MPM"] else
                     f"{', '.join(ablated)} {'is' if len(ablated) == 1 else 'are'} (the MPM, the pool's size and "
                     "what the seeds measured large first, then the model's strongest)")
            self.events.note(
                f"{measurable} changes could be measured one by one: {which}, and "
                f"{', '.join(weaker)} together with the changes the model saw no effect of, so a round "
                f"stays at {single_ablations(changed) + 3} points (one ablation each would take "
                f"{self.settings.ablation_rounds * (measurable + len(together) + 2)} runs)")
        if len(grouped) > 1:
            ablated.append(GROUP_JOIN.join(grouped))
        else:
            ablated += grouped
        points: dict[str, dict[str, Value]] = {WINNER: dict(winner)}
        values: dict[str, tuple[str, str]] = {}
        written = space.as_written(space.start)
        for name in ablated:
            without = dict(winner)
            for member in members(name):
                without[member] = space.start[member]
            errors = self.lint.check(without).errors if self.lint is not None else []
            if errors:
                self.events.note(f"{name} cannot be reverted alone (lint: {errors[0]}): "
                                 "its effect is not measured on its own")
                continue
            points[role_without(name)] = without
            values[name] = (", ".join(space.value_text(m, winner[m]) for m in members(name)),
                            ", ".join(space.value_text(m, written[m]) for m in members(name)))
        if not values:
            return None
        # With a gain to measure, the start runs in every round too: the
        # gain of the winner, or of the winner less the one change the rounds
        # send back, then comes from the same interleaved runs (no second
        # set of ten).
        with_start = bool(self.settings.gain_replicates)
        if with_start:
            points[START] = dict(space.start)
        roles = ablation_order(list(values), self.settings.ablation_rounds, with_start=with_start)
        same = all(run.role in points and _key(space, run.point) == _key(space, points[run.role]) for run in earlier)
        kept = {run.index: run for run in earlier if same and run.index <= len(roles)
                and roles[run.index - 1] == run.role}
        if kept:
            self.events.note(f"{len(kept)} ablation run(s) taken from the journal")
        runner.uncapped = True
        outcomes: list[tuple[str, TrialOutcome]] = []
        per_round = len(points)
        stopped = ""
        for index, role in enumerate(roles, start=1):
            if index > 1 and (index - 1) % per_round == 0 and (index - 1) // per_round >= MIN_ROUNDS \
                    and settled(_as_runs(outcomes), list(points)):
                stopped = (f"the ablations stopped after {(index - 1) // per_round} of "
                           f"{self.settings.ablation_rounds} rounds: every comparison was settled (its 99 % "
                           "interval above 1.0, below it, or within ±5 %)")
                self.events.note(stopped)
                break
            if index in kept:
                run = kept[index]
                # A run journalled without a figure counts for nothing.
                outcomes.append((role, TrialOutcome(run.objective if run.objective is not None else 0.0,
                                                    run.valid and run.objective is not None, run.verdict,
                                                    dict(run.details))))
                continue
            point = points[role]
            try:
                outcome = runner(dict(point))
                if not outcome.valid:
                    outcome = runner(dict(point))
            except PointRefused as refused:
                self.events.note(f"ablation run {index} ({role}) was refused: {refused.error.render()}")
                continue
            journal.append_gain(GainRun(index, role, dict(point), float(outcome.objective), outcome.valid,
                                        outcome.verdict, outcome.details, kind="ablation"))
            outcomes.append((role, outcome))
            self.events.ablation_done(index, len(roles), role, outcome)
        ablations = measure_effects(_as_runs(outcomes), values)
        if stopped:
            ablations.notes.append(stopped)
        ablations.outcomes = outcomes
        ablations.winner_point = dict(winner)
        return ablations

    def _single_slots(self, winner: dict[str, Value], together: Sequence[str]
                      ) -> tuple[list[str], list[str], list[str]]:
        """(the winner's changes, those the ablation rounds measure one by one,
        the weaker ones that join the group): of the changes outside
        `together`, the first MAX_SINGLE_ABLATIONS in _single_ablation_order
        are measured alone, the rest (in that order) together."""
        changed = self._changed(winner)
        alone = [name for name in changed if name not in together]
        limit = single_ablations(changed)
        if len(alone) <= limit:
            return changed, alone, []
        ranked = self._single_ablation_order(winner, alone)
        return changed, ranked[:limit], ranked[limit:]

    def _revert_unless_alone(self, winner: dict[str, Value], together: Sequence[str]
                             ) -> tuple[dict[str, Value], list[str]]:
        """The changes of MEASURED_ALONE_ONLY that the rounds would measure only
        inside a group go back to the start's value before the rounds, with
        the reason (if the point stays free of lint errors): a group's gain
        says nothing of them, and the rounds then measure what is
        recommended."""
        changed, alone, _ = self._single_slots(winner, together)
        if len(changed) < 2:
            return winner, []  # one change: the gain's replicates are its ablation
        space = self.space
        point = dict(winner)
        notes = []
        for name in changed:
            if name in alone or not _measured_alone_only(name, point):
                continue
            reason, _ = MEASURED_ALONE_ONLY[name]
            candidate = dict(point)
            candidate[name] = space.start[name]
            if self.lint is not None and self.lint.check(candidate).errors:
                continue
            note = (f"{name} stays {space.value_text(name, space.start[name])} (the search's best point had "
                    f"{space.value_text(name, point[name])}): it is recommended only with an ablation of its own "
                    f"({reason}, so a group's gain says nothing of it), "
                    f"and this session's {single_ablations(changed)} went to {', '.join(alone) or 'none'}")
            point = candidate
            notes.append(note)
            self.events.note(note)
        return point, notes

    def _single_ablation_order(self, winner: dict[str, Value], names: list[str]) -> list[str]:
        """`names` in the order the ablations measure them one by one: first
        the directives of FIRST_ABLATED (the MPM, the advice lint and fix
        must keep; the pool's size; what the seeds measured large), then the
        rest by the model's effect of each (the winner against the winner
        with that one change reverted). A model of 15 trials in 16
        dimensions ranked ListenBacklog and EnableMMAP strongest in the
        no-switch session of 2026-11-27, above MaxRequestWorkers, whose
        ablation in the same session measured x1.4."""
        def first(name: str) -> int:
            return FIRST_ABLATED.index(name) if name in FIRST_ABLATED else len(FIRST_ABLATED)

        return sorted(names, key=lambda name: (first(name), -self._model_strength(winner, name), names.index(name)))

    def _model_strength(self, winner: Mapping[str, Value], name: str) -> float:
        """|log| of the model's ratio of the winner to the winner with `name`
        at the start's value (0: no model, or a point it cannot place)."""
        surrogate = self._surrogate
        if surrogate is None:
            return 0.0
        without = dict(winner)
        without[name] = self.space.start[name]
        try:
            ratio, _, _ = surrogate.ratio(winner, without)
        except Exception:  # a point the model cannot place: no credit
            return 0.0
        return abs(math.log(ratio)) if ratio and ratio > 0 and math.isfinite(ratio) else 0.0

    def _whole_when_no_part_earns(self, winner: dict[str, Value], ablations):
        """(the rounds' winner, its replicates against the start, why) when the
        pruning left the start (every change within noise on its own, or the
        pruned point measured no gain) although the winner as a whole beat
        the start beyond noise in the same interleaved rounds; else None.

        Changes can stand in for one another (either of two would do), and
        then each is within noise when reverted alone while reverting both
        loses the gain: the whole is what was measured, so the whole is
        recommended, and the report says no single change carries it."""
        from advisor.tuner.session.ablation import WINNER
        from advisor.tuner.session.gain import measure_gain

        space = self.space
        if ablations is None or ablations.winner_point is None or _key(space, winner) != _key(space, space.start):
            return None
        if _key(space, ablations.winner_point) == _key(space, space.start):
            return None
        replicates = ablations.replicates_for(WINNER)
        if replicates is None or min(len(replicates.start), len(replicates.winner)) < 2:
            return None
        try:
            gain = measure_gain(replicates)
        except ValueError:
            return None
        if gain.low is None or gain.low <= 1.0:
            return None
        replicates.source = (f"the changes are kept together: none earned the gain when reverted on its own, but "
                             f"as a whole they measured ×{gain.ratio:.2f} (95 % CI ×{gain.low:.2f} to "
                             f"×{gain.high:.2f}) over the starting config in the same interleaved rounds "
                             f"({len(replicates.start)} runs of each); no single change carries the gain")
        return dict(ablations.winner_point), replicates, replicates.source

    def _gain_from_rounds(self, winner: dict[str, Value], ablations):
        """The gain's replicates from the ablation rounds, when the start ran
        in them and some role of them is exactly the recommended point (the
        winner, or the winner less the one change sent back); else None, and
        the gain is measured on its own."""
        from advisor.tuner.session.ablation import WINNER, role_without

        space = self.space
        target = _key(space, winner)
        if target == _key(space, space.start):
            return None
        roles = [WINNER] + [role_without(name) for name in ablations.effects]
        for role in roles:
            point = ablations.point_of(role, space.start)
            if point is not None and _key(space, point) == target:
                replicates = ablations.replicates_for(role)
                if replicates is not None and min(len(replicates.start), len(replicates.winner)) >= 2:
                    replicates.source = (f"the gain comes from the ablation rounds: the starting config ran in "
                                         f"each round beside the recommended point ({len(replicates.start)} "
                                         f"runs of each, interleaved with the ablations)")
                    self.events.note(replicates.source)
                    return replicates
        return None

    def _drop_unearned(self, winner: dict[str, Value], ablations) -> tuple[dict[str, Value], list[str]]:
        """Each change whose measured effect is within noise (or a loss) goes
        back to the start's value, if the point stays free of lint errors.

        When two or more would go back, the point without all of them is one
        no round ran; see _measured_pruning for the point recommended then."""
        measured = self._measured_pruning(winner, ablations)
        if measured is not None:
            return measured
        space = self.space
        point = dict(winner)
        notes = []
        for effect in ablations.reverted():
            candidate = dict(point)
            for member in effect.members:
                candidate[member] = space.start[member]
            if self.lint is not None and self.lint.check(candidate).errors:
                continue
            point = candidate
            if len(effect.members) > 1:
                notes.append(f"{', '.join(effect.members)} stay {effect.start_value} (the search's best point had "
                             f"{effect.winner_value}): the model saw no effect of each, and their measured effect "
                             f"together is {effect.verdict()}, {effect.sentence()}")
                continue
            notes.append(f"{effect.dimension} stays {effect.start_value} (the search's best point had "
                         f"{effect.winner_value}): its measured effect is {effect.verdict()}, "
                         f"{effect.sentence()}")
        return point, notes

    def _measured_pruning(self, winner: dict[str, Value], ablations) -> tuple[dict[str, Value], list[str]] | None:
        """With two or more changes within noise (or a loss), the round's
        point that sends back the most of them and still beat the start
        beyond noise in the same rounds: (that point, the notes), or None. A
        point that keeps a change measured as a loss comes last: the no-switch
        session of 2026-11-28 12:55 kept MaxConnectionsPerChild 231,680
        (×0.92, 95 % CI ×0.85 to ×0.99) to send back a group of four within
        noise, where the round without it had measured higher than the
        winner.

        Changes can stand in for one another: each within noise when
        reverted alone, while reverting all of them loses the gain. The
        point without every one of them was never run; measured on its own
        (ten runs more) it missed the gain in three of the README's four
        sessions of 2026-11-27/28, which then fell back to the whole winner.
        A role of the rounds was run beside the start: recommending it keeps
        every figure measured, and sends back the largest share of what did
        not earn its place. A change that is recommended only with an
        ablation of its own (MEASURED_ALONE_ONLY, and the MPM) is never the
        one kept."""
        from advisor.tuner.session.ablation import role_without
        from advisor.tuner.session.gain import measure_gain

        space = self.space
        reverted = ablations.reverted()
        if len(reverted) < 2:
            return None
        options = []
        for effect in reverted:
            kept = [other for other in reverted if other is not effect]
            # The MPM is kept only on its own measure: a switch is a full
            # restart and another pool, and its ablation measured it within
            # noise. (The README's session of 2026-11-28 08:55: event with
            # the start's pool, and prefork with the winner's pool, both beat
            # the start by about a third.)
            if any(member == "MPM" or _measured_alone_only(member, winner) for other in kept
                   for member in other.members):
                continue
            point = ablations.point_of(role_without(effect.dimension), space.start)
            replicates = ablations.replicates_for(role_without(effect.dimension))
            if point is None or replicates is None or min(len(replicates.start), len(replicates.winner)) < 2:
                continue
            if self.lint is not None and self.lint.check(point).errors:
                continue
            try:
                gain = measure_gain(replicates)
            except ValueError:
                continue
            if gain.low is None or gain.low <= 1.0:
                continue
            keeps_no_loss = not any(other.a_loss for other in kept)
            options.append((keeps_no_loss, len(effect.members), gain.low, effect, kept, point, gain))
        if not options:
            return None
        *_, effect, kept, point, gain = max(options, key=lambda option: option[:3])
        together = len(effect.members) > 1
        notes = [f"{', '.join(effect.members)} {'stay' if together else 'stays'} {effect.start_value} (the search's "
                 f"best point had {effect.winner_value}): {'their' if together else 'its'} measured effect"
                 f"{' together' if together else ''} is {effect.verdict()}, {effect.sentence()}"]
        for other in kept:
            notes.append(f"{', '.join(other.members)} {'keep' if len(other.members) > 1 else 'keeps'} the search's "
                         f"{other.winner_value} although {'their' if len(other.members) > 1 else 'its'} own measured "
                         f"effect is {other.verdict()}, {other.sentence()}: sending it back as well as "
                         f"{effect.dimension} would recommend a point no round ran (changes can stand in for one "
                         f"another), and the rounds measured the winner without {effect.dimension} at "
                         f"×{gain.ratio:.2f} (95 % CI ×{gain.low:.2f} to ×{gain.high:.2f}) over the start")
        return dict(point), notes

    def _drop_single_within_noise(self, winner: dict[str, Value], replicates) -> tuple[dict[str, Value], list[str]]:
        """With one change, the gain's replicates are its ablation: a change
        whose gain is within noise (or a loss) is not recommended."""
        space = self.space
        changed = self._changed(winner)
        gain = _gain_not_beyond_noise(replicates) if len(changed) == 1 else None
        if gain is None:
            return winner, []
        name = changed[0]
        candidate = dict(winner)
        candidate[name] = space.start[name]
        if self.lint is not None and self.lint.check(candidate).errors:
            return winner, []
        interval = (f"95 % CI ×{gain.low:.2f} to ×{gain.high:.2f}" if gain.low is not None and gain.high is not None
                    else "no finite 95 % interval")
        return candidate, [f"{name} stays {space.value_text(name, space.as_written(space.start)[name])} (the search's best point had "
                           f"{space.value_text(name, winner[name])}): it was the only change, and its measured gain "
                           f"×{gain.ratio:.3f} ({interval}) is not beyond noise"]

    def _keep_start_without_a_gain(self, winner: dict[str, Value],
                                   replicates) -> tuple[dict[str, Value], list[str]]:
        """The recommendation as a whole must beat the start in the interleaved
        runs: when the gain's 95 % interval does not lie above 1.0 (a loss,
        or within noise), the start is kept. Each change may have passed its
        own test (or, as an MPM switch lint cannot revert alone, had none),
        yet their sum measured ×0.968 (95 % CI ×0.951 to ×0.986) of the
        start in a session that recommended it all the same."""
        space = self.space
        gain = _gain_not_beyond_noise(replicates) if _key(space, winner) != _key(space, space.start) else None
        if gain is None:
            return winner, []
        interval = (f"95 % CI ×{gain.low:.3f} to ×{gain.high:.3f}" if gain.low is not None and gain.high is not None
                    else "no finite 95 % interval")
        verdict = ("a loss" if gain.high is not None and gain.high < 1.0 else "not beyond noise")
        return dict(space.start), [f"the starting config is kept: the recommendation as a whole measured "
                                   f"×{gain.ratio:.3f} of it ({interval}), {verdict}"]

    def _lint_gate(self, winner: dict[str, Value], ablations, replicates, *,
                   measured_later: Sequence[str] = ()):
        """The recommendation as the admin's `lint --fail-on` judges it: each
        finding it brings is kept only when the change behind it measured a
        gain beyond noise, and then carries a suppression comment with the
        figure; otherwise the change goes back to the start's value.

        The tree is linted again after each return: a finding that stands on
        several values (P105's StartServers x ThreadsPerChild against the
        pool) outlives the return of the line it points at, and then the
        other changes no measurement backs go back one at a time, the one
        the model credits least first, until it is gone. `measured_later`:
        changes the ablation rounds will measure on their own (the gate
        before the rounds leaves them to the gate after).

        Returns (point, {directive: suppression comment}, notes)."""
        lint, space = self.lint, self.space
        if lint is None or space is None:
            return winner, {}, []
        point = dict(winner)
        notes: list[str] = []
        written = space.as_written(space.start)
        figures: dict[tuple[str, tuple[str, ...]], str | None] = {}

        def figure_of(dimension: str | None, changed: list[str]) -> str | None:
            if dimension is None:
                return None
            if dimension in measured_later:
                return "measured later"
            key = (dimension, tuple(changed))
            if key not in figures:
                figures[key] = self._measured_figure(dimension, changed, ablations, replicates)
            return figures[key]

        def blocking(candidate: dict[str, Value]) -> list[tuple[tuple, str | None, str | None]]:
            """(finding, directive, dimension) of each finding no measurement backs."""
            changed = self._changed(candidate)
            out = []
            for key in lint.brought(candidate):
                directive = lint.directive_of(candidate, key)
                if key[0] == OVERRIDE_CODE and (directive is None or Path(key[1]).name != CANDIDATE_FILE):
                    continue  # the drop-in overriding the admin's own line is how it works, not a risk
                dimension = _dimension_for(space, directive, changed)
                if figure_of(dimension, changed) is None:
                    out.append((key, directive, dimension))
            return out

        def send_back(name: str, why: str) -> None:
            nonlocal point
            notes.append(f"{name} stays {space.value_text(name, written[name])} (the search's best point had "
                         f"{space.value_text(name, point[name])}): {why}")
            point = dict(point, **{name: space.start[name]})

        for _ in range(len(space.free) + 1):
            left = blocking(point)
            if not left:
                break
            codes = ", ".join(sorted({key[0] for key, _, _ in left}))
            moved = False
            for key, directive, dimension in left:
                candidate = dict(point, **{dimension: space.start[dimension]}) if dimension else None
                if candidate is not None and not lint.check(candidate).errors:
                    send_back(dimension, f"it brings lint {key[0]} at --fail-on {lint.fail_on}, and no measurement "
                                         "shows a gain from it beyond noise")
                    moved = True
                    break
            if moved:
                continue
            # The finding outlived the return of the line it stands on: try
            # the other unbacked changes, one at a time.
            changed = self._changed(point)
            named = _rule_directives({key[0] for key, _, _ in left})
            options = [name for name in changed if name != "MPM" and figure_of(name, changed) is None
                       and (not named or name.lower() in named)]
            options.sort(key=lambda name: self._model_strength(point, name))
            for name in options:
                candidate = dict(point, **{name: space.start[name]})
                if lint.check(candidate).errors or len(blocking(candidate)) >= len(left):
                    continue
                send_back(name, f"with it the tuned tree brings lint {codes} at --fail-on {lint.fail_on} "
                                f"({left[0][0][3]}), and no measurement shows a gain from it beyond noise")
                moved = True
                break
            if not moved:
                notes.append(f"the tuned tree still brings lint {codes} at --fail-on {lint.fail_on}: no change "
                             "that no measurement backs clears it on its own")
                break
        if measured_later:
            return point, {}, notes
        return point, self._suppressions(point, ablations, replicates), notes

    def _suppressions(self, point: dict[str, Value], ablations, replicates) -> dict[str, str]:
        """{directive: the suppression comment} for each finding at or above
        --fail-on the point keeps: the change's measured figure, or the
        drop-in overriding the admin's own line on purpose."""
        lint, space = self.lint, self.space
        changed = self._changed(point)
        by_directive: dict[str, set[str]] = {}
        overridden: dict[str, list[str]] = {}
        for key in lint.brought(point):
            directive = lint.directive_of(point, key)
            if directive is None:
                continue
            if key[0] == OVERRIDE_CODE and Path(key[1]).name != CANDIDATE_FILE:
                overridden.setdefault(directive, []).append(f"{key[1]}:{key[2]}")
                continue
            by_directive.setdefault(directive, set()).add(key[0])
        stamp = f"tune session {_today()}, {self.settings.session_dir}"
        suppressions: dict[str, str] = {}
        for directive in sorted(set(by_directive) | set(overridden)):
            codes = by_directive.get(directive, set())
            dimension = _dimension_for(space, directive, changed)
            figure = self._measured_figure(dimension, changed, ablations, replicates) if codes and dimension else None
            reasons = []
            if figure is not None:
                reasons.append(f"measured {figure} on {self.workload.name}{self._where_measured()}")
            elif codes:
                reasons.append("set with the measured point (not measured on its own)")
            if directive in overridden:
                codes = codes | {OVERRIDE_CODE}
                reasons.append(f"overrides {', '.join(overridden[directive])} on purpose")
            suppressions[directive] = (f"# apache-advisor: disable={','.join(sorted(codes))} -- "
                                       f"{'; '.join(reasons)}; {stamp}")
        return suppressions

    def _changed(self, point: Mapping[str, Value]) -> list[str]:
        space = self.space
        return [d.name for d in space.free if point.get(d.name) != space.start.get(d.name)
                and space.mpm_of(point) in d.mpms]

    def _gate_the_gain(self, winner: dict[str, Value], ablations, replicates, runner, journal):
        """The lint gate on the recommendation, and a gain that is still the
        recommendation's: when the gate sends a change back, the replicates
        measured the point before it. A role of the rounds may have run the
        gated point (its gain comes from there); else it is measured on its
        own. Returns (point, replicates, suppressions, notes)."""
        measured = dict(winner)
        point, suppressions, notes = self._lint_gate(winner, ablations, replicates)
        if replicates is None or _key(self.space, point) == _key(self.space, measured):
            return point, replicates, suppressions, notes
        for note in notes:
            self.events.note(note)
        again = self._gain_from_rounds(point, ablations) if ablations is not None else None
        if again is not None:
            return point, again, self._suppressions(point, ablations, again), notes + [again.source]
        if not self.settings.gain_replicates:
            return point, None, suppressions, notes + [
                "the gain measured before the lint gate is not this point's, and no gain runs are set"]
        self.events.note("the lint gate changed the measured point: its gain is measured on its own")
        again = self._replicates(runner, point, journal, [])
        if again is None:
            return point, None, suppressions, notes
        point, unearned = self._keep_start_without_a_gain(point, again)
        if unearned:
            return point, again, {}, notes + unearned
        return point, again, self._suppressions(point, ablations, again), notes

    def _measured_figure(self, dimension: str, changed: list[str], ablations, replicates) -> str | None:
        """The change's own measured gain, as a phrase, when beyond noise."""
        from advisor.tuner.session.gain import measure_gain

        effect = ablations.effect_of(dimension) if ablations is not None else None
        if effect is not None:
            if not effect.beyond_noise:
                return None
            if len(effect.members) > 1:
                return f"{effect.sentence()} against the winner without {', '.join(effect.members)}"
            return f"{effect.sentence()} against the winner without it"
        if changed == [dimension] and replicates is not None and min(len(replicates.start),
                                                                     len(replicates.winner)) >= 2:
            try:
                gain = measure_gain(replicates)
            except ValueError:
                return None
            if gain.low is not None and gain.low > 1.0:
                return (f"×{gain.ratio:.2f} (95 % CI ×{gain.low:.2f} to ×{gain.high:.2f}) over the start, "
                        "its only change")
        return None

    def _where_measured(self) -> str:
        rtt = getattr(self.objective, "rtt_ms", None)
        return f" at {rtt:g} ms RTT" if rtt else " on this target"

    def _report(self, observations, winner, replicates, result: SearchResult, elapsed: float,
                notes: list[str] | None = None, ablations=None, suppressions: Mapping[str, str] | None = None):
        from advisor.tuner.session.report_data import SessionFacts, build_report

        s = self.settings
        stop = result.stop_reason + (f": {result.advice}" if result.advice else "")
        facts = SessionFacts(workload=self.workload.name, objective=self.objective.short_label(self.workload.unit),
                             unit=self.objective.unit, budget=s.budget, max_time_s=s.max_time_s, search=s.search,
                             seed=s.seed, stop_reason=stop, elapsed_s=round(elapsed, 1),
                             planned_s=round(self.planned_s, 1) if self.planned_s is not None else None,
                             target=str(self.target.base_url), round_trip=self.objective.rtt_text())
        return build_report(self.cfg, self.space, observations, winner, facts, replicates=replicates, seed=s.seed,
                            notes=notes or [], ablations=ablations, suppressions=suppressions or {},
                            lint=self.lint)


class _Asking:
    """The searcher, remembering the last point it handed out (run_search
    does not say which point an exception interrupted)."""

    def __init__(self, searcher) -> None:
        self.inner = searcher
        self.last: tuple[dict[str, Value], str] | None = None

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def ask(self):
        self.last = self.inner.ask()
        return self.last


# --------------------------------------------------------------------------
# One trial on the real server


class TrialObjective:
    """point -> TrialOutcome on a real staging server: apply the point through
    ManagedConfig (a refusal raises PointRefused), measure it as `objective`
    says, check the server is still there.

    Used by TuneSession, and usable alone (a benchmark script): `incumbent`
    returns the point whose peak the next knee search starts from (None:
    the best peak measured so far, else `probes.start_rate`).
    """

    def __init__(self, target, managed, space: Space, workload: SessionWorkload, objective: ObjectiveSpec,
                 probes: ProbeSettings, *, server_cpus: list[int] | None = None,
                 client_cpus: list[int] | None = None, events: SessionEvents | None = None,
                 registry: list | None = None,
                 incumbent: Callable[[], Mapping[str, Value] | None] | None = None, clients=None,
                 pace=None) -> None:
        from advisor.tuner.session.pace import Pace
        from advisor.tuner.trial.runner import TrialInputs

        self.pace = pace if pace is not None else Pace()
        self.last_kind: str | None = None
        self.last_probes = 0

        self.target = target
        self.managed = managed
        self.space = space
        self.objective = objective
        self.probes = probes
        self.events = events or SessionEvents()
        self.registry = registry if registry is not None else []
        self.clients = clients
        self.incumbent = incumbent
        self.peaks: dict[tuple, list[float]] = {}
        self.highest_uncapped_peak: float | None = None
        """The highest peak an uncapped run (the rounds, the gain) measured this session."""
        self.uncapped_peaks: dict[tuple, list[float]] = {}
        """Each point's peaks from uncapped runs only: a search trial's peak
        may be capped at twice the incumbent's or measured on a cold pool
        (the README session's start: 160 sessions/s in the search, 243-259
        in the rounds), so a mean that keeps it starts every later run low."""
        self.last_elapsed = 0.0
        self.on_start: Callable[[dict], None] | None = None
        self.uncapped = False
        """Gain replicates: each knee search from the point's own peak, with
        no ceiling at twice the incumbent's, so that neither side of the ratio
        is a capped lower bound."""
        inputs: dict[str, Any] = dict(
            workload=workload.name, uri=workload.uri, rate=probes.start_rate, duration_s=probes.duration_s,
            num_calls=workload.num_calls, timeout_s=probes.timeout_s, uri_list=workload.uri_list,
            wsess=workload.wsess, server_cpus=server_cpus, client_cpus=client_cpus,
            slo_errors_pct=objective.slo_errors_pct, slo_reply_ms=objective.slo_ms,
            tls_resume=probes.tls_resume)
        if workload.session_log:
            inputs["session_log"] = workload.session_log
        # The warm-up knob arrives with the steady-state trials; an older trial layer has none.
        if "warmup_s" in {f.name for f in fields(TrialInputs)}:
            inputs["warmup_s"] = probes.warmup_s
        from advisor.tuner.trial.runner import with_rtt

        self.base = with_rtt(TrialInputs(**inputs), objective.rtt_ms, objective.rtt_how)

    def learn(self, obs: Observation) -> None:
        """Remember a trial's peak rate, where the next knee search starts."""
        knee = obs.details.get("knee") if isinstance(obs.details, Mapping) else None
        if obs.valid and isinstance(knee, Mapping) and knee.get("peak_rate"):
            self.peaks.setdefault(_key(self.space, obs.point), []).append(float(knee["peak_rate"]))

    def __call__(self, point: dict[str, Value], directives: list[str] | None = None) -> TrialOutcome:
        """`directives`, when given, are applied in place of the point's: a
        benchmark's deliberately bad start lies outside the space's guards,
        and is measured as written (its peaks are kept under `point`)."""
        started = time.monotonic()
        self.last_elapsed = 0.0
        self.last_kind, self.last_probes = None, 0
        if self.on_start is not None:
            self.on_start(point)
        self._check_server()
        if directives is None:
            directives = self.space.directives(point)
        try:
            self.managed.apply(directives, mpm=self._mpm_for(point))
        except AdvisorError as error:
            self._check_server()  # a dead server explains the refusal better than its symptom
            self.last_elapsed = time.monotonic() - started
            raise PointRefused(error) from None
        base = replace(self.base, directives=list(directives))
        if self.objective.kind == "peak":
            outcome = self._peak(point, base)
        else:
            outcome = self._fixed(base)
        self._check_server()
        outcome.details["directives"] = directives
        if self._mpm_for(point) is not None:  # what the server said it ran, beside what the point asked
            outcome.details["server_mpm"] = self.target.running_mpm()
        outcome.details = _plain(outcome.details)
        self.last_elapsed = time.monotonic() - started
        if self.last_kind is not None:
            self.pace.record(self.last_kind, self.last_probes, self.last_elapsed)
        return outcome

    def _mpm_for(self, point: Mapping[str, Value]) -> str | None:
        """The MPM the point runs under, when the MPM is searched (None: the running one stays)."""
        dim = self.space.dimension("MPM")
        return None if dim is None else self.space.mpm_of(point)

    def _check_server(self) -> None:
        target = self.target
        try:
            target.check_alive()
        except AdvisorError as error:
            raise AdvisorError(f"the staging server at {target.base_url} stopped answering during the session "
                               f"({error.message})",
                               hint="start it again (apache-advisor staging up) and continue with "
                                    "apache-advisor tune --resume; the journal keeps every completed trial") \
                from None

    def _kwargs(self) -> dict[str, Any]:
        return {"interval": self.probes.sample_interval, "registry": self.registry, "clients": self.clients}

    def _start_rate(self, point: Mapping[str, Value]) -> float | None:
        """The incumbent's peak (this point's own when it was measured)."""
        space = self.space
        key = _key(space, point)
        own = (self.uncapped and self.uncapped_peaks.get(key)) or self.peaks.get(key)
        if own:
            return sum(own) / len(own)
        if self.uncapped and self.highest_uncapped_peak is not None:
            # A role's first run in the rounds: the winner, measured uncapped
            # in the same round, lies nearer than the search's incumbent, whose
            # peak a search trial capped at twice the one before. In the
            # worst-practice session of 2026-11-27 the incumbent stood at 283
            # sessions/s and the winner peaked at 2,264-2,381: each role's
            # first run doubled up from 283 and took nine probes.
            return self.highest_uncapped_peak
        best = self.incumbent() if self.incumbent is not None else None
        if best is not None:
            peaks = self.peaks.get(_key(space, best))
            if peaks:
                return sum(peaks) / len(peaks)
        known = [sum(v) / len(v) for v in self.peaks.values() if v]
        return max(known) if known else None

    def _first_step(self, point: Mapping[str, Value]) -> float:
        """The factor of a knee search's first move from its start rate."""
        key = _key(self.space, point)
        # A point's own peak, measured before, was the lower end of a bracket
        # as wide as the tolerance: a first step of that width most often
        # closes the bracket with the next probe, two probes a run where a
        # step of 1.2 took three or more (4.1-4.5 a run in the README's
        # session of 2026-11-27). knee_search squares later steps.
        if self.peaks.get(key) and (not self.uncapped or key in self.uncapped_peaks):
            return 1.0 + self.probes.tolerance
        if self.uncapped:
            # An uncapped run from a neighbour's peak or from the search's
            # (capped, or cold) figure: a good guess, not a bracket's end.
            # Doubling from it overshot to twice the peak, where the pool
            # could not grow in the warm-up and the probe ran twice as
            # invalid: 5 to 7 probes a first-round run in the README session
            # of 2026-11-27 17:04, where 3 or 4 bracket a peak within ±25 %.
            return GUESS_STEP
        # A search trial from the incumbent's peak: most points of a good
        # region meet the same limit (the server's CPU), just above or below
        # it. Doubling sent them to twice the incumbent, then bisected down:
        # in the README's session of 2026-11-28 four trials each spent
        # three overloaded probes (736, 520, 444 sessions/s, 7 to 9 s each
        # against 4 s for a probe that passes) to learn that the peak lay
        # within 21 % above 368. A step of GUESS_STEP probes near the
        # incumbent, where the search's comparison lies; knee_search squares
        # later steps, so a point far better still reaches the trial's cap.
        return GUESS_STEP

    def _peak(self, point: Mapping[str, Value], base) -> TrialOutcome:
        from advisor.tuner.trial.runner import knee_search

        p = self.probes
        start = self._start_rate(point)
        own = bool(self.peaks.get(_key(self.space, point)))
        step = self._first_step(point)
        stop_below = False
        if start is None:
            start_rate, max_rate, probes = p.start_rate, p.max_rate, p.first_max_probes
        elif self.uncapped:
            start_rate = max(1.0, min(start, p.max_rate))
            max_rate, probes = p.max_rate, p.first_max_probes
        else:
            start_rate = max(1.0, min(start, p.max_rate))
            max_rate, probes = max(start_rate, min(p.max_rate, 2.0 * start_rate)), p.max_probes
            # A search trial starts at the incumbent's peak: failing it clearly
            # is all the search needs to know.
            stop_below = not own
        knee = knee_search(self.target, base, start_rate=start_rate, max_rate=max_rate,
                           tolerance=p.tolerance, max_probes=probes, retries=p.retries,
                           retry_short_pool=True, step=step, stop_clearly_below=stop_below,
                           on_trial=self.events.probe, **self._kwargs())
        from advisor.tuner.session.pace import FIRST, OWN, SEARCH

        self.last_kind = OWN if self.uncapped else FIRST if start is None else SEARCH
        self.last_probes = len(knee.probes)
        if self.uncapped and knee.peak_rate and knee.lower_bound_only is False:
            # Replicates and ablation rounds: the next run of this point starts from its own peak.
            key = _key(self.space, point)
            self.peaks.setdefault(key, []).append(float(knee.peak_rate))
            self.uncapped_peaks.setdefault(key, []).append(float(knee.peak_rate))
            self.highest_uncapped_peak = max(float(knee.peak_rate), self.highest_uncapped_peak or 0.0)
        peak = next((r for r in reversed(knee.probes) if r.meets_slo and r.inputs.rate == knee.peak_rate), None)
        failing = [r for r in knee.probes if not r.meets_slo
                   and (knee.peak_rate is None or r.inputs.rate > knee.peak_rate)]
        decisive = min(failing, key=lambda r: (r.inputs.rate, -r.attempt)) if failing else None
        reasons: list[str] = []
        label = None
        if knee.lower_bound_only:
            reasons.append(f"the load generator limited the search ({knee.stop_reason})")
            label = "client-bound"
        elif decisive is not None and _measured_something_else(decisive):
            reasons += decisive.invalid_reasons + list(decisive.interference["reasons"])
            label = decisive.verdict.label
        verdict = knee.limiting or (peak.verdict if peak is not None else None)
        details: dict[str, Any] = {
            "objective_kind": "peak",
            "knee": knee.to_dict(),
            "start_rate": start_rate, "max_rate": max_rate,
            "capped": knee.limiting is None and knee.peak_rate is not None and knee.peak_rate >= max_rate,
            "verdict": verdict.to_dict() if verdict is not None else None,
            "invalid_reasons": reasons,
        }
        if peak is not None:
            details.update(_trial_summary(peak))
        if decisive is not None:
            details["limiting"] = _trial_summary(decisive)
            # Kept as a failure at its rate (the peak is then conservative): the
            # probe did not meet the SLO with the pool the server had.
            details["limiting"]["invalid_reasons"] = list(decisive.invalid_reasons)
        value = float(knee.peak_reply_rate or 0.0)
        if knee.stopped_early and knee.served_bound is not None and not reasons:
            # What it served while failing at the incumbent's peak: at most
            # that, and below the incumbent, which is all the search needs.
            value = float(knee.served_bound)
            details["bound"] = "upper"
            details["stopped_early"] = knee.stop_reason
        return TrialOutcome(value, not reasons, label or (verdict.label if verdict is not None else "none"), details)

    def _fixed(self, base) -> TrialOutcome:
        """One run at the objective's fixed rate, run again (up to
        `probes.retries` times) while a disturbance could have changed it."""
        from advisor.tuner.trial.runner import run_trial, with_rate

        objective = self.objective
        for attempt in range(1, self.probes.retries + 2):
            result = run_trial(self.target, with_rate(base, float(objective.rate)), **self._kwargs())
            result.attempt = attempt
            self.events.probe(result)
            # A pool short of its limit is a transient the run itself ends (the
            # parent forks while the load waits), as knee_search's
            # retry_short_pool says: the next run meets the grown pool. Without
            # the rerun the search ran the same short pool again and stopped
            # (CI of 2026-11-29: "trial 1 was invalid twice").
            if not self._disturbed(result) and not result.short_capacity_reasons:
                break
        reasons = list(result.invalid_reasons)
        if self._disturbed(result):
            reasons += list(result.interference["reasons"])
        h = result.httperf
        # With --rtt: the client-perceived mean (measured and added parts in the details).
        reply_ms = result.reply_time_for_slo_ms
        if objective.kind == "throughput":
            over = reply_ms / objective.slo_ms if reply_ms > objective.slo_ms else 1.0
            # Sessions: the rate over the window sessions started in (their think-time tail left out).
            value = float(getattr(result, "served_rate", h.reply_rate)) / over
        else:
            # A request that got no reply counts as one that waited the whole timeout.
            attempted = result.attempted
            lost = min(result.errors, attempted)
            mean_ms = ((attempted - lost) * reply_ms + lost * base.timeout_s * 1000.0) / attempted
            value = 1000.0 / max(mean_ms, 1e-3)
        from advisor.tuner.session.pace import OWN, SEARCH

        self.last_kind, self.last_probes = (OWN if self.uncapped else SEARCH), result.attempt
        details = {"objective_kind": objective.kind, "rate": objective.rate, "attempts": result.attempt,
                   "verdict": result.verdict.to_dict(), "invalid_reasons": reasons, **_trial_summary(result)}
        return TrialOutcome(float(value), not reasons, result.verdict.label, details)

    def _disturbed(self, result) -> bool:
        """Other programs took the server's or httperf's cores in a way that
        can have changed this run's figure. They can only take capacity
        away: a throughput run that met the SLO all the same measured what
        the point does; a mean reply time is stretched by any of it."""
        if not result.interference["disturbed"]:
            return False
        return self.objective.kind == "latency" or not result.meets_slo


# --------------------------------------------------------------------------
# Helpers


# E406: a single-valued directive set twice; the tuned drop-in, read last,
# overrides the admin's line by design.
OVERRIDE_CODE = "E406"
CANDIDATE_FILE = "candidate.conf"


def _as_runs(outcomes: list[tuple[str, TrialOutcome]]) -> list[tuple[str, float | None, bool]]:
    """(role, objective, valid) of each run, as the ablation arithmetic reads them."""
    return [(role, outcome.objective, outcome.valid) for role, outcome in outcomes]


def _gain_not_beyond_noise(replicates):
    """The measured gain (advisor.tuner.session.gain.Gain) when its 95 %
    interval does not lie above 1.0, else None (a gain beyond noise, or too
    few runs to tell)."""
    from advisor.tuner.session.gain import measure_gain

    if min(len(replicates.start), len(replicates.winner)) < 2:
        return None
    try:
        gain = measure_gain(replicates)
    except ValueError:
        return None
    return None if gain.low is not None and gain.low > 1.0 else gain


def _today() -> str:
    from datetime import date

    return date.today().isoformat()


def _measured_alone_only(name: str, point: Mapping[str, Value]) -> bool:
    """Whether `name` at the point's value is recommended only on an ablation of its own."""
    if name not in MEASURED_ALONE_ONLY:
        return False
    _, towards = MEASURED_ALONE_ONLY[name]
    return towards is None or point.get(name) in towards


def _rule_directives(codes: set[str]) -> set[str]:
    """The directives (lower case) the rules of `codes` read, as their
    metadata names them; empty when one of them names none."""
    from advisor import rules as registry

    by_code = {rule.code: rule for rule in registry.all_rules()}
    named: set[str] = set()
    for code in codes:
        rule = by_code.get(code)
        if rule is None or not getattr(rule, "directives", None):
            return set()
        named |= {name.lower() for name in rule.directives}
    return named


def _dimension_for(space: Space, directive: str | None, changed: list[str]) -> str | None:
    """The changed dimension that writes `directive` (most dimensions are
    named after theirs)."""
    if directive is None:
        return None
    for name in changed:
        if name.lower() == directive.lower():
            return name
    return None


def load_config_in_use(target):
    """The config the target's server reads, as the admin wrote it: the
    sandbox's instrument include (one more worker for the metrics
    collector's connection) is the tool's, not the admin's, and is left out."""
    from advisor.config import load_config

    source = target.config_source()
    if source is None:
        raise UsageError("the target does not say which config its server reads",
                         hint="give the existing server's config with --config")
    path, options = source
    cfg = load_config(path, options)
    sandbox = getattr(target, "sandbox", None)
    if sandbox is not None:
        _hide_file(cfg.effective, str(sandbox.instrument_path))
    return cfg, options


def _hide_file(section, path: str) -> None:
    section.children = [c for c in section.children if c.file != path]
    for child in section.children:
        if getattr(child, "children", None):
            _hide_file(child, path)


def ram_workers(cfg, mpms: list[str], ram_bytes: int | None, docroot: str | None,
                host: HostKernel) -> tuple[dict[str, int], str]:
    """How many workers of each MPM this host's RAM holds, by capacity's sizing
    (Kegel's sum), and a few words on where the figure comes from.

    Child sizes are capacity's assumed ones, not measured: a staging
    server's children are too fresh to show what they grow to, and the
    bound must come out the same when a session is resumed. A threaded
    worker is sized at its costliest point of the space (the fewest threads
    per child, event's most parked connections), so that no point's pool
    outgrows RAM.
    """
    from advisor.capacity import host_probe as probe
    from advisor.capacity.sizing import (DEFAULT_CHILD_BYTES, DEFAULT_THREAD_BYTES, KEGEL_CONNECTION_BYTES,
                                         MemoryInputs, Quantity, assumed_child, default_os_reserve,
                                         format_size, recommend)
    from advisor.tuner.search.space import ASYNC_FACTOR_GUARD, THREADS_PER_CHILD_GUARD

    ram = Quantity(ram_bytes, "--ram") if ram_bytes else Quantity(host.ram_bytes, f"{host.where} RAM")
    connection = (Quantity(host.socket_buffer_bytes, f"{host.where} kernel tcp_rmem + tcp_wmem defaults")
                  if host.socket_buffer_bytes else Quantity(KEGEL_CONNECTION_BYTES, "Kegel 1997: 64 KB"))
    if docroot is not None:
        size, files = probe.document_set_size(docroot)
        documents = Quantity(size, f"{files} files under {docroot}")
    else:
        documents = Quantity(0, "not counted")
    has_php = any(m.startswith("php") for m in cfg.modules)
    bounds: dict[str, int] = {}
    if not mpms:
        return bounds, ""  # no MPM: derive_space says so, with the file
    for mpm in mpms:
        threads = 1 if mpm == "prefork" else THREADS_PER_CHILD_GUARD[0]
        inputs = MemoryInputs(ram, default_os_reserve(ram.bytes), [], Quantity(DEFAULT_CHILD_BYTES, "assumed"),
                              assumed_child(mpm, threads, has_php), Quantity(DEFAULT_THREAD_BYTES, "assumed"),
                              connection, documents)
        bounds[mpm] = recommend(inputs, mpm, threads, async_factor=float(ASYNC_FACTOR_GUARD[1])).max_request_workers
    child = assumed_child(mpms[0], 1, has_php)
    php = " with mod_php" if has_php and mpms[0] == "prefork" else ""
    threaded = [m for m in mpms if m != "prefork"]
    sized = (f"; a {'/'.join(threaded)} worker sized at {THREADS_PER_CHILD_GUARD[0]} threads per child"
             + (f" and AsyncRequestWorkerFactor {ASYNC_FACTOR_GUARD[1]}" if "event" in threaded else "")
             if threaded else "")
    why = (f"{ram.source} {format_size(ram.bytes)}, {format_size(child.average)} per child{php} as capacity "
           f"assumes{sized}; --ram sizes for another host")
    return bounds, why


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


def _plan_start_text(space: Space, dim) -> str | None:
    """The start as the config writes it, and what stands for it in the search when it lies outside."""
    text = _start_text(dim, space.as_written(space.start).get(dim.name))
    if dim.name in space.start_written:
        text = f"{text}, as written ({_start_text(dim, space.start.get(dim.name))} stands for it in the search)"
    return text


def _start_text(dim, value: Value | None) -> str | None:
    """A dimension's starting value in the plan's units (the top of an
    "unlimited at top" range is httpd's 0)."""
    if value is None:
        return None
    if dim.kind == "choice":
        return str(value)
    if dim.unlimited_at_top and value == dim.high:
        return "0 (unlimited)"
    return f"{int(value):,}" + (f" {dim.unit}" if dim.unit else "")


def _key(space: Space, point: Mapping[str, Value]) -> tuple:
    return tuple(point.get(name) for name in space.names)


def _best_mean(space: Space | None, observations: list[Observation]) -> float | None:
    if space is None:
        return None
    values: dict[tuple, list[float]] = {}
    for o in observations:
        if o.valid and o.objective is not None:
            values.setdefault(_key(space, o.point), []).append(float(o.objective))
    return max((sum(v) / len(v) for v in values.values()), default=None)


SUMMARY_FIELDS = ("httpd_cpu_pct", "busy_workers", "idle_workers", "accept_queue", "httpd_processes", "time_wait",
                  "httperf_cpu_pct", "procs_running", "forks_per_s", "cpu_throttled_pct")


def metrics_summary(samples) -> dict[str, Any]:
    """Mean and maximum of the per-second metrics that the journal keeps (the
    samples themselves stay with bench)."""
    out: dict[str, Any] = {"samples": len(samples)}
    for name in SUMMARY_FIELDS:
        values = [float(v) for v in (getattr(s, name, None) for s in samples) if isinstance(v, (int, float))]
        if values:
            out[name] = {"mean": round(sum(values) / len(values), 2), "max": round(max(values), 2)}
    out["spawned"] = sum(getattr(s, "httpd_spawns", 0) or 0 for s in samples)
    out["exited"] = sum(getattr(s, "httpd_exits", 0) or 0 for s in samples)
    return out


def _measured_something_else(result) -> bool:
    """A failed knee probe that says nothing about the point: the load
    generator set the pace, other programs took the cores, the server still
    ran limits of another config, or it closed connections httperf cannot
    reopen. Other reasons a probe is invalid (a pool still growing, the
    collector's share of a small pool) make its failure count where it
    happened: the peak is then a conservative figure, not a wrong one."""
    from advisor.tuner.trial.verdict import CLOSED_BY_SERVER

    return (result.verdict.label in ("client-bound", CLOSED_BY_SERVER)
            or bool(result.interference["disturbed"])
            or bool(getattr(result, "pending_restart", None))
            or "closed_by_server" in result.verdict.evidence)


def _trial_summary(result) -> dict[str, Any]:
    """The httperf fields, the metrics' summary and the verdict of one run."""
    return {
        "rate": result.inputs.rate,
        "reply_rate": round(result.httperf.reply_rate, 2),
        "reply_time_ms": round(result.httperf.reply_time_ms, 3),
        "client_time": result.client_time.to_dict(),
        "error_pct": round(result.error_pct, 3),
        "slo_failures": result.slo_failures(),
        "httperf": result.httperf.to_dict(),
        "metrics": metrics_summary(result.samples),
        "run_verdict": result.verdict.to_dict(),
        "warmup": asdict(result.warmup) if getattr(result, "warmup", None) is not None else None,
        "wall_s": round(result.wall_s, 2),
    }


def _plain(value: Any) -> Any:
    """JSON-ready: no NaN or infinity (the journal refuses them), lists for tuples."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return _plain(value.item())
    return value


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
