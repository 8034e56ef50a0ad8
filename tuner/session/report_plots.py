"""The tuning report's PNGs (matplotlib, Agg backend): convergence, and the
partial dependence of the objective on each searched dimension.

Drawn from a `TuneReport` alone: the curves were computed from the
surrogate when the report was built, so a plot decides nothing.

Why not skopt.plots.plot_objective: it draws an n x n matrix of 2-D
contours; with the dozen dimensions of a prefork space that is 144 panels
of a few pixels each, without units. One 1-D panel per dimension, in the
objective's units, is what an admin can read.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.tuner.session.report_data import Curve, TuneReport

CONVERGENCE_NAME = "convergence.png"
PARTIAL_DEPENDENCE_NAME = "partial_dependence.png"
COLUMNS = 3
DPI = 100


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def convergence_plot(report: "TuneReport", path: Path) -> Path:
    """Objective per trial, the best mean so far, replicates marked, the start
    level dashed, and the interleaved gain runs to the right of the search."""
    plt = _pyplot()
    unit = report.facts.unit
    fig, ax = plt.subplots(figsize=(9, 5.2))
    rows = report.trials
    scored = [r for r in rows if r.valid and r.objective is not None]
    first = [r for r in scored if not r.replicate]
    again = [r for r in scored if r.replicate]
    ax.plot([r.trial for r in first], [r.objective for r in first], "o", color="tab:blue", markersize=6,
            label="trial")
    if again:
        ax.plot([r.trial for r in again], [r.objective for r in again], "s", markerfacecolor="none",
                markeredgewidth=1.6, color="tab:orange", markersize=8, label="replicate of a point already tried")
    best = [(r.trial, r.best_so_far) for r in rows if r.best_so_far is not None]
    if best:
        ax.step([t for t, _ in best], [b for _, b in best], where="post", color="tab:green", linewidth=2,
                label="best mean so far")
    winners = [r for r in scored if r.is_winner]
    if winners:
        ax.plot([r.trial for r in winners], [r.objective for r in winners], "*", color="tab:green", markersize=15,
                markeredgecolor="black", markeredgewidth=0.6, label="the recommended point", zorder=5)
    invalid = [r for r in rows if not r.valid or r.objective is None]
    floor = 0.0
    if invalid:
        ax.plot([r.trial for r in invalid], [floor] * len(invalid), "x", color="tab:red", markersize=9,
                markeredgewidth=2, label="invalid (retried, not scored)")
    last = max((r.trial for r in rows), default=0)
    gain = report.gain
    if gain is not None:
        # The gain runs, in the order they ran, after a gap.
        ax.axvline(last + 0.75, color="grey", linewidth=0.8, linestyle=":")
        x = last + 1.5
        for role, value in _gain_runs(gain):
            style = dict(color="tab:green", marker="D") if role == "winner" else dict(color="black", marker="D",
                                                                                      markerfacecolor="none")
            ax.plot([x], [value], linestyle="none", markersize=6, **style)
            x += 1
        ax.plot([], [], "D", color="tab:green", markersize=6, label="gain run: winner")
        ax.plot([], [], "D", color="black", markerfacecolor="none", markersize=6, label="gain run: start")
        ax.annotate("interleaved gain runs", (last + 1.0, 0.02), xycoords=("data", "axes fraction"), fontsize=8,
                    color="grey")
    if report.start_level is not None:
        ax.axhline(report.start_level, color="grey", linestyle="--", linewidth=1.2,
                   label=f"start level ({report.start_level:,.0f} {unit})")
    ax.set_xlabel("trial (in the order run)")
    ax.set_ylabel(f"{report.facts.objective} ({unit})")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_title(f"Convergence: {len(rows)} trials" + (f", workload {report.facts.workload}"
                                                       if report.facts.workload else ""))
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=4, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _gain_runs(gain) -> list[tuple[str, float]]:
    if gain.order and len(gain.order) == len(gain.start) + len(gain.winner):
        queues = {"start": list(gain.start), "winner": list(gain.winner)}
        return [(role, queues[role].pop(0)) for role in gain.order]
    return [("start", v) for v in gain.start] + [("winner", v) for v in gain.winner]


def _axis_label(curve: "Curve") -> str:
    unit = f" ({curve.unit})" if curve.unit else ""
    scale = ", log scale" if curve.log else ""
    return f"{curve.dimension}{unit}{scale}"


def partial_dependence_plot(report: "TuneReport", path: Path) -> Path | None:
    """One panel per searched dimension; None when the report has no model."""
    curves = report.curves
    if not curves:
        return None
    plt = _pyplot()
    unit = report.facts.unit
    rows = math.ceil(len(curves) / COLUMNS)
    height = 3.1 * rows + 1.1  # inches: the panels, then the title and the legend above them
    fig, axes = plt.subplots(rows, COLUMNS, figsize=(4.3 * COLUMNS, height), squeeze=False)
    for ax in axes.flat[len(curves):]:
        ax.set_visible(False)
    for index, (ax, curve) in enumerate(zip(axes.flat, curves)):
        _panel(ax, curve)
        if index % COLUMNS == 0:
            ax.set_ylabel(unit)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.suptitle(f"Modelled {report.facts.objective} ({unit}) per dimension", y=1.0 - 0.12 / height, fontsize=12,
                 va="top")
    fig.legend(handles, labels, loc="upper center", ncol=5, fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, 1.0 - 0.45 / height))
    fig.tight_layout(rect=(0, 0, 1, 1.0 - 0.8 / height), h_pad=1.6)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _panel(ax, curve: "Curve") -> None:
    if curve.kind == "choice":
        positions = {value: i for i, value in enumerate(curve.values)}
        xs = list(range(len(curve.values)))
        ax.set_xticks(xs)
        ax.set_xticklabels([str(v) for v in curve.values])
        ax.set_xlim(-0.5, len(xs) - 0.5)
        ax.plot(xs, curve.average, "o-", color="tab:blue", label="averaged over the other dimensions")
        low = [m - lo for m, lo in zip(curve.through_winner, curve.band_low)]
        high = [hi - m for m, hi in zip(curve.through_winner, curve.band_high)]
        ax.errorbar(xs, curve.through_winner, yerr=[low, high], fmt="s--", color="tab:orange", capsize=4,
                    label="others at the winner (95 % band)")
        jitter = 0.08
        ax.plot([positions.get(x, 0) + jitter for x, _ in curve.observed], [y for _, y in curve.observed], ".",
                color="grey", alpha=0.6, label="trials")
        start_x, winner_x = positions.get(curve.start), positions.get(curve.winner)
    else:
        xs = curve.values
        ax.plot(xs, curve.average, "-", color="tab:blue", label="averaged over the other dimensions")
        ax.plot(xs, curve.through_winner, "--", color="tab:orange", label="others at the winner (95 % band)")
        ax.fill_between(xs, curve.band_low, curve.band_high, color="tab:orange", alpha=0.15, linewidth=0)
        ax.plot([x for x, _ in curve.observed], [y for _, y in curve.observed], ".", color="grey", alpha=0.6,
                label="trials")
        if curve.log:
            _log_axis(ax, min(xs), max(xs))
        start_x, winner_x = curve.start, curve.winner
    if start_x is not None:
        ax.axvline(start_x, color="black", linestyle=":", linewidth=1.2, label="start")
    if winner_x is not None:
        ax.axvline(winner_x, color="tab:green", linewidth=1.5, label="recommended")
    ax.set_xlabel(_axis_label(curve), fontsize=9)
    ax.tick_params(labelsize=8)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if curve.note:
        ax.set_title(curve.note, fontsize=8, color="grey")


def _log_axis(ax, low: float, high: float) -> None:
    """A log axis labelled in plain numbers (1,000, not 10^3), with fewer
    ticks when it spans more than two decades, so labels never collide."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    subs = (1.0,) if high / max(low, 1e-9) > 100 else (1.0, 2.0, 5.0)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=subs))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def write_plots(report: "TuneReport", directory: str | Path) -> dict[str, Path]:
    """The PNGs in `directory`, by name ("convergence", "partial_dependence")."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    out = {"convergence": convergence_plot(report, directory / CONVERGENCE_NAME)}
    pd_path = partial_dependence_plot(report, directory / PARTIAL_DEPENDENCE_NAME)
    if pd_path is not None:
        out["partial_dependence"] = pd_path
    return out
