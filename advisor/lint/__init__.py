"""lint package."""

MARKER = "apache-advisor"
"""What every suppression comment holds (`# apache-advisor: disable=...`).
Kept here rather than in `advisor.lint.suppress` so the engine can look for it
in each file without importing the comment parser, which most trees never
need (importing it costs about 2 ms, with its regexes and dataclasses)."""
