"""The product as a user installs it: the wheel built from the source tree,
installed into a fresh venv, run from a directory outside the checkout.

The tests run against the editable install of `.ci/install`, which maps the
source tree and so hides a module that the wheel leaves out (issue 25: the
wheel once had no `advisor.fix`). These helpers build the wheel from exactly
the files a checkout holds (git's tracked files and the untracked ones it does
not ignore), in a copy, so no build/ or egg-info lands in the tree.

The fresh venv gets the project from the wheel and nothing else: its
third-party dependencies (numpy, scikit-learn...) are the test venv's, named
by a .pth file, because installing them from the registry for every test run
would add minutes and a network dependency that says nothing about this
package. A .pth entry is a plain path, so the editable install's import hook
there is never loaded; `installed_module_path` proves where `advisor` came
from.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO

# Directory in the repository -> where it installs, as setup.py maps them.
INSTALLED_AS = {"advisor": "advisor", "rules": "advisor/rules", "tuner": "advisor/tuner"}


def checkout_files(repo: Path = REPO) -> list[str]:
    """The files a clone of the repository holds, plus new files not ignored."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=repo, check=True, capture_output=True, text=True).stdout.splitlines()
    return sorted(name for name in listed if (repo / name).is_file())


def expected_wheel_files(repo: Path = REPO) -> set[str]:
    """Every module and data file of the three source roots, at its installed path."""
    expected = set()
    for name in checkout_files(repo):
        top, _, rest = name.partition("/")
        installed = INSTALLED_AS.get(top)
        if installed is not None and rest:
            expected.add(f"{installed}/{rest}")
    return expected


def declared_version(repo: Path = REPO) -> str:
    """The version pyproject.toml declares."""
    return re.search(r'^version = "([^"]+)"', (repo / "pyproject.toml").read_text(), re.M).group(1)


def wheel_files(wheel: Path) -> set[str]:
    """The wheel's files, without its .dist-info metadata."""
    return {name for name in zipfile.ZipFile(wheel).namelist()
            if not name.split("/")[0].endswith(".dist-info") and not name.endswith("/")}


def copy_checkout(destination: Path, repo: Path = REPO) -> Path:
    """The checkout's files (`checkout_files`) copied to `destination`."""
    for name in checkout_files(repo):
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / name, target)
    return destination


def build_wheel(destination: Path, repo: Path = REPO) -> Path:
    """Build the wheel as `pip install .` would (isolated build), from a copy
    of the checkout's files."""
    source = copy_checkout(destination / "source", repo)
    dist = destination / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)],
                   check=True, capture_output=True, stdin=subprocess.DEVNULL)
    return next(dist.glob("apache_advisor-*.whl"))


@dataclass(frozen=True)
class InstalledProduct:
    venv: Path
    wheel: Path
    workdir: Path  # outside the checkout: the commands run from here

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def command(self) -> Path:
        return self.venv / "bin" / "apache-advisor"

    def run(self, *args: str, check: bool = False, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.command), *args], cwd=self.workdir, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, check=check, timeout=timeout,
                              env=product_environment(env))


def product_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without anything that points Python at the
    source tree."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(extra or {})
    return env


def fresh_venv(venv: Path, with_pip: bool = False) -> Path:
    """A new venv that sees the test venv's third-party packages (not this
    project) through a .pth file; returns its python."""
    command = [sys.executable, "-m", "venv", str(venv)] + ([] if with_pip else ["--without-pip"])
    subprocess.run(command, check=True, capture_output=True, stdin=subprocess.DEVNULL)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "test-venv-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def install(wheel: Path, destination: Path) -> InstalledProduct:
    venv = destination / "venv"
    python = fresh_venv(venv)
    # The test venv's pip installs into the fresh venv: the same installer a
    # user runs, without bootstrapping a second pip for every test run.
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                    "--no-deps", "-q", str(wheel)], check=True, capture_output=True, stdin=subprocess.DEVNULL)
    workdir = destination / "elsewhere"
    workdir.mkdir()
    return InstalledProduct(venv=venv, wheel=wheel, workdir=workdir)


def installed_module_path(product: InstalledProduct, module: str) -> Path:
    out = subprocess.run([str(product.python), "-c", f"import {module}; print({module}.__file__)"],
                         cwd=product.workdir, check=True, capture_output=True, text=True,
                         env=product_environment()).stdout.strip()
    return Path(out)
