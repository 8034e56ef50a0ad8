"""lint's cost grows with the tree, not with its square.

The scaling test lints generated trees of 500 and 2,000 virtual hosts with
findings, suppression comments and status pages in every host (the shapes
that once made suppressions, S504 and S506 compare every host with every
other) and holds the engine and the formatters to less than 6 times the CPU
time for 4 times the tree (before the fix: 10-12 times). CPU time of this
process, the best of five taken in turns, so a busy host does not fail it.

The other tests hold each index that replaced a scan to the scan's answers.
"""

from __future__ import annotations

import gc
import io
import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from unittest import mock

import pytest
from hypothesis import example, given, settings, strategies as st

from advisor.config.load_options import LoadOptions
from advisor.config.loader import load_config
from advisor.lint.context import HostFacts, LintContext
from advisor.lint.edits import Edit
from advisor.lint.engine import _silenced, lint_config
from advisor.lint.rule import Finding
from advisor.lint.suppress import Suppression
from advisor.output import github, jsonfmt, sarif, text
from advisor.rules import all_rules, rule_by_code
from advisor.rules._served import ServedAnywhere, Site, is_served, normalize_dir, sites
from advisor.rules.s506_status_handler_open import _Locations
from lint_helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
from vhost_tree import generate  # noqa: E402

sys.path.pop(0)


class _Linted:
    """One loaded tree, linted and rendered on demand."""

    def __init__(self, main: Path) -> None:
        self.config = load_config(str(main), LoadOptions())
        self.config.effective  # the reader's part, not timed here
        self.rules = all_rules()
        self.codes = {rule.code for rule in self.rules}
        self.by_code = rule_by_code()
        self.findings = 0

    def cpu(self) -> float:
        """CPU seconds of the engine plus every formatter, once."""
        config = self.config
        start = time.process_time()
        result = lint_config(config, HostFacts(config.apache_version, config.mpm), self.rules,
                             known_codes=self.codes)
        jsonfmt.render(result.findings)
        sarif.render(result.findings, self.rules, result.notes)
        github.render(result.findings, self.by_code)
        text.render(result.findings, io.StringIO(), notes=result.notes, colour=False)
        text.render(result.findings, io.StringIO(), notes=result.notes, colour=False, group=False)
        self.findings = len(result.findings)
        return time.process_time() - start

    def parts(self) -> dict[str, float]:
        """CPU seconds of reading the tree, of the engine, and of all the
        formatters together (text both grouped and not), each once.

        Each part runs with the garbage collector paused after a full
        collection: the test holds both trees, so a collection that happens
        to fall inside one part walks the other tree's objects too, and
        decided whether a part of 10 to 80 ms measured 1.1x or 1.6x."""
        config_path = self.config.main_file
        with _no_collection():
            start = time.process_time()
            load_config(config_path, LoadOptions()).effective
            reading = time.process_time() - start
        config = self.config
        with _no_collection():
            start = time.process_time()
            result = lint_config(config, HostFacts(config.apache_version, config.mpm), self.rules,
                                 known_codes=self.codes)
            engine = time.process_time() - start
        with _no_collection():
            start = time.process_time()
            jsonfmt.render(result.findings)
            sarif.render(result.findings, self.rules, result.notes)
            github.render(result.findings, self.by_code)
            text.render(result.findings, io.StringIO(), notes=result.notes, colour=False)
            text.render(result.findings, io.StringIO(), notes=result.notes, colour=False, group=False)
            formatters = time.process_time() - start
        self.findings = len(result.findings)
        return {"reading": reading, "engine": engine, "formatters": formatters}


@contextmanager
def _no_collection() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@contextmanager
def _frozen() -> Iterator[None]:
    """The trees built so far moved out of the collector's sight: a test holds
    two loaded trees, and every collection (the full ones before each part,
    and any that falls inside a timed lint) would otherwise walk their
    objects again: 0.4 s of each 0.9-s `parts()` of the large tree here."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("inline, shape", [(False, "noisy"), (True, "noisy"), (False, "logged"), (False, "tls")],
                         ids=["file-per-host", "one-file", "findings-on-every-host", "tls-and-proxy-hosts"])
def test_lint_cost_is_linear_in_the_number_of_hosts(tmp_path, inline, shape):
    """`tls`: each site a plain-HTTP host redirecting to a TLS host, a third
    of them proxying and a third handing PHP to php-fpm: the per-host work
    of the TLS and proxy rules (S521-S523, E411-E416, P115, P118, S530-S532),
    each of which must look a host's settings up, not scan the tree for it."""
    small = _Linted(generate(tmp_path / "small", 500, inline=inline, shape=shape))
    large = _Linted(generate(tmp_path / "large", 2000, inline=inline, shape=shape))
    # Alternately, best of five each: a spell of contention from other
    # programs (which slows even CPU time, through shared caches) then hits
    # both sizes or neither.
    small_cpu = large_cpu = float("inf")
    with _frozen():
        for _ in range(5):
            small_cpu = min(small_cpu, small.cpu())
            large_cpu = min(large_cpu, large.cpu())
    # At least two findings per host (S504, S506; each host's P109 is
    # suppressed), or per TLS site (S512: neither of its hosts logs).
    assert small.findings >= 2 * 500 and large.findings >= 2 * 2000
    assert large_cpu < 6 * small_cpu, \
        f"4x the hosts cost {large_cpu / small_cpu:.1f}x the CPU time ({small_cpu:.3f} s -> {large_cpu:.3f} s)"


def _best_parts(linted: _Linted, rounds: int) -> dict[str, float]:
    best: dict[str, float] = {}
    for _ in range(rounds):
        for name, seconds in linted.parts().items():
            best[name] = min(best.get(name, float("inf")), seconds)
    return best


@pytest.mark.parametrize("shape", ["logged", "plain"])
def test_each_extra_host_costs_the_lint_less_than_reading_it(tmp_path, shape):
    """Measured against reading the same tree, so a fast machine cannot hide
    a slow rule or formatter: what 1,500 more hosts (three or four findings
    each) add to the engine and to the four formatters, against what they
    add to reading. Before issue 29 the formatters' share was over 4 times
    the reading's (relpath and rich's text per finding, the JSON and SARIF
    writers walking every result key by key). Now it measures 0.9 to 1.7 on
    a calm host, and up to 2.6 with five other workers on the two cores
    (contention slows the string-building formatters more than reading):
    the limit of 3 passes that and still fails the old code by a third."""
    small = _Linted(generate(tmp_path / "small", 500, shape=shape))
    large = _Linted(generate(tmp_path / "large", 2000, shape=shape))
    small_parts: dict[str, float] = {}
    large_parts: dict[str, float] = {}
    with _frozen():
        for _ in range(4):  # alternately: contention hits both sizes or neither
            for linted, best in ((small, small_parts), (large, large_parts)):
                for name, seconds in _best_parts(linted, 2).items():
                    best[name] = min(best.get(name, float("inf")), seconds)
    assert large.findings >= 3 * 2000
    extra = {name: large_parts[name] - small_parts[name] for name in large_parts}
    assert extra["reading"] > 0
    shares = {name: extra[name] / extra["reading"] for name in ("engine", "formatters")}
    assert shares["engine"] < 1.5 and shares["formatters"] < 3.0, \
        f"per extra host, against reading it: {', '.join(f'{k} {v:.2f}x' for k, v in shares.items())}"


# ---- the display path: a slice where relpath would say the same ----

_SEGMENT = st.sampled_from(["a", "b", ".", "..", "", "c.conf", "ü"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_SEGMENT, min_size=1, max_size=6), st.sampled_from(["/", "/a", "/a/b", "/a/"]))
def test_display_path_fast_form_matches_relpath(tmp_path_factory, segments, cwd):
    import os

    from advisor.commands.lint_paths import plain_path

    path = "/" + "/".join(segments)
    below = cwd.rstrip("/") + "/"
    if path.startswith(below) and plain_path(path):
        absolute = os.path.abspath(path)
        assert os.path.relpath(absolute, cwd) == path[len(below):]


# ---- grouping: the cheap keys group exactly as `shape` does ----

_MESSAGE = st.text(st.sampled_from("ab1 29#/\xff"), max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["S509", "P106"]), _MESSAGE, st.none() | _MESSAGE,
                          st.sampled_from(["a.conf", "b.conf"]), st.integers(1, 9)), max_size=14))
# One shape from texts that first group apart (by text, then by digits marked
# one by one): their positions interleave and must come back in order.
@example([("S509", message, None, "a.conf", 1) for message in ("a1", "a22", "a1", "a3", "a22")])
def test_text_groups_are_the_findings_of_one_shape(items):
    findings = [Finding(code, "info", message, file, line, "e", fix) for code, message, fix, file, line in items]
    heads, printed = text._groups(findings)
    by_shape: dict = {}
    for position, finding in enumerate(findings):
        by_shape.setdefault(text.shape(finding), []).append(position)
    expected_heads = {positions[0]: positions[1:] for positions in by_shape.values()
                      if len(positions) >= text.GROUP_MIN}
    assert heads == expected_heads  # each head -> the positions of the others, in order
    folded = {p for rest in expected_heads.values() for p in rest}
    assert printed == [p for p in range(len(findings)) if p not in folded]


def test_grouped_text_names_the_count_and_first_places():
    findings = [Finding("S509", "info", f"/srv/site{n} accepts every method", f"sites/site{n}.conf", 4, "e")
                for n in range(1, 8)]
    findings.append(Finding("P106", "info", "other", "sites/site1.conf", 9, "e"))
    findings.sort(key=Finding.sort_key)
    grouped, every = io.StringIO(), io.StringIO()
    text.render(findings, grouped, colour=False)
    text.render(findings, every, colour=False, group=False)
    out = grouped.getvalue()
    assert out.count("accepts every method") == 1
    assert "same in 6 more places: sites/site2.conf:4, sites/site3.conf:4, sites/site4.conf:4 and 3 more" in out
    assert "Found 8 problems (8 info) in 7 files" in out  # every finding counted
    assert every.getvalue().count("accepts every method") == 7 and "same in" not in every.getvalue()


# ---- suppressions: the sweep answers as comparing each finding with each comment ----

_CODES = ("P101", "P102", "S504")


@st.composite
def _suppressions_and_findings(draw):
    files = ("a.conf", "b.conf")
    entries = []
    for number in range(draw(st.integers(0, 12))):
        whole = draw(st.booleans())
        start = draw(st.integers(0, 30))
        end = start + draw(st.integers(0, 10))
        codes = tuple(draw(st.lists(st.sampled_from(_CODES + ("ALL",)), min_size=1, max_size=2)))
        entries.append(Suppression(draw(st.sampled_from(files)), number, codes, None, whole_file=whole,
                                   start=0 if whole else start, end=0 if whole else end))
    findings = [Finding(draw(st.sampled_from(_CODES)), "warning", "m", draw(st.sampled_from(files)),
                        draw(st.integers(0, 40)), "e")
                for _ in range(draw(st.integers(0, 25)))]
    return entries, findings


@settings(max_examples=300, deadline=None)
@given(_suppressions_and_findings())
def test_suppression_sweep_matches_the_plain_comparison(case):
    entries, findings = case
    expected_used = [set() for _ in entries]
    expected = set()
    for position, finding in enumerate(findings):
        for index, entry in enumerate(entries):
            if entry.file == finding.file and entry.covers(finding.code, finding.line):
                expected_used[index].add(finding.code)
                expected.add(position)
    assert _silenced(findings, entries) == expected
    assert [entry.used for entry in entries] == expected_used


# ---- S504: one lookup per path component instead of a scan of every site ----

_PARTS = st.lists(st.sampled_from(["srv", "www", "a", "b", "site1", "site10"]), max_size=4)


def _path(parts: list[str]) -> str:
    return normalize_dir("/" + "/".join(parts))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), _PARTS), st.lists(_PARTS, max_size=2)), max_size=6), _PARTS)
def test_served_anywhere_answers_as_asking_each_site(sites, directory):
    made = [Site(None, None if root is None else _path(root), None,
                 [(_path(alias), None) for alias in aliases]) for root, aliases in sites]
    path = _path(directory)
    assert ServedAnywhere(made).covers(path) == any(is_served(site, path) for site in made)


# ---- served sites: the sections that apply to a path, in merge order ----

_DIR = st.sampled_from(["/", "/srv", "/srv/", "/srv/www", "/srv//www/", "/srv/www/a", "/srv/*/a",
                        "/srv/w?w", "/srv/www/a/b", "/other", "/srv/[w]ww"])
_TARGET = st.sampled_from(["/", "/srv/", "/srv/www/", "/srv/www/a/", "/srv/www/a/b/", "/srv/wxw/",
                           "/srv/x/a/", "/other/", "/elsewhere/"])


def _merge_order_by_scan(ctx: LintContext, site: Site, target: str) -> list:
    """Every non-regex <Directory> of the main server and of the site's own
    host that covers `target`, sorted as httpd merges them: by depth, the
    main server's before the host's, then file order. A scan of them all."""
    import fnmatch

    found = []
    for position, section in enumerate(ctx.sections("Directory")):
        owner = section.parent
        if not section.args or section.args[0] == "~":
            continue
        if not (owner.is_root or owner is site.section):
            continue
        path = normalize_dir(section.args[0])
        depth = path.count("/")
        if any(mark in path for mark in "*?["):
            parts = target.split("/")
            covers = fnmatch.fnmatchcase("/".join(parts[:depth]) + "/", path)
        else:
            covers = target.startswith(path)
        if covers:
            found.append(((depth, not owner.is_root, position), section))
    return [section for _, section in sorted(found, key=lambda pair: pair[0])]


@settings(max_examples=150, deadline=None)
@given(main_dirs=st.lists(_DIR, max_size=5),
       hosts=st.lists(st.lists(_DIR, max_size=5), min_size=1, max_size=3),
       targets=st.lists(_TARGET, min_size=1, max_size=4))
def test_applicable_sections_are_the_scans(tmp_path_factory, main_dirs, hosts, targets):
    """`Site.applicable` (the main server's part remembered per path, a
    host's own few scanned) gives what a scan of every section gives, in
    httpd's merge order, asked twice and in any order of paths."""
    lines = ["LoadModule mpm_event_module modules/mod_mpm_event.so", "DocumentRoot /srv/www"]
    lines += [f"<Directory {path}>\n    Require all granted\n</Directory>" for path in main_dirs]
    for number, own in enumerate(hosts):
        lines.append(f"<VirtualHost *:{8000 + number}>")
        lines += [f"    <Directory {path}>\n    </Directory>" for path in own]
        lines.append("</VirtualHost>")
    main = tmp_path_factory.mktemp("served") / "httpd.conf"
    main.write_text("\n".join(lines) + "\n")
    config = load_config(str(main), LoadOptions(effective=True))
    ctx = LintContext(config, HostFacts(config.apache_version, config.mpm))
    for _ in range(2):
        for site in sites(ctx):
            for target in targets:
                got = [dir_section.section for dir_section in site.applicable(target)]
                assert got == _merge_order_by_scan(ctx, site, target), (site.label, target)


# ---- S506: <Location> sections by prefix instead of a scan of all of them ----

_LOCATION = st.sampled_from(["/", "/server-status", "/server-status/", "/server", "/status",
                             "/a", "/a/b", "/a//", "~ ^/x", "/server-status/x"])


def _scanned(ctx: LintContext, section):
    """What S506 asked before: every <Location> of the tree, one by one."""
    if section.lname != "location" or not section.args:
        return []
    path = section.args[0]
    found = []
    for other in ctx.sections("Location"):
        if other is section or other.parent is not section.parent or not other.args:
            continue
        if path.startswith(other.args[0].rstrip("/") + "/") or other.args[0] == "/":
            found.append(other)
    return found


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), _LOCATION), min_size=1, max_size=8))
def test_location_index_finds_what_the_scan_found(tmp_path_factory, placed):
    lines = []
    for in_vhost, path in placed:
        block = f"<Location {path}>\n    SetHandler server-status\n</Location>\n"
        lines.append(f"<VirtualHost *:80>\n{block}</VirtualHost>\n" if in_vhost else block)
    lines.append("<VirtualHost *:81>\n" + "".join(
        f"<Location {path}>\n</Location>\n" for _, path in placed) + "</VirtualHost>\n")
    main = tmp_path_factory.mktemp("s506") / "httpd.conf"
    main.write_text("".join(lines))
    config = load_config(str(main), LoadOptions())
    ctx = LintContext(config, HostFacts(config.apache_version, config.mpm))
    locations = _Locations(ctx)
    for section in ctx.sections("Location"):
        assert locations.covering(section) == _scanned(ctx, section)


# ---- the formatters' JSON writer ----

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(st.characters(blacklist_categories=())),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_fast_json_writer_writes_what_json_dumps_writes(value):
    assert jsonfmt.dumps_indented(value) == json.dumps(value, indent=2, ensure_ascii=False)


def test_fast_json_writer_hands_other_types_to_json():
    value = {"ratio": 0.5, "items": (1, 2), "big": float("inf")}
    assert jsonfmt.dumps_indented(value) == json.dumps(value, indent=2, ensure_ascii=False)


# ---- the JSON report's per-finding template ----

# The reports are written a piece (PIECE findings) at a time: the examples
# hold up to five findings, so pieces of one and two findings put a piece
# boundary at every place, and the real size writes them in one piece.
_PIECE_SIZES = (1, 2, 1024)

_FIELD = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["P101", "S509"]), st.sampled_from(["error", "warning", "info"]),
                          _FIELD, _FIELD, st.integers(0, 10**7), _FIELD, st.none() | _FIELD), max_size=5))
def test_json_report_template_writes_what_json_dumps_writes(items):
    findings = [Finding(*item) for item in items]
    expected = json.dumps([jsonfmt.finding_object(f) for f in findings], indent=2, ensure_ascii=False) + "\n"
    for size in _PIECE_SIZES:
        with mock.patch.object(jsonfmt, "PIECE", size):
            assert jsonfmt.render(findings) == expected


# ---- the SARIF log's per-result template ----

@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["P101", "S509", "X999"]), st.sampled_from(["error", "warning", "info"]),
                          _FIELD, st.sampled_from(["a.conf", "/abs/b c.conf", "sub/ü.conf"]),
                          st.integers(-1, 10**6), _FIELD, st.none() | _FIELD), max_size=5),
       st.lists(_FIELD, max_size=2))
def test_sarif_result_template_writes_what_json_dumps_writes(items, notes):
    findings = [Finding(*item) for item in items]
    # The results are what this test varies; every rule's metadata (230 KB
    # of SARIF, 80 ms an example) is written whole by the test below.
    # Three rules still give the results rule indexes past the first.
    by_code = rule_by_code()
    rules = [by_code[code] for code in ("E401", "P101", "S509")]
    expected = json.dumps(sarif.build(findings, rules, notes), indent=2, ensure_ascii=False) + "\n"
    for size in _PIECE_SIZES:
        with mock.patch.object(sarif, "PIECE", size):
            assert sarif.render(findings, rules, notes) == expected


_EDIT = st.builds(Edit, file=st.sampled_from(["a.conf", "/abs/b c.conf", "sub/ü.conf"]), line=st.integers(1, 10**6),
                  start=st.integers(0, 200), end=st.integers(0, 200), text=_FIELD, original=_FIELD, summary=_FIELD,
                  blocked=st.sampled_from(["", "", "a comment on the line"]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["P102", "P107", "S509"]), st.sampled_from(["error", "warning", "info"]),
                          _FIELD, st.sampled_from(["a.conf", "sub/ü.conf"]), st.integers(-1, 10**6), _FIELD,
                          st.none() | _FIELD, st.none() | _EDIT), max_size=5))
def test_sarif_fix_template_writes_what_json_dumps_writes(items):
    """A result with an applicable edit gets its "fixes" from a template too."""
    findings = [Finding(*item[:7], edit=item[7]) for item in items]
    by_code = rule_by_code()
    rules = [by_code[code] for code in ("P102", "P107")]
    expected = json.dumps(sarif.build(findings, rules), indent=2, ensure_ascii=False) + "\n"
    for size in _PIECE_SIZES:
        with mock.patch.object(sarif, "PIECE", size):
            assert sarif.render(findings, rules) == expected


def test_a_sarif_result_with_a_fix_costs_about_what_one_without_costs():
    """SARIF of 4,000 findings with a mechanical fix against the same findings
    without one, CPU time, best of five taken in turns (both are the same
    writer's work, so contention slows them alike). A result with a fix is
    about twice the bytes: 2.5x here. When each such result built the whole
    log (every rule's help wrapped again), it was 219x, and 2,000 hosts with
    one fix each took 37 s to write. A tree of fixable hosts is not used:
    there six findings a host weigh against a short file, and the share of
    the formatters against reading moved between 1.2 and 3.2 calm."""
    p102 = rule_by_code()["P102"]
    plain: list[Finding] = []
    fixed: list[Finding] = []
    for number in range(4000):
        file = f"sites/site{number % 2000:04d}.conf"
        finding = ("P102", "warning", f"KeepAlive Off in site{number}", file, 3, "KeepAlive Off",
                   "set KeepAlive On")
        plain.append(Finding(*finding))
        fixed.append(Finding(*finding, edit=Edit(file, 3, 14, 17, "On", "    KeepAlive Off",
                                                 "KeepAlive Off -> On")))
    best = {"plain": float("inf"), "fixed": float("inf")}
    for _ in range(5):
        for name, findings in (("plain", plain), ("fixed", fixed)):
            start = time.process_time()
            sarif.render(findings, [p102])
            best[name] = min(best[name], time.process_time() - start)
    assert best["fixed"] < 5 * best["plain"], \
        f"with a fix {best['fixed'] * 1000:.0f} ms, without {best['plain'] * 1000:.0f} ms"


def test_sarif_results_with_fixes_are_written_whole(tmp_path):
    """Findings with a mechanical edit, from a real lint: the fix template writes the same bytes."""
    main = tmp_path / "httpd.conf"
    main.write_text("LoadModule mpm_prefork_module modules/mod_mpm_prefork.so\nServerName x\n"
                    "KeepAlive Off\nHostnameLookups On\nMaxConnectionsPerChild 0\n")
    config = load_config(str(main), LoadOptions())
    rules = all_rules()
    result = lint_config(config, HostFacts(config.apache_version, config.mpm), rules,
                         known_codes={rule.code for rule in rules})
    assert any(f.edit is not None and f.edit.applicable for f in result.findings)
    expected = json.dumps(sarif.build(result.findings, rules, result.notes), indent=2, ensure_ascii=False) + "\n"
    assert sarif.render(result.findings, rules, result.notes) == expected
