"""A whole tune session against the simulated host, for comparing two versions of the session's code.

The real session measures a staging server; this one hands every trial to
tuner/search/simulated.py's `SimulatedObjective` (a known optimum, seeded
noise), so two runs with one seed ask the same points and must end on the
same recommendation. It is how a refactor of tuner/session/ shows that it
moved code and changed nothing: run it on the code before and after, with
the same seed, and compare what it prints (the plan, every trial's point
and figure, the ablation and gain runs, the recommendation).

Only the server is simulated: the plan, the search, the ablations, the lint
gate, the pruning, the journal and the report are the product's own. The
target is a stand-in that reads a config from disk (Debian's sample by
default) and answers the few questions the plan asks of a server's host.

    python bench/simulated_session.py [--seed 3] [--budget 12] [--config corpus/samples/debian/apache2.conf]
                                      [--allow-mpm-switch] [--work DIR] [--journal-out FILE]
                                      [--interrupt-after N] [--resume] [--unnamed-misses] [--drift]

--unnamed-misses journals every run as a sandbox on a CPU quota often does:
its peak set by a probe that missed the SLO on reply time while no resource
read as saturated (the limiting verdict "none"); the peaks are the host's own.

--drift puts the session on a host whose speed drifts as this VM's does and
whose trials report their own spread (simulated.py's `drifting_host`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# The time a run took differs from one run to the next; nothing else may.
VOLATILE_KEYS = {"elapsed_s", "time", "started", "ended", "created", "date", "duration_s", "took_s", "wall_s",
                 "report_dir", "journal", "session_dir", "eta_s", "today", "produced_at"}
# A candidate's lint reads a copy in a fresh temporary folder.
TEMPORARY_NAME = re.compile(r"advisor-candidate-[a-z0-9_]+")


class SimulatedTarget:
    """The questions the session's plan asks of a staging target, answered for a config on disk."""

    kind = "simulated"
    on_this_machine = False
    base_url = "http://127.0.0.1:8080/"
    sandbox = None
    pending_restart: list[str] = []

    def __init__(self, config: Path, state_dir: Path) -> None:
        self.config = config
        self.managed_path = state_dir / "managed.conf"
        self.state_base = state_dir / "state"

    def config_source(self):
        from advisor.config import LoadOptions

        return str(self.config), LoadOptions(apache_version="2.4", server_root=str(self.config.parent))

    def check_mpm_switch(self, cfg) -> None:
        return None

    def host_kernel(self):
        from advisor.tuner.staging.target import HostKernel

        return HostKernel(ram_bytes=8 << 30, socket_buffer_bytes=None, somaxconn=4096, where="a simulated host's")

    def where(self, file: str) -> str:
        return file

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "url": self.base_url, "config": str(self.config)}


class SimulatedTrials:
    """What the session asks of its trial objective, answered by the simulated host."""

    def __init__(self, space, seed: int, interrupt_after: int | None = None, unnamed_misses: bool = False,
                 drift: bool = False) -> None:
        from advisor.tuner.search.simulated import SimulatedHost, SimulatedObjective

        host = SimulatedHost()
        if drift:
            from advisor.tuner.search.simulated import drifting_host

            host = drifting_host()
        self.simulated = SimulatedObjective(space, host, seed=seed)
        try:  # the rounds' intervals are floored by the knee bracket the runs are measured to (issue 56)
            from advisor.tuner.trial.objective_spec import ProbeSettings

            self.probes = ProbeSettings()
        except ImportError:
            self.probes = None
        self.interrupt_after = interrupt_after
        self.unnamed_misses = unnamed_misses
        self.on_start = None
        self.last_elapsed = None
        self.uncapped = False
        self.asked: list[dict[str, Any]] = []

    def learn(self, observation) -> None:
        return None

    def __call__(self, point, directives=None):
        if self.on_start is not None:
            self.on_start(point)
        if self.interrupt_after is not None and len(self.asked) >= self.interrupt_after:
            raise KeyboardInterrupt  # as a Ctrl-C in the middle of a trial
        self.asked.append(dict(point))
        outcome = self.simulated(point)
        if self.unnamed_misses and outcome.valid:
            outcome.details.update(unnamed_miss(outcome.objective))
        return outcome


def unnamed_miss(peak: float) -> dict[str, Any]:
    """A knee search's details whose peak was set by a probe just above it
    that missed the SLO on reply time, with no resource read as saturated."""
    verdict = {"label": "none", "evidence": {}, "onset_s": None, "consequences": [], "note": ""}
    return {"objective_kind": "peak",
            "knee": {"peak_rate": peak, "peak_reply_rate": peak, "lower_bound_only": False,
                     "limiting_verdict": verdict},
            "limiting": {"slo_failures": ["reply time 412 ms >= 400 ms"]}}


def _plain(value: Any, work: str) -> Any:
    """`value` as JSON that two runs can compare: no times, no temporary or working folder names."""
    if isinstance(value, dict):
        return {k: _plain(v, work) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, (list, tuple)):
        return [_plain(v, work) for v in value]
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, str):
        return TEMPORARY_NAME.sub("advisor-candidate-*", value).replace(work, "WORK")
    if hasattr(value, "item"):
        return _plain(value.item(), work)
    return value


def _install_trials(session, seed: int, made: list[SimulatedTrials], interrupt_after: int | None,
                    unnamed_misses: bool = False, drift: bool = False) -> None:
    """Hand the session's trials to the simulated host: the session builds its
    one trial objective in `make_objective` (before issue 55 split the session
    into its phases, loop.py built a `TrialObjective` in `run`)."""

    def simulated(*args, **kwargs) -> SimulatedTrials:
        trials = SimulatedTrials(session.space, seed, interrupt_after, unnamed_misses, drift)
        made.append(trials)
        return trials

    if hasattr(session, "make_objective"):
        session.make_objective = simulated
    else:
        from advisor.tuner.session import loop

        loop.TrialObjective = simulated  # type: ignore[attr-defined]


def _config_copy(config: Path, work: Path) -> Path:
    """The config's folder copied into `work`, its main file reading the managed include last, as tune asks."""
    import shutil

    tree = work / "conf"
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(config.parent, tree)
    main = tree / config.name
    with main.open("a", encoding="utf-8") as out:
        out.write(f"\nIncludeOptional {work / 'managed.conf'}\n")
    return main


def run(args: argparse.Namespace) -> dict[str, Any]:
    from advisor.tuner.session.loop import TuneSession

    try:  # the objective and the workloads moved to the measuring layer (issue 55)
        from advisor.tuner.session.session_context import SessionSettings
        from advisor.tuner.trial.objective_spec import ObjectiveSpec, ProbeSettings
        from advisor.tuner.trial.session_workload import make_session_workload
    except ImportError:
        from advisor.tuner.session.loop import ObjectiveSpec, ProbeSettings, SessionSettings  # type: ignore
        from advisor.tuner.session.loop import make_session_workload  # type: ignore

    work = Path(args.work or tempfile.mkdtemp(prefix="simulated-session-"))
    os.environ.setdefault("APACHE_ADVISOR_CACHE_DIR", str(work / "cache"))
    made: list[SimulatedTrials] = []
    config = work / "conf" / Path(args.config).name
    if not args.resume:  # a resumed session reads the tree the interrupted one read
        config = _config_copy(Path(args.config).resolve(), work)
    target = SimulatedTarget(config, work)
    workload = make_session_workload("almeida-sessions", work)
    settings = SessionSettings(work / "report", budget=args.budget, seed=args.seed,
                               allow_mpm_switch=args.allow_mpm_switch, resume=args.resume)
    session = TuneSession(target, work, workload, ObjectiveSpec(), ProbeSettings(), settings)
    _install_trials(session, args.seed, made, args.interrupt_after, args.unnamed_misses, args.drift)
    plan = session.prepare()
    session.managed = object()  # the simulated server needs no include held safe
    try:
        outcome = session.run()
    except KeyboardInterrupt:
        return {"interrupted_after": len(made[0].asked) if made else 0}
    journal = [json.loads(line) for line in session.journal_path.read_text().splitlines() if line.strip()]
    where = str(work)
    return {
        "plan": _plain(plan.to_dict(), where),
        "asked": _plain(made[0].asked if made else [], where),
        "journal": _plain(journal, where),
        "recommendation": _plain(dict(outcome.winner), where),
        "report": _plain(outcome.report.to_dict() if hasattr(outcome.report, "to_dict") else {}, where),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--budget", type=int, default=12)
    parser.add_argument("--config", default=str(REPO / "corpus/samples/debian/apache2.conf"))
    parser.add_argument("--allow-mpm-switch", action="store_true")
    parser.add_argument("--work", help="the session's folder (default: a new temporary one)")
    parser.add_argument("--journal-out", help="write the comparable record (JSON) here")
    parser.add_argument("--interrupt-after", type=int, help="stop the session, as Ctrl-C would, at this trial run")
    parser.add_argument("--resume", action="store_true", help="go on with the journal in --work")
    parser.add_argument("--unnamed-misses", action="store_true",
                        help="every run's peak set by a probe that missed the SLO with nothing saturated")
    parser.add_argument("--drift", action="store_true",
                        help="a host whose speed drifts and whose trials report their own spread")
    args = parser.parse_args(argv)
    record = run(args)
    text = json.dumps(record, indent=1, sort_keys=True, default=str)
    if args.journal_out:
        Path(args.journal_out).write_text(text + "\n")
    if "interrupted_after" in record:
        print(f"interrupted after {record['interrupted_after']} trial runs; go on with --resume")
        return 130
    print(f"plan: {len(record['plan'])} fields; trials asked: {len(record['asked'])}; "
          f"journal lines: {len(record['journal'])}")
    print("recommendation:", json.dumps(record["recommendation"], sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
