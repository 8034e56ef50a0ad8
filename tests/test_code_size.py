"""Rooms, not halls: the tuner and the commands in pieces a reader can hold.

A developer who must change how the gain is computed, or how a probe waits for
a quiet server, should find the room that holds it and see what else it
touches. In `tuner/` and `advisor/commands/` no module is over 700 lines, no
class over 300 and no function over 80 (read with `ast`, without importing
anything). The few exceptions kept on purpose are listed, with the reason, in
docs/TEAM.md's table after `<!-- size-exceptions -->`: at most three.

And no module of the product imports a private name (a leading underscore)
from another module: what another room needs is part of its public face.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO

SIZED_ROOTS = ("tuner", "advisor/commands")
PRODUCT_ROOTS = ("advisor", "rules", "tuner")
MAX_MODULE_LINES = 700
MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 80
MAX_EXCEPTIONS = 3
TEAM_MD = REPO / "docs" / "TEAM.md"
EXCEPTIONS_MARKER = "<!-- size-exceptions -->"


@dataclass(frozen=True)
class Oversize:
    where: str
    """`path` for a module, `path::Qualified.name` for a class or function."""
    lines: int
    limit: int

    def text(self) -> str:
        return f"{self.where}: {self.lines} lines (at most {self.limit})"


def _defined(tree: ast.AST, path: str, prefix: str = "") -> list[Oversize]:
    found: list[Oversize] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{node.name}"
            # Decorators sit above `lineno`: a long Typer option list in a decorator counts in neither.
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
            if lines > limit:
                found.append(Oversize(f"{path}::{name}", lines, limit))
            found += _defined(node, path, f"{name}.")
        else:
            found += _defined(node, path, prefix)
    return found


def oversized(root: Path, relative_roots: tuple[str, ...]) -> list[Oversize]:
    """Every module, class and function under the roots over its limit."""
    found: list[Oversize] = []
    for relative in relative_roots:
        for path in sorted((root / relative).rglob("*.py")):
            if "assets" in path.parts:
                continue
            text = path.read_text(encoding="utf-8")
            name = path.relative_to(root).as_posix()
            lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            if lines > MAX_MODULE_LINES:
                found.append(Oversize(name, lines, MAX_MODULE_LINES))
            found += _defined(ast.parse(text, filename=name), name)
    return found


def private_imports(root: Path, relative_roots: tuple[str, ...]) -> list[str]:
    """`file:line: from module import _name` for each private name a product module imports from another."""
    found: list[str] = []
    for relative in relative_roots:
        for path in sorted((root / relative).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.ImportFrom):
                    continue
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        source = "." * node.level + (node.module or "")
                        found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}: "
                                     f"from {source} import {alias.name}")
    return found


def listed_exceptions(text: str) -> dict[str, str]:
    """`where` -> reason, from the table after the marker in docs/TEAM.md (first column in backticks)."""
    start = text.find(EXCEPTIONS_MARKER)
    if start < 0:
        return {}
    rows: dict[str, str] = {}
    for line in text[start:].splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        where = re.fullmatch(r"`([^`]+)`", cells[0])
        if where and len(cells) > 1:
            rows[where.group(1)] = cells[-1]
    return rows


def test_no_module_class_or_function_over_its_limit():
    exceptions = listed_exceptions(TEAM_MD.read_text(encoding="utf-8"))
    found = oversized(REPO, SIZED_ROOTS)
    unlisted = [item.text() for item in found if item.where not in exceptions]
    assert not unlisted, ("too large (split it into rooms named for what they hold, or list it with the reason "
                          "in docs/TEAM.md after " + EXCEPTIONS_MARKER + "):\n" + "\n".join(unlisted))


def test_the_listed_exceptions_are_few_real_and_explained():
    exceptions = listed_exceptions(TEAM_MD.read_text(encoding="utf-8"))
    assert len(exceptions) <= MAX_EXCEPTIONS, f"at most {MAX_EXCEPTIONS} exceptions: {sorted(exceptions)}"
    still_large = {item.where for item in oversized(REPO, SIZED_ROOTS)}
    stale = sorted(set(exceptions) - still_large)
    assert not stale, f"listed in docs/TEAM.md but no longer over its limit (remove the row): {stale}"
    assert all(len(reason) >= 20 for reason in exceptions.values()), "each exception says why"


def test_no_product_module_imports_a_private_name():
    found = private_imports(REPO, PRODUCT_ROOTS)
    assert not found, "make the name public in its module, or keep it where it is used:\n" + "\n".join(found)


def test_the_checks_see_what_they_look_for(tmp_path):
    package = tmp_path / "tuner"
    package.mkdir()
    long_body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (package / "big.py").write_text(
        "class Holder:\n    def method(self):\n" + long_body.replace("    ", "        ")
        + "def short():\n    return 1\n"
        + "def long():\n" + long_body
        + "from .other import _hidden, public\n")
    found = {item.where: item for item in oversized(tmp_path, ("tuner",))}
    assert set(found) == {"tuner/big.py::Holder.method", "tuner/big.py::long"}
    assert found["tuner/big.py::long"].lines == MAX_FUNCTION_LINES + 1
    (package / "huge.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert "tuner/huge.py" in {item.where for item in oversized(tmp_path, ("tuner",))}
    import_line = (package / "big.py").read_text().count("\n")
    assert private_imports(tmp_path, ("tuner",)) == [f"tuner/big.py:{import_line}: from .other import _hidden"]
    table = (f"text\n{EXCEPTIONS_MARKER}\n| where | lines | why |\n| --- | --- | --- |\n"
             "| `tuner/big.py::long` | 81 | a reason long enough to read |\n\nafter\n| `x` | 1 | no |\n")
    assert listed_exceptions(table) == {"tuner/big.py::long": "a reason long enough to read"}
