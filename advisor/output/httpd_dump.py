"""Render the effective tree in httpd's `-t -D DUMP_CONFIG` shape (mod_info).

mod_info prints `# In file: F` whenever the file changes, a `#NNNN:` line
(line number right-aligned in four columns, indented with the node) before
each directive and section opening, two spaces of indent per level, and a
closing tag without a line number. A section with no content prints like a
directive and has no closing tag. Directive names take httpd's spelling.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from advisor.config.catalog import CONDITIONAL_SECTIONS, READ_TIME_DIRECTIVES
from advisor.config.catalog import spellings as catalog_spellings
from advisor.config.model import Config, Directive, Include, Node, Section


_SKIPPED = READ_TIME_DIRECTIVES - CONDITIONAL_SECTIONS


# What httpd does with a node of one spelling: keeps it, consumes it while
# reading (read-time directives, <Macro>), or splices its content in place
# (a conditional that held). Decided once per spelling: a large tree repeats
# a few hundred.
_KEEP, _DROP, _SPLICE = 0, 1, 2


def _kind(name: str, kinds: dict[str, int]) -> int:
    lname = name.lower()
    kind = kinds[name] = (_DROP if lname in _SKIPPED else _SPLICE if lname in CONDITIONAL_SECTIONS else _KEEP)
    return kind


def dump_lines(raw_root: Section) -> list[str]:
    """The dump as text chunks (one or two lines each), walking the raw tree
    directly: no copy of the effective tree is needed. Inactive nodes and
    read-time directives are passed over, conditionals that held and
    Include lines are read through as if their content stood in their
    place, as httpd keeps them."""
    out: list[str] = []
    append = out.append
    spelling = catalog_spellings()
    spelled: dict[str, str] = {}
    kinds: dict[str, int] = {}
    # Per nesting level, the `#NNNN:` head of each line number: the hosts of
    # a large tree repeat the same few numbers in every file.
    heads: list[dict[int, str]] = []
    current_file: str | None = None
    directive_type = Directive
    include_type = Include

    def walk(nodes: list[Node], level: int) -> bool:
        """Print what httpd keeps of `nodes`; whether anything was printed."""
        nonlocal current_file
        indent = "  " * level
        while len(heads) <= level:
            heads.append({})
        heads_here = heads[level]
        printed = False
        for node in nodes:
            if not node.active:
                continue
            written = node.name
            kind = kinds.get(written)
            if kind is None:
                kind = _kind(written, kinds)
            node_type = type(node)
            if node_type is directive_type:
                if kind == _DROP:
                    continue
            elif node_type is include_type or kind == _SPLICE:
                if walk(node.children, level):  # type: ignore[attr-defined]
                    printed = True
                continue
            elif kind != _KEEP:
                continue
            printed = True
            name = spelled.get(written)
            if name is None:
                name = spelled[written] = spelling.get(written.lower(), written)
            # httpd names a macro expansion's lines after the expansion.
            if node.expansion:
                file, line = node.expansion
            else:
                file, line = node.file, node.end_line
            if file != current_file:
                current_file = file
                append(f"# In file: {file}")
            head = heads_here.get(line)
            if head is None:
                head = heads_here[line] = f"{indent}#{line:4d}:\n{indent}"
            if node_type is directive_type:
                append(f"{head}{name} {node.raw_args}")
                continue
            append(f"{head}<{name} {node.raw_args}")
            if walk(node.children, level + 1):  # type: ignore[attr-defined]
                if file != current_file:
                    current_file = file
                    append(f"# In file: {file}")
                append(f"{indent}</{name}>")
        return printed

    walk(raw_root.children, 0)
    return out


def dump_text(config: Config) -> str:
    lines = dump_lines(config.raw)
    return "\n".join(lines) + "\n" if lines else ""


def include_lines(config: Config) -> Iterator[str]:
    """The files read, in httpd's `-D DUMP_INCLUDES` shape: each file with the
    line of the Include that pulled it in, indented by nesting depth."""
    yield "Included configuration files:"
    yield f"  (*) {config.main_file}"

    def walk(section: Section, depth: int) -> Iterator[str]:
        for node in section.children:
            if isinstance(node, Include) and node.active:
                # A nested Include deepens the indent; a file that holds no
                # directive at all is listed all the same.
                for path in node.files:
                    yield f"{'  ' * (depth + 1)}({node.end_line}) {path}"
                    yield from walk(_FileView(node, path), depth + 1)
            elif isinstance(node, Section) and node.active:
                yield from walk(node, depth)

    yield from walk(config.raw, 1)


class _FileView(Section):
    """The part of an Include node's children that came from one file."""

    def __init__(self, include: Include, path: str) -> None:
        super().__init__(name=include.name, args=include.args, raw_args=include.raw_args,
                         file=path, line=include.line, end_line=include.end_line)
        self.children = [child for child in include.children if child.file == path]


def node_to_json(node: Node) -> dict[str, Any]:
    data: dict[str, Any] = {
        "type": "section" if isinstance(node, Section) and not isinstance(node, Include)
        else ("include" if isinstance(node, Include) else "directive"),
        "name": node.name,
        "args": node.args,
        "file": node.file,
        "line": node.line,
        "end_line": node.end_line,
    }
    if not node.active:
        data["active"] = False
    if isinstance(node, Include):
        data["files"] = node.files
    if isinstance(node, Section):
        data["close_line"] = node.close_line
        data["children"] = [node_to_json(child) for child in node.children]
    return data


def dump_json(config: Config, raw: bool = False) -> str:
    root = config.raw if raw else config.effective
    document = {
        "main_file": config.main_file,
        "server_root": config.server_root,
        "view": "raw" if raw else "effective",
        "apache_version": ".".join(str(p) for p in config.apache_version).replace(".999", ""),
        "mpm": config.mpm,
        "modules": config.module_order,
        "defines": config.defines,
        "files": config.files,
        "diagnostics": [
            {"file": d.file, "line": d.line, "message": d.message} for d in config.diagnostics
        ],
        "tree": [node_to_json(child) for child in root.children],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


__all__ = ["dump_lines", "dump_text", "dump_json", "Directive"]
