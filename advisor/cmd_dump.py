"""`apache-advisor dump`: print the configuration as httpd sees it."""

from __future__ import annotations

import sys
from typing import List, Optional

import typer

from advisor.errors import UsageError
from advisor.options import LoadOptions


def parse_defines(values: list[str] | None) -> dict[str, str | None]:
    defines: dict[str, str | None] = {}
    for item in values or []:
        name, sep, value = item.partition("=")
        if not name:
            raise UsageError(f"--define needs NAME or NAME=VALUE, got {item!r}")
        defines[name] = value if sep else None
    return defines


def load_options(define: list[str] | None, module: list[str] | None, modules_from: str | None,
                 apache_version: str, server_root: str | None,
                 allow_missing_includes: bool = False) -> LoadOptions:
    return LoadOptions(
        defines=parse_defines(define),
        modules=set(module or []),
        modules_from=modules_from,
        apache_version=apache_version,
        server_root=server_root,
        allow_missing_includes=allow_missing_includes,
    )


def write_output(text: str) -> None:
    # Bytes that were not UTF-8 in the config go back out unchanged.
    sys.stdout.buffer.write(text.encode("utf-8", errors="surrogateescape"))
    sys.stdout.flush()


def register(app: typer.Typer) -> None:
    @app.command()
    def dump(
        path: str = typer.Argument(..., help="Main config file, or a directory holding apache2.conf / httpd.conf / conf/httpd.conf."),
        json_output: bool = typer.Option(False, "--json", help="Print the tree as JSON with file and line for every node."),
        raw: bool = typer.Option(False, "--raw", help="With --json: the raw tree (every branch, Include nodes) instead of the effective one."),
        includes: bool = typer.Option(False, "--includes", help="List the files read, in the shape of `httpd -D DUMP_INCLUDES`."),
        define: Optional[List[str]] = typer.Option(None, "--define", "-D", help="NAME[=VALUE], like httpd's -D."),
        module: Optional[List[str]] = typer.Option(None, "--module", help="A module loaded by means the config does not show."),
        modules_from: Optional[str] = typer.Option(None, "--modules-from", help="A file with the output of `apachectl -M`."),
        apache_version: str = typer.Option("2.4", "--apache-version", help="httpd version for <IfVersion>."),
        server_root: Optional[str] = typer.Option(None, "--server-root", "-d", help="httpd's ServerRoot (-d); default: derived from PATH."),
        allow_missing_includes: bool = typer.Option(False, "--allow-missing-includes", help="Warn instead of failing when an Include finds nothing (one file out of its tree)."),
    ) -> None:
        """Print the effective config in the shape of `httpd -t -D DUMP_CONFIG`."""
        from advisor.dumpfmt import dump_json, dump_text, include_lines
        from advisor.loader import load_config

        options = load_options(define, module, modules_from, apache_version, server_root,
                               allow_missing_includes)
        config = load_config(path, options)
        for diagnostic in config.diagnostics:
            sys.stderr.write(f"apache-advisor: warning: {diagnostic.file}:{diagnostic.line}: {diagnostic.message}\n")
        if includes:
            write_output("".join(line + "\n" for line in include_lines(config)))
        elif json_output:
            write_output(dump_json(config, raw))
        else:
            write_output(dump_text(config))
