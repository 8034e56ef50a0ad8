"""A first lint that answers in text or JSON runs its rules without edits;
the child that saves its result works the edits out after the answer (issue
58, advisor/commands/lint_later.py). The entry it writes must be the one a
save with the edits made inline writes, and what is served from it (a
SARIF report, the edits `fix` would apply) the same as a lint without the
cache."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from advisor.commands import lint as cmd_lint
from advisor.commands.lint_options import LintOptions
from advisor.lint import cache as lint_cache
from advisor.rules import all_rules
from conftest import SAMPLES
from lint_helpers import all_fixtures, run_cli

FIXABLE = {rule.code for rule in all_rules() if rule.fixable}


def _settled(directory: Path) -> None:
    """Wait for the saves a lint left running in `directory`."""
    cache = lint_cache.LintCache(str(directory))
    for lock in directory.glob("lint-*.lock"):
        cache._wait_for_saving(lock.name[len("lint-"):-len(".lock")])


def _entry(directory: Path) -> tuple[dict, list]:
    """The one entry in `directory`: its head without the token (drawn at
    random) and its findings as the cache keeps them."""
    [path] = directory.glob("lint-*.json")
    with open(path, "rb") as handle:
        head = json.loads(handle.readline())
        rows = lint_cache.CachedResult(None, [], [], 0, rest=handle, size=head["findings_size"],
                                       crc=head["findings_crc"]).finding_fields()
    head.pop("token")
    return head, rows


def _mixed_tree(root: Path) -> list[str]:
    """Two PATHs in one lint: fixable findings in included files, one of
    them silenced, an unused suppression (A001, a post rule), a severity
    changed by the settings file; returns the paths, relative to `root`."""
    (root / "sites").mkdir(parents=True)
    (root / "one.conf").write_text(
        "LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so\n"
        "ServerName one.test\n"
        "ServerTokens Full\n"
        "TraceEnable On\n"
        "Include sites/*.conf\n")
    (root / "sites" / "a.conf").write_text(
        "<VirtualHost *:80>\n    ServerName a.test\n    KeepAlive Off\n    HostnameLookups On\n</VirtualHost>\n")
    (root / "sites" / "b.conf").write_text(
        "<VirtualHost *:80>\n    ServerName b.test\n"
        "    # apache-advisor: disable=P102 -- measured\n    KeepAlive Off\n"
        "    # apache-advisor: disable=S501\n    HostnameLookups On\n</VirtualHost>\n")
    (root / "two.conf").write_text(
        "LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so\n"
        "ServerName two.test\n"
        "KeepAlive Off\n"
        "MaxKeepAliveRequests 0\n"
        "Include sites/a.conf\n")
    (root / ".apache-advisor.toml").write_text('[severity]\nP107 = "error"\n')
    return ["one.conf", "two.conf"]


def _targets(tmp_path: Path) -> list[list[str]]:
    """The PATHs of each lint checked: every rule fixture in one lint (a
    tree each: whichever rule makes an edit, it must be run again), the
    sample trees in another, and the mixed tree (linted from its own
    directory, with its settings file, so its files are shown relative to
    it)."""
    fixtures = [str(fixture.path) for fixture in all_fixtures()]
    samples = [str(path) for path in sorted(SAMPLES.iterdir()) if path.is_dir()]
    return [fixtures, samples, _mixed_tree(tmp_path / "mixed")]


def test_the_entry_saved_after_the_answer_is_the_inline_save_s(monkeypatch, tmp_path):
    """For every tree: the entry the child writes (edits made there) equals
    the entry of a save with the edits made inline, the command's output and
    exit code are the same either way, and a SARIF report served from the
    entry is the one a lint without the cache writes; `fix`'s lint (cache
    off, edits on) finds the edits the entry holds."""
    monkeypatch.delenv("APACHE_ADVISOR_NO_CACHE", raising=False)
    monkeypatch.setattr(lint_cache, "RACY_WINDOW_NS", -10**18)  # a fresh checkout's files are seconds old
    original = cmd_lint.run_lint
    targets = _targets(tmp_path)
    assert len(targets[0]) > 150 and len(targets[1]) > 5
    for number, paths in enumerate(targets):
        mixed = not paths[0].startswith("/")
        if mixed:
            monkeypatch.chdir(tmp_path / "mixed")
        shared = ["--no-live", *([] if mixed else ["--isolated"]), *paths]
        inline, later = tmp_path / f"inline-{number}", tmp_path / f"later-{number}"

        monkeypatch.setattr(cmd_lint, "run_lint", lambda options, save_later=False: original(options))
        made_inline = run_cli("lint", *shared, "--cache-dir", str(inline))
        monkeypatch.setattr(cmd_lint, "run_lint", original)
        made_later = run_cli("lint", *shared, "--cache-dir", str(later))
        _settled(later)
        assert made_later.exit_code == made_inline.exit_code == 1, paths
        assert made_later.stdout == made_inline.stdout, paths
        head, rows = _entry(later)
        assert (head, rows) == _entry(inline), paths  # the head holds the findings' size and CRC-32
        assert sum(row[7] is not None for row in rows) >= (45 if number == 0 else 4), paths

        sarif = ["lint", *shared, "--fail-on", "never", "-f", "sarif"]
        served = run_cli(*sarif, "--cache-dir", str(later)).stdout
        assert '"fixes"' in served
        assert served == run_cli(*sarif, "--no-cache").stdout, paths
        # What `fix` plans from: a lint with the cache off and the edits on.
        options = LintOptions(paths=paths, isolated=not mixed, live=False, cache=False)
        assert cmd_lint._cached_rows(cmd_lint.run_lint(options).findings) == rows, paths
        monkeypatch.chdir(tmp_path)


def test_the_answer_is_made_without_edits_and_the_save_adds_them(monkeypatch, tmp_path):
    """The parent's findings carry no edit (the rules ran as in a cold
    lint); the entry's do, and a report made whole (text) is kept beside it
    by the child. With --format sarif the edits are made for the answer."""
    monkeypatch.delenv("APACHE_ADVISOR_NO_CACHE", raising=False)
    monkeypatch.setattr(lint_cache, "RACY_WINDOW_NS", -10**18)
    paths = _mixed_tree(tmp_path / "mixed")
    monkeypatch.chdir(tmp_path / "mixed")
    options = LintOptions(paths=paths, live=False, fail_on="never", cache_dir=str(tmp_path / "cache"),
                          edits=False, format="text", output=str(tmp_path / "report.txt"))
    run = cmd_lint.run_lint(options, save_later=True)
    assert run.edits_later is not None and run.save_later is not None
    assert any(f.code == "P102" for f in run.findings)
    assert all(f.edit is None for f in run.findings)
    # The rules that would have made edits, and only those, are run again.
    fixable_here = {"P102", "P107", "P108", "S501", "S503"}
    assert [tree.edits_left_out for tree in run.edits_later.trees] == [fixable_here, fixable_here]
    cmd_lint.write_atomically(options.output, cmd_lint.report_text(run, options))
    assert not list((tmp_path / "cache").glob("lint-*.out")), "the report was copied before the answer"
    run.save_later()
    _settled(tmp_path / "cache")
    _, rows = _entry(tmp_path / "cache")
    assert sum(row[7] is not None for row in rows) >= 4
    [kept] = (tmp_path / "cache").glob("lint-*.text-*.out")
    assert kept.read_text().partition("\n")[2] == (tmp_path / "report.txt").read_text()

    sarif = cmd_lint.run_lint(replace(options, format="sarif", edits=True, cache_dir=str(tmp_path / "c2")),
                              save_later=True)
    assert sarif.edits_later is None
    assert any(f.edit is not None for f in sarif.findings)


def test_a_second_run_that_does_not_match_saves_nothing(monkeypatch, tmp_path):
    """Edits are trusted only when the rules, run again, report exactly what
    the answer held: a finding changed since (here by hand) means no entry,
    and the command's answer is as it was."""
    monkeypatch.delenv("APACHE_ADVISOR_NO_CACHE", raising=False)
    monkeypatch.setattr(lint_cache, "RACY_WINDOW_NS", -10**18)
    paths = _mixed_tree(tmp_path / "mixed")
    monkeypatch.chdir(tmp_path / "mixed")
    options = LintOptions(paths=paths, live=False, fail_on="never", cache_dir=str(tmp_path / "cache"),
                          edits=False, format="json")
    run = cmd_lint.run_lint(options, save_later=True)
    changed = next(f for tree in run.edits_later.trees for f in tree.findings if f.code == "P102")
    changed.message += " (changed)"
    run.save_later()
    _settled(tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("lint-*.json"))


@pytest.mark.parametrize("obstacle", ["lock taken", "no fork"])
def test_where_no_child_can_save_nothing_is_saved_and_the_answer_stands(monkeypatch, tmp_path, obstacle):
    """The key's lock held by another save, or no process to be had: no
    entry, no report beside it, and the command's output and exit code are
    those of a lint without the cache."""
    import fcntl

    monkeypatch.delenv("APACHE_ADVISOR_NO_CACHE", raising=False)
    monkeypatch.setattr(lint_cache, "RACY_WINDOW_NS", -10**18)
    paths = _mixed_tree(tmp_path / "mixed")
    monkeypatch.chdir(tmp_path / "mixed")
    command = ["lint", "--no-live", *paths]
    cold = run_cli(*command, "--no-cache")
    assert cold.exit_code == 1  # P107 made an error by the settings file
    directory = tmp_path / "cache"
    held = None
    if obstacle == "lock taken":
        run_cli(*command, "--cache-dir", str(tmp_path / "probe"))  # the key, from an entry's name
        _settled(tmp_path / "probe")
        [entry] = (tmp_path / "probe").glob("lint-*.json")
        directory.mkdir()
        held = open(directory / entry.name.replace(".json", ".lock"), "w")
        fcntl.flock(held, fcntl.LOCK_EX)
        monkeypatch.setattr(lint_cache.LintCache, "_wait_for_saving", lambda self, key: None)
    else:
        def no_fork():
            raise OSError(11, "Resource temporarily unavailable")
        monkeypatch.setattr(os, "fork", no_fork)
    try:
        first = run_cli(*command, "--cache-dir", str(directory))
    finally:
        if held is not None:
            held.close()
    assert (first.exit_code, first.stdout) == (cold.exit_code, cold.stdout)
    assert not list(directory.glob("lint-*.json")) and not list(directory.glob("lint-*.out"))
