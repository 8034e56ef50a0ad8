"""Points the candidate lint refused before any trial: kept, journalled and
reported, so that a search lint shrank says so.

A refused point costs no trial and leaves no observation, and the search
tells the optimizer it was poor: a rule that wrongly refuses a whole region
(every worker and event point of an HTTP/2 mix, issue 57) takes that region
out of the search without a trace in the trials. The count and each point's
first error are the trace."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from advisor.tuner.search.space import Space, Value

KIND = "lint refusal"
"""The journal's kind of line for a refused point (read back on --resume)."""


@dataclass
class LintRefusal:
    point: dict[str, Value]
    origin: str
    """Why the search proposed it (optimizer.ORIGINS)."""
    errors: list[str] = field(default_factory=list)
    """`candidate line N: CODE message` of each error, as CandidateLint.check gives them."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": KIND, "point": dict(self.point), "origin": self.origin, "errors": list(self.errors)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "LintRefusal":
        return cls(point=dict(data["point"]), origin=str(data.get("origin", "")),
                   errors=[str(e) for e in data.get("errors") or []])

    def console_line(self, space: Space) -> str:
        more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
        return (f"lint refused a {space.mpm_of(self.point)} point ({self.origin or 'model'}), "
                f"not tried: {self.errors[0] if self.errors else 'no error named'}{more}")

    def report_entry(self, space: Space) -> dict[str, Any]:
        """What report.json and report.md say of it: the MPM, what it changes
        from the start, its first error and how many it had."""
        changed = {name: space.value_text(name, value) for name, value in self.point.items()
                   if name in space.start and value != space.start[name]}
        return {"mpm": space.mpm_of(self.point), "origin": self.origin, "changed": changed,
                "first_error": self.errors[0] if self.errors else "", "errors": len(self.errors)}


def refusals_summary(entries: list[dict[str, Any]]) -> str | None:
    """One line for the report's notes and the console's end: how many points
    lint refused, by MPM, and the first error of the first; None when none."""
    if not entries:
        return None
    by_mpm: dict[str, int] = {}
    for entry in entries:
        by_mpm[entry["mpm"]] = by_mpm.get(entry["mpm"], 0) + 1
    counts = ", ".join(f"{count} {mpm}" for mpm, count in by_mpm.items())
    return (f"lint refused {len(entries)} point(s) the search proposed, which were never tried ({counts}); "
            f"the first: {entries[0]['first_error']}")
