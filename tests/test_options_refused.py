"""E407: the Options lines (and AllowOverride Options= lists) httpd 2.4
refuses are the ones lint flags, on the line httpd names (issue 10, item 3).
The real apache2 is the judge."""

from __future__ import annotations

import itertools
import re
import subprocess
from pathlib import Path

import pytest

from conftest import require_httpd

from lint_helpers import RULES_CORPUS, lint_json

HEADER = ("LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so\n"
          "ServerName options.test\n"
          "ErrorLog /tmp/apache-advisor-options-test.log\n"
          "<Directory /var/www/html>\n")
LINE = 5  # the directive under test, inside the <Directory> of HEADER


def httpd_refusal(httpd: str, path: Path) -> tuple[int, str] | None:
    """(line, reason) of httpd's syntax error, or None when it accepts the file."""
    done = subprocess.run([httpd, "-t", "-f", str(path)], capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)
    if done.returncode == 0:
        return None
    match = re.search(r"Syntax error on line (\d+) of ([^:]+):\s*\n?(.*)", done.stderr)
    assert match and match.group(2) == str(path), done.stderr
    return int(match.group(1)), match.group(3).strip()


def e407_lines(path: Path) -> list[int]:
    return [f["line"] for f in lint_json(str(path), "--select", "E407")]


@pytest.mark.httpd
@pytest.mark.parametrize("fixture", sorted(p for p in (RULES_CORPUS / "E407").glob("*.conf")
                                           if not p.stem.endswith("_fp")), ids=lambda p: p.name)
def test_httpd_refuses_each_fixture_on_the_line_lint_flags(fixture):
    httpd = require_httpd()
    refused = httpd_refusal(httpd, fixture)
    assert refused is not None, f"httpd accepts {fixture}"
    assert e407_lines(fixture) == [refused[0]], refused


def _write(tmp_path: Path, name: str, directive: str) -> Path:
    path = tmp_path / name
    path.write_text(HEADER + f"    {directive}\n</Directory>\n")
    return path


WORDS = ("Indexes", "+ExecCGI", "-Indexes", "None", "All", "-All", "FollowSymLinks")


@pytest.mark.httpd
def test_lint_flags_exactly_the_options_httpd_refuses(tmp_path):
    """Every pair of WORDS and some triples: E407 fires when, and only when,
    httpd refuses the line; a mechanical fix is a line httpd accepts."""
    httpd = require_httpd()
    lines = [" ".join(pair) for pair in itertools.product(WORDS, repeat=2)]
    lines += ["Indexes FollowSymLinks +ExecCGI", "None +Indexes -ExecCGI", "Indexes None +ExecCGI",
              "+Indexes FollowSymlinks", "SymLinksIfOwnerMatch MultiViews", "+Indexes Bogus",
              "RunScripts includesNOEXEC", "+Includes All"]
    disagree = []
    for number, words in enumerate(lines):
        path = _write(tmp_path, f"options{number}.conf", f"Options {words}")
        refused = httpd_refusal(httpd, path)
        findings = [f for f in lint_json(str(path), "--select", "E407")]
        flagged = [f["line"] for f in findings]
        if flagged != ([refused[0]] if refused else []):
            disagree.append(f"Options {words}: httpd {refused}, lint {flagged}")
        for finding in findings:
            if finding["fix"]:
                fixed = _write(tmp_path, f"fixed{number}.conf", finding["fix"])
                if httpd_refusal(httpd, fixed) is not None:
                    disagree.append(f"fix {finding['fix']!r} for Options {words} is refused too")
    assert disagree == [], "\n".join(disagree)


@pytest.mark.httpd
@pytest.mark.parametrize("args", ["Options=Indexes,+ExecCGI", "AuthConfig Options=-Indexes",
                                  "options=Bogus", "Options=Indexes,ExecCGI AuthConfig",
                                  "Options=None", "Options=", "All"])
def test_allowoverride_options_lists_as_httpd_reads_them(tmp_path, args):
    httpd = require_httpd()
    path = _write(tmp_path, "allowoverride.conf", f"AllowOverride {args}")
    refused = httpd_refusal(httpd, path)
    assert e407_lines(path) == ([refused[0]] if refused else []), refused
