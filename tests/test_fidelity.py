"""httpd is the oracle: our dump must equal `apache2 -t -D DUMP_CONFIG`.

httpd's dump (mod_info) already leaves out what httpd consumes while reading
(Include, LoadModule, Define, ServerRoot, <IfModule> and the other read-time
conditionals), and so does our effective tree, so the two are compared byte
for byte with no normalisation at all. The list of files read is compared
with `-D DUMP_INCLUDES` the same way.
"""

from __future__ import annotations

import os

import pytest

from advisor.config.envvars import read_envvars
from advisor.config.load_options import LoadOptions
from advisor.config.loader import load_config
from advisor.config.oracle import dump_config, run_httpd
from advisor.output.httpd_dump import dump_text, include_lines
from conftest import REPO, SAMPLES, require_httpd, sample_index

SAMPLES_BY_NAME = {sample["name"]: sample for sample in sample_index()}


def _run(sample: dict, envvars, args=None):
    root = str(SAMPLES / sample["server_root"])
    main = str(SAMPLES / sample["main"])
    env = dict(os.environ)
    if sample.get("envvars"):
        env.update(read_envvars(str(envvars), env))
    if args is None:
        result = dump_config(main, server_root=root, env=env)
    else:
        result = run_httpd(main, server_root=root, env=env, args=args)
    options = LoadOptions(server_root=root, apache_version=_httpd_version(),
                          envvars=str(envvars) if sample.get("envvars") else None)
    return result, main, options


def _httpd_version() -> str:
    import re
    import subprocess

    binary = require_httpd()
    text = subprocess.run([binary, "-v"], capture_output=True, text=True).stdout
    match = re.search(r"Apache/(\d+\.\d+\.\d+)", text)
    assert match, text
    return match.group(1)


def test_every_sample_is_listed():
    on_disk = {p.parent.relative_to(SAMPLES).parts[0] for p in SAMPLES.rglob("*.conf")}
    listed = {sample["main"].split("/")[0] for sample in sample_index()}
    assert on_disk == listed


@pytest.mark.httpd
@pytest.mark.parametrize("name", sorted(SAMPLES_BY_NAME))
def test_dump_equals_httpd(name, test_envvars):
    require_httpd()
    sample = SAMPLES_BY_NAME[name]
    result, main, options = _run(sample, test_envvars)
    assert result.accepted == sample["httpd_accepts"], result.stderr
    if not result.accepted:
        return
    ours = dump_text(load_config(main, options))
    assert result.stdout.count("\n") > 10, "httpd printed too little to compare"
    assert ours == result.stdout


@pytest.mark.httpd
@pytest.mark.parametrize("name", sorted(n for n, s in SAMPLES_BY_NAME.items() if s["httpd_accepts"]))
def test_files_read_equal_httpd(name, test_envvars):
    require_httpd()
    sample = SAMPLES_BY_NAME[name]
    result, main, options = _run(sample, test_envvars, args=("-t", "-D", "DUMP_INCLUDES"))
    assert result.accepted, result.stderr
    ours = "".join(line + "\n" for line in include_lines(load_config(main, options)))
    assert ours == result.stdout


RULE_FIXTURES = sorted((REPO / "corpus" / "rules").rglob("*.conf"))
INVALID = {line.strip() for line in (REPO / "corpus" / "rules" / "INVALID.txt").read_text().splitlines()
           if line.strip() and not line.startswith("#")}


def test_rule_fixtures_exist():
    assert len(RULE_FIXTURES) > 60


@pytest.mark.httpd
def test_dump_equals_httpd_for_every_rule_fixture_httpd_accepts(tmp_path):
    """Every corpus config httpd accepts, the rule fixtures included: the
    ones in INVALID.txt are rejected on purpose (their rule is about a config
    that does not start) and are checked to be rejected."""
    require_httpd()
    version = _httpd_version()
    compared = 0
    for fixture in RULE_FIXTURES:
        relative = str(fixture.relative_to(REPO))
        result = dump_config(str(fixture), server_root=str(tmp_path))
        if relative in INVALID:
            assert not result.accepted, f"{relative} is listed as invalid but httpd accepts it"
            continue
        assert result.accepted, f"{relative}: {result.stderr}"
        ours = dump_text(load_config(str(fixture), LoadOptions(server_root=str(tmp_path),
                                                              apache_version=version)))
        assert ours == result.stdout, relative
        compared += 1
    assert compared == len(RULE_FIXTURES) - len(INVALID)
