"""The one place tests look for data kept outside the repository (issue 60).

The suite needs nothing beyond this checkout, except a few tests that read
the project's shared data: the research documents the evidence quotes
(`seeds/`: tests/test_citations.py, tests/test_tune_report.py) and the
real-world configurations (`corpus-realworld/`: tests/test_fix.py). That data
sits in a folder `shared` beside the clone (`../shared`, where CI puts a
copy); APACHE_ADVISOR_SHARED names another place for it.

When a folder those tests need is absent, each of them skips with one line
that names the folder (pytest's `-ra` summary lists the skips and why); under
CI=true it fails with that same line instead, as a test without its apache2
does (conftest.fail_in_ci_else_skip): CI must prove them. A test never
counts the files of an absent folder: it stops at `shared_folder` first.

The SARIF 2.1.0 schema is not shared data: the repository holds it
(conftest.SARIF_SCHEMA, tests/data/README.md says where it comes from), so
SARIF validity is tested on every clone.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from conftest import REPO, fail_in_ci_else_skip

# Names the shared folder when it is not `../shared` beside the clone.
SHARED_ENV = "APACHE_ADVISOR_SHARED"
SEEDS = "seeds"  # the research documents, one text file per study
REALWORLD = "corpus-realworld"  # configurations found in the wild, read-only


def shared_root() -> Path:
    """Where the shared folder is expected: APACHE_ADVISOR_SHARED, else `../shared`."""
    return Path(os.environ.get(SHARED_ENV) or REPO.parent / "shared")


def absent_reason(folder: Path) -> str:
    """The one line a test that needs `folder` gives when it is absent."""
    return (f"shared data folder {folder} is absent: this test needs the project's shared data "
            f"beside the clone (README, 'Run the test suite')")


def shared_folder(name: str) -> Path:
    """The shared folder `name` (SEEDS, REALWORLD); when it is absent the
    calling test skips, or fails under CI, naming it."""
    folder = shared_root() / name
    if not folder.is_dir():
        fail_in_ci_else_skip(absent_reason(folder))
    return folder


def shared_files(name: str, pattern: str) -> list[Path]:
    """For a parametrize list: the files of the shared folder `name` that
    match `pattern`, sorted. When the folder is absent, the folder itself is
    the one case, so the test still runs once and its `shared_folder(name)`
    call reports the absence (an empty list would drop the test unreported)."""
    folder = shared_root() / name
    return sorted(folder.glob(pattern)) if folder.is_dir() else [folder]


def seed_text(prefix: str) -> str:
    """The text of a research document by its file-name prefix ("000" for
    Arlitt & Williamson...), its whitespace runs made single spaces."""
    found = sorted(shared_folder(SEEDS).glob(f"{prefix}_*.txt"))
    if not found:
        fail_in_ci_else_skip(f"seed {prefix} not found under {shared_folder(SEEDS)}")
    return re.sub(r"\s+", " ", found[0].read_text())
