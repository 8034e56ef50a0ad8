"""Draw `capacity --log`'s busy workers per second against the pool and RAM.

One panel: the busy workers of each second of the log (per minute's
busiest second when the log is longer than a few hours, so the line stays
readable), MaxRequestWorkers and the recommendation RAM allows as labelled
horizontal lines. Drawing only: the numbers come in computed.
"""

from __future__ import annotations

from advisor.capacity.logcapacity import LogCapacity, utc
from advisor.capacity.logdemand import SecondSeries

POINTS_PER_SECOND_MAX = 4 * 3600


def draw_log(log: LogCapacity, series: SecondSeries, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    totals = np.frombuffer(series.busy, dtype=np.float64) + np.frombuffer(series.idle, dtype=np.float64)
    step = 1
    if totals.size > POINTS_PER_SECOND_MAX:
        step = 60
        usable = totals.size - totals.size % step
        head = totals[:usable].reshape(-1, step).max(axis=1)
        totals = np.concatenate([head, totals[usable:].max(keepdims=True)]) if totals.size % step else head
    minutes = np.arange(totals.size) * step / 60.0
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=90)
    ax.plot(minutes, totals, color="#1f5fa8", linewidth=0.8,
            label="busy workers" + (" (busiest second of each minute)" if step > 1 else " per second"))
    pool = log.pool
    ax.axhline(pool.max_request_workers, color="#c0392b", linestyle="--", linewidth=1.2)
    ax.axhline(pool.ram_workers, color="#2e8b57", linestyle=":", linewidth=1.2)
    ax.text(1.01, pool.max_request_workers, f"MaxRequestWorkers {pool.max_request_workers}",
            transform=ax.get_yaxis_transform(), color="#c0392b", va="center", fontsize=9)
    ax.text(1.01, pool.ram_workers, f"RAM holds {pool.ram_workers}", transform=ax.get_yaxis_transform(),
            color="#2e8b57", va="center", fontsize=9)
    top = max(float(totals.max()), pool.max_request_workers, pool.ram_workers)
    ax.set_ylim(0, top * 1.1)
    ax.set_xlim(0, max(minutes[-1], 1e-9))
    ax.set_xlabel(f"minutes from {utc(series.first)}")
    ax.set_ylabel("workers")
    d = log.demand
    ax.set_title(f"Busy workers from the access log: {d.requests:,} requests, busiest second "
                 f"{d.peak_busy:.1f} workers", fontsize=10, loc="left")
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    ax.grid(alpha=0.3)
    fig.subplots_adjust(right=0.78)
    fig.savefig(path)
    plt.close(fig)
