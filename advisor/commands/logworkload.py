"""`--workload log:PATH` for bench and tune: the replay of an access log.

Both commands read the same options, derive the replay before they touch
a server (a bad log changes nothing), then put the files into the sandbox
once the target is known. Only the standard library at module level.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from advisor.errors import UsageError

if TYPE_CHECKING:
    from advisor.commands.targets import TargetOptions

LOG_FORMAT_HELP = "log:PATH workloads: the log's LogFormat string, or common/combined (default: the CustomLog's own when the config is known, else guessed from the first lines)."
SESSION_GAP_HELP = "log:PATH workloads: seconds of client idleness that end a session."
DYNAMIC_HELP = "log:PATH workloads: static (query strings and scripts become files of the logged size) or cgi (sent to the sandbox's CGI endpoint)."
ANONYMIZE_HELP = "log:PATH workloads: replace paths with hashes of the same length class."
SPEEDUP_HELP = "log:PATH workloads: sessions per second as a multiple of the log's own session rate."


@dataclass
class LogWorkload:
    """A prepared replay and what the commands need to run it."""

    replay: Any  # advisor.tuner.load.replay.Replay
    name: str
    format_source: str
    sandbox: bool

    @property
    def session_rate(self) -> float:
        return self.replay.summary.session_rate

    def rate_for(self, speedup: float) -> float:
        return speedup * self.session_rate

    def summary_lines(self) -> list[str]:
        lines = [f"workload {self.name}: format from {self.format_source}"]
        lines += self.replay.summary.lines_for_humans()
        if not self.sandbox:
            lines.append("an existing server: the logged paths are requested as they are; it must serve them")
        return lines

    def install(self, work_dir: Path | None) -> None:
        """The files of the logged sizes into the sandbox's docroot."""
        if work_dir is not None:
            self.replay.install(work_dir / "docroot")


@dataclass(frozen=True)
class LogOptions:
    """The options of a log:PATH workload, as given (bench and tune take the same)."""

    log_format: str | None
    session_gap: float
    dynamic: str
    anonymize: bool
    speedup: float | None


def is_log_workload(name: str) -> bool:
    return name.startswith("log:")


def prepare(name: str, options: LogOptions, target: TargetOptions) -> LogWorkload:
    from advisor.tuner.load.replay import prepare as derive
    from advisor.tuner.load.replay_sessions import ReplayOptions
    from advisor.tuner.staging.sandbox import Sandbox

    if options.speedup is not None and not 0 < options.speedup <= 10000:
        raise UsageError("--speedup must be more than 0 and at most 10000")
    existing = target.existing
    replay_options = ReplayOptions(session_gap_s=options.session_gap, dynamic=options.dynamic,
                                   anonymize=options.anonymize, prefix=None if existing else "/log")
    if existing:
        out_dir = Path(tempfile.gettempdir()) / f"apache-advisor-{os.getuid()}" / "replay"
        config_path = target.config
    else:
        sandbox = Sandbox(target.workdir)
        out_dir = sandbox.work_dir / "replay"
        state = sandbox.load_state()
        config_path = state.source_config if state is not None else None
    replay, source = derive(name, out_dir, replay_options, log_format=options.log_format, config_path=config_path)
    label = "log:" + ",".join(replay.summary.files)
    return LogWorkload(replay, label, source, not existing)


def refuse_shape_options(think: float | None, num_calls: int | None, burst_length: int = 1) -> None:
    """The log gives the sessions' shape; the options that set one do not apply."""
    if think is not None or (num_calls not in (None, 1)) or burst_length != 1:
        raise UsageError("a log:PATH workload takes its sessions, bursts and think times from the log",
                         hint="leave out --think, --num-calls and --burst-length")


def print_summary(log: LogWorkload, write: Callable[[str], None]) -> None:
    for line in log.summary_lines():
        write(line)
