"""The session's search: the trials the optimizer asks for, each journalled
as it completes and told to the display, with the points httpd refused
journalled, told to the optimizer as poor ones, and the search resumed from
where it was (three in a row stop the session). The points the candidate
lint refuses before any trial are journalled and told to the display too
(refusals.py): a search lint shrank says so."""

from __future__ import annotations

import time
from typing import Callable, Sequence

from advisor.errors import AdvisorError
from advisor.tuner.search.optimizer import Observation, SearchResult, SearchSettings, make_searcher, run_search
from advisor.tuner.search.space import Space, Value
from advisor.tuner.session.refusals import LintRefusal
from advisor.tuner.session.session_context import SessionContext, SessionSettings
from advisor.tuner.trial.objective import PointRefused, TrialObjective, point_key

# Points httpd refused in a row before the session stops.
MAX_REFUSED_IN_A_ROW = 3
REFUSED = "config refused"


def make_session_searcher(space: Space, settings: SessionSettings, done: list[Observation],
                          lint_refused: Sequence[LintRefusal] = ()):
    """The optimizer of the session's settings, told the trials a resumed
    session journalled (the points httpd or lint refused as refused)."""
    searcher = make_searcher(settings.search, space, SearchSettings(budget=settings.budget,
                                                                    max_time_s=settings.max_time_s,
                                                                    seed=settings.seed))
    searcher.replay(done)
    for obs in done:
        if obs.verdict == REFUSED:
            searcher.reject(obs.point)
    for refusal in lint_refused:
        searcher.reject(refusal.point)
    return searcher


def run_trials(context: SessionContext, searcher, runner: TrialObjective, journal, done: list[Observation],
               began: float, *, raise_if_signalled: Callable[[], None],
               eta: Callable[[list[Observation]], float | None],
               lint_refused: list[LintRefusal] | None = None) -> SearchResult:
    """run_search, restarted after each point httpd refused.

    run_search knows valid and invalid trials; a refused point is neither
    (nothing was measured), so the objective raises PointRefused, and the
    refusal is journalled, told to the optimizer as a poor point, and the
    search goes on from where it was; three in a row stop the session.

    `lint_refused`: the points the candidate lint refused so far (a resumed
    session's), appended to as it refuses more; the result's `rejected`
    holds them all, across the restarts.
    """
    observations = list(done)
    refused_in_row = 0
    for obs in reversed(done):
        if obs.verdict != REFUSED:
            break
        refused_in_row += 1
    asking = Asking(searcher)
    total_time = context.settings.max_time_s
    refusals = lint_refused if lint_refused is not None else []
    check = lint_check(context, journal, refusals, asking) if context.lint is not None else None

    def record(obs: Observation) -> None:
        nonlocal refused_in_row
        journal.append(obs)
        raise_if_signalled()
        observations.append(obs)
        runner.learn(obs)
        refused_in_row = refused_in_row + 1 if obs.verdict == REFUSED else 0
        context.events.trial_done(obs, best_mean(context.space, observations), eta(observations))

    runner.on_start = lambda point: context.events.trial_started(
        len(observations) + 1, context.settings.budget, point, asking.last[1] if asking.last else "")
    while True:
        if total_time is not None:
            searcher.settings.max_time_s = max(0.0, total_time - (time.monotonic() - began))
        try:
            return with_refusals(run_search(asking, runner, check=check, on_trial=record, done=observations),
                                 refusals)
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
                                                        "directives": context.space.directives(point)},
                              origin=origin, elapsed_s=runner.last_elapsed)
            record(obs)
            searcher.reject(point)
            if refused_in_row >= MAX_REFUSED_IN_A_ROW:
                best = searcher.incumbent()
                return with_refusals(SearchResult(observations, best[0] if best else None,
                                                  best[1] if best else None, best[2] if best else 0,
                                                  f"httpd refused {MAX_REFUSED_IN_A_ROW} points in a row",
                                                  refused.error.render(), [], time.monotonic() - began), refusals)
            if len(observations) >= context.settings.budget:
                best = searcher.incumbent()
                return with_refusals(SearchResult(observations, best[0] if best else None,
                                                  best[1] if best else None, best[2] if best else 0, "budget",
                                                  None, [], time.monotonic() - began), refusals)


def lint_check(context: SessionContext, journal, refusals: list[LintRefusal], asking: "Asking"
               ) -> Callable[[dict[str, Value]], list[str]]:
    """run_search's check: the candidate lint's errors for a point, each
    refused point journalled and told to the display as it is refused (once:
    a resumed session may be handed a point refused before it stopped)."""
    seen = {point_key(context.space, r.point) for r in refusals}

    def check(point: dict[str, Value]) -> list[str]:
        errors = context.lint.check(point).errors
        key = point_key(context.space, point)
        if errors and key not in seen:
            seen.add(key)
            origin = asking.last[1] if asking.last is not None else "model"
            refusal = LintRefusal(dict(point), origin, list(errors))
            refusals.append(refusal)
            journal.append_refusal(refusal)
            context.events.note(refusal.console_line(context.space))
        return errors

    return check


def with_refusals(result: SearchResult, refusals: list[LintRefusal]) -> SearchResult:
    """The result with every point lint refused in the session (run_search's
    own list holds only those since its last restart)."""
    result.rejected = [(dict(r.point), list(r.errors)) for r in refusals]
    return result


class Asking:
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


def best_mean(space: Space | None, observations: list[Observation]) -> float | None:
    if space is None:
        return None
    values: dict[tuple, list[float]] = {}
    for o in observations:
        if o.valid and o.objective is not None:
            values.setdefault(point_key(space, o.point), []).append(float(o.objective))
    return max((sum(v) / len(v) for v in values.values()), default=None)
