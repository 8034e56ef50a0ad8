"""Run the rules over a loaded config and settle what gets reported.

Order of work: index the trees once, run each enabled rule, apply severity
overrides, drop findings silenced by suppression comments or per-path
ignores, then run the post rules that report on the suppressions themselves.
"""

from __future__ import annotations

import heapq
import os
from itertools import compress, count, islice
from operator import attrgetter, eq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from advisor.lint import MARKER
from advisor.lint.context import HostFacts, LintContext
from advisor.lint.rule import Finding, Location, Rule
from advisor.lint.settings import FileSettings, path_ignored
from advisor.config.model import Config, Node, Section

if TYPE_CHECKING:
    # The parser itself is imported only for a tree that has suppression
    # comments (see collect_suppressions).
    from advisor.lint.suppress import FileSuppressions, Suppression, SuppressionProblem


_MARKER_BYTES = MARKER.encode()


@dataclass
class SuppressionState:
    """What the post rules (A001, A002) read."""

    suppressions: list[Suppression] = field(default_factory=list)
    problems: list[SuppressionProblem] = field(default_factory=list)
    enabled_codes: set[str] = field(default_factory=set)


@dataclass
class LintResult:
    findings: list[Finding]
    notes: list[str]
    """Things the reader should know: rules skipped for lack of a host fact,
    where host facts came from."""
    files: list[str]
    edits_left_out: set[str] = field(default_factory=set)
    """The rules that would have given a finding an edit had the run wanted
    edits (`lint_config(edits=False)`)."""
    context: LintContext | None = None
    """With `lint_config(keep_context=True)`, the run's context (its indexes
    and shared computations): a second run of some rules on the same tree
    can start from it."""


def _read_if_marked(path: str) -> str | None:
    """The file's text when it mentions the suppression marker, else None.
    Plain os calls: a 2,000-file tree is read once more here, so the
    per-file overhead counts."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while True:
            chunk = os.read(descriptor, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    data = b"".join(chunks)
    if _MARKER_BYTES not in data:
        return None
    return data.decode("utf-8", errors="surrogateescape")


def collect_suppressions(config: Config, ctx: LintContext, known_codes: set[str]) -> SuppressionState:
    state = SuppressionState()
    texts: dict[str, str] = {}
    for path in dict.fromkeys(config.files):
        source = config.sources.get(path)
        text = _read_if_marked(path) if source is None else (source if MARKER in source else None)
        if text is not None:
            texts[path] = text
    if not texts:
        return state
    from advisor.lint.suppress import parse_file

    ends: dict[str, dict[int, int]] = {path: {} for path in texts}
    for node in ctx.raw.all_nodes:
        per_file = ends.get(node.file)
        if per_file is None:
            continue
        last = node.end_line
        if isinstance(node, Section) and node.close_line:
            last = node.close_line
        if last > per_file.get(node.line, 0):
            per_file[node.line] = last
    for path, text in texts.items():
        parsed: FileSuppressions = parse_file(path, text, known_codes, ends[path])
        state.suppressions.extend(parsed.suppressions)
        state.problems.extend(parsed.problems)
    return state


def _silenced(findings: list[Finding], suppressions: list[Suppression]) -> set[int]:
    """Positions of the findings that a suppression covers; every covering
    suppression records the code as used (A001 reads that).

    One sweep per file over the findings in line order: a suppression opens
    at its first line and closes after its last, so each finding is compared
    only with the suppressions whose range holds its line (as many as the
    sections nest), not with every comment in its file. A file with a comment
    per virtual host would otherwise cost findings x comments."""
    whole_file: dict[str, dict[str, list[Suppression]]] = {}
    ranged: dict[str, list[Suppression]] = {}
    for entry in suppressions:
        if entry.whole_file:
            by_code = whole_file.setdefault(entry.file, {})
            for code in entry.codes:
                by_code.setdefault(code, []).append(entry)
        else:
            ranged.setdefault(entry.file, []).append(entry)
    by_file: dict[str, list[int]] = {}
    for position, finding in enumerate(findings):
        if finding.file in whole_file or finding.file in ranged:
            by_file.setdefault(finding.file, []).append(position)
    silenced: set[int] = set()
    for file, positions in by_file.items():
        by_code = whole_file.get(file, {})
        pending = sorted(ranged.get(file, ()), key=lambda entry: entry.start)
        positions.sort(key=lambda position: findings[position].line)
        next_pending = 0
        open_entries: list[tuple[int, int, Suppression]] = []  # a heap by last line
        for position in positions:
            finding = findings[position]
            code, line = finding.code, finding.line
            while next_pending < len(pending) and pending[next_pending].start <= line:
                entry = pending[next_pending]
                heapq.heappush(open_entries, (entry.end, next_pending, entry))
                next_pending += 1
            while open_entries and open_entries[0][0] < line:
                heapq.heappop(open_entries)
            covering = [entry for _, _, entry in open_entries if code in entry.codes or "ALL" in entry.codes]
            covering += by_code.get(code, ())
            if code != "ALL":
                covering += by_code.get("ALL", ())
            for entry in covering:
                entry.used.add(code)
            if covering:
                silenced.add(position)
    silenced |= _silenced_where_related(findings, silenced, whole_file, ranged)
    return silenced


def _silenced_where_related(findings: list[Finding], silenced: set[int],
                            whole_file: dict[str, dict[str, list[Suppression]]],
                            ranged: dict[str, list[Suppression]]) -> set[int]:
    """Findings whose related line (the line that causes them) a suppression
    covers. Few findings have one (E406's), so a plain scan does."""
    out: set[int] = set()
    for position, finding in enumerate(findings):
        if finding.related is None or position in silenced:
            continue
        file, line = finding.related
        code = finding.code
        covering = [entry for entry in ranged.get(file, ())
                    if entry.start <= line <= entry.end and (code in entry.codes or "ALL" in entry.codes)]
        by_code = whole_file.get(file, {})
        covering += by_code.get(code, ())
        for entry in covering:
            entry.used.add(code)
        if covering:
            out.add(position)
    return out


def _sort_findings(found: list[Finding]) -> None:
    """Order by (file, line, code), as `Finding.sort_key`. Three stable sorts
    on one attribute each, last key first: they compare plain strings and
    ints in C, where one sort on a tuple key builds and compares a tuple per
    finding (at 120,000 findings, 11 ms against 33 ms)."""
    found.sort(key=_CODE)
    found.sort(key=_LINE)
    found.sort(key=_FILE)


def _drop_repeats(found: list[Finding]) -> None:
    """A rule may report one thing twice (an Alias to the document root, a
    line reached twice): keep the first of each (file, line, code, message).
    `found` is sorted (`_sort_findings`, stable, so each rule's reports keep
    their order): a repeat sits next to a finding on the same line, so the
    lines are compared in C and only neighbours on one line are looked at."""
    lines = list(map(_LINE, found))
    for position in compress(count(1), map(eq, lines, islice(lines, 1, None))):
        before, after = found[position - 1], found[position]
        if before.code == after.code and before.file == after.file:
            break
    else:
        return  # no rule reported twice on one line (the usual run)
    seen: set[tuple[str, int, str, str]] = set()
    kept: list[Finding] = []
    for finding in found:
        key = (finding.file, finding.line, finding.code, finding.message)
        if key not in seen:
            seen.add(key)
            kept.append(finding)
    found[:] = kept


def _context(config: Config, facts: HostFacts, edits: bool, earlier: LintContext | None) -> LintContext:
    """The run's context: a new one, or an earlier run's on the same tree
    (its indexes kept) with this run's wish for edits and no notes yet."""
    if earlier is None:
        return LintContext(config, facts, wants_edits=edits)
    earlier.wants_edits = edits
    earlier.notes = []
    return earlier


def _reporter(rule: Rule, settings: FileSettings, into: list[Finding]):
    """The `report` a rule calls for each finding, appending to `into`."""
    # Looked up once per rule, not per finding: a rule may report once for
    # each of 20,000 hosts.
    code = rule.code
    configured = settings.severity.get(code)
    default_level = rule.severity
    default_evidence = rule.doc.evidence
    append = into.append

    def report(at: Location, message: str, *, fix: str | None = None,
               severity: str | None = None, evidence: str | None = None,
               edit=None, related: tuple[str, int] | None = None) -> None:
        if isinstance(at, tuple):
            file, line = at
        else:
            file, line = at.file, at.line
        append(Finding(code, configured or severity or default_level, message, file, line,
                       evidence or default_evidence, fix, edit, related))
    return report


def lint_config(
    config: Config,
    facts: HostFacts,
    rules: Iterable[Rule],
    *,
    known_codes: set[str],
    settings: FileSettings | None = None,
    edits: bool = True,
    context: LintContext | None = None,
    keep_context: bool = False,
) -> LintResult:
    """Run the rules on one tree. `edits=False` leaves out each finding's
    mechanical edit (its `fix` text stays): a report that never shows the
    edits need not locate them (two per host on a tree of hosts with fixes).
    `context`, an earlier run's on this tree and facts (kept with
    `keep_context`), saves building the indexes again."""
    settings = settings or FileSettings()
    ctx = _context(config, facts, edits, context)
    enabled = list(rules)
    notes: list[str] = []
    findings: list[Finding] = []
    # Where `report` puts findings: the main list, then the post rules' own.
    sink: list[list[Finding]] = [findings]

    def run(rule: Rule) -> None:
        rule.check(ctx, _reporter(rule, settings, sink[0]))
        if ctx.edits_declined:
            edits_left_out.add(rule.code)
            ctx.edits_declined = 0

    edits_left_out: set[str] = set()

    skipped: dict[str, list[str]] = {}
    for rule in enabled:
        if rule.post:
            continue
        missing = [need for need in rule.needs if getattr(facts, need) is None]
        if missing:
            for need in missing:
                skipped.setdefault(need, []).append(rule.code)
            continue
        run(rule)
    for need, codes in skipped.items():
        notes.append(f"{', '.join(codes)} skipped: {_HINTS.get(need, need)}")
    notes.extend(dict.fromkeys(ctx.notes))

    state = collect_suppressions(config, ctx, known_codes)
    state.enabled_codes = {rule.code for rule in enabled}
    silenced = _silenced(findings, state.suppressions) if state.suppressions else None
    if silenced is None and not settings.per_path_ignores:
        kept = findings  # nothing silenced, nothing ignored by path (the usual run)
    else:
        kept = []
        for position, finding in enumerate(findings):
            if (silenced is not None and position in silenced) or path_ignored(finding.file, finding.code,
                                                                                 settings):
                continue
            kept.append(finding)

    ctx.suppression_state = state
    post_findings: list[Finding] = []
    sink[0] = post_findings
    for rule in enabled:
        if rule.post:
            run(rule)
    kept.extend(f for f in post_findings if not path_ignored(f.file, f.code, settings))
    _sort_findings(kept)
    _drop_repeats(kept)
    return LintResult(kept, notes, list(config.files), edits_left_out, ctx if keep_context else None)


_CODE, _LINE, _FILE = attrgetter("code"), attrgetter("line"), attrgetter("file")

_HINTS = {
    "ram": "RAM unknown (pass --ram, set [host] ram, or lint this host's own config under /etc)",
    "worker_memory": "per-worker memory unknown (pass --worker-memory)",
    "expected_clients": "expected clients unknown (pass --expected-clients, or --log ACCESS_LOG with %D)",
}
