"""What set each side's peak in `bench --compare`, and what that means for the ratio.

A side's peak is where its knee search first failed, and that probe's
verdict names the resource that ran out. A comparison of two CPU quotas
says something about the CPU only where the server's CPU set both peaks:
on this host a prefork sandbox with 256 workers held to half a core served
1,169 to 1,215 replies/s of five-request sessions, and the same sandbox
with the whole core 1,248 to 1,271 (2026-12-07): its keep-alive sessions
held every worker first, and "no difference" was the right reading of a
quota that did not bind. The notes say so, so that a ratio is not read as
the one the admin meant to measure.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

SERVER_CPU = "server CPU"


def bottlenecks(result: Any) -> dict[str, dict[str, int]]:
    """Per side, how many of its rounds each verdict set the peak (a search that never failed: "none")."""
    counts: dict[str, Counter] = {}
    for one in result.rounds:
        for name, run in one.runs.items():
            counts.setdefault(name, Counter())[run.bottleneck or "none"] += 1
    return {name: dict(counter.most_common()) for name, counter in sorted(counts.items())}


def bottleneck_notes(result: Any) -> list[str]:
    """What the admin should know of the sides' limits before reading the ratio."""
    found = bottlenecks(result)
    notes: list[str] = []
    quotas = {side.name: side.quota_pct for side in result.sides}
    quota_moved = len(set(quotas.values())) > 1 and None not in quotas.values()
    for name, counts in found.items():
        if not counts:
            continue
        label, times = next(iter(counts.items()))
        rounds = sum(counts.values())
        if quota_moved and label != SERVER_CPU:
            notes.append(f"side {name}'s peak was set by {label} in {times} of {rounds} rounds, not by the "
                         f"server's CPU: its CPU quota ({quotas[name]:g} %) did not set its peak, and the "
                         "ratio measures that limit, not the quota")
    leading = {name: next(iter(counts)) for name, counts in found.items() if counts}
    if len(set(leading.values())) > 1:
        notes.append("the sides ran into different limits: " +
                      ", ".join(f"{name} {label}" for name, label in sorted(leading.items())))
    return notes
