"""The report of `apache-advisor tune`: the drop-in include, report.md and the JSON.

Renders a `TuneReport` (advisor.tuner.session.report_data), where every decision
was made; nothing here chooses a value, a directive or a verdict.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from advisor.tuner.search.recommend import Change
    from advisor.tuner.session.gain import Gain
    from advisor.tuner.session.report_data import TuneReport

INCLUDE_NAME = "recommended.conf"
MARKDOWN_NAME = "report.md"
JSON_NAME = "report.json"


def _number(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _times(value: float | None) -> str:
    return "unbounded" if value is None else f"×{value:.3f}"


def gain_sentence(gain: "Gain | None") -> str:
    if gain is None:
        return "not measured"
    level = f"{gain.confidence:.0%}".replace("%", " %")
    ci = f"{level} CI {_times(gain.low)} to {_times(gain.high)}"
    verdict = "excludes 1.0" if gain.excludes_one else "includes 1.0: not a measurable gain"
    return (f"{_times(gain.ratio)} ({ci}, {verdict}; {len(gain.start)} start and {len(gain.winner)} winner "
            "runs, interleaved)")


# --------------------------------------------------------------------------
# The drop-in include


def _was(change: "Change") -> str:
    if change.written is not None:
        return f"# {change.written.location} has {change.written.name} {change.written.value}"
    return f"# not written: httpd's default is {change.current}"


def _suppression(report: "TuneReport", change: "Change") -> list[str]:
    """The measured reason lint accepts for a finding this line brings: a
    comment right before the directive silences that directive only."""
    comment = report.suppressions.get(change.directive) if report.suppressions else None
    return [comment] if comment else []


def render_include(report: "TuneReport", include_path: str | None = None) -> str:
    """The recommended directives as a file to Include after the admin's config."""
    facts, rec = report.facts, report.recommendation
    where = include_path or INCLUDE_NAME
    lines = [
        f"# Recommended by {facts.producer} on {facts.produced_at}",
        f"# Objective: {facts.objective} ({facts.unit})" + (f", workload {facts.workload}" if facts.workload else ""),
        f"# Gain over the starting config: {gain_sentence(report.gain)}",
        f"# {len(rec.changes)} directive(s) changed, measured with the {rec.mpm} MPM over {len(report.trials)} trials.",
        f"# Include it at the end of {rec.main_file} (httpd keeps the last value it reads):",
        f'#   Include "{where}"',
    ]
    lines += [f"# {note}" for note in rec.notes]
    if rec.is_empty and report.no_response is not None:
        lines.append("# Nothing to change: the session could not tell its points apart (see above).")
        return "\n".join(lines) + "\n"
    if rec.is_empty:
        lines.append("# Nothing to change: no point measured beat the starting config.")
        return "\n".join(lines) + "\n"
    plain = [c for c in rec.changes if c.mpm_block is None]
    pooled = [c for c in rec.changes if c.mpm_block is not None]
    for change in plain:
        lines += ["", _was(change), *_suppression(report, change), change.line]
    if pooled:
        lines += ["", f"<IfModule {pooled[0].mpm_block}>"]
        for change in pooled:
            lines += [f"    {_was(change)}", *(f"    {c}" for c in _suppression(report, change)), f"    {change.line}"]
        lines.append("</IfModule>")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# report.md


def _lint_section(comparison: Mapping[str, Any] | None) -> list[str]:
    if not comparison:
        return []
    out = ["## Lint: the start and the tuned tree", "",
           f"`apache-advisor lint --fail-on {comparison['fail_on']}` (profile {comparison['profile']}"
           + (f", settings {comparison['settings']}" if comparison.get("settings") else "")
           + f"): exit {comparison['start_exit']} on the start's tree, {comparison['tuned_exit']} on the tuned "
           "tree (the start's tree with the recommended include read last).", ""]
    rows = [["gone", f["code"], f["severity"], f["where"], f["message"]] for f in comparison.get("gone", [])]
    for f in comparison.get("added", []):
        why = f"suppressed: {f['reason']}" if f.get("suppressed") else f["message"]
        rows.append(["added", f["code"], f["severity"], f["where"], why])
    if rows:
        out += _table(["", "code", "severity", "where", "message or measured reason"], rows)
    else:
        out.append("No finding differs.")
    out.append("")
    return out


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def _spread(uncertainty: Mapping | None, figure: float | None = None) -> str:
    """" ± 4 %" after a trial's figure (" ± 4 %, at least" for a floor); "" without a measured one.
    A figure of 0 says why it has none (precision.NO_RATE_MET)."""
    if figure is not None and figure <= 0:
        from advisor.tuner.trial.precision import NO_RATE_MET

        return f" ({NO_RATE_MET})"
    if not isinstance(uncertainty, Mapping) or uncertainty.get("rel_sd") is None:
        return ""
    floor = ", at least" if uncertainty.get("bound") == "lower" else ""
    return f" ± {100 * float(uncertainty['rel_sd']):.0f} %{floor}"


def _figure_checks(checks: Mapping | None, unit: str) -> list[str]:
    """The searched figures against their points' later runs (session/figure_check.py)."""
    if not checks or not checks.get("checks"):
        return []
    from advisor.tuner.session.figure_check import FigureCheck

    out = ["### Searched figures, measured again", "", f"{checks['summary']}:", ""]
    out += [f"- {FigureCheck(**c).line(unit)}" for c in checks["checks"]]
    return out + [""]


def _lint_refused(entries: list[dict[str, Any]]) -> list[str]:
    """The points the candidate lint refused before any trial, each with its first error."""
    if not entries:
        return []
    out = ["### Points lint refused", "", f"{len(entries)} point(s) the search proposed were never tried: "
           "the candidate lint called them errors, and the search was told they were poor.", ""]
    rows = [[e.get("mpm", ""), e.get("origin", ""),
             ", ".join(f"{k} {v}" for k, v in (e.get("changed") or {}).items()) or "(the starting point)",
             str(e.get("first_error", "")) + (f" (and {e['errors'] - 1} more)" if e.get("errors", 0) > 1 else "")]
            for e in entries]
    return out + _table(["MPM", "proposed as", "changed from start", "first error"], rows) + [""]


def _percent(ratio: float | None) -> str:
    return "-" if ratio is None else f"{(ratio - 1.0) * 100:+.1f} %"


def render_markdown(report: "TuneReport", plots: Mapping[str, str] | None = None,
                    include_name: str = INCLUDE_NAME) -> str:
    plots = dict(plots or {})
    facts, rec, unit = report.facts, report.recommendation, report.facts.unit
    out = [f"# Tuning report: {os.path.basename(rec.main_file)}", "",
           f"Produced by {facts.producer} on {facts.produced_at}"
           + (f" against {facts.target}" if facts.target else "") + ".", ""]
    out += ["## Summary", "",
            (f"- Recommendation: none: {report.no_response.sentence}." if report.no_response is not None else
             f"- Recommendation: {len(rec.changes)} directive(s), in [{include_name}]({include_name})."),
            f"- Gain over the starting config: {gain_sentence(report.gain)}.",
            f"- Bottleneck: {report.verdict_line}.",
            f"- Search: {len(report.trials)} trials, stopped by {facts.stop_reason or 'the budget'}"
            + (f"; lint refused {len(report.lint_refused)} point(s), never tried (see Points lint refused)."
               if report.lint_refused else "."), ""]

    out += ["## Plan", ""]
    out += _table(["", ""], [
        ["objective", f"{facts.objective} ({unit}), higher is better"],
        ["workload", facts.workload or "-"],
        *([["round trip", facts.round_trip]] if facts.round_trip else []),
        ["budget", f"{facts.budget} trials" + (f", at most {facts.max_time_s:g} s" if facts.max_time_s else "")],
        ["search", f"{facts.search}, seed {facts.seed}"],
        ["MPM", report.space.get("mpm", "")],
        ["elapsed", f"{facts.elapsed_s:,.0f} s" + (f" (the plan said {facts.planned_s:,.0f} s)"
                                                   if facts.planned_s else "")],
    ])
    out += ["", "The space (each dimension, its range and why):", ""]
    out += [f"- {line}" for line in report.space.get("plan", [])]
    out += [f"- {note}" for note in report.space.get("start_notes", [])]
    out.append("")

    out += ["## Trials", ""]
    rows = []
    for row in report.trials:
        marks = [m for m, on in (("start", row.is_start), ("winner", row.is_winner), ("replicate", row.replicate),
                                 ("invalid", not row.valid),
                                 ("stopped early below the incumbent", row.upper_bound)) if on]
        changed = ", ".join(f"{k} {v}" for k, v in row.changed.items()) or "(the starting point)"
        figure = ("≤ " if row.upper_bound else "") + _number(row.objective) + _spread(row.uncertainty, row.objective)
        rows.append([row.trial, figure, _number(row.best_so_far), row.verdict,
                     ", ".join(marks), changed])
    header = ["trial", f"objective ({unit})", f"best mean so far ({unit})", "bottleneck", "", "changed from start"]
    out += _table(header, rows)
    if "convergence" in plots:
        out += ["", f"![objective per trial, best so far and the start level]({plots['convergence']})"]
    out.append("")
    out += _lint_refused(report.lint_refused)
    out += _figure_checks(report.figure_checks, unit)

    out += ["## Recommendation", ""]
    if report.no_response is not None:
        out += [f"None: {report.no_response.sentence}. Keep the config in use; look at the cause before "
                "tuning again.", ""]
    elif rec.is_empty:
        out += ["No point measured beat the starting config: keep it.", ""]
    else:
        out += [f"Include [{include_name}]({include_name}) at the end of `{rec.main_file}`, or edit the lines "
                "below.", "", "```apache", render_include(report).rstrip("\n"), "```", ""]
        out += ["### Against your config", ""]
        out += _table(["directive", "today", "recommended", "where"],
                      [[c.directive, c.current, c.value, c.where] for c in rec.changes])
        out.append("")
        for diff in report.diffs:
            out += ["```diff", *diff.lines, "```", ""]
        if rec.notes:
            out += [f"- {note}" for note in rec.notes] + [""]

    out += ["## Gain", ""]
    gain = report.gain
    if gain is None:
        out += ["Not measured: the session ran no interleaved replicates of the start and the winner.", ""]
    else:
        out += _table(["", f"runs ({unit})", "geometric mean"], [
            ["start", ", ".join(_number(v) for v in gain.start), _number(gain.start_mean)],
            ["winner", ", ".join(_number(v) for v in gain.winner), _number(gain.winner_mean)],
        ])
        out += ["", f"Ratio of geometric means {gain_sentence(gain)}.", "",
                f"Method: {gain.method}" + (f", {gain.df:.1f} degrees of freedom" if gain.df else "") + "."
                + (f" Run order: {', '.join(gain.order)}." if gain.order else ""), ""]
        out += [f"- {note}" for note in gain.notes] + ([""] if gain.notes else [])

    out += ["## Bottleneck", ""]
    for name, summary in (("Before (the starting config)", report.start_verdict),
                          ("After (the winner)", report.winner_verdict)):
        if summary is None:
            out += [f"- {name}: not measured"]
            continue
        out += [f"- {name}: {summary.summary}, in {summary.count} of {summary.runs} runs"]
        scalars = {k: v for k, v in summary.evidence.items() if isinstance(v, (int, float, str)) and v is not None}
        if scalars:
            out += ["  - evidence: " + ", ".join(f"{k} = {v}" for k, v in scalars.items())]
    out.append("")

    out += ["## Effect of each change", ""]
    sens = {s.dimension: s for s in report.sensitivity}
    measured = (report.ablations or {}).get("effects", {})
    # A change measured in a group (the model saw no effect of each) is
    # found under the group's name.
    group_of = (report.ablations or {}).get("by_dimension", {})
    only_change = len([c for c in rec.changes if c.start != c.value]) == 1
    rows = []
    mpm = measured.get("MPM")
    if mpm is not None:
        # The MPM is a LoadModule line, not a line of the drop-in: its own row.
        if mpm.get("ratio") is not None:
            band = (f"{_percent(mpm['low'])} to {_percent(mpm['high'])}"
                    if mpm.get("low") is not None and mpm.get("high") is not None else "no finite band")
            rows.append(["MPM (LoadModule)", f"{mpm['start_value']} → {mpm['winner_value']}", _percent(mpm["ratio"]),
                         band, f"measured: the winner against the winner under {mpm['start_value']} "
                               f"({mpm['verdict']})", "-"])
        elif mpm.get("without_served_nothing"):
            rows.append(["MPM (LoadModule)", f"{mpm['start_value']} → {mpm['winner_value']}", "decisive", "-",
                         f"measured: under {mpm['start_value']} no rate met the SLO", "-"])
    for change in rec.changes:
        s = sens.get(change.directive)
        cites = report.evidence.get(change.directive, [])
        evidence = "; ".join(f"{c.reference}: {c.figure}" if c.figure else c.reference for c in cites) or "-"
        ablation = measured.get(group_of.get(change.dimension, change.dimension))
        together = [m for m in (ablation or {}).get("members", []) if m != change.dimension]
        advised = (ablation or {}).get("advised_by")
        if advised and ablation.get("ratio") is not None and change.value == ablation["start_value"]:
            # The recommendation took the rule's advice: what was measured is
            # the search's value against it.
            effect, band = "-", ""
            how = (f"{advised}'s advice: the search's {ablation['winner_value']} measured against it "
                   f"{_percent(ablation['ratio'])} ({ablation['verdict']})")
        elif ablation is not None and ablation.get("ratio") is not None:
            effect = _percent(ablation["ratio"])
            band = (f"{_percent(ablation['low'])} to {_percent(ablation['high'])}"
                    if ablation.get("low") is not None and ablation.get("high") is not None else "no finite band")
            how = (f"measured together with {', '.join(together)}: the winner against the winner without them "
                   f"({ablation['verdict']})" if together else
                   f"measured: the winner against {change.directive} {ablation['start_value']}, which {advised} "
                   f"advises ({ablation['verdict']})" if advised else
                   f"measured: the winner against the winner without it ({ablation['verdict']})")
        elif ablation is not None and ablation.get("without_served_nothing"):
            effect, band, how = "decisive", "-", "measured: without it no rate met the SLO"
        elif only_change and change.start != change.value and report.gain is not None:
            gain = report.gain
            effect = _percent(gain.ratio)
            band = (f"{_percent(gain.low)} to {_percent(gain.high)}" if gain.low is not None and gain.high is not None
                    else "no finite band")
            how = "measured: the gain, this being the only change"
        elif s is not None:
            effect, band = _percent(s.ratio), f"{_percent(s.low)} to {_percent(s.high)}"
            how = "modelled only (a hint: no ablation ran)"
        elif change.dimension != change.directive:
            effect, band, how = f"with {change.dimension}", "", "-"
        elif change.start == change.value:
            effect, band, how = "not moved by the search", "", "-"
        else:
            effect, band, how = "-", "", "-"
        rows.append([change.directive, f"{change.start} → {change.value}", effect, band, how, evidence])
    out += _table(["directive", "start → recommended", "effect", "95 % band", "how it is known",
                   "what the studies measured"], rows)
    if report.sensitivity:
        out += ["", f"Modelled effects: {report.sensitivity[0].method}. They interact and need not add up to "
                "the measured gain; where an ablation ran, its measured figure is the one shown."]
    out.append("")
    out += _lint_section(report.lint_comparison)

    if "partial_dependence" in plots:
        out += ["## Partial dependence", "",
                "Each panel: the modelled objective as one dimension varies, averaged over random settings of "
                "the others (partial dependence) and along a line through the winner, with the trials as dots.",
                "", f"![partial dependence per dimension]({plots['partial_dependence']})", ""]
    if report.notes:
        out += ["## Notes", ""] + [f"- {note}" for note in report.notes] + [""]
    return "\n".join(out)


# --------------------------------------------------------------------------
# JSON, and the files together


def render_json(report: "TuneReport", plots: Mapping[str, str] | None = None,
                include_name: str = INCLUDE_NAME) -> str:
    data = report.to_dict()
    data["files"] = {"include": include_name, "plots": dict(plots or {})}
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


def write_report(report: "TuneReport", directory: str | Path, plots: Mapping[str, Path] | None = None
                 ) -> dict[str, Path]:
    """recommended.conf, report.md and report.json in `directory`; plots
    (already written there by advisor.tuner.session.report_plots) are linked by their
    names. Each file is written whole, then renamed into place."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    names = {name: os.path.relpath(path, directory) for name, path in (plots or {}).items()}
    include = directory / INCLUDE_NAME
    texts = {
        "include": (include, render_include(report, str(include.resolve()))),
        "markdown": (directory / MARKDOWN_NAME, render_markdown(report, names)),
        "json": (directory / JSON_NAME, render_json(report, names)),
    }
    written = {}
    for key, (path, text) in texts.items():
        partial = path.with_name(path.name + ".part")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
        written[key] = path
    return written
