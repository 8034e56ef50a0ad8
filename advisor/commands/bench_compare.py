"""`apache-advisor bench --compare A B` (and `--compare-quota PCT_A PCT_B`):
the CLI's side of a comparison. The sides are read and checked here, the
rounds run in advisor.tuner.trial.compare, and each round and the result
are printed here. bench.py holds the options and hands over to this module.
"""

from __future__ import annotations

import json
import os
import random
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand

from advisor.errors import UsageError

AS_IT_IS = "the config as it is"
QUOTA_RANGE = (5.0, 100.0)


@dataclass(frozen=True)
class CompareRequest:
    """What --compare, --compare-quota and their options asked, read and checked."""

    sides: tuple[Any, Any]
    """advisor.tuner.trial.compare.CompareSide for A and B."""
    precision: float
    max_rounds: int
    seed: int
    fail_if_slower: bool
    moves_quota: bool


def _click_usage_error() -> type[Exception]:
    """Click's usage error: Typer 0.28 carries its own copy of Click, the
    versions before it import Click itself."""
    try:
        from typer._click.exceptions import UsageError as click_usage
    except ImportError:
        from click.exceptions import UsageError as click_usage
    return click_usage


class OneLineUsageCommand(TyperCommand):
    """bench's command: a usage error Click finds while parsing (`--compare`
    given one value, an unknown option) is one line and exit 2 as every
    other bad input is, not Typer's framed box."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except _click_usage_error() as error:
            raise UsageError(error.format_message().rstrip("."),
                             hint=f"see apache-advisor {self.name} --help") from None


def side_lines(text: str) -> tuple[tuple[str, ...], str]:
    """A side's directives and how it was named: '-' or '' is the config as
    it is (no directive); an existing file is a drop-in include, read line
    by line; anything else is directives separated by ';' or newlines."""
    stripped = text.strip()
    if stripped in ("", "-"):
        return (), AS_IT_IS
    path = Path(os.path.expanduser(stripped))
    if path.is_file():
        try:
            content = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {stripped}: {getattr(exc, 'strerror', None) or exc}") from None
        lines = _include_lines(content)
        if not lines:
            raise UsageError(f"{stripped} holds no directive", hint="give '-' for the config as it is")
        return lines, str(path)
    if len(stripped.split()) == 1 and (os.sep in stripped or stripped.endswith(".conf")):
        # One word that looks like a path: a typo in a file's name, not a directive.
        raise UsageError(f"no such include file: {stripped}",
                         hint="give an existing file, directives such as 'KeepAlive Off; MaxRequestWorkers 150', or '-'")
    lines = tuple(part.strip() for chunk in stripped.splitlines() for part in chunk.split(";") if part.strip())
    return lines, "; ".join(lines)


def _include_lines(content: str) -> tuple[str, ...]:
    """A drop-in include's directives: comments and blank lines left out,
    lines continued with a backslash joined as httpd joins them."""
    lines: list[str] = []
    pending = ""
    for raw in content.splitlines():
        line = raw.strip() if pending else raw.rstrip()
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        line, pending = (pending + line).strip(), ""
        if line and not line.startswith("#"):
            lines.append(line)
    if pending.strip():
        lines.append(pending.strip())
    return tuple(lines)


def parse_request(compare: tuple[str, str] | None, compare_quota: tuple[float, float] | None, *,
                  precision: float, max_rounds: int, seed: int | None, fail_if_slower: bool) -> CompareRequest | None:
    """The comparison asked (None: a plain bench run), its sides read."""
    from advisor.tuner.trial.compare import SIDE_NAMES, CompareSide

    if compare is None and compare_quota is None:
        if fail_if_slower:
            raise UsageError("--fail-if-slower needs --compare or --compare-quota")
        return None
    texts = compare if compare is not None else ("-", "-")
    for name, text in zip(SIDE_NAMES, texts):
        if text.startswith("--"):
            # Click hands the next word to a two-value option even when it is an option.
            raise UsageError(f"--compare takes two values, A and B: {text} was read as {name}",
                             hint="give both sides, e.g. --compare - 'KeepAlive Off'")
    quotas: tuple[float | None, float | None] = compare_quota if compare_quota is not None else (None, None)
    for pct in quotas:
        if pct is not None and not QUOTA_RANGE[0] <= pct <= QUOTA_RANGE[1] * (os.cpu_count() or 1):
            raise UsageError(f"--compare-quota {pct:g} is out of range", hint="give percentages of one core, 5 to 100")
    sides = []
    for name, text, pct in zip(SIDE_NAMES, texts, quotas):
        lines, source = side_lines(text)
        sides.append(CompareSide(name, lines, source, pct))
    return CompareRequest((sides[0], sides[1]), precision, max_rounds,
                          seed if seed is not None else random.SystemRandom().randrange(2**31),
                          fail_if_slower, compare_quota is not None)


def check_options(request: CompareRequest, mode: str, rates: str | None, plot: str | None) -> None:
    """What a comparison cannot be combined with, refused before any server is touched."""
    if mode == "ramp" or rates:
        raise UsageError("--compare measures each side's peak (a knee search): it takes no --mode ramp or --rates",
                         hint="leave out --mode and --rates")
    if plot:
        raise UsageError("--plot draws one search's probes, not a comparison", hint="leave out --plot")
    settings(request, start_rate=1.0, max_rate=1.0, tolerance=0.1, max_probes=1, retries=0).check()


def settings(request: CompareRequest, *, start_rate: float, max_rate: float, tolerance: float, max_probes: int,
             retries: int):
    from advisor.tuner.trial.compare import CompareSettings

    return CompareSettings(start_rate=start_rate, max_rate=max_rate, tolerance=tolerance, max_probes=max_probes,
                           retries=retries, precision=request.precision, max_rounds=request.max_rounds,
                           seed=request.seed)


def all_lines(request: CompareRequest) -> list[str]:
    """Every side's directives, for the check that no later line of the config overrides one."""
    return [line for side in request.sides for line in side.directives]


def compare_plan(request: CompareRequest, plan):
    """The bench plan with the target whose quota moves, when the sides differ in quota."""
    if not request.moves_quota:
        return plan
    from advisor.tuner.trial.compare import quota_target

    return replace(plan, target=quota_target(plan.target))


def compare_trials(options, plan, base, steps: list[float], report, kwargs: dict, managed_config) -> list:
    """The rounds on the managed config (ManagedConfig restores it after),
    the quota put back whatever happens, each round printed, then the
    result. `steps` (a ramp's) has no use here: bench's dispatch passes it
    to whichever runs its trials."""
    from advisor.tuner.trial.compare import QuotaSandboxTarget, compare_rounds, knee_measure

    request: CompareRequest = options.compare
    chosen = settings(request, start_rate=plan.start_rate, max_rate=options.max_rate, tolerance=options.tolerance,
                      max_probes=options.max_probes, retries=options.retries)
    out = _Printer(report)
    out.sides(request, chosen)
    target = plan.target
    for side in request.sides:
        # Each side through httpd's check and a reload before any load: a
        # side it refuses ends the run before the other side's searches.
        managed_config.apply(list(base.directives) + list(side.directives))
    measure = knee_measure(target, managed_config, base, chosen, on_side=out.side, on_trial=out.probe, **kwargs)
    try:
        result = compare_rounds(request.sides, chosen, measure, on_round=out.round)
    finally:
        if isinstance(target, QuotaSandboxTarget):
            target.move_quota(None)
    out.result(result)
    if request.fail_if_slower and result.verdict == "slower":
        raise typer.Exit(code=1)
    return []


def times(value: float) -> str:
    return f"x{value:.2f}"


def percent(share: float) -> str:
    """0.053 as "5.3 %"."""
    return f"{100 * share:.3g} %"


def interval_text(interval) -> str:
    return f"{percent(interval.confidence)} CI {times(interval.low)} to {times(interval.high)}"


def result_lines(result) -> list[str]:
    """The comparison's result in words: the ratio and its interval, what it
    says, and how the rounds ended."""
    from advisor.tuner.trial.compare import FASTER, NO_DIFFERENCE, ROUNDS_SPENT, SLOWER

    interval = result.interval
    if result.verdict in (FASTER, SLOWER):
        lines = [f"B/A = {times(interval.ratio)} ({interval_text(interval)}): B is {result.verdict}"]
    elif result.verdict == NO_DIFFERENCE:
        lines = [f"no difference measured ({interval_text(interval)}; B/A = {times(interval.ratio)})"]
    else:
        lines = [f"no comparison: {result.stop_reason}"]
    if result.stop_reason == ROUNDS_SPENT and interval is not None:
        lines.append(f"the {len(result.rounds)} rounds (--max-rounds) ran out before the precision: "
                     f"±{percent(interval.half_width)} reached, ±{percent(result.settings.precision)} asked")
    elif interval is not None:
        lines.append(f"{result.stop_reason} after {len(result.rounds)} rounds: ±{percent(interval.half_width)}")
    limits = result.bottlenecks
    if limits:
        lines.append("what set each side's peak: " + "; ".join(
            f"{name} " + ", ".join(f"{label} ({count} of {sum(counts.values())} rounds)"
                                   for label, count in counts.items()) for name, counts in limits.items()))
    return lines + [f"note: {note}" for note in result.notes]


class _Printer:
    """Prints the comparison as it goes; decides nothing. In JSON the one
    document goes to stdout at the end and the rounds to stderr."""

    def __init__(self, report) -> None:
        self.report = report
        self.json = report.json
        self.current: str | None = None

    def line(self, text: str) -> None:
        if self.json:
            sys.stderr.write(f"apache-advisor: {text}\n")
        else:
            self.report.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def sides(self, request: CompareRequest, chosen) -> None:
        for side in request.sides:
            quota = f", CPU quota {side.quota_pct:g} %" if side.quota_pct is not None else ""
            self.line(f"{side.name}: {side.source}{quota}")
        self.line(f"rounds: each side's peak, in a random order each round (seed {chosen.seed}), until the "
                  f"95 % CI of B/A is within ±{percent(chosen.precision)} or {chosen.max_rounds} rounds ran")

    def side(self, side) -> None:
        self.current = side.name

    def probe(self, trial) -> None:
        if self.json:
            return
        met = "met" if trial.meets_slo else "missed"
        self.line(f"  {self.current} probe {trial.inputs.rate:g}/s: {trial.httperf.reply_rate:.0f} replies/s, "
                  f"{trial.httperf.reply_time_ms:.1f} ms, SLO {met}")

    def round(self, current) -> None:
        runs = current.runs
        parts = [f"{name} {runs[name].figure:.0f} replies/s ({runs[name].probes} probes"
                 f"{', ' + runs[name].bottleneck if runs[name].bottleneck else ''})" for name in current.order]
        text = f"round {current.number} ({' then '.join(current.order)}): " + ", ".join(parts)
        if current.interval is not None:
            text += f"; B/A {times(current.interval.ratio)} ({interval_text(current.interval)})"
        elif current.ratio is not None:
            text += f"; B/A {times(current.ratio)}"
        self.line(text)

    def result(self, result) -> None:
        if self.json:
            print(json.dumps(result.to_dict()), flush=True)
            return
        for text in result_lines(result):
            self.line(text)
