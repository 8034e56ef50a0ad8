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

from advisor.catalog import canonical_name
from advisor.model import Config, Directive, Include, Node, Section


def dump_lines(root: Section) -> Iterator[str]:
    current_file: list[str | None] = [None]

    def header(node: Node, level: int, line: int) -> Iterator[str]:
        if node.file != current_file[0]:
            current_file[0] = node.file
            yield f"# In file: {node.file}"
        if line > 0:
            yield f"{'  ' * level}#{line:4d}:"

    def walk(nodes: list[Node], level: int) -> Iterator[str]:
        indent = "  " * level
        for node in nodes:
            name = canonical_name(node.name)
            if isinstance(node, Section) and node.children:
                yield from header(node, level, node.end_line)
                yield f"{indent}<{name} {node.raw_args}"
                yield from walk(node.children, level + 1)
                yield from header(node, level, 0)
                yield f"{indent}</{name}>"
            else:
                yield from header(node, level, node.end_line)
                prefix = "<" if isinstance(node, Section) else ""
                yield f"{indent}{prefix}{name} {node.raw_args}"

    yield from walk(root.children, 0)


def dump_text(config: Config) -> str:
    return "".join(line + "\n" for line in dump_lines(config.effective))


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
