"""The tuning session of `apache-advisor tune`: `TuneSession` holds the target
safe and runs the session's phases in order (docs/tune.md, "The session"):

1. plan (`prepare`): the config in use (read after any interrupted run's
   candidate was put back) gives the search space, bounded by capacity's RAM
   sizing of this host and narrowed by `--space` (session/config_in_use.py),
   and the plan says what will run and what it should take
   (session/session_plan.py, session/estimate.py);
2. search (session/trials.py): each point the optimizer asks for is written
   to the managed include (ManagedConfig: validate before apply, roll back a
   refused reload) and measured by the trial objective (trial/objective.py):
   by default a knee search for the peak sustainable rate under the SLO,
   started from the incumbent's peak so that it needs a few probes, not a
   full doubling from the bottom; every completed trial is appended to the
   session's journal as it completes, so that `--resume` can tell the
   optimizer what was measured;
3. simplify (session/simplify.py): the search's best point less the changes
   the model of the trials does not back;
4. attribute (session/attribute.py): the winner less each of its changes,
   in interleaved ablation rounds;
5. confirm (session/confirm.py, session/pruning.py): the changes the rounds
   do not back go back, and the gain over the starting config is taken from
   the rounds or measured in interleaved replicates;
6. advise (session/advise.py, session/lint_gate.py): the recommendation held
   to the admin's lint, with the suppression comments it keeps;
7. report (advisor.tuner.session.report_data).

Whatever happens (success, a refused point, a dead server, Ctrl-C,
SIGTERM) the server ends on the config it had; after kill -9 the next run
of tune, bench or `staging down` restores it from ManagedConfig's journal.

Formatting is the command's business: the session tells a `SessionEvents`
what happens and returns data.
"""

from __future__ import annotations

import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from advisor.errors import AdvisorError, UsageError
from advisor.tuner.search.optimizer import Observation, SearchResult
from advisor.tuner.search.space import Space, Value
from advisor.tuner.session.config_in_use import read_space
from advisor.tuner.session.estimate import Estimate
from advisor.tuner.session.journal import JournalHeader, open_journal
from advisor.tuner.session.session_context import SessionContext, SessionEvents, SessionSettings
from advisor.tuner.session.session_plan import (Plan, lint_gate_text, load_text, measurement_text, plan_precision,
                                              plan_start_text)
from advisor.tuner.trial.objective_spec import ObjectiveSpec, ProbeSettings
from advisor.tuner.trial.pace import Pace
from advisor.tuner.trial.session_workload import SessionWorkload

if TYPE_CHECKING:
    from advisor.tuner.session.advise import Advice
    from advisor.tuner.trial.objective import TrialObjective


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


class TuneSession:
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
        from advisor.tuner.staging.managed_config import ManagedConfig

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
                self.end_load()
                self.restore(managed, quiet=failed)
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

    def end_load(self) -> None:
        for process in list(self.registry):
            if process.poll() is None:
                process.kill()
                try:
                    process.wait(timeout=5)
                except Exception:
                    pass

    def restore(self, managed, quiet: bool) -> None:
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
        from advisor.tuner.search.space_lint import CandidateLint

        cfg, options, space = read_space(self.target, self.settings, self.work_dir, self.objective, self.workload)
        self.cfg, self.space = cfg, space
        self.load_pace(space)
        sandbox = getattr(self.target, "sandbox", None)
        self.lint = CandidateLint(cfg, space, options if options.root else None, policy=self.settings.lint_policy,
                                  hidden=(str(sandbox.instrument_path),) if sandbox is not None else ())
        # Candidates, and the report's lint of the start's tree, are judged on
        # the tree as it is now: the trials write the managed include (and a
        # switch edits the MPM's lines), so the live tree at the report holds
        # the last run's point, and read as "the start" it made the winner's
        # own P102 look like one the start had.
        self.lint.freeze()
        self.resumed = self.check_journal(space)
        pending = False
        if self.managed is None:
            pending = self.target.state_base.with_name(self.target.state_base.name + ".journal").exists()
        described = self.target.describe()  # a remote target names its config host:path
        self.planned_s = self.estimate_s(len(self.resumed))
        return self.make_plan(described, cfg, space, pending)

    def check_journal(self, space: Space) -> list[Observation]:
        """The trials an interrupted session journalled (`--resume`, after
        checking it measured the same search); a new session finds no journal."""
        from advisor.tuner.session.journal import check_compatible, read_journal

        path = self.journal_path
        if self.settings.resume:
            contents = read_journal(path)
            check_compatible(contents.header, space=space.signature(), workload=self.workload.identity(),
                             objective=self.objective.identity(), path=str(path))
            return list(contents.trials)
        if path.exists():
            raise UsageError("a tuning journal is already here", file=str(path),
                             hint="continue it with --resume, or pick a new --report directory")
        return self.resumed

    def make_plan(self, described: dict[str, Any], cfg, space: Space, pending: bool) -> Plan:
        """The plan from what prepare() read (`described`: the target as it describes itself)."""
        return Plan(
            target=described, config=str(described.get("config") or cfg.main_file), mpm=space.mpm,
            dimensions=[{"name": d.name, "text": d.describe(), "fixed": d.is_fixed,
                         "start": plan_start_text(space, d)} for d in space.dimensions],
            notes=list(space.notes) + list(space.start_notes),
            workload=self.workload.describe(), objective=self.objective.label(self.workload.unit),
            measurement=measurement_text(self.probes, self.objective, self.workload), budget=self.settings.budget,
            max_time_s=self.settings.max_time_s, search=self.settings.search, seed=self.settings.seed,
            gain_replicates=self.settings.gain_replicates, estimate_s=self.planned_s,
            estimate_extras=self.estimate_extras(),
            ablation_rounds=self.settings.ablation_rounds, lint_gate=lint_gate_text(self.lint),
            journal=str(self.journal_path), report_dir=str(self.settings.session_dir), resumed=len(self.resumed),
            pending_restore=pending, precision=plan_precision(self.target, self.probes, self.objective, self.settings),
            load=load_text(self.target, self.probes, self.objective, self.workload, self.settings),
            round_trip=self.objective.rtt_text(), mpm_searched=space.dimension("MPM") is not None)

    def load_pace(self, space: Space) -> None:
        """The last session's measured costs on this host, workload and transport, for the plan."""
        from advisor.tuner.trial.pace import load_earlier, pace_key

        described = self.target.describe()
        mpm = "any" if space.dimension("MPM") is not None else space.mpm
        self.pace_key = pace_key(described, self.workload.name, isinstance(described.get("tls"), dict),
                                 self.objective.rtt_ms, mpm, self.probes.duration_s, self.probes.warmup_s)
        self.pace = Pace(earlier=load_earlier(self.pace_key))

    # ---- the estimates -----------------------------------------------------

    def estimate(self) -> Estimate:
        """The time estimates from the pace measured so far (or the last session's here)."""
        return Estimate(self.settings, self.probes, self.workload, self.objective, self.pace)

    def estimate_s(self, done: int) -> float:
        """Seconds the rest of the session should take (a rough figure for the plan)."""
        return self.estimate().estimate_s(done)

    def estimate_extras(self) -> str:
        """Where the estimate's runs after the search come from, in words."""
        return self.estimate().estimate_extras()

    def eta(self, observations: list[Observation]) -> float | None:
        """The rest of the session from this session's measured runs (Estimate.eta)."""
        return self.estimate().eta(observations)

    # ---- the phases --------------------------------------------------------

    def run(self) -> SessionOutcome:
        """The trials, the replicates and the report's data. Call inside open(), after prepare().

        The phases after the plan, in order: search, simplify, attribute
        (the ablation rounds), confirm (the gain), advise (the lint gate),
        report; each takes what the earlier ones returned."""
        # The phases after the plan are imported here: `tune --dry-run`
        # only plans, and its start-up is part of a speed goal.
        from advisor.tuner.session.advise import advise
        from advisor.tuner.session.attribute import attribute
        from advisor.tuner.session.confirm import confirm
        from advisor.tuner.session.simplify import simplify_best
        from advisor.tuner.session.trials import make_session_searcher, run_trials

        if self.managed is None or self.space is None:
            raise RuntimeError("TuneSession.run needs open() and prepare() first")
        journal, earlier = open_journal(self.settings.session_dir, self.journal_header(), resume=self.settings.resume)
        searcher = make_session_searcher(self.space, self.settings, earlier.trials, earlier.lint_refusals)
        runner = self.make_objective(searcher)
        for obs in earlier.trials:
            runner.learn(obs)
        began = time.monotonic()
        context = self.context()
        result = run_trials(context, searcher, runner, journal, earlier.trials, began, eta=self.eta,
                            raise_if_signalled=self.raise_if_signalled, lint_refused=earlier.lint_refusals)
        runner.on_start = None
        if result.best is None:
            raise AdvisorError(f"no trial measured the server ({result.stop_reason})",
                               hint=result.advice or "see the journal for each trial's reasons")
        normal = result.advice is None
        simplified, model = simplify_best(context, result.observations, result.best)
        context.model = model
        attributed = attribute(context, runner, journal, earlier.ablation_runs, simplified, normal)
        confirmed = confirm(context, runner, journal, earlier.gain_runs, attributed, normal)
        advice = advise(context, runner, journal, confirmed, attributed.ablations)
        report = self.report(result, advice, attributed.ablations, time.monotonic() - began, earlier.lint_refusals)
        self.record_pace(normal)
        return SessionOutcome(report, result, result.observations, advice.winner, advice.replicates, normal)

    def journal_header(self) -> JournalHeader:
        space, s = self.space, self.settings
        return JournalHeader(space=space.signature(), workload=self.workload.identity(),
                             objective=self.objective.identity(), seed=s.seed, search=s.search,
                             extra={"target": self.target.describe(), "start": dict(space.start)})

    def make_objective(self, searcher) -> TrialObjective:
        """The session's one trial objective: each point of the search, the
        rounds and the gain is measured by it (the knee searches start from
        the searcher's incumbent's peak)."""
        from advisor.tuner.trial.objective import TrialObjective

        s = self.settings
        return TrialObjective(self.target, self.managed, self.space, self.workload, self.objective, self.probes,
                              server_cpus=s.server_cpus, client_cpus=s.client_cpus, events=self.events,
                              registry=self.registry, incumbent=lambda: (searcher.incumbent() or (None,))[0],
                              clients=s.clients, pace=self.pace)

    def context(self) -> SessionContext:
        """What the phases after the plan read."""
        return SessionContext(self.space, self.lint, self.settings, self.events, workload_name=self.workload.name,
                              rtt_ms=self.objective.rtt_ms)

    def report(self, result: SearchResult, advice: Advice, ablations, elapsed: float, refused=()):
        """The report's data (report_data.TuneReport); `refused`: the points lint refused (refusals.py)."""
        from advisor.tuner.session.report_data import SessionFacts, build_report

        s = self.settings
        stop = result.stop_reason + (f": {result.advice}" if result.advice else "")
        facts = SessionFacts(workload=self.workload.name, objective=self.objective.short_label(self.workload.unit),
                             unit=self.objective.unit, budget=s.budget, max_time_s=s.max_time_s, search=s.search,
                             seed=s.seed, stop_reason=stop, elapsed_s=round(elapsed, 1),
                             planned_s=round(self.planned_s, 1) if self.planned_s is not None else None,
                             target=str(self.target.base_url), round_trip=self.objective.rtt_text())
        return build_report(self.cfg, self.space, result.observations, advice.winner, facts,
                            replicates=advice.replicates, seed=s.seed, notes=advice.notes or [], ablations=ablations,
                            suppressions=advice.suppressions or {}, lint=self.lint, lint_refused=refused)

    def record_pace(self, normal: bool) -> None:
        """Keep what this session's runs cost here, for the next plan."""
        if not self.settings.resume:  # a resumed session took some of its runs from the journal
            from advisor.tuner.trial.pace import OWN

            self.pace.after_search_runs = self.pace.costs[OWN].runs
        if self.pace_key is not None and normal:
            # A session stopped early (disturbed trials, say) measured its host
            # at its worst: the next plan would start from that.
            from advisor.tuner.trial.pace import save

            save(self.pace_key, self.pace)
