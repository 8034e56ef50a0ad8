"""The commands of `apache-advisor`, one module each.

Each module defines its Typer command (or sub-app) and a `register(app)`
that `advisor.cli` calls for the command being run only, so that one job's
heavy imports never slow another job's start-up.
"""
