"""The tuner's layers (issue 9): the HTTP helpers under the sandbox and the targets.

tests/test_import_graph.py fails on any cycle and holds the tuner's
sub-packages to the rank table of docs/TEAM.md; this says which way the
modules inside them must run, so that the sandbox/target circle does not
come back as a longer one.
"""

from __future__ import annotations

from test_import_graph import PACKAGE_ROOTS, import_edges, module_files


def _tuner_edges() -> dict[str, set[str]]:
    edges = import_edges(module_files(PACKAGE_ROOTS))
    prefix = "advisor.tuner."
    return {name[len(prefix):]: {t[len(prefix):] for t in targets if t.startswith(prefix)}
            for name, targets in edges.items() if name.startswith(prefix)}


def test_status_helpers_depend_on_no_other_tuner_module():
    assert _tuner_edges()["measure.status"] == set()


def test_sandbox_knows_nothing_of_targets_and_targets_build_on_sandbox():
    edges = _tuner_edges()
    assert "staging.target" not in edges["staging.sandbox"]
    assert not {t for t in edges["staging.sandbox"] if t.startswith("trial")}
    assert {"staging.sandbox", "measure.status"} <= edges["staging.target"]
    assert "staging.target" not in edges["measure.metrics"]  # the collector needs only mod_status parsing
