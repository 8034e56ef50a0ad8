"""Points that lint would call errors are never tried.

Each candidate is judged by the project's own rule engine, on the admin's
config with the candidate's directives read after it (where the managed
include puts them). Only errors the candidate brings count: an error the
config already had (a typo in some virtual host) is not the candidate's.

The check runs once per trial, not inside the optimizer: skopt's
`space_constraint` would call it for each of the 10,000 random points it
scores after every `tell` (and only with acq_optimizer="sampling"), which is
far too slow for a reader and a rule engine.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from advisor.errors import AdvisorError

if TYPE_CHECKING:
    from advisor.config.load_options import LoadOptions
    from advisor.config.model import Config
    from advisor.tuner.search.space import Space, Value

Key = tuple[str, str, int, str]
SEVERITY_ORDER = ("info", "warning", "error")
CANDIDATE = "candidate.conf"
WRAPPER = "advisor-candidate-main.conf"


@dataclass(frozen=True)
class LintPolicy:
    """How the admin runs `lint`: the settings file, the profile and the
    severity that fails the check. The tuner's advice is judged by the same
    rules, so a recommendation that `lint --fail-on` would fail is known
    before it is measured."""

    settings_path: str | None = None
    profile: str | None = None
    fail_on: str | None = None

    def resolved(self):
        """(FileSettings, profile, fail_on, the enabled rules), as `lint` resolves them."""
        from advisor import rules as registry
        from advisor.lint.rule import PROFILES
        from advisor.lint.settings import FAIL_ON, FileSettings, check_choice, load_file_settings, select_rules

        settings = load_file_settings(self.settings_path) if self.settings_path else FileSettings()
        profile = check_choice(self.profile or settings.profile or "all", PROFILES, "--profile")
        fail_on = check_choice(self.fail_on or settings.fail_on or "warning", FAIL_ON, "--fail-on")
        enabled = select_rules(registry.all_rules(), settings.select, list(settings.ignore), profile)
        return settings, profile, fail_on, enabled

    def failing(self, fail_on: str) -> tuple[str, ...]:
        if fail_on == "never":
            return ()
        return SEVERITY_ORDER[SEVERITY_ORDER.index(fail_on):]


@dataclass
class LintVerdict:
    errors: list[str]
    """`file:line: CODE message` for each error the candidate brings."""
    lines: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def _render(key: Key) -> str:
    code, file, line, message = key
    # The candidate lives in a temporary file: name its line, not the path.
    where = f"candidate line {line}" if Path(file).name in (CANDIDATE, WRAPPER) else f"{file}:{line}"
    return f"{where}: {code} {message}"


# The post rules report on suppression comments: the candidate writes none.
_NOT_OF_THE_CANDIDATE = {"A001", "A002"}


def edited_line(edit, line: int) -> str | None:
    """Line `line` as the edit rewrites it, when the edit replaces text on
    that line and nothing else (a rule's advice as one value); else None."""
    if edit is None or not edit.applicable or edit.inserts_line or edit.line != line or not edit.original:
        return None
    if Path(edit.file).name != CANDIDATE:
        return None
    return edit.original[:edit.start] + edit.text + edit.original[edit.end:]


def advised_value(space: "Space", name: str, line: str) -> "Value | None":
    """The value of dimension `name` a directive line writes, as the search
    holds it (0 at an unlimited top is that top), or None when the line
    writes another directive, several words, or a value outside the space."""
    from advisor.tuner.search.space import ALIASES
    from advisor.tuner.search.space_derive import parse_timeout_ms

    dim = space.dimension(name)
    words = line.split()
    spellings = {spelling.lower() for spelling in ALIASES.get(name, (name,))}
    if dim is None or len(words) != 2 or words[0].lower() not in spellings:
        return None
    value: Value | None
    if dim.name == "KeepAliveTimeout":
        value = parse_timeout_ms(words[1])
    elif dim.kind == "choice":
        value = next((choice for choice in dim.choices if choice.lower() == words[1].lower()), None)
    else:
        try:
            value = int(words[1])
        except ValueError:
            return None
        if dim.unlimited_at_top and value == 0:
            value = dim.high
    return value if value is not None and dim.contains(value) else None


def _known_codes() -> set[str]:
    from advisor.rules import all_rules

    return {rule.code for rule in all_rules()}


class CandidateLint:
    """Judge candidates of one space against one config."""

    def __init__(self, cfg: "Config", space: "Space", options: "LoadOptions | None" = None,
                 facts=None, policy: LintPolicy | None = None, hidden: tuple[str, ...] = ()) -> None:
        self.cfg = cfg
        self.hidden = hidden
        """Files of the tree that are the tool's, not the admin's (the sandbox's
        instrument include): read empty once the tree is frozen."""
        self.space = space
        self.options = options
        self.facts = facts
        self.policy = policy or LintPolicy()
        self.settings, self.profile, self.fail_on, self.rules = self.policy.resolved()
        self._base: dict[str, set[Key]] = {}
        self._as_is: set | None = None
        """Every finding (with its severity) of the admin's tree with no candidate, once read."""
        self._include_lines: dict[tuple, list[str]] = {}
        self._related: dict[Key, tuple[str, int]] = {}
        """A finding's related line (E406: the line that overrides), by its key."""
        self._advised: dict[Key, str] = {}
        """A finding on a candidate line: that line as the finding's own edit rewrites it."""
        self._frozen = None
        """The admin's tree as this session first read it (see freeze)."""

    def freeze(self) -> None:
        """Judge every later candidate against the tree as it is now.

        A session that switches the MPM edits the admin's tree on disk (the
        LoadModule line, the files a wildcard finds); a candidate judged on
        the live tree mid-switch would meet the other MPM's module and be
        refused for the original MPM's own directives. Reading errors are
        the session's to report: the tree is read here as it was read for
        the plan."""
        from advisor.config import LoadOptions
        from advisor.config.snapshot import freeze_tree

        if self._frozen is None:
            self._frozen = freeze_tree(self.cfg.main_file, self._options(LoadOptions))
            for path in self.hidden:
                copy = Path(self._frozen.root + os.path.normpath(path))
                if copy.is_file():
                    copy.write_text("")
            self._base.clear()
            self._as_is = None

    def close(self) -> None:
        if self._frozen is not None:
            self._frozen.close()
            self._frozen = None

    def check(self, point: Mapping[str, "Value"], *, reload_safe: bool = False) -> LintVerdict:
        lines = self.space.directives(point, reload_safe=reload_safe, own_lines=False)
        new = self._new(lines, self.space.mpm_of(point), ("error",))
        return LintVerdict([_render(key) for key in new], lines)

    def warnings(self, point: Mapping[str, "Value"]) -> list[str]:
        """Codes of the findings at or above the admin's --fail-on that the
        candidate brings (sorted, one per code): the ones that would turn the
        admin's `lint` red."""
        return sorted({key[0] for key in self.brought(point)})

    def brought(self, point: Mapping[str, "Value"]) -> list[Key]:
        """Each finding at or above --fail-on the candidate brings, with the
        candidate line it stands on (file `candidate.conf`) when it does."""
        severities = self.policy.failing(self.fail_on)
        if not severities:
            return []
        mpm = self.space.mpm_of(point)
        found = self._new(self.include_lines(point), mpm, severities, admins=True)
        if mpm == self.cfg.mpm:
            return found  # judged on the admin's tree, against that tree as it is
        # Judged without the admin's tree (see _wrapper): a finding on the
        # wrapper's own lines is about a tree of one LoadModule line (S512's
        # "the main server has no access log" where the admin's virtual hosts
        # have theirs), and one the start's tree has too is not the point's.
        start = self._start_pairs(severities)
        return [key for key in found if self._on_candidate(key) and (key[0], key[3]) not in start]

    def include_lines(self, point: Mapping[str, "Value"]) -> list[str]:
        """The lines the drop-in writes for the point (recommend's changes),
        as lint of the tuned tree reads them: the admin's own lines keep
        what the drop-in leaves out. Judging every line of the point
        instead restated the start's values (EnableSendfile Off where the
        admin's tree leaves httpd's default) and moved a finding from the
        admin's line to a line the drop-in never writes."""
        from advisor.tuner.search.recommend import recommend

        key = tuple(sorted((name, str(value)) for name, value in point.items()))
        lines = self._include_lines.get(key)
        if lines is None:
            changes = recommend(self.cfg, self.space, point).changes
            lines = self._include_lines[key] = [f"{change.directive} {change.value}" for change in changes]
        return list(lines)

    def _on_candidate(self, key: Key) -> bool:
        """Whether a finding stands on a candidate line, or names one as its related line."""
        if Path(key[1]).name == CANDIDATE:
            return True
        related = self._related.get(tuple(key[:4]))
        return related is not None and Path(related[0]).name == CANDIDATE

    def _start_pairs(self, severities: tuple[str, ...]) -> set[tuple[str, str]]:
        """(code, message) of each finding the start's own tree has.

        A point under another MPM is judged on its own (see _wrapper): what
        the admin's tree says only through httpd's defaults (ServerTokens
        Full, no mod_reqtimeout) comes back there at other lines. They are
        the start's findings, not the point's; the same finding is the
        same code with the same message, wherever it stands. (Under the
        admin's own MPM the point is judged on the admin's tree, against
        that tree as it is: a value `--space` fixes away from the admin's is
        the point's, and so is what it brings, E406 included.)"""
        return {(code, message) for code, _, _, message, severity in self._tree_as_is() if severity in severities}

    def _tree_as_is(self) -> set:
        """The admin's tree with no candidate, under its own MPM, linted once:
        (code, file, line, message, severity) of every finding."""
        if self._as_is is None:
            self._as_is = self._errors([], self.cfg.mpm or "prefork", SEVERITY_ORDER, admins=True, detail=True)
        return self._as_is

    def tree_findings(self, point: Mapping[str, "Value"] | None) -> list[dict]:
        """Every finding of the admin's rules on the admin's tree, with the
        point's lines read last when a point is given (where the tuned
        include goes): code, severity, message, where (file:line, or the
        include's line), and the directive of a finding on the include."""
        lines = self.include_lines(point) if point is not None else []
        if point is None:
            found = self._tree_as_is()
        else:
            mpm = self.space.mpm_of(point)
            found = self._errors(lines, mpm, SEVERITY_ORDER, admins=True, detail=True)
            if mpm != self.cfg.mpm:
                # Under another MPM the point is judged without the admin's tree:
                # the tuned tree is the start's findings (the admin's files, read
                # with the start's MPM) and those on the include's own lines.
                found = {f for f in found if self._on_candidate(f[:4])} | self._tree_as_is()
        out = []
        for code, file, line, message, severity in sorted(found, key=lambda k: (k[1], k[2], k[0])):
            directive = self.directive_of(point, (code, file, line, message)) if point is not None else None
            if Path(file).name == CANDIDATE and 1 <= line <= len(lines):
                where = f"tuned include: {lines[line - 1]}"
            elif Path(file).name == WRAPPER:
                # A finding of the tree as a whole (httpd's defaults, a module
                # not loaded): the temporary wrapper's line names nothing.
                where = "the whole tree"
            else:
                where = f"{file}:{line}"
            out.append({"code": code, "severity": severity, "message": message, "where": where,
                        "directive": directive, "suppressed": False})
        return out

    def directive_of(self, point: Mapping[str, "Value"], key: Key) -> str | None:
        """The directive name of the candidate line a finding stands on (or,
        for a finding on the admin's files that a candidate line causes, as
        E406's dead line, of that line), or None."""
        file, line = key[1], key[2]
        if Path(file).name != CANDIDATE:
            related = self._related.get(tuple(key[:4]))
            if related is None or Path(related[0]).name != CANDIDATE:
                return None
            line = related[1]
        lines = self.include_lines(point)
        if not 1 <= line <= len(lines):
            return None
        words = lines[line - 1].split()
        return words[0] if words and not words[0].startswith("<") else None

    def advice(self, point: Mapping[str, "Value"], name: str) -> list[tuple[str, str | None]]:
        """(code, the line the rule advises instead, or None when its fix is
        not one rewrite of that line) of each finding at or above --fail-on
        that the point's line for `name` brings."""
        out = []
        for key in self.brought(point):
            directive = self.directive_of(point, key)
            if directive is not None and directive.lower() == name.lower() and Path(key[1]).name == CANDIDATE:
                out.append((key[0], self._advised.get(tuple(key[:4]))))
        return out

    def _new(self, lines: list[str], mpm: str, severities: tuple[str, ...], admins: bool = False) -> list[Key]:
        """Findings the lines bring. `admins`: with the admin's rule
        selection and severities; otherwise every rule at its own severity
        (the errors that keep a point from being tried)."""
        base_key = f"{mpm}:{','.join(severities)}:{admins}"
        if base_key not in self._base:
            self._base[base_key] = self._errors([], mpm, severities, admins)
        found = self._errors(lines, mpm, severities, admins)
        return sorted(found - self._base[base_key], key=lambda k: (k[1], k[2], k[0]))

    def _errors(self, lines: list[str], mpm: str, severities: tuple[str, ...] = ("error",),
                admins: bool = False, detail: bool = False) -> set:
        from advisor.lint.context import HostFacts
        from advisor.lint.engine import lint_config

        from advisor.config import LoadOptions, load_config

        options = self._options(LoadOptions)
        # A tree read under a root (a remote host's copy) sees only files
        # under that root: the candidate is written there and named by its
        # path on the host.
        root = options.root.rstrip("/") if options.root else None
        with tempfile.TemporaryDirectory(prefix="advisor-candidate-", dir=root) as tmp:
            Path(tmp, CANDIDATE).write_text("".join(line + "\n" for line in lines))
            host_dir = tmp[len(root):] if root else tmp
            candidate = Path(host_dir, CANDIDATE)
            Path(tmp, WRAPPER).write_text(self._wrapper(mpm, candidate))
            try:
                config = load_config(str(Path(host_dir, WRAPPER)), options)
            except AdvisorError as exc:
                key = ("read", str(exc.file or candidate), int(exc.line or 0), exc.message)
                return {key + ("error",)} if detail else {key}
            from advisor.rules import all_rules

            chosen = self.rules if admins else all_rules()
            rules = [rule for rule in chosen if rule.code not in _NOT_OF_THE_CANDIDATE]
            facts = self.facts or HostFacts(config.apache_version, config.mpm)
            if self.facts is not None and facts.mpm != config.mpm:
                facts = replace(facts, mpm=config.mpm)
            result = lint_config(config, facts, rules, known_codes=_known_codes(),
                                 settings=self.settings if admins else None)
        found = set()
        for f in result.findings:
            if f.severity not in severities and f.related is None:
                continue
            # Each check writes its candidate and wrapper in a new temporary
            # directory: named by file name, the same finding of two checks
            # (ServerTokens Full at the wrapper's line 1) is one key.
            file = Path(f.file).name if Path(f.file).name in (CANDIDATE, WRAPPER) else f.file
            if f.related is not None:
                self._related[(f.code, file, f.line, f.message)] = f.related
            advised = edited_line(f.edit, f.line) if file == CANDIDATE else None
            if advised is not None:
                self._advised[(f.code, file, f.line, f.message)] = advised
            if f.severity in severities:
                found.add((f.code, file, f.line, f.message, f.severity) if detail else
                          (f.code, file, f.line, f.message))
        return found

    def _wrapper(self, mpm: str, candidate: Path) -> str:
        if mpm == self.cfg.mpm:
            return f'Include "{self.cfg.main_file}"\nInclude "{candidate}"\n'
        # Another MPM: the admin's LoadModule line cannot be taken back by a
        # later one (httpd refuses two MPMs), so the candidate is judged on
        # its own with the MPM it asks for. Its pool directives are what an
        # MPM switch puts at stake. The switch leaves the tree's other
        # modules loaded: without them a candidate's mod_http2 lines
        # (H2MaxWorkers) read as E401 errors, and every worker and event
        # point of an HTTP/2 mix was refused unseen (issue 57).
        loads = "".join(f'LoadModule {name} "{path}"\n' for name, path in self._other_modules())
        return (f"LoadModule mpm_{mpm}_module /usr/lib/apache2/modules/mod_mpm_{mpm}.so\n{loads}"
                f'Include "{candidate}"\n')

    def _other_modules(self) -> list[tuple[str, str]]:
        """(module, file) of each module the admin's tree loads besides its MPM."""
        from advisor.config.modules import MPM_NAMES

        return [(node.args[0], node.args[1]) for node in self.cfg.raw.directives("LoadModule")
                if getattr(node, "active", True) and len(node.args) == 2 and node.args[0] not in MPM_NAMES]

    def _options(self, LoadOptions):
        if self._frozen is not None:
            return self._frozen.options
        version = ".".join(str(part) for part in self.cfg.apache_version[:2])
        if self.options is not None:
            return replace(self.options, server_root=self.cfg.server_root)
        envvars = os.path.join(os.path.dirname(self.cfg.main_file), "envvars")
        return LoadOptions(server_root=self.cfg.server_root, apache_version=version,
                           envvars=envvars if os.path.isfile(envvars) else None)
