"""The lint result cache: reused only when every input is provably unchanged.

Each test that needs a saved result works on its own tree, written once for
the module and left alone for longer than the cache's racy window (a result
whose inputs changed within that window is never saved). The checks go
through the real CLI; a reuse is told apart from a fresh lint by counting
calls of the function that does the fresh lint.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from advisor.commands import lint as cmd_lint
from advisor.lint import cache as lint_cache
from lint_helpers import REPO, all_fixtures, run_cli

TREE_NAMES = ("hit", "reports", "same-size", "new-file", "removed", "iffile", "variable", "envvars",
              "settings", "options", "damaged", "code", "replaced", "measured")


def _write_tree(root: Path) -> None:
    (root / "sites").mkdir(parents=True)
    (root / "apache2.conf").write_text(
        "ServerRoot " + str(root) + "\n"
        "LoadModule mpm_event_module modules/mod_mpm_event.so\n"
        "ServerName cache.test\n"
        "KeepAlive Off\n"
        "Timeout ${LINT_CACHE_TIMEOUT}\n"
        "<IfFile " + str(root / "flag") + ">\n"
        "    HostnameLookups On\n"
        "</IfFile>\n"
        "Include sites/*.conf\n")
    (root / "sites" / "a.conf").write_text("<VirtualHost *:80>\n    ServerName a.test\n</VirtualHost>\n")
    (root / "sites" / "b.conf").write_text("<VirtualHost *:80>\n    ServerName b.test\n</VirtualHost>\n")
    (root / "envvars").write_text("export LINT_CACHE_LOG=/var/log\n")
    if root.name == "removed":
        (root / "sites" / "z.conf").write_text("<VirtualHost *:80>\n    ExtendedStatus On\n</VirtualHost>\n")


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("cache-trees")
    made = {}
    for name in TREE_NAMES:
        _write_tree(base / name)
        made[name] = base / name
    time.sleep(lint_cache.RACY_WINDOW_NS / 1e9 + 0.2)
    return made


@pytest.fixture
def cached(monkeypatch, tmp_path):
    """The cache on, in a directory of this test's own; returns a counter of
    fresh lints."""
    monkeypatch.delenv("APACHE_ADVISOR_NO_CACHE", raising=False)
    monkeypatch.setenv("APACHE_ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LINT_CACHE_TIMEOUT", "30")
    return count_fresh_lints(monkeypatch)


def count_fresh_lints(monkeypatch) -> dict[str, int]:
    """A counter of the fresh lints the CLI does from now on (`fresh`)."""
    calls = {"fresh": 0}
    original = cmd_lint._lint_afresh

    def counting(*args, **kwargs):
        calls["fresh"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(cmd_lint, "_lint_afresh", counting)
    return calls


def lint(path: Path, *extra: str, fmt: str = "json") -> str:
    result = run_cli("lint", "--no-live", "--fail-on", "never", "-f", fmt, *extra, str(path))
    assert result.exit_code == 0, result.output
    settled()
    return result.stdout


def settled() -> None:
    """Wait until every save a lint left running has ended: these tests
    damage and inspect the entries themselves, which a user never does (a
    lint's own lookup waits for the save of its key)."""
    directory = os.environ.get("APACHE_ADVISOR_CACHE_DIR")
    if directory and os.path.isdir(directory):
        cache = lint_cache.LintCache(directory)
        for lock in Path(directory).glob("lint-*.lock"):
            cache._wait_for_saving(lock.name[len("lint-"):-len(".lock")])


def codes(output: str) -> list[str]:
    return sorted(item["code"] for item in json.loads(output))


def test_an_unchanged_tree_is_not_read_again(trees, cached):
    first = lint(trees["hit"], "--isolated")
    assert cached["fresh"] == 1
    for fmt in ("json", "text", "sarif", "github"):
        assert lint(trees["hit"], "--isolated", fmt=fmt) == lint(trees["hit"], "--isolated", "--no-cache", fmt=fmt)
    assert lint(trees["hit"], "--isolated") == first
    # 1 + 4 --no-cache runs; the five cached runs read nothing.
    assert cached["fresh"] == 5


def test_the_entry_is_saved_after_the_answer_and_a_lint_right_after_waits_for_it(trees, cached, monkeypatch,
                                                                                    tmp_path):
    """The save runs in a child that outlives the command (the answer is not
    held back by it); a lint started meanwhile waits for it, not linting
    afresh. The save is slowed here so that it is surely still running."""
    import fcntl

    original = lint_cache.LintCache.store

    def slow_store(self, *args, **kwargs):
        time.sleep(1.5)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(lint_cache.LintCache, "store", slow_store)
    tree = trees["hit"]
    result = run_cli("lint", "--no-live", "--fail-on", "never", "-f", "json", str(tree))
    assert result.exit_code == 0
    directory = tmp_path / "cache"
    assert not list(directory.glob("lint-*.json")), "saved before the answer"
    [lock] = directory.glob("lint-*.lock")
    with open(lock) as handle:
        with pytest.raises(BlockingIOError):
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    again = run_cli("lint", "--no-live", "--fail-on", "never", "-f", "json", str(tree))
    assert again.stdout == result.stdout
    assert cached["fresh"] == 1
    assert len(list(directory.glob("lint-*.json"))) == 1


def test_a_text_lint_saves_the_edits_a_later_sarif_report_shows(trees, cached):
    # A text report never shows edits, so a lint that saves nothing skips
    # them; one that saves its result must keep them for SARIF and `fix`.
    lint(trees["reports"], "--isolated", fmt="text")
    assert cached["fresh"] == 1
    reused = json.loads(lint(trees["reports"], "--isolated", fmt="sarif"))
    assert cached["fresh"] == 1
    fixes = [result["fixes"] for result in reused["runs"][0]["results"] if result.get("fixes")]
    assert fixes, "KeepAlive Off has a mechanical fix: SARIF shows it"
    assert reused == json.loads(lint(trees["reports"], "--isolated", "--no-cache", fmt="sarif"))


def test_same_size_edit_with_the_old_time_put_back_is_seen(trees, cached):
    conf = trees["same-size"] / "apache2.conf"
    assert "P102" in codes(lint(conf, "--isolated"))
    before = conf.stat()
    time.sleep(0.05)  # past the filesystem's clock tick
    conf.write_text(conf.read_text().replace("KeepAlive Off", "KeepAlive On "))
    os.utime(conf, ns=(before.st_atime_ns, before.st_mtime_ns))  # as `cp -p` or `touch -r` would
    assert conf.stat().st_size == before.st_size
    assert "P102" not in codes(lint(conf, "--isolated"))
    assert cached["fresh"] == 2


def test_a_file_added_to_an_include_wildcard_is_seen(trees, cached):
    tree = trees["new-file"]
    lint(tree, "--isolated")
    (tree / "sites" / "c.conf").write_text("<VirtualHost *:80>\n    ServerName c.test\n    ExtendedStatus On\n"
                                           "</VirtualHost>\n")
    assert "E402" in codes(lint(tree, "--isolated"))
    assert cached["fresh"] == 2


def test_a_removed_file_is_seen(trees, cached):
    tree = trees["removed"]
    assert "E402" in codes(lint(tree, "--isolated"))
    (tree / "sites" / "z.conf").unlink()
    assert "E402" not in codes(lint(tree, "--isolated"))
    assert cached["fresh"] == 2


def test_a_path_iffile_tests_is_watched(trees, cached):
    tree = trees["iffile"]
    assert "P107" not in codes(lint(tree, "--isolated"))
    (tree / "flag").write_text("")
    assert "P107" in codes(lint(tree, "--isolated"))
    assert cached["fresh"] == 2


def test_environment_variables_the_config_uses_are_watched(trees, cached, monkeypatch):
    tree = trees["variable"]
    assert "R301" not in codes(lint(tree, "--isolated"))
    monkeypatch.setenv("LINT_CACHE_TIMEOUT", "600")
    assert "R301" in codes(lint(tree, "--isolated"))
    monkeypatch.setenv("SOME_UNRELATED_VARIABLE", "changes nothing")
    lint(tree, "--isolated")
    assert cached["fresh"] == 2


def test_the_envvars_file_is_watched(trees, cached):
    tree = trees["envvars"]
    lint(tree, "--isolated")
    lint(tree, "--isolated")
    assert cached["fresh"] == 1
    time.sleep(0.05)
    (tree / "envvars").write_text("export LINT_CACHE_TIMEOUT=900\n")
    assert "R301" in codes(lint(tree, "--isolated"))
    assert cached["fresh"] == 2


def test_settings_and_options_are_part_of_the_key(trees, cached, monkeypatch, tmp_path):
    tree = trees["settings"]
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert "P102" in codes(lint(tree))
    (work / ".apache-advisor.toml").write_text('ignore = ["P102"]\n')
    assert "P102" not in codes(lint(tree))
    assert "P102" in codes(lint(tree, "--isolated"))
    assert codes(lint(tree, "--isolated", "--select", "P102")) == ["P102"]
    assert cached["fresh"] == 4


def test_a_damaged_entry_is_ignored_and_replaced(trees, cached, tmp_path):
    tree = trees["damaged"]
    good = lint(tree, "--isolated")
    entries = list((tmp_path / "cache").glob("lint-*.json"))
    assert len(entries) == 1
    for damage in (b"", b"{not json", b'{"key": 1}', json.dumps({"key": entries[0].stem[5:], "paths": 3}).encode()):
        entries[0].write_bytes(damage)
        assert lint(tree, "--isolated") == good
    assert cached["fresh"] == 5
    assert lint(tree, "--isolated") == good
    assert cached["fresh"] == 5  # the last fresh lint saved a good entry again


def test_an_unusable_cache_directory_costs_nothing_but_time(trees, cached, monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("APACHE_ADVISOR_CACHE_DIR", str(blocker / "cache"))
    first = lint(trees["options"], "--isolated")
    assert lint(trees["options"], "--isolated") == first
    assert cached["fresh"] == 2


def test_a_different_version_of_the_tool_does_not_reuse(trees, cached, monkeypatch):
    import advisor

    lint(trees["code"], "--isolated")
    monkeypatch.setattr(advisor, "__version__", advisor.__version__ + ".dev1")
    lint(trees["code"], "--isolated")
    assert cached["fresh"] == 2


def test_a_replaced_file_with_equal_content_is_read_again(trees, cached):
    conf = trees["replaced"] / "sites" / "a.conf"
    lint(trees["replaced"], "--isolated")
    text = conf.read_text()
    replacement = conf.with_suffix(".new")
    replacement.write_text(text)
    os.utime(replacement, ns=(conf.stat().st_atime_ns, conf.stat().st_mtime_ns))
    os.replace(replacement, conf)  # an editor's save: a new inode under the old name
    lint(trees["replaced"], "--isolated")
    assert cached["fresh"] == 2


def test_host_measurements_are_never_saved(trees, cached, monkeypatch):
    from advisor.lint import host

    from advisor.config.host_limits import Limit

    monkeypatch.setattr(host, "measure_ram",
                        lambda main_file: Limit("memory", 8 << 30, "host", "/proc/meminfo", "this tool"))
    monkeypatch.setattr(host, "measure_worker_memory", lambda main_file: (40 << 20, 3))
    for _ in range(2):
        result = run_cli("lint", "--live", "--isolated", "--fail-on", "never", str(trees["measured"]))
        assert result.exit_code == 0 and "RAM 8 GiB: this host (/proc/meminfo)" in result.output
    assert cached["fresh"] == 2


def test_a_host_probe_that_finds_nothing_is_not_saved_either(trees, cached, monkeypatch):
    """No httpd running now does not mean none later: the result still
    depended on the host."""
    from advisor.lint import host

    monkeypatch.setattr(host, "measure_ram", lambda main_file: None)
    monkeypatch.setattr(host, "measure_worker_memory", lambda main_file: (None, 0))
    for _ in range(2):
        lint(trees["measured"], "--live", "--isolated")
    assert cached["fresh"] == 2


def test_fresh_files_are_not_saved(cached, tmp_path):
    _write_tree(tmp_path / "fresh")
    lint(tmp_path / "fresh", "--isolated")
    lint(tmp_path / "fresh", "--isolated")
    assert cached["fresh"] == 2
    assert not list((tmp_path / "cache").glob("lint-*.json"))


@pytest.mark.parametrize("switch", ["flag", "environment"])
def test_the_cache_can_be_turned_off(trees, cached, monkeypatch, tmp_path, switch):
    extra = ["--no-cache"] if switch == "flag" else []
    if switch == "environment":
        monkeypatch.setenv("APACHE_ADVISOR_NO_CACHE", "1")
    for _ in range(2):
        lint(trees["hit"], "--isolated", *extra)
    assert cached["fresh"] == 2
    assert not (tmp_path / "cache").exists()


def test_old_entries_are_pruned(monkeypatch, tmp_path):
    monkeypatch.setattr(lint_cache, "MAX_ENTRIES", 3)
    store = lint_cache.LintCache(str(tmp_path / "cache"))
    tree = tmp_path / "tree.conf"
    tree.write_text("ServerName x\n")
    recorder = lint_cache.InputRecorder()
    recorder.looked_at(str(tree))
    later = time.time_ns() + 10 * lint_cache.RACY_WINDOW_NS
    for number in range(5):
        assert store.store(f"{number:064d}", recorder, lint_cache.CachedResult([], [], [], 0), later)
    assert len(list((tmp_path / "cache").glob("lint-*.json"))) == 3


def _fresh_then_cached(monkeypatch, tmp_path, targets) -> int:
    """Lint each target twice with the cache: the first a fresh lint that
    saves, the second served from the cache (no fresh lint: equal output
    alone would hold with a cache that never answers) with the same bytes.
    Returns how many targets were reused."""
    monkeypatch.delenv("APACHE_ADVISOR_NO_CACHE", raising=False)
    monkeypatch.setenv("APACHE_ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(lint_cache, "RACY_WINDOW_NS", -10**18)
    fresh_lints = count_fresh_lints(monkeypatch)
    reused = 0
    for path, args in targets:
        command = ["lint", "--no-live", "--isolated", "--fail-on", "never", "-f", "json", *args, str(path)]
        before = fresh_lints["fresh"]
        first = run_cli(*command)
        assert fresh_lints["fresh"] == before + 1, f"{path}: the first lint was not a fresh one"
        settled()
        before = fresh_lints["fresh"]
        second = run_cli(*command)
        assert (first.exit_code, first.output) == (second.exit_code, second.output), path
        if first.exit_code == 0:  # a config that cannot be read is not saved
            assert fresh_lints["fresh"] == before, f"{path}: linted afresh, not served from the cache"
            reused += 1
    return reused


def test_cached_results_equal_fresh_ones_on_the_whole_corpus(monkeypatch, tmp_path):
    """Every sample and rule fixture, linted fresh and then from the cache:
    the same bytes, the second cached run served without a fresh lint. The
    racy window is set to zero here only because a fresh checkout's files are
    seconds old; the window has its own test above."""
    targets = [(sample, []) for sample in sorted((REPO / "corpus" / "samples").iterdir()) if sample.is_dir()]
    targets += [(fixture.path, fixture.args) for fixture in all_fixtures()]
    reused = _fresh_then_cached(monkeypatch, tmp_path, targets)
    assert reused > 90
    assert len(list((tmp_path / "cache").glob("lint-*.json"))) == min(reused, lint_cache.MAX_ENTRIES)


def test_the_corpus_check_fails_when_the_cache_never_answers(monkeypatch, tmp_path):
    """The check above can fail for the reason in its name: with the cache's
    lookup patched to always miss, the output is still equal but the check
    sees the fresh lint."""
    monkeypatch.setattr(lint_cache.LintCache, "lookup", lambda self, key: None)
    target = [(REPO / "corpus" / "samples" / "debian", [])]
    with pytest.raises(AssertionError, match="not served from the cache"):
        _fresh_then_cached(monkeypatch, tmp_path, target)


def test_entries_of_another_user_are_not_trusted(trees, cached, monkeypatch):
    lint(trees["hit"], "--isolated")
    lint(trees["hit"], "--isolated")
    assert cached["fresh"] == 1
    real_uid = os.geteuid()
    monkeypatch.setattr(lint_cache.os, "geteuid", lambda: real_uid + 1)
    lint(trees["hit"], "--isolated")
    assert cached["fresh"] == 2


def test_every_rule_module_is_part_of_the_code_fingerprint():
    """Wherever the rules are installed (beside advisor/ in an editable
    install), editing one must make old entries unusable."""
    import advisor.rules.p101_max_connections_per_child as p101

    fingerprinted = {item[0] for item in lint_cache._code_fingerprint()[1:]}
    assert os.path.abspath(p101.__file__) in fingerprinted
    assert os.path.abspath(cmd_lint.__file__) in fingerprinted


_SHOWN = [("text",), ("text", "--no-group"), ("text", "--no-evidence"), ("text", "--statistics"),
          ("json",), ("json", "--statistics"), ("sarif",), ("github",)]


def test_saved_reports_are_the_cold_reports_byte_for_byte(trees, cached, tmp_path):
    """Every way of showing a result, from the cache (the report saved beside
    the entry, and the entry's findings rendered where no report was saved):
    the bytes of a cold lint, and no fresh lint."""
    path = trees["reports"]
    cold = {shown: lint(path, "--isolated", "--no-cache", *shown[1:], fmt=shown[0]) for shown in _SHOWN}
    fresh_before = cached["fresh"]
    lint(path, "--isolated")  # saves the entry (and the JSON report)
    assert cached["fresh"] == fresh_before + 1
    for round_number in range(2):  # first from the findings, then from the saved report
        for shown in _SHOWN:
            assert lint(path, "--isolated", *shown[1:], fmt=shown[0]) == cold[shown], (round_number, shown)
    assert cached["fresh"] == fresh_before + 1
    reports = sorted((tmp_path / "cache").glob("lint-*.out"))
    assert len(reports) == len(_SHOWN)


def test_a_report_of_another_entry_is_not_used(trees, cached, tmp_path):
    """A saved report names the entry it was made from; one left from an
    older result of the same key (the tree changed and was linted again)
    is ignored."""
    path = trees["reports"]
    first = lint(path, "--isolated", fmt="text")
    lint(path, "--isolated", fmt="text")
    (report,) = (tmp_path / "cache").glob("lint-*.text-*.out")
    token, _, body = report.read_bytes().partition(b"\n")
    report.write_bytes(b"0" * len(token) + b"\n" + b"not the report\n")
    assert lint(path, "--isolated", fmt="text") == first
    assert b"not the report" not in report.read_bytes()


def test_damaged_findings_behind_a_current_entry_mean_a_fresh_lint(trees, cached, tmp_path):
    """The findings are decoded only when a report needs them; if they are
    damaged then, the lint is done afresh: the cold report, no traceback."""
    path = trees["reports"]
    cold = lint(path, "--isolated", "--no-cache", fmt="github")
    lint(path, "--isolated", fmt="json")  # saves the entry
    (entry,) = (tmp_path / "cache").glob("lint-*.json")
    head, _, _ = entry.read_bytes().partition(b"\n")
    entry.write_bytes(head + b"\n[[\"P101\", broken")
    os.utime(entry)
    fresh_before = cached["fresh"]
    assert lint(path, "--isolated", fmt="github") == cold  # no github report saved: decoded, damaged
    assert cached["fresh"] == fresh_before + 1


def test_findings_that_changed_after_writing_are_never_decoded(trees, cached, tmp_path):
    """The head holds the findings' length and CRC-32: a byte changed in
    place (same length) means a fresh lint, and marshal never sees the data
    (a damaged size could otherwise ask it for a list of a billion items)."""
    path = trees["reports"]
    cold = lint(path, "--isolated", "--no-cache", fmt="github")
    lint(path, "--isolated", fmt="json")  # saves the entry
    (entry,) = (tmp_path / "cache").glob("lint-*.json")
    head, _, findings = entry.read_bytes().partition(b"\n")
    assert json.loads(head)["findings_size"] == len(findings)
    for position in (0, len(findings) // 2, len(findings) - 1):
        damaged = bytearray(findings)
        damaged[position] ^= 0x41
        entry.write_bytes(head + b"\n" + bytes(damaged))
        fresh_before = cached["fresh"]
        assert lint(path, "--isolated", fmt="github") == cold
        assert cached["fresh"] == fresh_before + 1


def test_cached_findings_read_back_as_they_were_written(tmp_path):
    fields = [["P102", "warning", "KeepAlive Off \udcff é", "sites/a.conf", 3, "evidence", "fix",
               ["sites/a.conf", 3, 10, 13, "On", "KeepAlive Off", "KeepAlive Off -> On", ""]],
              ["S509", "info", "m", "b.conf", 1, "e", None, None]]
    result = lint_cache.CachedResult(fields, ["a note"], ["b.conf"], 1)
    data = lint_cache.marshal.dumps(fields)
    handle = (tmp_path / "findings").open("wb+")
    handle.write(data)
    handle.seek(0)
    read = lint_cache.CachedResult(None, [], [], 1, "t", handle, len(data), lint_cache.zlib.crc32(data))
    assert read.finding_fields() == result.finding_fields()


def test_a_report_is_kept_only_when_written_to_the_end(tmp_path):
    """Pieces pass through as they are written; the saved report appears
    only after the last one, and a report left unfinished (a closed pipe, a
    failure mid-way) leaves neither a report nor a temporary file."""
    store = lint_cache.LintCache(str(tmp_path / "cache"))
    pieces = ["[\n", '  {"a": 1},\n', '  {"b": "\udcff"}\n', "]\n"]
    passing = store.storing_report("k", "abc123", "json-brief-every", iter(pieces))
    assert next(passing) == pieces[0]
    assert store.report("k", "abc123", "json-brief-every") is None  # not before the end
    passing.close()  # the reader went away after one piece
    assert list((tmp_path / "cache").iterdir()) == []
    assert list(store.storing_report("k", "abc123", "json-brief-every", iter(pieces))) == pieces
    assert "".join(store.report("k", "abc123", "json-brief-every")) == "".join(pieces)
    assert store.report("k", "another", "json-brief-every") is None
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["lint-k.json-brief-every.out"]


def test_a_cache_that_cannot_be_written_still_passes_the_report_on(tmp_path):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    store = lint_cache.LintCache(str(blocked / "cache"))
    assert list(store.storing_report("k", "abc", "text", iter(["one", "two"]))) == ["one", "two"]


def test_a_saved_report_reads_back_whole_across_its_read_boundaries(tmp_path):
    """Read back a megabyte at a time: a character split between two reads,
    and bytes that are not UTF-8, come back as they were written."""
    store = lint_cache.LintCache(str(tmp_path / "cache"))
    text = "x" * ((1 << 20) - 1) + "é" + "y" * (1 << 20) + "\udcff€"
    assert list(store.storing_report("k", "tok", "sarif", iter([text]))) == [text]
    pieces = list(store.report("k", "tok", "sarif"))
    assert len(pieces) >= 3 and "".join(pieces) == text


def test_a_result_marshal_cannot_write_is_not_kept(tmp_path):
    """A value that is not plain data (a rule's bug) costs the saving, not the lint."""
    from advisor.config.inputs import InputRecorder

    store = lint_cache.LintCache(str(tmp_path / "cache"))
    result = lint_cache.CachedResult([["P101", "info", "m", "a.conf", 1, "e", object(), None]], [], [], 1)
    assert store.store("k", InputRecorder(), result, time.time_ns()) is False
    assert result.token == "" and not (tmp_path / "cache").exists()
