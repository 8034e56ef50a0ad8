"""What `pip install .` puts in site-packages: only `advisor`, with rules/ and
tuner/ mapped under it, and every module and data file of the tree, no more.

The wheel is compared file for file with the checkout, so a package that the
build leaves out (issue 25: `advisor.fix` was missing from a hand-kept list
while every test passed on the editable install) fails here.
"""

from __future__ import annotations

import subprocess
import zipfile

from installed import build_wheel, copy_checkout, declared_version, expected_wheel_files, wheel_files


def test_the_wheel_holds_every_module_and_data_file_of_the_tree(built_wheel):
    shipped = wheel_files(built_wheel)
    expected = expected_wheel_files()
    assert not expected - shipped, f"left out of the wheel: {sorted(expected - shipped)}"
    assert not shipped - expected, f"in the wheel but not in the tree: {sorted(shipped - expected)}"
    # The three roots and their data are all there, under one top-level name.
    assert {name.split("/")[0] for name in shipped} == {"advisor"}
    for sample in ("advisor/fix/plan.py", "advisor/rules/p101_max_connections_per_child.py",
                   "advisor/tuner/transport/ssh.py", "advisor/config/data/directives.json",
                   "advisor/tuner/staging/assets/httpd.conf.in",
                   "advisor/tuner/load/assets/mixed.lua"):
        assert sample in shipped, sample


def test_the_wheel_declares_the_command_and_its_version(built_wheel):
    archive = zipfile.ZipFile(built_wheel)
    names = archive.namelist()
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "apache-advisor = advisor.cli:main" in archive.read(entry_points).decode()
    metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    declared = declared_version()
    assert f"\nVersion: {declared}\n" in metadata


def test_the_comparison_catches_a_hand_kept_package_list(tmp_path):
    """Self-test: a hand-kept package list like the one this project shipped
    before issue 25 (no `advisor.fix`), brought to today's tuner sub-packages
    and built from a copy of today's tree, is caught."""
    copy = copy_checkout(tmp_path / "checkout")
    (copy / "setup.py").unlink()
    hand_kept = (
        '[tool.setuptools]\n'
        'packages = ["advisor", "advisor.commands", "advisor.config", "advisor.config.data", "advisor.capacity", '
        '"advisor.lint", "advisor.output", "advisor.rules", "advisor.tuner", "advisor.tuner.transport", '
        '"advisor.tuner.measure", "advisor.tuner.load", "advisor.tuner.staging", "advisor.tuner.trial", '
        '"advisor.tuner.search", "advisor.tuner.session"]\n\n'
        '[tool.setuptools.package-dir]\n"advisor" = "advisor"\n"advisor.rules" = "rules"\n"advisor.tuner" = "tuner"\n\n'
        '[tool.setuptools.package-data]\n"advisor.config.data" = ["*.json"]\n"advisor.tuner.load" = ["assets/*"]\n'
        '"advisor.tuner.staging" = ["assets/*"]\n\n')
    pyproject = copy / "pyproject.toml"
    text = pyproject.read_text()
    pyproject.write_text(text.replace("[tool.pytest.ini_options]", hand_kept + "[tool.pytest.ini_options]"))
    for command in (["git", "init", "-q"], ["git", "add", "-A"]):  # a checkout of its own, for checkout_files
        subprocess.run(command, cwd=copy, check=True, capture_output=True)
    wheel = build_wheel(tmp_path / "build", repo=copy)
    missing = expected_wheel_files(copy) - wheel_files(wheel)
    assert {"advisor/fix/__init__.py", "advisor/fix/check.py", "advisor/fix/plan.py", "advisor/fix/write.py"} <= missing

