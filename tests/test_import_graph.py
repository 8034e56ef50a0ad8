"""The project's modules import each other one way: no import cycle.

The graph is read from the source with `ast`, without importing anything, and
counts every import: at module top, inside functions (lazy imports) and under
`if TYPE_CHECKING:`. A lazy import hides a cycle from Python's import
machinery, not from the reader of the code.

The same graph collapsed to packages (advisor's: `advisor.config`,
`advisor.tuner`...; the tuner's: `advisor.tuner.staging`...) has no cycle
either, and every import between packages runs the way the rank tables of
docs/TEAM.md ("Layout") say: from a higher rank to a lower one. Those tables
are the only copy of the rule; this file reads them.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
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


TEAM_MD = REPO / "docs" / "TEAM.md"
# The marker comment above each rank table in docs/TEAM.md, by the package whose parts it ranks.
DIRECTION_MARKER = "<!-- import-direction: {root} "
TUNER = "advisor.tuner"


def advisor_package(module: str) -> str | None:
    """`advisor.config.loader` -> `advisor.config`; `advisor.cli` and `advisor` stay themselves."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "advisor" else None


def tuner_package(module: str) -> str | None:
    """`advisor.tuner.staging.sandbox` -> `advisor.tuner.staging`; None outside the sub-packages."""
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) > 2 and parts[:2] == ["advisor", "tuner"] else None


def collapse(edges: dict[str, set[str]], package_of) -> dict[str, dict[str, tuple[str, str]]]:
    """The package graph: package -> {package it imports: one module import that shows it}.

    Modules `package_of` maps to None, and imports inside one package, drop out."""
    packages: dict[str, dict[str, tuple[str, str]]] = {}
    for module, targets in sorted(edges.items()):
        source = package_of(module)
        if source is None:
            continue
        imported = packages.setdefault(source, {})
        for target in sorted(targets):
            into = package_of(target)
            if into is not None and into != source:
                imported.setdefault(into, (module, target))
    for imported in list(packages.values()):
        for into in imported:
            packages.setdefault(into, {})
    return packages


def package_cycles(packages: dict[str, dict[str, tuple[str, str]]]) -> list[str]:
    """Each cycle of the package graph, with the module imports that close it."""
    found = []
    for cycle in find_cycles({name: set(imported) for name, imported in packages.items()}):
        steps = [f"{a} -> {b} ({' imports '.join(packages[a][b])})" for a, b in zip(cycle, cycle[1:])]
        found.append("; ".join(steps))
    return found


def read_ranks(text: str, root: str) -> dict[str, int]:
    """Package -> rank, from the table that follows `<!-- import-direction: root ... -->`.

    The first column is the rank, the second names the packages of that
    rank in backquotes."""
    start = text.find(DIRECTION_MARKER.format(root=root))
    assert start >= 0, f"docs/TEAM.md has no rank table for {root} (a line {DIRECTION_MARKER.format(root=root)}-->)"
    ranks: dict[str, int] = {}
    rows = []
    for line in text[start:].splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    assert len(rows) > 2 and rows[0][0] == "rank", f"the rank table for {root} is not a table with a rank column"
    for cells in rows[2:]:  # after the header and the --- line
        names = re.findall(r"`(" + re.escape(root.split(".")[0]) + r"(?:\.\w+)*)`", cells[1])
        assert cells[0].isdigit() and names, f"bad row in the rank table for {root}: {cells}"
        for name in names:
            assert name not in ranks, f"{name} has two rows in the rank table for {root}"
            ranks[name] = int(cells[0])
    return ranks


def direction_problems(packages: dict[str, dict[str, tuple[str, str]]], ranks: dict[str, int]) -> list[str]:
    """Imports that go to the same rank or a higher one, and packages the table does not rank."""
    problems = [f"{name} has no row in the rank table (docs/TEAM.md, Layout)"
                for name in sorted(packages) if name not in ranks]
    problems += [f"the rank table names {name}, which is not a package of the tree"
                 for name in sorted(set(ranks) - set(packages))]
    for name, imported in sorted(packages.items()):
        for into, (module, target) in sorted(imported.items()):
            if name in ranks and into in ranks and ranks[into] >= ranks[name]:
                problems.append(f"{name} (rank {ranks[name]}) imports {into} (rank {ranks[into]}): "
                                f"{module} imports {target}")
    return problems


def shared_file_names(roots: list[Path]) -> dict[str, list[str]]:
    """File name -> its paths, for every .py name (but __init__.py) found more than once under the roots."""
    seen: dict[str, list[str]] = defaultdict(list)
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if path.name != "__init__.py" and "__pycache__" not in path.parts:
                seen[path.name].append(str(path.relative_to(root.parent)))
    return {name: paths for name, paths in seen.items() if len(paths) > 1}


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


def test_no_import_cycle_between_packages():
    """Collapsed to advisor's packages, and to the tuner's sub-packages, the graph has no cycle."""
    edges = import_edges(module_files(PACKAGE_ROOTS))
    for package_of in (advisor_package, tuner_package):
        cycles = package_cycles(collapse(edges, package_of))
        assert not cycles, "package import cycles:\n" + "\n".join(cycles)


def test_imports_between_packages_run_the_way_the_rank_tables_say():
    text = TEAM_MD.read_text(encoding="utf-8")
    edges = import_edges(module_files(PACKAGE_ROOTS))
    problems = direction_problems(collapse(edges, advisor_package), read_ranks(text, "advisor"))
    problems += direction_problems(collapse(edges, tuner_package), read_ranks(text, TUNER))
    assert not problems, "\n".join(problems)


def test_a_cycle_between_two_sub_packages_is_caught(tmp_path):
    """Self-test: `a` and `b` import each other through different modules, so
    no module cycle hides it; the package graph shows it, and the ranks of a
    table in TEAM.md's form say which import is the wrong one."""
    root = tmp_path / "app"
    for package, files in {"a": {"x.py": "from app.b.y import helper\n", "z.py": "VALUE = 1\n"},
                           "b": {"y.py": "def helper():\n    from app.a.z import VALUE\n    return VALUE\n"},
                           "c": {"w.py": "from app.a import x\nfrom app.b import y\n"}}.items():
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
        for name, source in files.items():
            (root / package / name).write_text(source)
    (root / "__init__.py").write_text("")
    edges = import_edges(module_files({"app": root}))
    assert find_cycles(edges) == []  # no cycle between modules
    packages = collapse(edges, lambda m: ".".join(m.split(".")[:2]) if m.count(".") >= 1 else None)
    cycles = package_cycles(packages)
    assert len(cycles) == 1 and "app.a -> app.b (app.a.x imports app.b.y)" in cycles[0]
    assert "app.b -> app.a (app.b.y imports app.a.z)" in cycles[0]
    table = ("<!-- import-direction: app (a test) -->\n| rank | package | holds |\n| --- | --- | --- |\n"
             "| 1 | `app.a` | below |\n| 2 | `app.b` | above |\n| 3 | `app.c` | on top |\n\ntext after\n")
    ranks = read_ranks(table, "app")
    assert ranks == {"app.a": 1, "app.b": 2, "app.c": 3}
    assert direction_problems(packages, ranks) == [
        "app.a (rank 1) imports app.b (rank 2): app.a.x imports app.b.y"]
    same_rank = dict(ranks, **{"app.b": 1})
    assert [p for p in direction_problems(packages, same_rank) if "app.b (rank 1) imports app.a" in p]
    unranked = {name: rank for name, rank in ranks.items() if name != "app.c"}
    assert "app.c has no row in the rank table (docs/TEAM.md, Layout)" in direction_problems(packages, unranked)


def test_the_rank_tables_are_there_and_cover_the_layout():
    """The tables the direction test reads are in docs/TEAM.md, with every tuner sub-package."""
    text = TEAM_MD.read_text(encoding="utf-8")
    tuner = read_ranks(text, TUNER)
    directories = {f"{TUNER}.{p.name}" for p in (REPO / "tuner").iterdir() if (p / "__init__.py").is_file()}
    assert set(tuner) == directories
    assert read_ranks(text, "advisor")["advisor.tuner"] > read_ranks(text, "advisor")["advisor.capacity"]


def test_no_module_sits_directly_in_tuner_and_none_has_a_tune_prefix():
    tuner = REPO / "tuner"
    loose = sorted(p.name for p in tuner.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"modules directly in tuner/ (put them in a sub-package): {loose}"
    prefixed = sorted(str(p.relative_to(REPO)) for p in tuner.rglob("tune_*"))
    assert not prefixed, f"the sub-package says what a module belongs to; no tune_ prefix: {prefixed}"
    for directory in sorted({p.parent for p in tuner.rglob("*.py")}):
        assert (directory / "__init__.py").is_file(), f"{directory.relative_to(REPO)} has no __init__.py"


def test_no_two_module_files_share_a_name():
    shared = shared_file_names([REPO / "advisor", REPO / "rules", REPO / "tuner"])
    assert not shared, "module file names used twice (rename one):\n" + "\n".join(
        f"{name}: {', '.join(paths)}" for name, paths in sorted(shared.items()))


def test_a_shared_file_name_is_caught(tmp_path):
    """Self-test: two dump.py in different packages are caught; __init__.py is not."""
    for directory in ("app/commands", "app/output", "other"):
        (tmp_path / directory).mkdir(parents=True)
        (tmp_path / directory / "__init__.py").write_text("")
    (tmp_path / "app/commands/dump.py").write_text("")
    (tmp_path / "app/output/dump.py").write_text("")
    (tmp_path / "other/text.py").write_text("")
    assert shared_file_names([tmp_path / "app", tmp_path / "other"]) == {
        "dump.py": ["app/commands/dump.py", "app/output/dump.py"]}
