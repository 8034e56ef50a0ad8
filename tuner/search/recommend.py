"""The recommendation of a tuning session, and its diff against the admin's config.

- The drop-in's directives: the winner's settings (`Space.settings`, with the
  tight ServerLimit/ThreadLimit) that differ from what the admin's config
  gives httpd today, or from the start the gain was measured against, plus
  their consistency partners (ServerLimit with MaxRequestWorkers ...).
- Where each one is written today: the occurrence httpd applies, the last
  one read at server scope in either spelling (MaxClients, MaxRequestsPerChild),
  wherever it sits (an <IfModule mpm_prefork_module> block, an included
  file); or where it would be added when the config leaves it to httpd's
  default (next to the admin's own pool lines for an MPM directive).
- A unified diff per file, keeping the admin's indentation and columns.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from advisor.tuner.search.space import ALIASES, CORE_DEFAULTS, Space, Value, format_value
from advisor.tuner.search.space_derive import h2_defaults, loaded_mpm_line, parse_timeout_ms

if TYPE_CHECKING:
    from advisor.config.model import Config, Directive, Section

Point = dict[str, Value]

# Directives that belong to the MPM's pool: written inside <IfModule mpm_X_module>
# in the drop-in, and added next to the admin's own pool lines when missing.
MPM_DIRECTIVES = ("ServerLimit", "ThreadLimit", "MaxRequestWorkers", "StartServers", "MinSpareServers",
                  "MaxSpareServers", "ThreadsPerChild", "MinSpareThreads", "MaxSpareThreads",
                  "MaxConnectionsPerChild", "AsyncRequestWorkerFactor")
# Directives written together so that httpd never has to correct one of them
# (ServerLimit must hold the pool, MaxSpare must stay above MinSpare ...).
PARTNERS: dict[str, tuple[str, ...]] = {
    "MaxRequestWorkers": ("ServerLimit",),
    "ServerLimit": ("MaxRequestWorkers",),
    "ThreadsPerChild": ("ThreadLimit", "ServerLimit", "MaxRequestWorkers"),
    "ThreadLimit": ("ThreadsPerChild",),
    "MinSpareServers": ("MaxSpareServers",),
    "MaxSpareServers": ("MinSpareServers",),
    "MinSpareThreads": ("MaxSpareThreads",),
    "MaxSpareThreads": ("MinSpareThreads",),
}
# The dimension whose value a derived directive carries.
FOLLOWS = {"ServerLimit": "MaxRequestWorkers", "ThreadLimit": "ThreadsPerChild"}
# httpd sizes its scoreboard once: a graceful restart ignores a new value.
RESTART_ONLY = ("ServerLimit", "ThreadLimit")


# --------------------------------------------------------------------------
# The recommendation


@dataclass
class Written:
    """Where the admin's config sets a directive today (the line httpd applies)."""

    file: str
    line: int
    end_line: int
    text: str
    """The line as written (the first one of a continued directive)."""
    name: str
    """The spelling used there (MaxClients for MaxRequestWorkers ...)."""
    value: str
    blocks: list[str] = field(default_factory=list)
    """Enclosing sections in the file, outermost first: ["<IfModule mpm_prefork_module>"]."""
    macro: str | None = None
    """When a mod_macro `Use` produced the line: httpd's name for the expansion."""
    display: str = ""
    """The file as the report shows it (relative to the main file's directory)."""

    @property
    def location(self) -> str:
        return f"{self.display or self.file}:{self.line}"


@dataclass
class Change:
    directive: str
    value: str
    """As httpd.conf writes it."""
    start: str
    """The value the starting point was measured with."""
    current: str
    """What httpd uses today: as written, or its default."""
    written: Written | None
    dimension: str
    """The search dimension that carries it."""
    why: str
    mpm_block: str | None = None
    """`mpm_prefork_module` ... for a directive of the MPM's pool."""
    add_after: tuple[str, int] | None = None
    """(file, line) after which a missing directive would be added."""
    add_display: str = ""
    add_indent: str = ""
    overrides: list[str] = field(default_factory=list)
    """file:line (section) of occurrences in a <VirtualHost>, <Directory> ...
    that keep their own value whatever the server-wide line says."""

    @property
    def line(self) -> str:
        return f"{self.directive} {self.value}"

    @property
    def where(self) -> str:
        """The diff table's cell: where it is written, or where it would go."""
        if self.written is not None:
            spelled = f" (as {self.written.name})" if self.written.name != self.directive else ""
            return f"{self.written.location}{spelled}"
        place = (f"{self.add_display or self.add_after[0]} after line {self.add_after[1]}" if self.add_after
                 else "the main config")
        return f"not written (httpd's default {self.current}): add to {place}, or include the drop-in"


@dataclass
class ModuleLine:
    """A LoadModule line the winner's MPM needs changed where it is written
    (never in the drop-in: a second MPM loaded there is refused)."""

    file: str
    line: int
    text: str
    """The line as written."""
    new_text: str
    why: str
    display: str = ""

    @property
    def location(self) -> str:
        return f"{self.display or self.file}:{self.line}"


@dataclass
class Recommendation:
    mpm: str
    changes: list[Change]
    main_file: str
    start: Point
    winner: Point
    notes: list[str] = field(default_factory=list)
    module_lines: list[ModuleLine] = field(default_factory=list)
    """The MPM switch's LoadModule edits (the MPM, and mod_cgi for mod_cgid under threads)."""

    @property
    def is_empty(self) -> bool:
        return not self.changes and not self.module_lines

    def directives(self) -> list[str]:
        return [c.line for c in self.changes]


def _mpm_defaults(mpm: str) -> dict[str, Value]:
    from advisor.rules._mpm import DEFAULTS

    canonical = {name.lower(): name for name in MPM_DIRECTIVES}
    return {canonical[key]: value for key, value in DEFAULTS.get(mpm, {}).items() if key in canonical}


def _normalise(name: str, text: str) -> Value | None:
    """A value as written in httpd.conf, in the units `Space.settings` uses."""
    if name == "KeepAliveTimeout":
        return parse_timeout_ms(text)
    word = text.strip()
    if word.lower() in ("on", "off"):
        return word.capitalize()
    try:
        return int(word)
    except ValueError:
        return word


def _written_node(cfg: "Config", name: str, mpm: str | None = None) -> "Directive | None":
    """The occurrence httpd applies: the last one read at server scope, in
    either spelling (MaxClients and MaxRequestWorkers set the same thing).
    When the winner runs another MPM (`mpm`), a line inside the current MPM's
    <IfModule> block stops applying with the switch: it does not count."""
    found = cfg.server_directives(*ALIASES.get(name, (name,)))
    if mpm is not None and cfg.mpm is not None and mpm != cfg.mpm:
        found = [n for n in found if not any(_is_mpm_block(s, cfg.mpm) for s in _blocks(n))]
    return found[-1] if found else None


def _blocks(node: "Directive") -> list["Section"]:
    return list(reversed(node.raw_enclosing()))


def _line_text(cfg: "Config", file: str, line: int) -> str:
    lines = cfg.sources.get(file, "").splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else ""


def _describe_written(cfg: "Config", node: "Directive") -> Written:
    blocks = [_section_label(s) for s in _blocks(node)]
    macro = node.expansion[0] if node.expansion else None
    return Written(node.file, node.line, node.end_line or node.line, _line_text(cfg, node.file, node.line),
                   node.name, node.raw_args, blocks, macro, display_path(node.file, cfg.main_file))


def _section_label(section: "Section") -> str:
    return f"<{section.name} {' '.join(section.args)}>" if section.args else f"<{section.name}>"


def _is_mpm_block(section: "Section", mpm: str) -> bool:
    if section.lname != "ifmodule" or not section.args:
        return False
    name = section.args[0].lstrip("!").lower()
    return name in (f"mpm_{mpm}_module", f"{mpm}.c", f"mod_mpm_{mpm}.c") and not section.args[0].startswith("!")


def _overrides(cfg: "Config", name: str) -> list[str]:
    out = []
    for node in cfg.effective.directives(*ALIASES.get(name, (name,))):
        if not node.at_server_scope:
            out.append(f"{node.file}:{node.line} ({_section_label(node.enclosing()[0])})")
    return out


def _indent_of(text: str) -> str:
    return text[: len(text) - len(text.lstrip())]


def _pool_anchor(cfg: "Config", mpm: str) -> tuple[str, int, str] | None:
    """Where the admin writes this MPM's pool, for adding a pool directive they
    left out: (file, line to add after, indentation). Inside their
    <IfModule mpm_X_module> block, just before it closes, when there is one;
    else after the last pool directive they wrote."""
    written = [node for node in (_written_node(cfg, name, mpm) for name in MPM_DIRECTIVES) if node is not None]
    for node in written:
        block = next((s for s in reversed(_blocks(node)) if _is_mpm_block(s, mpm)), None)
        if block is not None and block.close_line:
            return block.file, block.close_line - 1, _indent_of(_line_text(cfg, node.file, node.line))
    if written:
        last = max(written, key=lambda n: (n.file == cfg.main_file, n.end_line or n.line))
        return last.file, last.end_line or last.line, _indent_of(_line_text(cfg, last.file, last.line))
    return None


def _main_anchor(cfg: "Config") -> tuple[str, int]:
    lines = cfg.sources.get(cfg.main_file, "").splitlines()
    return cfg.main_file, len(lines)


def recommend(cfg: "Config", space: Space, winner: Mapping[str, Value]) -> Recommendation:
    """The drop-in's directives: the winner's settings that differ from what the
    config gives httpd today, or from the start the gain was measured against,
    with their consistency partners."""
    mpm = space.mpm_of(winner)
    recommended = {k: v for k, v in space.settings(winner).items() if k not in space.unwritten}
    started = space.settings(space.start)
    pool_defaults = _mpm_defaults(mpm)
    threads = recommended.get("ThreadsPerChild", pool_defaults.get("ThreadsPerChild"))
    # mod_http2's own defaults, its workers from the winner's threads: a
    # winner that keeps them writes nothing for them.
    defaults: dict[str, Value] = {**CORE_DEFAULTS, **pool_defaults, **h2_defaults(threads)}
    current: dict[str, tuple[Value | None, "Directive | None"]] = {}
    for name in recommended:
        node = _written_node(cfg, name, mpm)
        value = _normalise(name, node.args[0]) if node is not None and node.args else None
        current[name] = (value if node is not None else defaults.get(name), node)

    def differs(name: str) -> bool:
        value = recommended[name]
        return value != current[name][0] or value != started.get(name)

    # ServerLimit and ThreadLimit only follow the pool: written with it, never on their own
    # (the tight value Space.settings gives them is no reason to touch an admin's larger limit).
    chosen = {name for name in recommended if name not in FOLLOWS and differs(name)}
    if cfg.mpm is not None and mpm != cfg.mpm:
        # The new MPM's pool as measured, whole: its defaults were never what the trials ran.
        chosen.update(name for name in recommended if name in MPM_DIRECTIVES and name not in FOLLOWS)
    for name in list(chosen):
        chosen.update(p for p in PARTNERS.get(name, ()) if p in recommended)
    changes = []
    pool_anchor = _pool_anchor(cfg, mpm)
    for name in recommended:  # settings' order: ServerLimit before the pool it holds
        if name not in chosen:
            continue
        value, node = current[name]
        written = _describe_written(cfg, node) if node is not None else None
        dimension = FOLLOWS.get(name, name)
        if name in FOLLOWS and dimension not in recommended:
            dimension = name
        change = Change(
            directive=name, value=format_value(name, recommended[name]),
            start=format_value(name, started[name]) if name in started else "",
            current=written.value if written else format_value(name, value) if value is not None else "unset",
            written=written, dimension=dimension, why=_why(name, recommended, started, current[name][0]),
            mpm_block=f"mpm_{mpm}_module" if name in MPM_DIRECTIVES else None,
            overrides=_overrides(cfg, name),
        )
        if written is None:
            if name in MPM_DIRECTIVES and pool_anchor is not None:
                change.add_after, change.add_indent = pool_anchor[:2], pool_anchor[2]
            else:
                change.add_after = _main_anchor(cfg)
            change.add_display = display_path(change.add_after[0], cfg.main_file)
        changes.append(change)
    notes = list(space.start_notes)
    module_lines: list[ModuleLine] = []
    if cfg.mpm is not None and mpm != cfg.mpm:
        module_lines = mpm_module_lines(cfg, mpm)
        notes.append(_mpm_switch_note(cfg, mpm, module_lines))
    restart = [c.directive for c in changes if c.directive in RESTART_ONLY]
    if restart:
        verb = "takes" if len(restart) == 1 else "take"
        notes.append(f"{' and '.join(restart)} {verb} effect on a full restart only (apachectl restart): "
                     "a graceful reload keeps the scoreboard it started with")
    for change in changes:
        if change.overrides:
            notes.append(f"{change.directive} is also set in " + ", ".join(change.overrides)
                         + ": those keep their own value")
        if change.written is not None and change.written.macro:
            notes.append(f"{change.written.location}: {change.directive} comes from {change.written.macro}; "
                         "edit the macro's use, or include the drop-in")
    return Recommendation(mpm, changes, cfg.main_file, dict(space.start), dict(winner), notes, module_lines)


def mpm_module_lines(cfg: "Config", mpm: str) -> list[ModuleLine]:
    """The LoadModule lines to change for `mpm`: the MPM's own, and mod_cgi's
    under a threaded MPM (mod_cgid forks CGI programs from a small daemon
    instead of from a threaded child)."""
    out: list[ModuleLine] = []
    loaded = loaded_mpm_line(cfg)
    if loaded is not None:
        text = _source_line(cfg, loaded.file, loaded.line)
        new = re.sub(r"\bmod_mpm_\w+?\.so\b", f"mod_mpm_{mpm}.so",
                     re.sub(r"\bmpm_\w+_module\b", f"mpm_{mpm}_module", text))
        out.append(ModuleLine(loaded.file, loaded.line, text, new, f"the winner ran the {mpm} MPM",
                              display_path(loaded.file, cfg.main_file)))
    if mpm != "prefork":
        cgi = next((d for d in cfg.raw.directives("LoadModule")
                    if getattr(d, "active", True) and d.args[:1] == ["cgi_module"]), None)
        if cgi is not None:
            text = _source_line(cfg, cgi.file, cgi.line)
            new = re.sub(r"\bmod_cgi\.so\b", "mod_cgid.so", re.sub(r"\bcgi_module\b", "cgid_module", text))
            out.append(ModuleLine(cgi.file, cgi.line, text, new,
                                  f"mod_cgid serves CGI under {mpm} without forking a threaded child",
                                  display_path(cgi.file, cfg.main_file)))
    return out


def _source_line(cfg: "Config", file: str, number: int) -> str:
    lines = cfg.sources.get(file, "").splitlines()
    return lines[number - 1] if 0 < number <= len(lines) else ""


def _mpm_switch_note(cfg: "Config", mpm: str, module_lines: list[ModuleLine]) -> str:
    if not module_lines:
        return (f"the winner runs the {mpm} MPM, not {cfg.mpm}: load mpm_{mpm}_module (mod_mpm_{mpm}.so) instead "
                f"of mpm_{cfg.mpm}_module and restart; the drop-in's pool lines apply only then")
    edits = "; ".join(f"{m.location}: `{m.text.strip()}` -> `{m.new_text.strip()}`" for m in module_lines)
    return (f"the winner runs the {mpm} MPM, not {cfg.mpm}: change {edits}, then restart in full (apachectl "
            f"restart; a graceful reload cannot change the MPM); the drop-in's <IfModule mpm_{mpm}_module> pool "
            "lines apply only then")


def _why(name: str, recommended: Mapping[str, Value], started: Mapping[str, Value], current: Value | None) -> str:
    if name in FOLLOWS and name in recommended:
        return f"follows {FOLLOWS[name]} (httpd needs it to hold the pool)"
    if recommended[name] == started.get(name) and recommended[name] != current:
        return "the search started from this value (yours lies outside its guard) and kept it"
    if recommended[name] == started.get(name):
        return "kept beside a directive it must stay consistent with"
    return "the search moved it"


# --------------------------------------------------------------------------
# The diff against the admin's files


@dataclass
class FileDiff:
    file: str
    display: str
    lines: list[str]
    """A unified diff (---/+++/@@ and -/+/space lines), no trailing newlines."""


def display_path(path: str, main_file: str) -> str:
    """A config file as the report names it: relative to the main file's
    directory when it lies below it (where an admin's editor opens it)."""
    try:
        relative = os.path.relpath(path, os.path.dirname(main_file))
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


_DIRECTIVE_LINE = re.compile(r"^(\s*)(\S+)(\s+)")


def _replacement(written: Written, change: Change) -> str:
    """The new line, with the admin's indentation, and the value in the
    column where they wrote it (aligned columns stay aligned, even when the
    old spelling MaxClients becomes MaxRequestWorkers)."""
    match = _DIRECTIVE_LINE.match(written.text)
    if match is None:
        return f"{_indent_of(written.text)}{change.line}"
    indent = match.group(1)
    gap = " " * max(1, len(match.group(0)) - len(indent) - len(change.directive))
    return f"{indent}{change.directive}{gap}{change.value}"


def edited_files(cfg: "Config", recommendation: Recommendation) -> dict[str, tuple[list[str], list[str]]]:
    """file -> (its lines as read, its lines with the recommendation applied in
    place): a written line replaced where it is, a missing directive added
    after its anchor. A line a macro produced is left alone (one macro body
    serves every use); the drop-in covers it."""
    replace: dict[str, dict[int, tuple[int, str]]] = {}
    insert: dict[str, dict[int, list[str]]] = {}
    for change in recommendation.changes:
        written = change.written
        if written is not None:
            if written.macro or written.file not in cfg.sources:
                continue
            replace.setdefault(written.file, {})[written.line] = (written.end_line, _replacement(written, change))
        elif change.add_after is not None:
            file, line = change.add_after
            insert.setdefault(file, {}).setdefault(line, []).append(f"{change.add_indent}{change.line}")
    for module in recommendation.module_lines:
        if module.file in cfg.sources:
            replace.setdefault(module.file, {})[module.line] = (module.line, module.new_text)
    out = {}
    for file in sorted(set(replace) | set(insert), key=lambda f: (f != recommendation.main_file, f)):
        old = cfg.sources[file].splitlines()
        edits, adds = replace.get(file, {}), insert.get(file, {})
        new: list[str] = list(adds.get(0, []))
        number = 1
        while number <= len(old):
            last = number
            if number in edits:
                last, text = edits[number]  # a continued directive's lines become one
                new.append(text)
            else:
                new.append(old[number - 1])
            for covered in range(number, last + 1):
                new.extend(adds.get(covered, []))
            number = last + 1
        out[file] = (old, new)
    return out


def diffs(cfg: "Config", recommendation: Recommendation) -> list[FileDiff]:
    """One unified diff per file the recommendation touches (one line of context)."""
    out = []
    for file, (old, new) in edited_files(cfg, recommendation).items():
        shown = display_path(file, recommendation.main_file)
        lines = list(difflib.unified_diff(old, new, fromfile=f"{shown} (as written)",
                                          tofile=f"{shown} (recommended)", n=1, lineterm=""))
        out.append(FileDiff(file, shown, lines))
    return out
