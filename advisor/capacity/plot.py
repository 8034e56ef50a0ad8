"""Draw predicted response time and blocking against arrival rate.

Two stacked panels sharing the rate axis, one line per K, each labelled in
its own colour at its right end, so the reader never matches colours to a
legend. A dashed vertical line marks the server's capacity 1/x, and dots mark
the rates the admin asked about. Drawing only: the numbers come in computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.capacity.queueing_model import Curve

COLOURS = ("#c0392b", "#1f5fa8", "#2e8b57", "#7d3c98")
FIT_COLOURS = ("#e67e22", "#16a085", "#8e44ad")


@dataclass
class PlotSpec:
    curves: list[Curve]
    service_time: float
    marked_rates: list[float]
    subtitle: str
    fit_curves: list[Curve] = field(default_factory=list)
    """The fitted model at the pool sizes the trials ran with."""
    measured: list = field(default_factory=list)
    """fit_workerpool.TrialComparison rows: drawn as points over `fit_curves`."""
    held_out: list = field(default_factory=list)
    """Rows the model was not fitted on (--check): filled points."""


def _spread(values: list[float], min_gap: float) -> list[float]:
    """Nudge label positions (axes fraction) apart by at least `min_gap`."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    placed = [0.0] * len(values)
    last = -1.0
    for i in order:
        y = max(values[i], last + min_gap)
        placed[i] = y
        last = y
    overflow = last - 0.97
    if overflow > 0:
        placed = [y - overflow for y in placed]
    return placed


def _label_ends(ax, curves: list[Curve], ys_of, transform_y) -> None:
    """Write each curve's label just right of its last point."""
    import matplotlib.transforms as mtransforms

    ends = []
    for curve in curves:
        ys = ys_of(curve)
        ends.append(transform_y(ys[-1]))
    positions = _spread(ends, 0.16)
    blend = mtransforms.blended_transform_factory(ax.transAxes, ax.transAxes)
    for index, (curve, y) in enumerate(zip(curves, positions)):
        ax.text(1.01, y, curve.label, transform=blend, color=COLOURS[index % len(COLOURS)],
                fontsize=9.5, fontweight="bold", va="center", ha="left", clip_on=False)


def draw(spec: PlotSpec, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    capacity = 1.0 / spec.service_time
    fig, (ax_t, ax_b) = plt.subplots(2, 1, figsize=(9.5, 7.2), sharex=True,
                                     gridspec_kw={"height_ratios": [3, 2]})
    fig.subplots_adjust(left=0.09, right=0.75, top=0.85, bottom=0.09, hspace=0.08)

    for index, curve in enumerate(spec.curves):
        colour = COLOURS[index % len(COLOURS)]
        rates = [p.rate for p in curve.points]
        resp = [p.response_time.value * 1000 for p in curve.points]
        block = [p.blocking.value * 100 for p in curve.points]
        ax_t.plot(rates, resp, color=colour, lw=2.2)
        ax_b.plot(rates, block, color=colour, lw=2.2)
        lows = [(p.response_time.value - p.response_time.half_width) * 1000 for p in curve.points]
        highs = [(p.response_time.value + p.response_time.half_width) * 1000 for p in curve.points]
        if any(h > l for h, l in zip(highs, lows)):
            ax_t.fill_between(rates, np.maximum(lows, 1e-9), highs, color=colour, alpha=0.15, lw=0)
        marked = [p for p in curve.points if any(abs(p.rate - r) <= 1e-9 * max(r, 1) for r in spec.marked_rates)]
        ax_t.plot([p.rate for p in marked], [p.response_time.value * 1000 for p in marked], "o",
                  color=colour, ms=5)
        ax_b.plot([p.rate for p in marked], [p.blocking.value * 100 for p in marked], "o",
                  color=colour, ms=5)

    for index, curve in enumerate(spec.fit_curves):
        colour = FIT_COLOURS[index % len(FIT_COLOURS)]
        rates = [p.rate for p in curve.points]
        ax_t.plot(rates, [p.response_time.value * 1000 for p in curve.points], color=colour, lw=1.4, ls="--")
        ax_b.plot(rates, [p.blocking.value * 100 for p in curve.points], color=colour, lw=1.4, ls="--")
        rows = [r for r in spec.measured if r.workers == curve.k]
        ax_t.plot([r.rate for r in rows], [r.response_time * 1000 for r in rows], "s", color=colour, ms=6,
                  mfc="white", mew=1.6, label=f"measured, {curve.k} workers, fitted on (dashed: model)")
        ax_b.plot([r.rate for r in rows], [(r.turned_away or 0.0) * 100 for r in rows], "s", color=colour, ms=6,
                  mfc="white", mew=1.6)
        held = [r for r in spec.held_out if r.workers == curve.k]
        if held:
            ax_t.plot([r.rate for r in held], [r.response_time * 1000 for r in held], "s", color=colour, ms=6,
                      label=f"measured, {curve.k} workers, held out")
            ax_b.plot([r.rate for r in held], [(r.turned_away or 0.0) * 100 for r in held], "s", color=colour,
                      ms=6)
    if spec.fit_curves:
        ax_t.legend(loc="upper left", fontsize=8.5, frameon=False)

    ax_t.set_yscale("log")
    t_lo, t_hi = ax_t.get_ylim()

    def to_axes_log(value_ms: float) -> float:
        value_ms = max(value_ms, t_lo)
        return (np.log10(value_ms) - np.log10(t_lo)) / (np.log10(t_hi) - np.log10(t_lo))

    ax_b.set_ylim(-2, 102)
    b_lo, b_hi = ax_b.get_ylim()

    def to_axes_lin(value_pct: float) -> float:
        return (value_pct - b_lo) / (b_hi - b_lo)

    _label_ends(ax_t, spec.curves, lambda c: [p.response_time.value * 1000 for p in c.points], to_axes_log)
    _label_ends(ax_b, spec.curves, lambda c: [p.blocking.value * 100 for p in c.points], to_axes_lin)

    for ax in (ax_t, ax_b):
        ax.axvline(capacity, color="#555555", ls="--", lw=1)
        ax.grid(True, which="major", color="#dddddd", lw=0.8)
        ax.spines[["top", "right"]].set_visible(False)
    ax_t.text(capacity, 1.01, rf"capacity $1/\bar{{x}}$ = {capacity:,.0f} req/s", transform=ax_t.get_xaxis_transform(),
              color="#555555", fontsize=9, ha="center", va="bottom")
    from matplotlib.ticker import FuncFormatter

    ax_t.yaxis.set_major_formatter(FuncFormatter(_format_ms))
    ax_t.set_ylabel("mean response time")
    ax_b.set_ylabel("requests turned away (%)")
    ax_b.set_xlabel("mean arrival rate (requests/s)")
    ax_b.set_xlim(left=0)
    fig.suptitle("Predicted response time and blocking vs arrival rate", fontsize=13, x=0.09, ha="left", y=0.99)
    simulated = any(p.response_time.half_width > 0 for c in spec.curves for p in c.points)
    legend_note = "dots: the rates in the table" + ("; bands: 95 % confidence intervals" if simulated else "")
    fig.text(0.09, 0.895, f"{spec.subtitle}\n{legend_note}", fontsize=9, color="#444444", ha="left",
             va="bottom", linespacing=1.4)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _format_ms(value: float, _pos) -> str:
    if value >= 1000:
        return f"{value / 1000:g} s"
    if value >= 1:
        return f"{value:g} ms"
    return f"{value * 1000:g} µs"
