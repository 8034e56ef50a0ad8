"""Helpers shared by the lint tests: run the real CLI in-process."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from advisor.cli import app

REPO = Path(__file__).resolve().parent.parent
RULES_CORPUS = REPO / "corpus" / "rules"


def run_cli(*args: str, env: dict[str, str] | None = None):
    runner = CliRunner()
    return runner.invoke(app, list(args), env=env, catch_exceptions=False)


def lint_json(*args: str) -> list[dict]:
    """Lint with --format json and the run isolated from any settings file."""
    result = run_cli("lint", "--format", "json", "--isolated", "--no-live", "--fail-on", "never", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@dataclass
class Fixture:
    path: Path
    code: str
    near_miss: bool
    expects: list[tuple[str, int]]
    args: list[str]

    @property
    def id(self) -> str:
        return f"{self.code}/{self.path.name}"


def load_fixture(path: Path) -> Fixture:
    expects: list[tuple[str, int]] = []
    args: list[str] = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        body = line.lstrip("#").strip()
        if body.startswith("expect:"):
            for item in body[len("expect:"):].split(","):
                code, _, number = item.strip().partition("@")
                expects.append((code, int(number)))
        elif body.startswith("lint-args:"):
            # A path under corpus/ (a php-fpm pool file) is the repository's.
            args = [str(REPO / word) if word.startswith("corpus/") else word
                    for word in shlex.split(body[len("lint-args:"):])]
            # A live-host rule's fixture names its host snapshot beside it.
            args = [str(path.parent / arg) if position and args[position - 1] == "--live-facts" else arg
                    for position, arg in enumerate(args)]
    return Fixture(path, path.parent.name, path.stem.endswith("_fp"), expects, args)


def all_fixtures() -> list[Fixture]:
    return [load_fixture(p) for p in sorted(RULES_CORPUS.glob("*/*.conf"))]


def invalid_fixtures() -> set[Path]:
    listed = set()
    for line in (RULES_CORPUS / "INVALID.txt").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            listed.add(REPO / line)
    return listed
