"""mod_macro: `<Macro name $params>` bodies, expanded where `Use name values` stands.

As in httpd's mod_macro, a body is kept as text lines (continuations joined,
comment lines dropped, blank lines kept because they count in the macro's own
line numbers); `Use` substitutes parameters textually (at each position the
longest matching name wins, `@`-names get their value in double quotes) and
the result is read in place of the `Use` line, so a macro may even open a
section that the file then closes.
"""

from __future__ import annotations

from collections import deque

from advisor.errors import ConfigError
from advisor.config.lexer import LogicalLine, MacroLine, logical_lines, split_words
from advisor.config.model import Directive, Section
from advisor.config.state import Macro, ReadState


MACRO_DIRECTIVES = frozenset({"use", "undefmacro"})


def define(state: ReadState, name: str, rest: str, start: int, end: int,
           cursor: "deque[LogicalLine | MacroLine]", container: Section, path: str) -> None:
    """Read a `<Macro>` section: its lines go into the raw tree as written
    (inactive: nothing in a body applies where it is written)."""
    bracket = rest.rfind(">")
    if bracket < 0:
        raise ConfigError("<Macro> directive missing closing '>'", path, end)
    words = split_words(rest[:bracket])
    if not words or not words[0]:
        raise ConfigError("<Macro> macro definition: name not found", path, end)
    macro_name = words[0].lower()
    parameters = [w for w in words[1:] if not w.startswith("/")]
    if len(set(parameters)) != len(parameters):
        raise ConfigError(f"macro '{macro_name}': a parameter name is used twice", path, end,
                          "give each parameter its own name")
    node = Section(name=name[1:], args=words, raw_args=rest, file=path, line=start, end_line=end,
                   active=True, parent=container)
    container.children.append(node)
    depth = 1
    close_start = None
    while cursor:
        logical = cursor.popleft()
        text, line_start, line_end = logical[0], logical[1], logical[2]
        first = text.split(None, 1)[0] if text.strip() else ""
        lowered = first.lower()
        if lowered == "</macro>":
            depth -= 1
            if depth == 0:
                node.close_line = line_end
                close_start = line_start
                break
        elif lowered == "<macro":
            depth += 1
        words = split_words(text)
        node.children.append(Directive(name=words[0] if words else "", args=words[1:], raw_args=text,
                                       file=path, line=line_start, end_line=line_end, active=False,
                                       parent=node))
    if close_start is None:
        raise ConfigError(f"macro '{macro_name}': expected </Macro> before end of file", path, start,
                          "add </Macro>")
    physical = state.physical_lines.get(path)
    if physical is None:
        # The file's physical lines, split on the first macro defined in
        # it (the reader does not split every file it reads for this).
        source = state.sources.get(path)
        if source is not None and ("<macro" in source or "<Macro" in source or "<MACRO" in source):
            physical = state.physical_lines[path] = source.split("\n")
    if physical is None:  # a macro produced by another macro: no blank lines to recover
        body = [(c.raw_args, c.line, c.end_line) for c in node.children]
    else:
        text = "\n".join(physical[end:close_start - 1]) + "\n"
        body = logical_lines(text, path, keep_blank=True, first_line=end + 1)
    state.macros[macro_name] = Macro(macro_name, parameters, body, path, end)


def use_or_undefine(state: ReadState, node: Directive, cursor: "deque[LogicalLine | MacroLine]") -> None:
    if node.lname == "undefmacro":
        if not node.args or node.args[0].lower() not in state.macros:
            raise ConfigError(f"cannot remove undefined macro '{node.arg(0).lower()}'", node.file,
                              node.end_line)
        del state.macros[node.args[0].lower()]
        return
    if not node.args:
        raise ConfigError("no macro name specified with Use", node.file, node.end_line)
    macro = state.macros.get(node.args[0].lower())
    if macro is None:
        raise ConfigError(f"macro '{node.args[0].lower()}' undefined", node.file, node.end_line,
                          "define it with <Macro> before this line")
    where = node.expansion[0] if node.expansion else node.file
    if f"macro '{macro.name}'" in where:
        raise ConfigError(f"recursive use of macro '{macro.name}' is invalid", node.file, node.end_line)
    values = node.args[1:]
    if len(values) != len(macro.parameters):
        raise ConfigError(
            f"macro '{macro.name}' ({macro.location}) used with {len(values)} arguments "
            f"instead of {len(macro.parameters)}", node.file, node.end_line)
    use_line = node.expansion[1] if node.expansion else node.end_line
    pseudo = f"macro '{macro.name}' ({macro.location}) used on line {use_line} of \"{where}\""
    expanded: list[MacroLine] = []
    for index, (text, first, last) in enumerate(macro.body, 1):
        line = substitute(text, macro.parameters, values)
        if line and line[0] != "#":
            expanded.append((line, first, last, macro.file, (pseudo, index)))
    cursor.extendleft(reversed(expanded))


def substitute(text: str, names: list[str], values: list[str]) -> str:
    """Replace parameter names in one body line, left to right."""
    if not names:
        return text
    out: list[str] = []
    pos = 0
    while True:
        chosen = -1
        chosen_at = len(text)
        for index, name in enumerate(names):
            found = text.find(name, pos)
            if found >= 0 and (found < chosen_at or (found == chosen_at and len(name) > len(names[chosen]))):
                chosen, chosen_at = index, found
        if chosen < 0:
            out.append(text[pos:])
            return "".join(out)
        value = values[chosen]
        if names[chosen].startswith("@"):
            value = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out.append(text[pos:chosen_at])
        out.append(value)
        pos = chosen_at + len(names[chosen])
