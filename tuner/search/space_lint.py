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
CANDIDATE = "candidate.conf"
WRAPPER = "advisor-candidate-main.conf"


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


class CandidateLint:
    """Judge candidates of one space against one config."""

    def __init__(self, cfg: "Config", space: "Space", options: "LoadOptions | None" = None,
                 facts=None) -> None:
        self.cfg = cfg
        self.space = space
        self.options = options
        self.facts = facts
        self._base: dict[str, set[Key]] = {}

    def check(self, point: Mapping[str, "Value"], *, reload_safe: bool = False) -> LintVerdict:
        lines = self.space.directives(point, reload_safe=reload_safe)
        new = self._new(lines, self.space.mpm_of(point), ("error",))
        return LintVerdict([_render(key) for key in new], lines)

    def warnings(self, point: Mapping[str, "Value"]) -> list[str]:
        """Codes of the warnings and errors the candidate brings (sorted, one per code)."""
        new = self._new(self.space.directives(point), self.space.mpm_of(point), ("error", "warning"))
        return sorted({key[0] for key in new})

    def _new(self, lines: list[str], mpm: str, severities: tuple[str, ...]) -> list[Key]:
        base_key = mpm if severities == ("error",) else f"{mpm}:{','.join(severities)}"
        if base_key not in self._base:
            self._base[base_key] = self._errors([], mpm, severities)
        found = self._errors(lines, mpm, severities)
        return sorted(found - self._base[base_key], key=lambda k: (k[1], k[2], k[0]))

    def _errors(self, lines: list[str], mpm: str, severities: tuple[str, ...] = ("error",)) -> set[Key]:
        from advisor.lint.context import HostFacts
        from advisor.lint.engine import lint_config
        from advisor.rules import all_rules

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
                return {("read", str(exc.file or candidate), int(exc.line or 0), exc.message)}
            rules = all_rules()
            facts = self.facts or HostFacts(config.apache_version, config.mpm)
            if self.facts is not None and facts.mpm != config.mpm:
                facts = replace(facts, mpm=config.mpm)
            result = lint_config(config, facts, rules, known_codes={r.code for r in rules})
        return {(f.code, f.file, f.line, f.message) for f in result.findings if f.severity in severities}

    def _wrapper(self, mpm: str, candidate: Path) -> str:
        if mpm == self.cfg.mpm:
            return f'Include "{self.cfg.main_file}"\nInclude "{candidate}"\n'
        # Another MPM: the admin's LoadModule line cannot be taken back by a
        # later one (httpd refuses two MPMs), so the candidate is judged on
        # its own with the MPM it asks for. Its pool directives are what an
        # MPM switch puts at stake.
        return (f"LoadModule mpm_{mpm}_module /usr/lib/apache2/modules/mod_mpm_{mpm}.so\n"
                f'Include "{candidate}"\n')

    def _options(self, LoadOptions):
        version = ".".join(str(part) for part in self.cfg.apache_version[:2])
        if self.options is not None:
            return replace(self.options, server_root=self.cfg.server_root)
        envvars = os.path.join(os.path.dirname(self.cfg.main_file), "envvars")
        return LoadOptions(server_root=self.cfg.server_root, apache_version=version,
                           envvars=envvars if os.path.isfile(envvars) else None)
