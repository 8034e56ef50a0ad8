"""The wheel's package list, derived from the tree instead of typed by hand.

A hand-kept list once left `advisor.fix` out of the wheel: every test passed
against the editable install while a user's `pip install .` lacked the `fix`
command. Here every directory under the three source roots is a package of
the wheel (rules/ and tuner/ mapped under `advisor`), and every file in it
that is not Python source is its package data, so a new module or data file
ships the day it is written. tests/test_packaging.py holds the wheel to the
tree file for file.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent

# Import name -> directory in the repository. Only `advisor` becomes a
# top-level name in site-packages.
SOURCE_ROOTS = {"advisor": "advisor", "advisor.rules": "rules", "advisor.tuner": "tuner"}

# Build and editor leftovers that are never part of the product.
SKIPPED_DIRECTORIES = {"__pycache__"}
SKIPPED_SUFFIXES = {".pyc", ".pyo"}


def _package_directories() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for root_name, directory in SOURCE_ROOTS.items():
        root = HERE / directory
        for path in sorted([root, *root.rglob("*")]):
            if not path.is_dir() or SKIPPED_DIRECTORIES & set(path.relative_to(root).parts):
                continue
            relative = path.relative_to(root).parts
            found[".".join((root_name, *relative))] = path
    return found


def _data_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()
                  if p.is_file() and p.suffix not in SKIPPED_SUFFIXES and p.suffix != ".py")


PACKAGES = _package_directories()

setup(
    packages=sorted(PACKAGES),
    package_dir=dict(SOURCE_ROOTS),
    package_data={name: files for name, path in PACKAGES.items() if (files := _data_files(path))},
    include_package_data=False,
)
