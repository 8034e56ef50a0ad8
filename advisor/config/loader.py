"""Build the configuration model by reading files in httpd's order.

httpd reads its configuration in one pass: `Define`, `LoadModule`,
`ServerRoot` and `Include` take effect at the line where they stand, and each
conditional section is decided with what has been read so far. The reader
below does the same, keeping every branch in the raw tree and marking what
httpd would not apply as inactive.
"""

from __future__ import annotations

import gc
import os
import stat
import sys
from collections import deque
from dataclasses import replace

from advisor.config import includes, macros
from advisor.config.catalog import CONDITIONAL_SECTIONS, READ_TIME_DIRECTIVES, RUNTIME_CONDITIONALS
from advisor.config.conditions import evaluate_condition, parse_version
from advisor.config.envvars import envvars_beside, read_envvars
from advisor.config.inputs import InputRecorder
from advisor.config.lexer import (LogicalLine, MacroLine, decode, logical_lines, next_word, resolve_env,
                                  split_words, splits_like_httpd)
from advisor.config.load_options import LoadOptions
from advisor.config.model import Config, Diagnostic, Directive, Include, Node, Section, effective_tree
from advisor.config.modules import MPM_NAMES, ModuleSet, module_id_from_name, parse_module_listing, source_name
from advisor.config.state import ReadState
from advisor.errors import ConfigError, UsageError

# Directives the reader must act on (or that need the careful path): every
# other directive is read by the inline fast path in _Reader.build.
_SLOW_PATH_DIRECTIVES = READ_TIME_DIRECTIVES | {"use", "undefmacro"}
# What the effective tree leaves out (see model.effective_tree).
_NOT_EFFECTIVE = READ_TIME_DIRECTIVES - CONDITIONAL_SECTIONS

# Far deeper than any real configuration, and well inside Python's recursion
# limit even with includes nested as deep as httpd allows.
MAX_SECTION_DEPTH = 64

# Includes (up to httpd's 128 levels) and sections nest through recursion.
if sys.getrecursionlimit() < 5000:
    sys.setrecursionlimit(5000)

MAIN_FILE_CANDIDATES = ("apache2.conf", "httpd.conf", "conf/httpd.conf")


def find_main_file(path: str, recorder: InputRecorder | None = None) -> str:
    """A file as given, or the main file inside a configuration directory."""
    if recorder is not None:
        recorder.looked_at(path)
    if os.path.isdir(path):
        for candidate in MAIN_FILE_CANDIDATES:
            full = os.path.join(path, candidate)
            if recorder is not None:
                recorder.looked_at(full)
            if os.path.isfile(full):
                return full
        raise ConfigError(
            "directory holds no apache2.conf, httpd.conf or conf/httpd.conf",
            path,
            None,
            "pass the main configuration file itself",
        )
    return path


def default_server_root(main_file: str) -> str:
    """httpd's -d: by default the directory above `conf/` for the upstream
    layout (conf/httpd.conf), else the main file's own directory."""
    directory = os.path.dirname(os.path.abspath(main_file))
    if os.path.basename(directory) == "conf":
        return os.path.dirname(directory)
    return directory


def _inside_open_conditional(section: Section) -> bool:
    """Whether the section is, or sits in, a read-time conditional of the
    same file: httpd ends those at the end of the file without a word."""
    node: Section | None = section
    while node is not None and not node.is_root and node.file == section.file:
        if node.lname in CONDITIONAL_SECTIONS:
            return True
        node = node.parent
    return False


class _ConfigLoadsMpm(Exception):
    """Raised when a config read with an assumed (`--mpm`) MPM loads one
    itself: that reading is void and the tree is read again without it."""


class _Reader:
    def __init__(self, state: ReadState) -> None:
        self.state = state
        self.pending_expansion: tuple[str, int] | None = None
        # A large tree repeats the same few hundred directive names and the
        # same argument texts (`On`, `None`, `all granted`) in every virtual
        # host. Nodes share one string for each name and one (text, words)
        # pair for each argument text: a third less memory on 20,000 hosts
        # (which is time: allocating and touching it), and no split of a
        # text already split. Words are never changed in place (the
        # effective tree shares them too).
        self.names: dict[str, str] = {}
        """Spelling -> itself, for names the fast path may read (see build)."""
        self.section_names: dict[str, tuple[str, str]] = {}
        """An opening tag's first word -> (the section's name, its lower case)."""
        self.words: dict[str, tuple[str, list[str]]] = {}
        self.lines: dict[str, tuple[str, str, list[str]]] = {}
        """Whole lines of the fast path -> (name, argument text, words)."""
        self.buffer = memoryview(bytearray(_READ_SIZE))
        """What files are read into (see read_text)."""
        self.root = state.options.root
        self.recorder = state.options.recorder
        self.overlay = state.options.overlay

    # ---- files ------------------------------------------------------------

    def read_text(self, path: str, where: tuple[str, int] | None) -> tuple[str, tuple[int, int] | None]:
        """The file's text, and its (device, inode) when it was looked up: only
        when an InputRecorder wants the file's `stat` anyway. Otherwise the
        identity waits until the file includes another (see `_check_cycle`):
        a file that includes nothing cannot close a cycle, and an fstat per
        file is a fifth of the system calls of reading a tree of 20,000."""
        # Plain descriptors: a large tree has thousands of small files, and
        # the buffered-file layers of open() double the cost of reading them.
        root = self.root
        local = root + path if root else path
        if self.overlay is not None:
            local = self.overlay.source(path, local)
        try:
            descriptor = os.open(local, _READ_FLAGS)
        except OSError as exc:
            raise _unreadable(path, where, exc) from None
        identity = None
        try:
            recorder = self.recorder
            if recorder is not None:
                info = os.fstat(descriptor)
                recorder.opened(path, info)
                if stat.S_ISDIR(info.st_mode):
                    raise IsADirectoryError
                identity = (info.st_dev, info.st_ino)
            # Into one buffer kept for the whole tree, decoded from there: a
            # bytes object per file, made at the size of a read and then
            # shrunk, leaves a hole in the heap beside each file's text (8 MiB
            # on 20,000 files), with or without a recorder.
            view = self.buffer
            count = os.readv(descriptor, (view,))
            text = str(view[:count], "utf-8", "surrogateescape")
            more = os.readv(descriptor, (view,)) if count else 0
            if not more:
                return text, identity
            # Not at its end yet (a pipe, a large file): the rest as bytes.
            # The text decoded so far encodes back to the bytes read
            # (surrogate escapes keep any byte, a cut character too).
            chunks = [text.encode("utf-8", "surrogateescape"), bytes(view[:more])]
            while True:
                count = os.readv(descriptor, (view,))
                if not count:
                    break
                chunks.append(bytes(view[:count]))
        except OSError as exc:
            raise _unreadable(path, where, exc) from None
        finally:
            os.close(descriptor)
        return decode(chunks[0] if len(chunks) == 1 or not chunks[1] else b"".join(chunks)), identity

    def read_file(self, path: str, container: Section, where: tuple[str, int] | None,
                  effective: Section | None = None) -> None:
        state = self.state
        if len(state.include_stack) > state.options.max_include_depth:
            raise ConfigError(
                f"include depth over {state.options.max_include_depth} (httpd's limit)",
                where[0] if where else path, where[1] if where else None,
                "look for a recursion in the Include lines")
        text, identity = self.read_text(path, where)
        state.include_stack.append((path, identity, where))
        saved = state.plain, state.fast, state.mixed
        try:
            if identity is not None:
                self._check_cycle()
            state.files.append(path)
            state.sources[path] = text
            state.plain = plain = splits_like_httpd(text)
            # (A one-character search first: memchr, far cheaper than a substring.)
            fast = plain and ("$" not in text or "${" not in text)
            escapes = "\\" in text
            state.fast, state.mixed = fast and not escapes, fast and escapes
            cursor = deque(logical_lines(text, path))
            self.build(cursor, container, path, True, None, effective)
        finally:
            state.include_stack.pop()
            state.plain, state.fast, state.mixed = saved

    def _check_cycle(self) -> None:
        """Whether the file being read (the top of the include stack) is one
        already open further up (by device and inode, so links count): httpd
        would loop until its depth limit. Called when the file is opened if
        its identity is known then, else before its first Include (files that
        include nothing never need it); the files further up have theirs."""
        stack = self.state.include_stack
        path, identity, where = stack[-1]
        if identity is None:
            try:
                info = os.stat(self.state.options.root + path if self.state.options.root else path)
            except OSError:
                return  # gone since it was read: nothing to compare
            identity = (info.st_dev, info.st_ino)
            stack[-1] = (path, identity, where)
        for position, (opened_path, opened_identity, _) in enumerate(stack[:-1]):
            if opened_identity == identity:
                chain = " -> ".join([entry[0] for entry in stack[position:-1]] + [path])
                raise ConfigError(f"include cycle: {chain}", where[0] if where else path,
                                  where[1] if where else None, "remove the Include that closes the loop")

    # ---- one nesting level -----------------------------------------------

    def build(self, cursor: "deque[LogicalLine | MacroLine]", container: Section, path: str,
              active: bool, closing: Section | None, effective: Section | None) -> None:
        """Read lines into `container` until `closing`'s end tag (or the end
        of the file when `closing` is None). `effective`, when the effective
        tree is built while reading: the section of that tree that receives
        what these lines apply (None where nothing applies)."""
        state = self.state
        file_path = path
        append = container.children.append
        effective_append = effective.children.append if effective is not None else None
        popleft = cursor.popleft
        plain = state.plain
        fast = state.fast
        mixed = state.mixed
        names = self.names
        words = self.words
        lines = self.lines
        slow_names = _SLOW_PATH_DIRECTIVES
        while cursor:
            logical = popleft()
            if fast or (mixed and "\\" not in logical[0]):
                # The file has no ${...}, the line no backslash, and both
                # split like httpd: a directive whose name was read before (not a
                # section, not one the reader acts on) needs nothing but a
                # split, and its words were likely split before.
                text, start, end = logical  # type: ignore[misc]
                known = lines.get(text)
                if known is not None:
                    # A whole line met before (`Require all granted` in
                    # every host): not even a split.
                    shared, rest, args = known
                else:
                    parts = text.split(None, 1)
                    shared = names.get(parts[0])
                    if shared is not None:
                        if len(parts) == 2:
                            found = words.get(parts[1])
                            if found is None:
                                rest = parts[1]
                                found = words[rest] = (rest, rest.split() if '"' not in rest and "'" not in rest
                                                       else split_words(rest, True))
                            else:
                                # Its words were met before: the line is likely
                                # to come again (a line met once is not kept).
                                lines[text] = (shared, found[0], found[1])
                            rest, args = found
                        else:
                            rest, args = "", []
                if shared is not None:
                    if effective_append is None:
                        append(Directive(shared, args, rest, file_path, start, end, active, container))
                    else:
                        # Applied: one node for both trees (see Node.raw_parent).
                        node = Directive(shared, args, rest, file_path, start, end, True, effective, None, None,
                                         container)
                        append(node)
                        effective_append(node)
                    continue
                name = parts[0]
                if name[0] == "<":
                    # A section's opening or closing tag, read as the careful
                    # path below reads it (but for <Macro>, left to it).
                    if name[1:2] == "/":
                        # The tag that closes this level, spelled as it was
                        # opened, needs no check (see close).
                        if closing is None or name != f"</{closing.name}>":
                            self.close(name, parts[1] if len(parts) == 2 else "", start, end, file_path,
                                       active, closing)
                        if closing is not None:
                            closing.close_line = end
                        return
                    rest = parts[1] if len(parts) == 2 else ""
                    if not (active and "macro_module" in state.modules and name.lower() == "<macro"):
                        self.section(name, rest, start, end, cursor, container, file_path, active, effective)
                        # A macro used in the section may have ended the fast path.
                        fast, mixed = state.fast, state.mixed
                        continue
            if len(logical) == 3:
                text, start, end = logical  # type: ignore[misc]
                path = file_path
                expansion = None
            else:
                # A line that a `Use` of a macro produced (see macros.py).
                text, start, end, path, expansion = logical  # type: ignore[misc]
            if active and "${" in text:
                undefined: list[str] = []
                text = resolve_env(text, state.lookup_variable, undefined)
                for name in undefined:
                    state.diagnostics.append(Diagnostic(path, end, f"variable ${{{name}}} is not defined"))
                if not text:
                    continue
            first = text[0]
            simple = plain and first != '"' and first != "'" and "\\" not in text
            if simple:
                parts = text.split(None, 1)
                name = parts[0]
                rest = parts[1] if len(parts) == 2 else ""
            else:
                name, pos = next_word(text)
                rest = text[pos:]
            if name[:1] == "<":
                if name[1:2] == "/":
                    self.close(name, rest, start, end, path, active, closing)
                    if closing is not None:
                        closing.close_line = end
                    return
                if active and name.lower() == "<macro" and "macro_module" in state.modules:
                    macros.define(state, name, rest, start, end, cursor, container, path)
                    continue
                if expansion is not None:
                    self.pending_expansion = expansion
                self.section(name, rest, start, end, cursor, container, path, active, effective)
                fast, mixed = state.fast, state.mixed  # (a macro, as above)
                continue
            lname = name.lower()
            if expansion is None and lname not in slow_names:
                # The common case, kept inline: a plain directive.
                if simple:
                    names[name] = name
                if simple and '"' not in rest and "'" not in rest:
                    args = rest.split()
                else:
                    args = split_words(rest, plain)
                if effective_append is None:
                    append(Directive(name, args, rest, path, start, end, active, container))
                else:
                    node = Directive(name, args, rest, path, start, end, True, effective, None, None, container)
                    append(node)
                    effective_append(node)
                continue
            node = self.directive(name, rest, start, end, container, path, active, effective)
            if expansion is not None:
                node.expansion = expansion
            if effective_append is not None and type(node) is Directive and lname not in _NOT_EFFECTIVE:
                node.raw_parent, node.parent = node.parent, effective
                effective_append(node)
            if active and lname in macros.MACRO_DIRECTIVES and "macro_module" in state.modules:
                # The cursor may now hold a macro's lines (five-tuples, any text).
                state.fast = state.mixed = fast = mixed = False
                macros.use_or_undefine(state, node, cursor)
        if closing is not None:
            if active and _inside_open_conditional(closing):
                # httpd 2.4 prints "Syntax OK" for this, yet its parse tree
                # (see -D DUMP_CONFIG) then lacks the section, and sometimes
                # everything read before it. Worth an error, not silence.
                raise ConfigError(f"<{closing.name}> was not closed; httpd says Syntax OK but "
                                  "silently drops configuration", file_path, closing.line,
                                  f"add </{closing.name}>")
            if active:
                raise ConfigError(f"<{closing.name}> was not closed", file_path, closing.line,
                                  f"add </{closing.name}>")
            raise ConfigError(f"expected </{closing.name}> before end of file", file_path,
                              closing.line, f"add </{closing.name}>")

    def close(self, name: str, rest: str, start: int, end: int, path: str, active: bool,
              closing: Section | None) -> None:
        if closing is None:
            bare = name[2:].rstrip(">")
            raise ConfigError(f"</{bare}> without matching <{bare}> section", path, end,
                              "remove it or add the opening tag")
        if active and not name.endswith(">"):
            raise ConfigError(f"{name} directive missing closing '>'", path, end,
                              f"write </{closing.name}>")
        bare = name[2:-1] if name.endswith(">") else name[2:]
        if bare != closing.name and bare.lower() != closing.name.lower():
            raise ConfigError(f"expected </{closing.name}> but saw </{bare}>", path, end,
                              f"<{closing.name}> opened on line {closing.line} is still open")

    def section(self, name: str, rest: str, start: int, end: int, cursor: "deque[LogicalLine | MacroLine]",
                container: Section, path: str, active: bool, effective: Section | None) -> None:
        state = self.state
        # One string per spelling of a section's name, and its lower case,
        # shared by every section of that spelling (a <VirtualHost> and a
        # <Directory> per host would each make two).
        spelled = self.section_names.get(name)
        if spelled is None:
            bare = name[1:-1] if name.endswith(">") else name[1:]
            spelled = self.section_names[name] = (bare, bare.lower())
        bare, lname = spelled
        raw_args = rest if rest else ">"
        bracket = raw_args.rfind(">")
        if bracket < 0:
            raise ConfigError(f"<{bare}> directive missing closing '>'", path, end,
                              "end the line with '>'")
        inner = raw_args[:bracket]
        if state.fast or state.mixed:  # shared words, as for directives (see build)
            found = self.words.get(inner)
            if found is None:
                found = self.words[inner] = (inner, split_words(inner, True))
            args = found[1]
        else:
            args = split_words(inner, state.plain)
        node = Section(bare, args, raw_args, path, start, end, active, container)
        if self.pending_expansion is not None:
            node.expansion, self.pending_expansion = self.pending_expansion, None
        state.section_depth += 1
        depth = state.section_depth
        if depth > MAX_SECTION_DEPTH:
            raise ConfigError(f"sections nested more than {MAX_SECTION_DEPTH} deep", path,
                              end, "a closing tag is probably missing")
        container.children.append(node)
        child_active = active
        if active and lname in CONDITIONAL_SECTIONS:
            child_active = evaluate_condition(lname, inner, node, state)
        elif lname == "macro":
            # mod_macro keeps a macro's body as text until `Use`: nothing in
            # it applies where it is written.
            child_active = False
        # In the effective tree a conditional that holds is spliced away and
        # one that fails takes its content along (see model.effective_tree).
        copy = None
        inner_effective = None
        if effective is not None:
            if lname in CONDITIONAL_SECTIONS:
                inner_effective = effective if child_active else None
            elif lname not in _NOT_EFFECTIVE:
                copy = Section(bare, args, raw_args, path, start, end, True, effective, node, node.expansion)
                effective.children.append(copy)
                state.effective_sections.append(copy)
                inner_effective = copy
        self.build(cursor, node, path, child_active, node, inner_effective)
        if copy is not None:
            copy.close_line = node.close_line
        state.section_depth -= 1

    def directive(self, name: str, rest: str, start: int, end: int, container: Section,
                  path: str, active: bool, effective: Section | None = None) -> Node:
        state = self.state
        lname = name.lower()
        args = split_words(rest, state.plain)
        if lname in ("include", "includeoptional"):
            node: Node = Include(name=name, args=args, raw_args=rest, file=path, line=start,
                                 end_line=end, active=active, parent=container)
            container.children.append(node)
            if active:
                self.include(node, args, lname == "includeoptional", effective)
            return node
        node = Directive(name, args, rest, path, start, end, active, container)
        container.children.append(node)
        if not active or lname not in READ_TIME_DIRECTIVES:
            return node
        if lname == "define":
            if not args or len(args) > 2:
                raise ConfigError("Define takes one or two arguments", path, end)
            if ":" in args[0]:
                raise ConfigError("Define: variable name must not contain ':'", path, end)
            state.defines[args[0]] = args[1] if len(args) > 1 else state.defines.get(args[0])
        elif lname == "undefine":
            if args:
                state.defines.pop(args[0], None)
        elif lname == "loadmodule":
            if len(args) != 2:
                raise ConfigError("LoadModule takes two arguments: module identifier and file",
                                  path, end)
            if state.assumed_mpm is not None and args[0] in MPM_NAMES:
                raise _ConfigLoadsMpm()
            if not state.modules.add(args[0], source_name(args[0], args[1])):
                state.diagnostics.append(Diagnostic(path, end,
                                                    f"module {args[0]} is already loaded, skipping"))
        elif lname == "serverroot":
            if len(args) != 1:
                raise ConfigError("ServerRoot takes one argument", path, end)
            root = args[0]
            if not os.path.isabs(root):
                root = os.path.join(state.server_root, root)
            state.server_root = os.path.normpath(root)
        return node

    def include(self, node: Include, args: list[str], optional: bool, effective: Section | None = None) -> None:
        state = self.state
        if len(args) != 1:
            raise ConfigError(f"{node.name} takes one argument", node.file, node.end_line)
        if state.include_stack and state.include_stack[-1][1] is None:
            self._check_cycle()
        try:
            paths = includes.expand(args[0], state.server_root, optional, state.options.recorder,
                                    state.options.root)
        except includes.IncludeError as exc:
            if not state.options.allow_missing_includes:
                raise ConfigError(str(exc), node.file, node.end_line, exc.hint) from None
            state.diagnostics.append(Diagnostic(node.file, node.end_line,
                                                f"{exc} (skipped: httpd would refuse to start)"))
            paths = []
        if self.overlay is not None:
            paths = self.overlay.joined(args[0], state.server_root, paths, state.options.root)
        node.files = paths
        for path in paths:
            self.read_file(path, node, (node.file, node.end_line), effective)


# Reads of a file are this size: a config file is nearly always one read
# (and an empty one that finds its end).
_READ_SIZE = 1 << 16
_READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC


def _unreadable(path: str, where: tuple[str, int] | None, exc: OSError) -> ConfigError:
    """The error for a file that cannot be opened or read, at the line that
    names it (or at the file itself, for the main file)."""
    file, line = where if where else (path, None)
    if isinstance(exc, FileNotFoundError):
        return ConfigError(f"cannot open {path}: no such file", file, line, "fix the path or create the file")
    if isinstance(exc, IsADirectoryError):
        return ConfigError(f"{path} is a directory, not a configuration file", file, line,
                           "name a file, or Include the directory")
    if isinstance(exc, PermissionError):
        return ConfigError(f"cannot read {path}: {exc.strerror}", file, line, "check the file's permissions")
    return ConfigError(f"cannot read {path}: {exc.strerror}", file, line)


# ---- the effective tree ------------------------------------------------------


# ---- entry point ---------------------------------------------------------------


def load_config(path: str, options: LoadOptions | None = None) -> Config:
    """Read a configuration tree as httpd would and return both views of it."""
    options = options or LoadOptions()
    if options.mpm:
        # `--mpm` names the MPM compiled into httpd, which counts as loaded
        # from the first line. Whether the config loads one itself is known
        # only once it has been read; when it does, it is read again without
        # the assumption (httpd would not have that MPM built in).
        assumed = module_id_from_name(options.mpm.lower())
        if assumed not in MPM_NAMES:
            raise UsageError(f"--mpm {options.mpm!r} is not an MPM", hint="use prefork, worker or event")
        try:
            return _load(path, options, assumed)
        except _ConfigLoadsMpm:
            pass
    return _load(path, options, None)


def _load(path: str, options: LoadOptions, assumed_mpm: str | None) -> Config:
    recorder = options.recorder
    root = options.root.rstrip("/") if options.root else None
    if root is not None:
        if not os.path.isabs(path):
            raise UsageError(f"{path!r} must be an absolute path on the host whose tree is under {options.root}")
        main_file = find_main_file(root + path)[len(root):]
    else:
        main_file = find_main_file(path, recorder)
    server_root = options.server_root or default_server_root(main_file)
    if not os.path.isabs(main_file):
        main_file = os.path.normpath(os.path.join(os.getcwd(), main_file))
    modules = ModuleSet.with_builtins()
    for name in sorted(options.modules):
        module_id = module_id_from_name(name)
        modules.add(module_id)
    if options.modules_from:
        if recorder is not None:
            recorder.looked_at(options.modules_from)
        for module_id in parse_module_listing(options.modules_from):
            modules.add(module_id)
    if assumed_mpm is not None and not modules.mpms():
        modules.add(assumed_mpm)
    else:
        assumed_mpm = None  # --module or --modules-from named the MPM already
    environ = dict(options.environ)
    if root is not None:
        beside = envvars_beside(root + main_file) if options.use_envvars else None
        envvars = options.envvars or beside
    else:
        envvars = options.envvars or (envvars_beside(main_file, recorder) if options.use_envvars else None)
    if envvars:
        environ.update(read_envvars(envvars, environ, recorder))
    # The root without its trailing slash, once: every lookup prefixes it.
    options = replace(options, environ=environ, root=root)
    state = ReadState(
        options=options,
        server_root=os.path.abspath(server_root),
        modules=modules,
        defines=dict(options.defines),
        version=parse_version(options.apache_version),
        assumed_mpm=assumed_mpm,
    )
    raw = Section(name="", args=[], raw_args="", file=main_file, line=0, end_line=0, is_root=True)
    effective = None
    if options.effective:
        effective = Section(name="", args=[], raw_args="", file=main_file, line=0, end_line=0,
                            is_root=True, raw=raw)
    # Every node we allocate lives as long as the model: the cyclic garbage
    # collector would rescan tens of thousands of them for nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _Reader(state).read_file(main_file, raw, None, effective)
    finally:
        if collecting:
            gc.enable()
    mpms = modules.mpms()
    if len(mpms) > 1:
        state.diagnostics.append(Diagnostic(main_file, 1, f"more than one MPM loaded: {', '.join(mpms)}"))
    return Config(
        main_file=main_file,
        server_root=state.server_root,
        raw=raw,
        files=state.files,
        sources=state.sources,
        modules=modules.names,
        module_order=modules.ids,
        mpm=mpms[0] if mpms else None,
        defines=state.defines,
        apache_version=state.version,
        diagnostics=state.diagnostics,
        _effective=effective,
        effective_sections=state.effective_sections if effective is not None else None,
    )


__all__ = ["load_config", "find_main_file", "default_server_root", "effective_tree",
           "RUNTIME_CONDITIONALS"]
