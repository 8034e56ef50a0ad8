"""What `pip install .` puts in site-packages: only `advisor`, with rules/ and
tuner/ mapped under it and the package data that commands read at run time."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from conftest import REPO


def test_wheel_adds_only_the_advisor_package(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
                   check=True, capture_output=True, stdin=subprocess.DEVNULL)
    wheel = next(tmp_path.glob("apache_advisor-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    assert {t for t in top_level if not t.endswith(".dist-info")} == {"advisor"}
    for expected in ("advisor/rules/p101_max_connections_per_child.py", "advisor/tuner/sandbox.py",
                     "advisor/config/data/directives.json", "advisor/config/data/names-2.4.json",
                     "advisor/config/data/modules-2.4.json",
                     "advisor/cli.py", "advisor/config/loader.py", "advisor/commands/lint.py"):
        assert expected in names, expected
    assert any(name.startswith("advisor/tuner/assets/") for name in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "apache-advisor = advisor.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
