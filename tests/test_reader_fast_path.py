"""The reader's fast paths read exactly what its careful path reads.

The fast path (a directive whose name was read before, on a line without a
backslash, in a file without ${...} or a macro's lines), the regex split of quoted words and
the effective tree built while reading exist for speed only: on any input
they must build the same model, node for node, and split the same words, as
the paths they shortcut.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.config import loader
from advisor.config.lexer import split_words, splits_like_httpd
from advisor.config.load_options import LoadOptions
from advisor.config.loader import load_config
from advisor.config.model import Directive, Section, effective_tree
from advisor.errors import ConfigError
from advisor.lint.context import TreeIndex
from advisor.output.httpd_dump import dump_json
from conftest import SAMPLES

# ---- words -------------------------------------------------------------------

_WORDY = st.text(st.sampled_from(list("ab \t\"'<>=$x{}é") + ["\x1c", "\xa0"]), max_size=40)


@settings(max_examples=500, deadline=None)
@given(_WORDY)
def test_quoted_words_split_as_the_character_loop_splits_them(text):
    if "\\" in text or not splits_like_httpd(text):
        return
    # plain=False takes the character-by-character loop (ap_getword_conf).
    assert split_words(text, True) == split_words(text, False)


# ---- whole files -------------------------------------------------------------


class _Forgetful(dict):
    """A name table that never remembers: every line takes the careful path."""

    def __setitem__(self, key, value) -> None:
        pass


def _same_effective_trees(built: Section, copied: Section) -> None:
    """Node for node: the same fields, the same raw node, the same shape."""
    assert type(built) is type(copied)
    for name in ("name", "args", "raw_args", "file", "line", "end_line", "active", "expansion"):
        assert getattr(built, name) == getattr(copied, name), name
    assert built.raw is copied.raw
    assert built.close_line == copied.close_line
    assert len(built.children) == len(copied.children)
    for mine, theirs in zip(built.children, copied.children):
        assert mine.parent is built and theirs.parent is copied
        if isinstance(theirs, Section):
            _same_effective_trees(mine, theirs)  # type: ignore[arg-type]
        else:
            # Built while reading, a directive is the raw tree's own node
            # (no copy): the copy made afterwards stands for that node.
            assert type(mine) is type(theirs) and mine.raw is None and theirs.raw is mine
            for name in ("name", "args", "raw_args", "file", "line", "end_line", "active", "expansion"):
                assert getattr(mine, name) == getattr(theirs, name), name


def _raw_parents_hold(section: Section) -> None:
    """Every node of the raw tree finds, going up, the section that holds
    it: through `raw_parent` when the effective tree holds it too."""
    for child in section.children:
        assert (child.raw_parent or child.parent) is section
        assert child.raw_parent is None or (type(child) is Directive and child.parent is not section)
        if isinstance(child, Section):
            _raw_parents_hold(child)


def _same_index(config) -> None:
    """The lint context's index of an effective tree built while reading
    (derived from the raw tree's index and the reader's section copies)
    holds what a walk of that tree finds: the same nodes, in order."""
    assert config.effective_sections is not None
    raw = TreeIndex.build(config.raw, with_order=False)
    walked = TreeIndex.build(config.effective)
    derived = TreeIndex.shared_with(config.effective, raw, config.effective_sections)
    for mine, theirs in ((derived.directives, walked.directives), (derived.sections, walked.sections),
                         (derived.top, walked.top)):
        assert mine.keys() == theirs.keys()
        for name, nodes in theirs.items():
            assert [id(node) for node in mine[name]] == [id(node) for node in nodes], name


def _model(main: Path, root: Path, careful: bool, monkeypatch) -> str | None:
    with monkeypatch.context() as patch:
        if careful:
            original = loader._Reader.__init__

            def forgetful(self, state):
                original(self, state)
                self.names = _Forgetful()

            patch.setattr(loader._Reader, "__init__", forgetful)
        options = LoadOptions(server_root=str(root), environ={"HOME": "/root"},
                              modules=["macro_module", "headers_module"], effective=not careful)
        try:
            config = load_config(str(main), options)
        except ConfigError as error:
            return f"error: {error.render()}"
        if not careful:
            # Built while reading: as the copy of the raw tree made afterwards.
            _same_effective_trees(config.effective, effective_tree(config.raw))
            _same_index(config)
        _raw_parents_hold(config.raw)
        return dump_json(config, raw=True) + dump_json(config)


LINES = [
    "ServerName a.test", "ServerName  a.test  ", "KeepAlive On", "KeepAlive\tOn", 'Header set X "a b"',
    "Header set X 'a b'", 'Header set X ""', "Header set X \"unclosed", "RewriteRule ^/(.*)$ /x/$1 [R,L]",
    "Define NAME value", "Define EMPTY", "ServerAlias ${NAME}", "ServerAlias ${MISSING}", "${NAME} x",
    "DocumentRoot /srv/a\\", "Options \\", "  continued", "# a comment", "", "<VirtualHost *:80>",
    "</VirtualHost>", "<Directory /srv>", "</Directory>", "<IfModule headers_module>", "</IfModule>",
    "<IfModule !headers_module>", "<Macro M $p>", "ServerAlias $p.test", "</Macro>", "Use M one",
    "Use M two", "UndefMacro M", "\"ServerName\" quoted", "Require all granted", "AllowOverride None",
    "LogLevel warn", "Alias /a \xa0/b", "Listen 80", "<IfDefine NAME>", "</IfDefine>", "<If \"true\">",
    "</If>", "IfModule as_a_directive", "<Location />", "</Location>", "IncludeOptional part*.conf",
    "<IfVersion >= 2.4>", "</IfVersion>", "Undefine NAME",
    # A backslash inside a line (not a continuation): that line takes the
    # careful path, the file's others the fast one.
    '<FilesMatch ".+\\.php$">', "</FilesMatch>", 'Header set X "a\\"b"', "RewriteRule ^/a\\.b$ /c [L]",
    "ServerAlias a\\\\b.test",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.lists(st.sampled_from(LINES), max_size=25), min_size=1, max_size=3))
def test_fast_path_builds_the_model_the_careful_path_builds(files, monkeypatch):
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        main = root / "httpd.conf"
        # The main file holds its own lines, then includes the others: names
        # read in one file are fast in the next.
        body = "\n".join(files[0]) + "\n" + "".join(f"Include part{n}.conf\n" for n in range(1, len(files)))
        main.write_text(body)
        for number, lines in enumerate(files[1:], 1):
            (root / f"part{number}.conf").write_text("\n".join(lines) + "\n")
        assert _model(main, root, False, monkeypatch) == _model(main, root, True, monkeypatch)


@pytest.mark.parametrize("sample", ["vhosts/httpd.conf", "macros/httpd.conf", "debian/apache2.conf"])
def test_fast_path_reads_the_corpus_as_the_careful_path(sample, monkeypatch):
    main = SAMPLES / sample
    root = main.parent
    assert _model(main, root, False, monkeypatch) == _model(main, root, True, monkeypatch)


# ---- Include wildcards ---------------------------------------------------------


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from(list("*?[]^!.ab-")), min_size=1, max_size=6),
       st.text(st.sampled_from(list(".ab-*")), max_size=6))
def test_wildcard_matcher_matches_as_fnmatch_does(pattern, name):
    from fnmatch import fnmatchcase

    from advisor.config.includes import name_matcher

    # APR_FNM_PERIOD, then fnmatch with httpd's [^...] spelled as Python's [!...].
    expected = not (name.startswith(".") and not pattern.startswith(".")) and \
        fnmatchcase(name, pattern.replace("[^", "[!"))
    assert name_matcher(pattern)(name) == expected
