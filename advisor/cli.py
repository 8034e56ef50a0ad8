"""The `apache-advisor` command line.

Each job registers its sub-commands from its own module so that the heavy
imports of one job (numpy, matplotlib, scikit-optimize) never slow another
job's start-up: a command module imports what it needs inside its functions.
"""

from __future__ import annotations

import sys

import typer

from advisor.errors import AdvisorError

app = typer.Typer(
    name="apache-advisor",
    help="Apache httpd configuration advisor: dump, lint, capacity, bench and tune.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Apache httpd configuration advisor: dump, lint, capacity, bench and tune."""


def _register() -> None:
    from advisor import cmd_dump

    cmd_dump.register(app)
    # Later jobs plug in the same way; a missing module means that job is not
    # built yet, not an error in the ones that are.
    for module_name in ("advisor.cmd_lint", "advisor.cmd_capacity", "advisor.cmd_bench"):
        try:
            module = __import__(module_name, fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        module.register(app)


_register()


def fail(error: AdvisorError) -> None:
    """Print one clear line on stderr and exit 2: the contract for bad input."""
    sys.stderr.write(f"apache-advisor: {error.render()}\n")
    raise typer.Exit(code=2)


def main() -> None:
    try:
        app()
    except AdvisorError as error:
        sys.stderr.write(f"apache-advisor: {error.render()}\n")
        sys.exit(2)
    except KeyboardInterrupt:
        sys.stderr.write("apache-advisor: interrupted\n")
        sys.exit(130)
