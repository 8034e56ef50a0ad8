"""What a first lint leaves to the child that saves its result (issue 58).

The result cache keeps every finding's mechanical edit (a later SARIF report
or `fix` is served from it), but a text or JSON report shows none. So a
lint that answers with such a report runs its rules without edits, as a
cold lint does, and the child that saves the entry after the answer (it
inherits the loaded trees through fork) works the edits out there: it runs
again, with edits, only the rules that asked to make one (the engine notes
them: LintResult.edits_left_out), and hands each edit to the finding it
belongs to. On 2,000 hosts with two fixes each, that is about 0.05 s the
answer no longer waits for.

Where the second run does not give back exactly the findings the first
kept (it always should: rules read the model and nothing else), the edits
are not trusted and nothing is saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class LintedTree:
    """One PATH as the lint read and checked it: what a second run of its
    rules needs, and the findings the first run kept (the same objects the
    report was made from)."""

    config: Any
    facts: Any
    findings: list
    edits_left_out: set[str]
    """The rules that would have made edits (LintResult.edits_left_out)."""
    context: Any
    """The first run's LintContext: its indexes are not built again (on
    the 40,000 hosts of the TLS tree, the larger part of the second run)."""


@dataclass
class EditsLater:
    """What the save needs to add the edits a lint left out."""

    trees: list[LintedTree]
    setup: Any
    """The run's LintSetup: the rules enabled and the settings."""
    with_findings: list[str]
    shown: dict[str, str]
    """The files with findings, and each file's name as reports show it
    (lint_paths.show_display_paths), as the answer named them."""


def add_edits(later: EditsLater) -> bool:
    """Give each finding the edit a lint with edits would have given it (in
    place); False when a second run of the rules does not match the first
    (the findings are then not to be saved)."""
    from advisor.commands.lint_paths import show_display_paths
    from advisor.lint.engine import lint_config

    setup = later.setup
    for tree in later.trees:
        # Only the rules that asked to make an edit run again (on the speed
        # benchmark's fixable tree four, not the dozen with findings); never
        # a post rule: it reads the others' findings.
        rules = [rule for rule in setup.enabled if rule.code in tree.edits_left_out and not rule.post]
        if not rules:
            continue
        again = lint_config(tree.config, tree.facts, rules, known_codes=setup.known_codes,
                            settings=setup.file_settings, edits=True, context=tree.context).findings
        rerun = {rule.code for rule in rules}
        kept = [finding for finding in tree.findings if finding.code in rerun]
        if len(kept) != len(again):
            return False
        # Named as the answer's findings were, with the same strings (the
        # entry's marshal data shares them as it did with the edits inline).
        show_display_paths(again, later.with_findings, True, later.shown)
        for first, second in zip(kept, again):
            if (first.code != second.code or first.line != second.line or first.file != second.file
                    or first.message != second.message or first.fix != second.fix):
                return False
        for first, second in zip(kept, again):
            first.edit = second.edit
    return True
