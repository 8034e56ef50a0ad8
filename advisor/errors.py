"""Errors that stop a command: each one renders as a single `file:line: message` line."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class AdvisorError(Exception):
    """A problem with the user's input that the tool reports and exits 2 on.

    `file` and `line` point at the place to fix; `hint` says what to do.
    """

    message: str
    file: str | None = None
    line: int | None = None
    hint: str | None = None

    def __str__(self) -> str:
        return self.render()

    def render(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        text = f"{where}{self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return text


class ConfigError(AdvisorError):
    """The configuration cannot be read the way httpd would read it."""


class UsageError(AdvisorError):
    """The command line asks for something that cannot be done."""
