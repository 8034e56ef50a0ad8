"""The config model's public API: raw and effective views, options, JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.config.load_options import LoadOptions
from advisor.config.loader import load_config
from advisor.config.model import Directive, Include, Section
from advisor.errors import ConfigError
from conftest import SAMPLES


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def names(section: Section) -> list[str]:
    return [node.name for node in section.walk()]


def test_raw_keeps_every_branch_effective_keeps_what_applies(tmp_path):
    main = write(tmp_path / "httpd.conf", (
        "<IfModule nope_module>\n  Timeout 1\n</IfModule>\n"
        "<IfModule !nope_module>\n  Timeout 2\n</IfModule>\n"
        "Include extra.conf\n"))
    write(tmp_path / "extra.conf", "KeepAlive On\n")
    config = load_config(str(main))
    raw_timeouts = list(config.raw.directives("Timeout"))
    assert [(d.args, d.active, d.line) for d in raw_timeouts] == [(["1"], False, 2), (["2"], True, 5)]
    assert names(config.effective) == ["Timeout", "KeepAlive"]
    include = next(n for n in config.raw.walk() if isinstance(n, Include))
    assert include.files == [str(tmp_path / "extra.conf")]
    keepalive = config.server_value("KeepAlive")
    assert keepalive is not None and keepalive.file == str(tmp_path / "extra.conf") and keepalive.line == 1
    assert config.files == [str(main), str(tmp_path / "extra.conf")]


def test_effective_nodes_know_their_context(tmp_path):
    main = write(tmp_path / "httpd.conf", (
        "<VirtualHost *:80>\n  <IfModule !x_module>\n    <Directory /srv>\n"
        "      Options None\n    </Directory>\n  </IfModule>\n</VirtualHost>\n"))
    config = load_config(str(main))
    options = next(config.effective.directives("Options"))
    assert options.enclosing_names() == ["directory", "virtualhost"]
    assert not options.at_server_scope
    raw_options = next(config.raw.directives("Options"))
    assert raw_options.enclosing_names() == ["directory", "ifmodule", "virtualhost"]
    vhost = config.virtual_hosts()[0]
    assert (vhost.line, vhost.close_line) == (1, 7)


def test_continuation_line_numbers_and_quoted_arguments(tmp_path):
    main = write(tmp_path / "httpd.conf", 'AddType "text/x y" \\\n   .a \\\n   .b # c\n')
    directive = next(load_config(str(main)).effective.directives())
    assert directive.args == ["text/x y", ".a", ".b", "#", "c"]
    assert (directive.line, directive.end_line) == (1, 3)


def test_define_environment_and_command_line(tmp_path):
    main = write(tmp_path / "httpd.conf", (
        "Define ROOT /srv\nDocumentRoot ${ROOT}/${SITE}\n"
        "<IfDefine FAST>\n  KeepAlive On\n</IfDefine>\n"
        "UnDefine ROOT\nServerAdmin ${ROOT}\n"))
    config = load_config(str(main), LoadOptions(defines={"FAST": None}, environ={"SITE": "www"}))
    assert config.server_value("DocumentRoot").args == ["/srv/www"]
    assert config.server_value("KeepAlive").args == ["On"]
    assert config.server_value("ServerAdmin").args == ["${ROOT}"]
    assert any("ROOT" in d.message for d in config.diagnostics)


@pytest.mark.parametrize("condition,expected", [
    (">= 2.4", True), ("< 2.4", False), ("2.4", True), ("= 2.4.58", True), ("!= 2.4.58", False), ("=~ 2", None),
    ("> 2.4.58", False), ("~ ^2\\.4", True), ("/^2\\.2/", False), ("!< 2.2", True),
])
def test_ifversion(tmp_path, condition, expected):
    main = write(tmp_path / "httpd.conf", f"<IfVersion {condition}>\n  Timeout 9\n</IfVersion>\n")
    options = LoadOptions(apache_version="2.4.58")
    if expected is None:
        with pytest.raises(ConfigError):
            load_config(str(main), options)
        return
    assert (load_config(str(main), options).server_value("Timeout") is not None) == expected


def test_modules_from_option_file_and_mpm(tmp_path):
    listing = write(tmp_path / "modules.txt", (
        "Loaded Modules:\n core_module (static)\n so_module (static)\n"
        " mpm_worker_module (shared)\n rewrite_module (shared)\n"))
    main = write(tmp_path / "httpd.conf", (
        "<IfModule mod_rewrite.c>\n  RewriteEngine On\n</IfModule>\n"
        "<IfModule worker.c>\n  ThreadsPerChild 10\n</IfModule>\n"
        "<IfModule headers_module>\n  Header set A b\n</IfModule>\n"))
    config = load_config(str(main), LoadOptions(modules_from=str(listing), modules={"mod_headers"}))
    assert config.mpm == "worker"
    assert names(config.effective) == ["RewriteEngine", "ThreadsPerChild", "Header"]


def test_loadmodule_order_matters(tmp_path):
    main = write(tmp_path / "httpd.conf", (
        "<IfModule prefork.c>\n  MaxRequestWorkers 5\n</IfModule>\n"
        "LoadModule mpm_prefork_module modules/mod_mpm_prefork.so\n"
        "<IfModule prefork.c>\n  MaxRequestWorkers 6\n</IfModule>\n"))
    config = load_config(str(main))
    assert config.mpm == "prefork"
    assert [d.args for d in config.effective.directives()] == [["6"]]


@pytest.mark.parametrize("layout", ["apache2.conf", "httpd.conf", "conf/httpd.conf"])
def test_directory_path_finds_the_main_file(tmp_path, layout):
    write(tmp_path / layout, "Timeout 7\n")
    config = load_config(str(tmp_path))
    assert config.main_file == str(tmp_path / layout)
    expected_root = tmp_path if layout != "conf/httpd.conf" else tmp_path
    assert config.server_root == str(expected_root)


def test_include_order_and_directory_recursion(tmp_path):
    for name in ("b.conf", "a.conf", ".hidden.conf", "sub/c.conf", "z.txt"):
        write(tmp_path / "conf.d" / name, f"ServerAlias {name}\n")
    write(tmp_path / "wild" / "x1" / "site.conf", "ServerAlias w1\n")
    write(tmp_path / "wild" / "x2" / "site.conf", "ServerAlias w2\n")
    main = write(tmp_path / "httpd.conf", "Include conf.d/*.conf\nInclude conf.d/sub\nInclude wild/*/site.conf\nInclude conf.d\n")
    config = load_config(str(main))
    aliases = [d.args[0] for d in config.effective.directives("ServerAlias")]
    assert aliases == ["a.conf", "b.conf", "sub/c.conf", "w1", "w2",
                       ".hidden.conf", "a.conf", "b.conf", "sub/c.conf", "z.txt"]


def test_runtime_if_sections_are_kept_not_evaluated(tmp_path):
    main = write(tmp_path / "httpd.conf", '<If "false">\n  Timeout 1\n</If>\n<Else>\n  Timeout 2\n</Else>\n')
    config = load_config(str(main))
    assert [s.name for s in config.effective.sections()] == ["If", "Else"]
    assert len(list(config.effective.directives("Timeout"))) == 2


def test_dump_json_has_file_and_line_for_every_node():
    main = SAMPLES / "features" / "httpd.conf"
    result = subprocess.run([sys.executable, "-m", "advisor", "dump", "--json", str(main)],
                            capture_output=True, text=True, check=True)
    document = json.loads(result.stdout)
    assert document["mpm"] == "event" and document["view"] == "effective"

    def check(nodes):
        for node in nodes:
            assert node["file"] and node["line"] >= 1 and node["end_line"] >= node["line"]
            check(node.get("children", []))

    check(document["tree"])
    raw = json.loads(subprocess.run([sys.executable, "-m", "advisor", "dump", "--json", "--raw", str(main)],
                                    capture_output=True, text=True, check=True).stdout)
    def inactive(nodes):
        for node in nodes:
            if node.get("active") is False:
                yield node
            yield from inactive(node.get("children", []))

    inactive = list(inactive(raw["tree"]))
    assert raw["view"] == "raw" and inactive, "the raw view keeps false branches"


def test_node_types_are_plain_dataclasses(tmp_path):
    main = write(tmp_path / "httpd.conf", "Timeout 5\n")
    node = next(load_config(str(main)).raw.walk())
    assert isinstance(node, Directive) and node.location == f"{main}:1"


def test_allow_missing_includes_warns_instead(tmp_path):
    main = write(tmp_path / "httpd.conf", "Include missing/*.conf\nInclude gone.conf\nTimeout 5\n")
    with pytest.raises(ConfigError):
        load_config(str(main))
    config = load_config(str(main), LoadOptions(allow_missing_includes=True))
    assert config.server_value("Timeout").args == ["5"]
    assert [d.line for d in config.diagnostics] == [1, 2]
