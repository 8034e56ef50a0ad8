"""The `apache-advisor` command line.

Each job registers its sub-commands from its own module so that the heavy
imports of one job (numpy, matplotlib, scikit-optimize) never slow another
job's start-up: a command module imports what it needs inside its functions.
"""

from __future__ import annotations

import gc
import os
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


def _print_version(wanted: bool) -> None:
    if not wanted:
        return
    # The installed distribution's metadata, so the figure is the one pip
    # knows (a wheel and an editable checkout say the same thing).
    from importlib.metadata import PackageNotFoundError, version

    try:
        print(f"apache-advisor {version('apache-advisor')}")
    except PackageNotFoundError:
        print("apache-advisor (not installed: run it from an installed package)")
    raise typer.Exit(0)


@app.callback()
def _root(
    show_version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                      help="Print the installed version and exit."),
) -> None:
    """Apache httpd configuration advisor: dump, lint, capacity, bench and tune."""


# Which module registers which top-level command. Only the module of the
# command being run is imported (the others may pull in numpy, requests...);
# help, typos and completion get them all.
COMMAND_MODULES = {
    "dump": "advisor.commands.dump",
    "lint": "advisor.commands.lint",
    "fix": "advisor.commands.fix",
    "rules": "advisor.commands.lint",
    "explain": "advisor.commands.lint",
    "capacity": "advisor.commands.capacity",
    "bench": "advisor.commands.bench",
    "staging": "advisor.commands.staging",
    "tune": "advisor.commands.tune",
}


def _first_command(argv: list[str]) -> str | None:
    for word in argv[1:]:
        if not word.startswith("-"):
            return word
        return None  # a global option first (--help...): load everything
    return None


def _register(argv: list[str] | None = None) -> None:
    wanted = _first_command(sys.argv if argv is None else argv)
    if wanted in COMMAND_MODULES:
        names = [COMMAND_MODULES[wanted]]
    else:
        names = list(dict.fromkeys(COMMAND_MODULES.values()))
    for module_name in names:
        try:
            module = __import__(module_name, fromlist=["register"])
        except ModuleNotFoundError as exc:
            # A job that is not built yet is not an error in the others.
            if exc.name != module_name:
                raise
            continue
        module.register(app)


_register()


# Commands that hold a whole configuration model until they end and start
# nothing that needs cleaning up at exit (no servers, no temporary files).
_QUICK_EXIT_COMMANDS = frozenset({"lint", "dump"})


def main() -> None:
    if _first_command(sys.argv) in _QUICK_EXIT_COMMANDS:
        # The model is a web of cycles (each node points at its parent) that
        # lives until the process ends without being freed (_exit_now). A
        # cycle collection would only rescan it: once gc is enabled again
        # after loading, the first collection walks every node, and when the
        # model is dropped, frees it object by object (1.2 s of a 3-second
        # lint of a 20,000-vhost tree). The commands leave gc as they found it.
        gc.disable()
    try:
        app()
    except AdvisorError as error:
        sys.stderr.write(f"apache-advisor: {error.render()}\n")
        sys.exit(2)
    except KeyboardInterrupt:
        sys.stderr.write("apache-advisor: interrupted\n")
        sys.exit(130)
    except SystemExit as leaving:
        if _first_command(sys.argv) in _QUICK_EXIT_COMMANDS:
            _exit_now(leaving.code)
        raise


def _exit_now(code: object) -> None:
    """Leave without the interpreter's teardown, which frees a large model
    object by object (~13 ms on a 2,000-file tree) for a process that is
    ending anyway. Output is flushed first; exit codes are as sys.exit's."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        sys.stderr.write(f"{code}\n")
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe (`| head`): nothing more can be said there
    os._exit(status)
