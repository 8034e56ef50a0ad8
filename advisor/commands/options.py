"""Command-line options every command that reads a configuration shares.

They mirror httpd's own switches (`-D`, `-d`) plus what apache-advisor needs
to know that the files cannot say (modules loaded elsewhere, the version
`<IfVersion>` tests). One definition here keeps `dump`, `lint` and
`capacity` spelling them the same way. `fail` is the one way a command
reports bad input: one line on stderr and exit code 2.
"""

from __future__ import annotations

import sys
from typing import Annotated, List, Optional

import typer

from advisor.config.load_options import LoadOptions
from advisor.errors import AdvisorError, UsageError

DefineOption = Annotated[Optional[List[str]], typer.Option(
    "--define", "-D", help="NAME[=VALUE], like httpd's -D; repeat for several.")]
ModuleOption = Annotated[Optional[List[str]], typer.Option(
    "--module", help="A module loaded by means the config does not show (rewrite, mod_ssl.c...).")]
ModulesFromOption = Annotated[Optional[str], typer.Option(
    "--modules-from", help="A file with the output of `apachectl -M`.")]
ApacheVersionOption = Annotated[Optional[str], typer.Option(
    "--apache-version", help="httpd version that reads the config, for <IfVersion> (default 2.4).")]
ServerRootOption = Annotated[Optional[str], typer.Option(
    "--server-root", "-d", help="httpd's ServerRoot (-d); default: derived from the config's path.")]
AllowMissingIncludesOption = Annotated[bool, typer.Option(
    "--allow-missing-includes",
    help="Warn instead of failing when an Include finds nothing (one file taken out of its tree).")]


def parse_defines(values: list[str] | None) -> dict[str, str | None]:
    defines: dict[str, str | None] = {}
    for item in values or []:
        name, sep, value = item.partition("=")
        if not name:
            raise UsageError(f"--define needs NAME or NAME=VALUE, got {item!r}")
        defines[name] = value if sep else None
    return defines


def load_options(define: list[str] | None, module: list[str] | None, modules_from: str | None,
                 apache_version: str | None, server_root: str | None,
                 allow_missing_includes: bool = False, mpm: str | None = None) -> LoadOptions:
    return LoadOptions(
        defines=parse_defines(define),
        modules=set(module or []),
        modules_from=modules_from,
        mpm=mpm,
        apache_version=apache_version or "2.4",
        server_root=server_root,
        allow_missing_includes=allow_missing_includes,
    )


def fail(error: AdvisorError) -> None:
    """Print one clear line on stderr and exit 2: the contract for bad input."""
    sys.stderr.write(f"apache-advisor: {error.render()}\n")
    raise typer.Exit(code=2)
