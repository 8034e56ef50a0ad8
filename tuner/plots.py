"""PNG plots of trials (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

from advisor.tuner.trial import TrialResult


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def rates_plot(trials: list[TrialResult], path: Path, title: str = "") -> Path:
    """Target vs achieved request rate vs reply rate, in the style of Arlitt's Fig. 2."""
    plt = _pyplot()
    ordered = sorted(trials, key=lambda t: t.inputs.target_request_rate)
    target = [t.inputs.target_request_rate for t in ordered]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(target, [t.httperf.connection_rate * (t.inputs.num_calls if not t.inputs.wsess else 1) for t in ordered],
            "s", color="black", label="connections x calls/s (client)")
    ax.plot(target, [t.httperf.request_rate for t in ordered], "-", label="request rate (achieved)")
    ax.plot(target, [t.httperf.reply_rate for t in ordered], ":", linewidth=2, label="reply rate")
    top = max(target + [1.0])
    ax.plot([0, top], [0, top], color="grey", linewidth=0.6, label="target")
    for t in ordered:
        if not t.meets_slo:
            ax.annotate(t.verdict.label, (t.inputs.target_request_rate, t.httperf.reply_rate),
                        fontsize=7, rotation=30, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("target request rate (req/s)")
    ax.set_ylabel("rate (per second)")
    ax.set_title(title or "target vs achieved request rate vs reply rate")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def timeline_plot(trial: TrialResult, path: Path) -> Path:
    """CPU per core, httpd CPU and the scoreboard mix over one trial."""
    plt = _pyplot()
    samples = trial.samples
    times = [s.t for s in samples]
    fig, (cpu_ax, board_ax) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    cores = sorted({core for s in samples for core in s.cpu}, key=int)
    for core in cores:
        cpu_ax.plot(times, [s.cpu[core].busy if core in s.cpu else 0 for s in samples], label=f"core {core} busy %")
    cpu_ax.plot(times, [s.httpd_cpu_pct or 0 for s in samples], "--", label="httpd CPU % (100 = 1 core)")
    cpu_ax.set_ylabel("CPU %")
    cpu_ax.set_ylim(0, max(105, max([s.httpd_cpu_pct or 0 for s in samples] + [0]) + 5))
    cpu_ax.legend(fontsize=8)
    cpu_ax.grid(alpha=0.3)
    keys = [k for k in ("W", "K", "R", "L", "S", "C", "G", "_") if any(s.scoreboard.get(k) for s in samples)]
    if keys:
        board_ax.stackplot(times, [[s.scoreboard.get(k, 0) for s in samples] for k in keys], labels=keys)
        board_ax.legend(fontsize=8, loc="upper left", ncol=len(keys))
    board_ax.set_ylabel("scoreboard slots")
    board_ax.set_xlabel("seconds into the trial")
    board_ax.grid(alpha=0.3)
    fig.suptitle(f"{trial.inputs.workload} at {trial.inputs.rate:g}/s: {trial.verdict.label}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
