"""What the reader knows at a given line of the configuration.

httpd decides `<IfModule>`, `<IfDefine>`, `<IfVersion>` and `<IfFile>`, and
expands `Use` of a macro, with what it has read so far. This state is the one
interface between the reader (loader.py) and the modules that make those
decisions (conditions.py, macros.py), so that the dependencies run one way:
loader -> conditions/macros -> state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.config.load_options import LoadOptions
from advisor.config.model import Diagnostic, Section
from advisor.config.modules import ModuleSet


@dataclass
class Macro:
    name: str
    """Lower-cased, as mod_macro keys it."""
    parameters: list[str]
    body: list[tuple[str, int, int]]
    """(text, first physical line, last physical line) in the defining file."""
    file: str
    line: int

    @property
    def location(self) -> str:
        return f'defined on line {self.line} of "{self.file}"'



@dataclass
class ReadState:
    options: LoadOptions
    server_root: str
    modules: ModuleSet
    defines: dict[str, str | None]
    version: tuple[int, int, int]
    files: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    include_stack: list[tuple[str, tuple[int, int] | None, tuple[str, int] | None]] = field(default_factory=list)
    """The files being read, outermost first: (path, (device, inode) or None
    until looked up, where it was included from)."""
    plain: bool = True
    """The file being read splits on blanks like httpd (see splits_like_httpd)."""
    fast: bool = True
    """The lines left of the file being read are its own (no macro's), plain,
    without ${...} and without backslashes: the reader's fast path applies."""
    mixed: bool = False
    """As `fast`, but the file has a backslash somewhere: the fast path
    applies to its lines without one (a line with one, an escape or a
    continuation, takes the careful path). Two flags, so that the usual
    file, without backslashes, pays nothing per line for the test."""
    section_depth: int = 0
    sources: dict[str, str] = field(default_factory=dict)
    macros: dict[str, Macro] = field(default_factory=dict)
    physical_lines: dict[str, list[str]] = field(default_factory=dict)
    """Each file's text split in lines, kept so a macro body can be re-read
    with its blank lines (they count in the macro's own line numbers)."""
    assumed_mpm: str | None = None
    """The module id of the `--mpm` MPM when it was taken as compiled in:
    the reading is void if the config turns out to load an MPM itself."""
    effective_sections: list[Section] = field(default_factory=list)
    """With the effective tree built while reading: its sections as they are
    made, which is the order a walk of that tree meets them."""

    def lookup_variable(self, name: str) -> str | None:
        if name in self.defines and self.defines[name] is not None:
            return self.defines[name]
        if self.options.recorder is not None:
            self.options.recorder.variable(name)
        return self.options.environ.get(name)
