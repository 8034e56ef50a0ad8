"""Whatever bytes a file holds, the reader gives a model or a clean error.

Random bytes, and random mutations of the corpus's sample files (lines
dropped, duplicated, cut, joined, tags and continuation marks inserted),
must never raise anything but ConfigError.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.config.load_options import LoadOptions
from advisor.config.loader import load_config
from advisor.errors import ConfigError
from advisor.output.httpd_dump import dump_json, dump_text
from conftest import SAMPLES

# Files that include nothing: a mutation cannot turn them into an Include of
# some arbitrary part of the file system.
SEED_FILES = [
    SAMPLES / "upstream/conf/httpd.conf",
    SAMPLES / "legacy-2.2/httpd.conf",
    SAMPLES / "legacy-1.3/httpd.conf",
    SAMPLES / "debian/mods-available/mpm_prefork.conf",
    SAMPLES / "vhosts/sites/02-site02.conf",
]
SEED_LINES = [line for path in SEED_FILES for line in path.read_bytes().split(b"\n")]

FRAGMENTS = [b"<Directory /x>", b"</Directory>", b"</VirtualHost>", b"<IfModule !x>",
             b"</IfModule>", b"\\", b"\"", b"'", b"${", b"}", b"#", b"\x00", b"\xff\xfe",
             b"<If \"true\">", b"</If>", b">", b"<", b"\r", b"\t", b"Define X y", b"${X}"]


def _load(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "httpd.conf"
        path.write_bytes(data)
        options = LoadOptions(server_root=directory, environ={})
        try:
            config = load_config(str(path), options)
        except ConfigError as error:
            assert error.render().strip()
            assert "\n" not in error.render()
            return
        dump_text(config)
        dump_json(config)
        dump_json(config, raw=True)


def _no_include(data: bytes) -> bool:
    return b"include" not in data.lower()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000).filter(_no_include))
def test_random_bytes(data):
    _load(data)


mutation = st.one_of(
    st.tuples(st.just("drop"), st.integers(0, 10_000)),
    st.tuples(st.just("dup"), st.integers(0, 10_000)),
    st.tuples(st.just("insert"), st.integers(0, 10_000), st.sampled_from(FRAGMENTS)),
    st.tuples(st.just("cut"), st.integers(0, 10_000), st.integers(0, 200)),
    st.tuples(st.just("join"), st.integers(0, 10_000)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SEED_FILES), st.lists(mutation, min_size=1, max_size=8))
def test_mutated_corpus_files(seed, mutations):
    lines = seed.read_bytes().split(b"\n")
    for change in mutations:
        if not lines:
            lines = [b""]
        index = change[1] % len(lines)
        kind = change[0]
        if kind == "drop":
            del lines[index]
        elif kind == "dup":
            lines.insert(index, lines[index])
        elif kind == "insert":
            line = lines[index]
            cut = len(line) // 2
            lines[index] = line[:cut] + change[2] + line[cut:]
        elif kind == "cut":
            lines[index] = lines[index][: change[2]]
        elif kind == "join" and index + 1 < len(lines):
            lines[index : index + 2] = [lines[index] + b" " + lines[index + 1]]
    data = b"\n".join(lines)
    if _no_include(data):
        _load(data)


def test_seed_lines_are_loaded():
    assert len(SEED_LINES) > 100
    assert os.path.isfile(SEED_FILES[0])
