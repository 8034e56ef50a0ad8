"""`apache-advisor dump`: print the configuration as httpd sees it."""

from __future__ import annotations

import sys

import typer

from advisor.commands.options import (AllowMissingIncludesOption, ApacheVersionOption, DefineOption,
                                 ModuleOption, ModulesFromOption, ServerRootOption, load_options)


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
        define: DefineOption = None,
        module: ModuleOption = None,
        modules_from: ModulesFromOption = None,
        apache_version: ApacheVersionOption = None,
        server_root: ServerRootOption = None,
        allow_missing_includes: AllowMissingIncludesOption = False,
    ) -> None:
        """Print the effective config in the shape of `httpd -t -D DUMP_CONFIG`."""
        from advisor.config.loader import load_config
        from advisor.output.httpd_dump import dump_json, dump_text, include_lines

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
