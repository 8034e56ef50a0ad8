"""The candidate lint of an MPM-switching session judges the admin's tree as
the session read it, not the tree a switch has since edited on disk."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from advisor.config import LoadOptions, load_config
from advisor.config.snapshot import freeze_tree
from advisor.tuner.search.space_derive import derive_space
from advisor.tuner.search.space_lint import CandidateLint

SAMPLE = Path(__file__).resolve().parent.parent / "corpus" / "samples" / "debian"


@pytest.fixture()
def tree(tmp_path) -> Path:
    copy = tmp_path / "apache2"
    shutil.copytree(SAMPLE, copy, symlinks=True)
    return copy


def switch_to_event(tree: Path) -> None:
    """What a2dismod mpm_prefork && a2enmod mpm_event do to a Debian tree."""
    enabled = tree / "mods-enabled"
    for name in ("mpm_prefork.load", "mpm_prefork.conf"):
        if (enabled / name).is_symlink() or (enabled / name).exists():
            (enabled / name).unlink()
    for name in ("mpm_event.load", "mpm_event.conf"):
        os.symlink(f"../mods-available/{name}", enabled / name)


def test_the_frozen_tree_reads_as_the_live_tree_did(tree):
    options = LoadOptions(server_root=str(tree))
    before = load_config(str(tree / "apache2.conf"), options)
    snapshot = freeze_tree(str(tree / "apache2.conf"), options)
    try:
        switch_to_event(tree)
        assert load_config(str(tree / "apache2.conf"), options).mpm == "event"
        frozen = load_config(str(tree / "apache2.conf"), snapshot.options)
        assert frozen.mpm == before.mpm == "prefork"
        # The same files, at the host's own paths, in the same order.
        assert frozen.files == before.files
        assert str(tree / "mods-enabled" / "mpm_prefork.load") in frozen.files
    finally:
        root = snapshot.root
        snapshot.close()
    assert not os.path.exists(root)


def test_a_switch_on_disk_does_not_refuse_the_original_mpms_candidates(tree):
    cfg = load_config(str(tree / "apache2.conf"), LoadOptions(server_root=str(tree)))
    space = derive_space(cfg, {"prefork": 150, "worker": 600, "event": 600}, allow_mpm_switch=True)
    points = [space.start] + [p for p in space.random_points(12, seed=3) if space.mpm_of(p) == "prefork"]
    frozen = CandidateLint(cfg, space)
    frozen.freeze()
    live = CandidateLint(cfg, space)
    switch_to_event(tree)
    try:
        for point in points:
            assert frozen.check(point).ok, frozen.check(point).errors
        # The defect this guards against: the live tree now loads event, and
        # the prefork start's own pool lines are refused under it.
        refused = live.check(space.start)
        assert not refused.ok
        assert any("E405" in error for error in refused.errors), refused.errors
    finally:
        frozen.close()


def same_places(findings: list[dict]) -> list[dict]:
    """A finding on the candidate's wrapper names its temporary directory,
    which differs between two readings."""
    temporary = re.compile(r"\S*/advisor-candidate-[^/]+/")
    placed = [dict(f, where=temporary.sub("", f["where"]), message=temporary.sub("", f["message"]))
              for f in findings]
    return sorted(placed, key=lambda f: (f["where"], f["code"], f["message"]))


def test_the_frozen_tree_has_the_live_trees_findings(tree):
    cfg = load_config(str(tree / "apache2.conf"), LoadOptions(server_root=str(tree)))
    space = derive_space(cfg, {"prefork": 150, "worker": 600, "event": 600}, allow_mpm_switch=True)
    live = CandidateLint(cfg, space)
    frozen = CandidateLint(cfg, space)
    frozen.freeze()
    try:
        for point in (None, space.start, dict(space.start, MaxConnectionsPerChild=500)):
            assert same_places(frozen.tree_findings(point)) == same_places(live.tree_findings(point))
        assert live.tree_findings(None), "the sample has findings to compare"
    finally:
        frozen.close()
