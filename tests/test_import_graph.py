"""The project's modules import each other one way: no import cycle.

The graph is read from the source with `ast`, without importing anything, and
counts every import: at module top, inside functions (lazy imports) and under
`if TYPE_CHECKING:`. A lazy import hides a cycle from Python's import
machinery, not from the reader of the code.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

# Where each installed package lives in the repository (pyproject's package-dir).
PACKAGE_ROOTS = {"advisor": REPO / "advisor", "advisor.rules": REPO / "rules", "advisor.tuner": REPO / "tuner"}


def module_files(roots: dict[str, Path]) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under each root."""
    found: dict[str, Path] = {}
    for package, root in roots.items():
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if any(part in {"assets", "__pycache__"} for part in parts):
                continue
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([target] if target else []))


def import_edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each project module -> the project modules it imports."""
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = node.module if not node.level else _resolve_relative(name, is_package, node.level,
                                                                              node.module)
                if source is None:
                    continue
                # `from pkg import mod` depends on the module, not on pkg/__init__.
                submodules = [f"{source}.{alias.name}" for alias in node.names
                              if f"{source}.{alias.name}" in modules]
                targets = submodules or [source]
                if submodules and len(submodules) < len(node.names):
                    targets.append(source)
            for target in targets:
                # `import a.b.c` names the deepest project module it reaches.
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
    return edges


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One concrete cycle (a -> b -> ... -> a) through each module that sits
    in a strongly connected component of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:  # iterative Tarjan: the graph may be deep
        nonlocal counter
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    cycles: list[list[str]] = []
    for component in components:
        covered: set[str] = set()
        for member in component:
            if member not in covered:
                cycle = _one_cycle(member, set(component), edges)
                covered.update(cycle)
                cycles.append(cycle)
    return cycles


def _one_cycle(start: str, members: set[str], edges: dict[str, set[str]]) -> list[str]:
    # Breadth-first from start back to start inside the component: the shortest cycle through it.
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in sorted(edges[node] & members):
                if succ == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if succ not in previous:
                    previous[succ] = node
                    following.append(succ)
        frontier = following
    return [start]  # pragma: no cover - a component always holds a cycle


def test_no_import_cycle_among_project_modules():
    modules = module_files(PACKAGE_ROOTS)
    assert len(modules) > 60, "the walk found too few modules: is PACKAGE_ROOTS right?"
    cycles = find_cycles(import_edges(modules))
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_the_walk_sees_lazy_and_type_checking_imports(tmp_path):
    """The checker itself must find the cycles the layout move removed."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "loader.py").write_text("from pkg import conditions\nfrom pkg.model import Config\n")
    (pkg / "model.py").write_text("def effective():\n    from pkg.loader import effective_tree\n")
    (pkg / "conditions.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.loader import _State\n")
    (pkg / "clean.py").write_text("from . import model\n")
    cycles = find_cycles(import_edges(module_files({"pkg": pkg})))
    assert ["pkg.conditions", "pkg.loader", "pkg.conditions"] in cycles
    rendered = " ".join(" -> ".join(c) for c in cycles)
    for name in ("pkg.loader", "pkg.model", "pkg.conditions"):
        assert name in rendered
    assert "pkg.clean" not in rendered


def test_the_reader_knows_nothing_of_its_users():
    """Data flows one way: files -> config model -> rules | capacity | tuner -> output."""
    modules = module_files(PACKAGE_ROOTS)
    edges = import_edges(modules)
    reader = [name for name in modules if name.startswith("advisor.config")]
    for name in reader:
        outside = {t for t in edges[name] if not t.startswith("advisor.config") and t != "advisor.errors"}
        assert not outside, f"{name} imports {sorted(outside)}"
    model_deps = edges["advisor.config.model"]
    assert model_deps <= {"advisor.config.catalog"}, sorted(model_deps)
    for name, targets in edges.items():
        if name.startswith(("advisor.rules", "advisor.output")):
            assert not {t for t in targets if t.startswith(("advisor.commands", "advisor.cli"))}, name
