"""Reading a config tree copied from another host (LoadOptions.root).

`tune --host` reads a remote server's tree from a local copy that keeps the
host's paths under a directory. The model must be the one a read on the host
itself gives: the same files in the same order, the same nodes with the
host's paths, the same diagnostics. Each project sample is read in place and
again from a copy placed under a root at the same path.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from advisor.config import LoadOptions, load_config
from advisor.errors import ConfigError
from advisor.output.httpd_dump import dump_json, include_lines

SAMPLES = Path(__file__).resolve().parent.parent / "corpus" / "samples"


def _samples() -> list[dict]:
    return [s for s in json.loads((SAMPLES / "index.json").read_text())["samples"] if s.get("httpd_accepts")]


def _options(sample: dict, base: Path, root: str | None) -> LoadOptions:
    envvars = sample.get("envvars")
    return LoadOptions(server_root=str(base / sample["server_root"]), root=root, environ={},
                       envvars=None if envvars is None or root else str(base / envvars),
                       use_envvars=envvars is not None)


def _view(config) -> tuple:
    return (dump_json(config, raw=True), list(include_lines(config)),
            [(d.file, d.line, d.message) for d in config.diagnostics])


@pytest.mark.parametrize("sample", _samples(), ids=lambda s: s["name"])
def test_a_tree_under_a_root_reads_as_the_same_tree_in_place(sample, tmp_path):
    in_place = load_config(str(SAMPLES / sample["main"]), _options(sample, SAMPLES, None))
    copy = Path(str(tmp_path) + str(SAMPLES))
    shutil.copytree(SAMPLES, copy, symlinks=True)
    # A sample tests <IfFile /etc/passwd>: the host it was read on has one.
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    under_root = load_config(str(SAMPLES / sample["main"]), _options(sample, SAMPLES, str(tmp_path)))
    assert _view(under_root) == _view(in_place)
    assert all(not f.startswith(str(tmp_path)) for f in under_root.files)


def test_an_absolute_include_is_looked_up_under_the_root_not_on_this_machine(tmp_path):
    root = tmp_path / "host"
    conf = root / "etc" / "apache2"
    conf.mkdir(parents=True)
    # /etc/hostname exists on this machine, never under the root.
    (conf / "apache2.conf").write_text("ServerName a\nIncludeOptional /etc/hostname\nInclude /etc/apache2/x/*.conf\n")
    (conf / "x").mkdir()
    (conf / "x" / "one.conf").write_text("KeepAlive Off\n")
    config = load_config("/etc/apache2/apache2.conf", LoadOptions(root=str(root), environ={}))
    assert config.files == ["/etc/apache2/apache2.conf", "/etc/apache2/x/one.conf"]
    (conf / "apache2.conf").write_text("Include /etc/hostname\n")
    with pytest.raises(ConfigError) as caught:
        load_config("/etc/apache2/apache2.conf", LoadOptions(root=str(root), environ={}))
    assert str(root) not in caught.value.render() and "/etc/hostname" in caught.value.render()


def test_iffile_and_envvars_are_the_hosts(tmp_path):
    root = tmp_path / "host"
    conf = root / "etc" / "apache2"
    conf.mkdir(parents=True)
    (conf / "envvars").write_text("export APACHE_LOG_DIR=/var/log/on-host\n")
    (conf / "apache2.conf").write_text('<IfFile "/etc/apache2/envvars">\nErrorLog ${APACHE_LOG_DIR}/error.log\n'
                                       '</IfFile>\n<IfFile "/etc/hostname">\nKeepAlive Off\n</IfFile>\n')
    config = load_config("/etc/apache2/apache2.conf", LoadOptions(root=str(root), environ={}))
    names = {(d.name, tuple(d.args)) for d in config.effective.children}
    assert names == {("ErrorLog", ("/var/log/on-host/error.log",))}
    assert os.path.exists("/etc/hostname")
