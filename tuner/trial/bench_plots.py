"""PNG plots of trials (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

from advisor.tuner.trial.result import TrialResult

# Scoreboard states worth drawing, busiest first, with the words mod_status
# uses for them; idle workers last, in grey, so the busy states stand out.
# (A legend hides labels that start with "_", hence the letter at the end.)
SCOREBOARD_STATES = (
    ("W", "sending reply (W)"), ("K", "keep-alive wait (K)"), ("R", "reading request (R)"),
    ("L", "logging (L)"), ("S", "starting (S)"), ("C", "closing (C)"), ("G", "old generation finishing (G)"),
    ("_", "idle (_)"),
)
# One marker per verdict for the probes that missed their SLO.
VERDICT_MARKERS = ("X", "v", "D", "P", "^", "*", "s", "o", "<", ">")
VERDICT_COLOURS = ("tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def rates_plot(trials: list[TrialResult], path: Path, title: str = "") -> Path:
    """Target vs achieved request rate vs reply rate, in the style of Arlitt's Fig. 2.

    Probes that missed the SLO are marked with one symbol per verdict, named
    in the legend (labels written beside the points overlap at high rates).
    """
    plt = _pyplot()
    ordered = sorted(trials, key=lambda t: t.inputs.target_request_rate)
    target = [t.inputs.target_request_rate for t in ordered]
    fig, ax = plt.subplots(figsize=(8, 5))
    top = max(target + [1.0])
    ax.plot([0, top], [0, top], color="grey", linewidth=0.8, linestyle="--", label="target (ideal)")
    ax.plot(target, [t.httperf.request_rate for t in ordered], "-", color="tab:blue", linewidth=2,
            label="request rate achieved (client)")
    ax.plot(target, [t.httperf.reply_rate for t in ordered], ":", color="tab:orange", linewidth=2.5,
            marker="o", markersize=4, label="reply rate (server)")
    missed: dict[str, list[TrialResult]] = {}
    for t in ordered:
        if not t.meets_slo:
            missed.setdefault(t.verdict.label, []).append(t)
    for index, (label, group) in enumerate(sorted(missed.items())):
        ax.plot([t.inputs.target_request_rate for t in group], [t.httperf.reply_rate for t in group],
                linestyle="none", marker=VERDICT_MARKERS[index % len(VERDICT_MARKERS)], markersize=10,
                markerfacecolor="none", markeredgewidth=1.8, color=VERDICT_COLOURS[index % len(VERDICT_COLOURS)],
                label=f"SLO missed: {label}")
    ax.set_xlim(0, top * 1.05)
    ax.set_ylim(0, top * 1.05)
    ax.set_xlabel("target request rate (requests/s)")
    ax.set_ylabel("rate (per second)")
    workload = ordered[0].inputs.workload if ordered else ""
    ax.set_title(title or f"{workload}: target vs achieved request rate vs reply rate")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def timeline_plot(trial: TrialResult, path: Path) -> Path:
    """CPU per core, httpd CPU and the scoreboard mix (with the accept queue) over one trial."""
    plt = _pyplot()
    samples = trial.samples
    times = [s.t for s in samples]
    fig, (cpu_ax, board_ax) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    server = {str(c) for c in (trial.inputs.server_cpus or [])}
    client = {str(c) for c in (trial.inputs.client_cpus or [])}
    cores = sorted({core for s in samples for core in s.cpu}, key=int)
    for core in cores:
        role = " (server)" if core in server else " (client)" if core in client else ""
        cpu_ax.plot(times, [s.cpu[core].busy if core in s.cpu else 0 for s in samples],
                    label=f"core {core} busy{role}")
    cpu_ax.plot(times, [s.httpd_cpu_pct or 0 for s in samples], "--", linewidth=2, label="httpd processes (100 = 1 core)")
    if trial.inputs.server_cpu_quota_pct:
        cpu_ax.axhline(trial.inputs.server_cpu_quota_pct, color="red", linewidth=0.8, linestyle=":",
                       label=f"httpd CPU quota {trial.inputs.server_cpu_quota_pct:g} %")
    cpu_ax.set_ylabel("CPU %")
    cpu_ax.set_ylim(0, max(105, max([s.httpd_cpu_pct or 0 for s in samples] + [0]) + 5))
    cpu_ax.legend(fontsize=8, loc="lower left")
    cpu_ax.grid(alpha=0.3)

    states = [(key, name) for key, name in SCOREBOARD_STATES if any(s.scoreboard.get(key) for s in samples)]
    if states:
        colours = [("lightgrey" if key == "_" else None) for key, _ in states]
        series = [[s.scoreboard.get(key, 0) for s in samples] for key, _ in states]
        polys = board_ax.stackplot(times, series, labels=[name for _, name in states])
        for poly, colour in zip(polys, colours):
            if colour:
                poly.set_color(colour)
    queue_ax = board_ax.twinx()
    queue_ax.plot(times, [s.accept_queue or 0 for s in samples], color="black", linewidth=1.5,
                  label="accept queue (connections)")
    queue_ax.set_ylabel("waiting for accept()")
    queue_ax.set_ylim(0, max([s.accept_queue or 0 for s in samples] + [4]) * 1.1)
    handles, labels = board_ax.get_legend_handles_labels()
    queue_handles, queue_labels = queue_ax.get_legend_handles_labels()
    board_ax.legend(handles + queue_handles, labels + queue_labels, fontsize=8, loc="upper center",
                    bbox_to_anchor=(0.5, -0.18), ncol=3)
    board_ax.set_ylabel("worker slots (scoreboard)")
    board_ax.set_xlabel("seconds into the trial")
    board_ax.grid(alpha=0.3)
    for axis in (cpu_ax, board_ax):
        axis.axvline(trial.inputs.duration_s, color="grey", linewidth=0.8, linestyle="--")
    cpu_ax.annotate("offered load ends", (trial.inputs.duration_s, 2), fontsize=7, color="grey",
                    xytext=(3, 0), textcoords="offset points")
    verdict = trial.verdict.label if trial.valid else f"{trial.verdict.label} (run invalid)"
    fig.suptitle(f"{trial.inputs.workload} at {trial.inputs.rate:g}/s x {trial.inputs.num_calls} calls: {verdict}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
