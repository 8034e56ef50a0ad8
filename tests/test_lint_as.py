"""`lint --as PATH CANDIDATE` on this machine (issue 59): the tree linted as
it will be once CANDIDATE replaces PATH, tested by the real apache2 on a
copy, findings and httpd's complaint at CANDIDATE's lines; and its bad
input. The tree is a copy of this machine's Debian /etc/apache2 (no finding
at error there), so `--fail-on error` tells a candidate that brings an
error from one that does not."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import assert_one_line_error, fail_in_ci_else_skip, require_httpd

# E413 (error) on line 1: port 443 without SSLEngine; S504 (warning) on line 5.
RISKY = ("<VirtualHost *:443>\n\tServerName shop.example.org\n\tDocumentRoot /var/www/html\n"
         "\t<Directory /var/www/html>\n\t\tOptions Indexes\n\t</Directory>\n</VirtualHost>\n")
CLEAN = "<VirtualHost *:80>\n\tServerName shop.example.org\n\tDocumentRoot /var/www/html\n</VirtualHost>\n"
# httpd refuses line 4; the reader takes it (an unknown name is a lint finding).
REFUSED = ("<VirtualHost *:80>\n\tServerName shop.example.org\n\tDocumentRoot /var/www/html\n"
           "\tServerNme typo.example.org\n</VirtualHost>\n")


def lint_as(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The real command in its own process, as a validate step runs it."""
    return subprocess.run([sys.executable, "-m", "advisor", "lint", "--isolated", "--no-live", *args],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, cwd=cwd)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    import fleet_topology

    if not os.path.isfile("/etc/apache2/apache2.conf"):
        fail_in_ci_else_skip("Debian's apache2 (its /etc/apache2 is copied for these tests)")
    work = tmp_path_factory.mktemp("lint-as")
    (work / "run").mkdir()
    return fleet_topology.debian_tree(work / "apache2", work / "run")


def candidate(tmp_path: Path, text: str, name: str = "x.conf.tmp") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _places(result: subprocess.CompletedProcess) -> set[tuple[str, str, int]]:
    return {(f["code"], f["file"], f["line"]) for f in json.loads(result.stdout)}


@pytest.mark.httpd
def test_candidate_judged_in_its_tree_at_its_own_lines(tree, tmp_path):
    require_httpd()
    default_site = tree / "sites-enabled" / "000-default.conf"
    before = default_site.read_bytes()
    risky = candidate(tmp_path, RISKY)

    # In place of the enabled default site (a link into sites-available).
    result = lint_as(str(tree), "--as", str(default_site), str(risky), "--fail-on", "error", "--format", "json")
    assert result.returncode == 1, result.stderr
    places = _places(result)
    assert {("E413", str(risky), 1), ("S504", str(risky), 5)} <= places
    assert not [p for p in places if "000-default" in p[1]]  # the replaced file is not read
    # The tree's own findings are neither shown nor counted (S501 is a warning).
    assert not [p for p in places if p[1] != str(risky)]
    assert default_site.read_bytes() == before

    # The same file named through sites-available, and a clean candidate: exit 0.
    clean = candidate(tmp_path, CLEAN, "clean.tmp")
    result = lint_as(str(tree), "--as", str(tree / "sites-available" / "000-default.conf"), str(clean),
                     "--fail-on", "error", "--format", "json")
    assert result.returncode == 0, result.stderr
    places = _places(result)
    assert ("S509", str(clean), 3) in places and not [p for p in places if "000-default" in p[1]]

    # A site deployed for the first time: the wildcard Include picks it up
    # beside the default site (whose findings, the tree's own, are not shown),
    # text report at its path.
    result = lint_as(str(tree / "apache2.conf"), "--as", str(tree / "sites-enabled" / "shop.conf"), risky.name,
                     "--fail-on", "error", "--no-evidence", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert re.match(r"x\.conf\.tmp\n +1  error   E413 ", result.stdout), result.stdout
    assert str(default_site) not in result.stdout and "not shown and not counted" in result.stdout
    assert not (tree / "sites-enabled" / "shop.conf").exists()

    # The main config itself: Timeout 300 (R301) gone from the candidate's copy.
    main = candidate(tmp_path, (tree / "apache2.conf").read_text().replace("\nTimeout 300\n", "\nTimeout 30\n"),
                     "main.tmp")
    result = lint_as(str(tree), "--as", str(tree / "apache2.conf"), str(main), "--format", "json")
    codes = {(code, file) for code, file, _ in _places(result)}
    assert ("S504", str(main)) in codes and ("R301", str(main)) not in codes
    assert not [file for _, file in codes if file == str(tree / "apache2.conf")]


@pytest.mark.httpd
def test_a_candidate_httpd_or_the_reader_refuses_is_one_line_at_its_line(tree, tmp_path):
    require_httpd()
    refused = candidate(tmp_path, REFUSED)
    result = lint_as(str(tree), "--as", str(tree / "sites-enabled" / "shop.conf"), str(refused))
    assert_one_line_error(result, f"{refused}:4: apache2 refuses the tree with this file as "
                                  f"{tree / 'sites-enabled' / 'shop.conf'}: Invalid command 'ServerNme'")
    # The main config replaced by one httpd refuses: its line, in the candidate.
    text = (tree / "apache2.conf").read_text().replace("\nKeepAlive On\n", "\nKeepAlive maybe\n")
    line = text.split("\n").index("KeepAlive maybe") + 1
    main = candidate(tmp_path, text, "main.tmp")
    result = lint_as(str(tree), "--as", str(tree / "apache2.conf"), str(main))
    assert_one_line_error(result, f"{main}:{line}: apache2 refuses", "KeepAlive must be On or Off")
    unclosed = candidate(tmp_path, "# a site\n<VirtualHost *:80>\n\tServerName a.example.org\n", "open.tmp")
    result = lint_as(str(tree), "--as", str(tree / "sites-enabled" / "a.conf"), str(unclosed))
    assert_one_line_error(result, f"{unclosed}:2: <VirtualHost> was not closed")


@pytest.mark.httpd
def test_the_exit_code_counts_what_the_candidate_brings(tree, tmp_path):
    """The Debian tree has warnings of its own (S501, S504, R301...): at the
    default --fail-on warning they refuse no candidate. A candidate's own
    warning does, and so does one it causes in another file."""
    require_httpd()
    conf = tree / "conf-enabled" / "zz-site.conf"
    clean = candidate(tmp_path, CLEAN)
    result = lint_as(str(tree), "--as", str(tree / "sites-enabled" / "shop.conf"), str(clean), "--no-evidence")
    assert result.returncode == 0, result.stdout + result.stderr
    own = re.search(r"note: (\d+) findings of the tree as it is \(([A-Z0-9, ]+)\) not shown and not counted",
                    result.stdout)
    assert own and int(own.group(1)) >= 5 and {"S501", "S504", "R301"} <= set(own.group(2).split(", ")), result.stdout
    assert "S501" not in result.stdout.split("note:")[0]

    # Its own warning (S504 at line 5): exit 1, and only the candidate's findings shown.
    risky = candidate(tmp_path, RISKY.replace("*:443", "*:80"), "risky.tmp")
    result = lint_as(str(tree), "--as", str(tree / "sites-enabled" / "shop.conf"), str(risky), "--format", "json")
    assert result.returncode == 1, result.stderr
    assert _places(result) == {("S504", str(risky), 5), ("P110", str(risky), 5), ("S509", str(risky), 3)}

    # A warning in apache2.conf that only the candidate causes: its KeepAliveTimeout
    # made dead (E406) by the candidate's, read later in conf-enabled/.
    line = (tree / "apache2.conf").read_text().split("\n").index("KeepAliveTimeout 5") + 1
    later = candidate(tmp_path, "KeepAliveTimeout 3\n", "later.tmp")
    result = lint_as(str(tree), "--as", str(conf), str(later), "--format", "json")
    assert result.returncode == 1, result.stderr
    assert _places(result) == {("E406", str(tree / "apache2.conf"), line)}
    # The same value: E406 at info, below --fail-on; exit 0.
    same = candidate(tmp_path, "KeepAliveTimeout 5\n", "same.tmp")
    result = lint_as(str(tree), "--as", str(conf), str(same), "--format", "json")
    assert result.returncode == 0 and [f["severity"] for f in json.loads(result.stdout)] == ["info"], result.stdout


def test_bad_input_is_one_line_each(tree, tmp_path):
    clean = candidate(tmp_path, CLEAN)
    site = str(tree / "sites-enabled" / "shop.conf")
    result = lint_as(str(tree), "--as", site, str(tmp_path / "missing.tmp"))
    assert_one_line_error(result, f"{tmp_path / 'missing.tmp'}: cannot read the candidate: No such file")
    result = lint_as(str(tree), "--as", site, str(tmp_path))
    assert_one_line_error(result, f"{tmp_path}: the candidate is a directory")
    unreadable = candidate(tmp_path, CLEAN, "locked.tmp")
    os.chmod(unreadable, 0)
    if os.geteuid() != 0:  # (root reads it anyway)
        result = lint_as(str(tree), "--as", site, str(unreadable))
        assert_one_line_error(result, f"{unreadable}: cannot read the candidate: Permission denied")
    result = lint_as(str(tree), str(tree), "--as", site, str(clean))
    assert_one_line_error(result, "--as places", "in one tree, and 2 were named")
    # PATHs the tree does not read: what it reads there and through which line; Debian's
    # available/enabled pair; a directory nothing includes.
    result = lint_as(str(tree), "--as", str(tree / "conf-enabled" / "extra.txt"), str(clean))
    assert_one_line_error(result, f"--as {tree / 'conf-enabled' / 'extra.txt'}: the tree of "
                                  f"{tree / 'apache2.conf'} does not read that file", "it reads charset.conf",
                          f"through IncludeOptional conf-enabled/*.conf at {tree / 'apache2.conf'}:")
    result = lint_as(str(tree), "--as", str(tree / "sites-available" / "new.conf"), str(clean))
    assert_one_line_error(result, "does not read that file", "a2ensite", f"{tree / 'sites-enabled'}/")
    result = lint_as(str(tree), "--as", "/srv/elsewhere/x.conf", str(clean))
    assert_one_line_error(result, "--as /srv/elsewhere/x.conf", "no Include of", "reads from /srv/elsewhere")
    result = lint_as("--host", "127.0.0.1", "--as", "sites-enabled/x.conf", str(clean))
    assert_one_line_error(result, "with --host, --as PATH 'sites-enabled/x.conf' must be an absolute path on the host")


def test_without_a_tree_and_no_distribution_config_is_one_line(tmp_path):
    """No TREE and no /etc/apache2/apache2.conf nor /etc/httpd/conf/httpd.conf:
    shown in a mount namespace whose /etc/apache2 is an empty directory."""
    if os.geteuid() != 0:
        fail_in_ci_else_skip("root (a mount namespace hides /etc/apache2)")
    clean = candidate(tmp_path, CLEAN)
    empty = tmp_path / "empty"
    empty.mkdir()
    script = (f"mount --bind {empty} /etc/apache2 2>/dev/null || mkdir -p /etc/apache2; "
              f"! test -e /etc/httpd/conf/httpd.conf && exec {sys.executable} -m advisor lint --isolated "
              f"--as /etc/apache2/sites-enabled/x.conf {clean}")
    result = subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True,
                            timeout=60, stdin=subprocess.DEVNULL)
    assert_one_line_error(result, f"--as needs a tree to place {clean} in, and none was named nor found at "
                                  "/etc/apache2/apache2.conf or /etc/httpd/conf/httpd.conf")


def test_overlay_places_a_new_file_where_httpd_would_read_it(tmp_path):
    """The reader's overlay alone: a PATH that does not exist yet is read in
    httpd's order among what a wildcard, a directory or a plain Include
    finds, and not where none would pick it up."""
    from advisor.config import LoadOptions, load_config
    from advisor.config.overlay import Overlay, picks_up

    (tmp_path / "sites" / "a").mkdir(parents=True)
    (tmp_path / "sites" / "b.d").mkdir()
    for name in ("sites/10-a.conf", "sites/30-c.conf", "sites/a/x.conf", "sites/b.d/y.conf"):
        (tmp_path / name).write_text(f"# {name}\n")
    main = tmp_path / "httpd.conf"
    main.write_text("IncludeOptional sites/*.conf\nInclude sites/b.d\n")
    new = tmp_path / "new.tmp"
    new.write_text("KeepAlive Off\n")
    for target, order in ((tmp_path / "sites" / "20-b.conf", ["10-a", "20-b", "30-c", "y.conf"]),
                          (tmp_path / "sites" / "b.d" / "z.conf", ["10-a", "30-c", "y.conf", "z.conf"])):
        overlay = Overlay.of(str(target), str(new))
        config = load_config(str(main), LoadOptions(overlay=overlay))
        assert overlay.replaced == [str(target)]
        assert [next(o for o in order if o in file) for file in config.files[1:]] == order
        assert config.sources[str(target)] == "KeepAlive Off\n"
    overlay = Overlay.of(str(tmp_path / "sites" / "20-b.txt"), str(new))
    load_config(str(main), LoadOptions(overlay=overlay))
    assert overlay.replaced == []
    assert picks_up("/t/*/s/*.conf", "/t/x/s/a.conf", "") and not picks_up("/t/*/s/*.conf", "/t/x/s/.a.conf", "")
    assert not picks_up("/t/*/s/*.conf", "/t/x/a.conf", "")
    assert picks_up(str(tmp_path / "sites" / "b.d"), str(tmp_path / "sites" / "b.d" / "new"), "")
    assert not picks_up("/nowhere/b.d", "/nowhere/b.d/new", "")


def test_the_hosts_program_leaves_no_directory_when_hung_up(tree, tmp_path):
    """`lint --host --as` sends advisor/commands/lint_as_host.py's program to
    the host; its copy of the tree goes when ssh hangs up or it is told to
    stop mid-test. Run here as the host would run it, with an `apache2` on
    PATH that waits (so the hang-up lands while httpd's test runs)."""
    import base64
    import glob
    import inspect
    import signal
    import time

    from advisor.commands.lint_as_host import SHIPPED
    from advisor.config import LoadOptions, load_config

    fake = tmp_path / "bin" / "apache2"
    fake.parent.mkdir()
    config = load_config(str(tree / "apache2.conf"), LoadOptions())
    request = json.dumps({"main": config.main_file, "server_root": config.server_root, "files": config.files,
                          "target": str(tree / "sites-enabled" / "shop.conf"),
                          "candidate": base64.b64encode(CLEAN.encode()).decode()})
    program = ("from __future__ import annotations\nimport base64, json, os, sys\n\n"
               + "\n\n".join(inspect.getsource(f) for f in SHIPPED)
               + "\n\nprint(json.dumps(check_on_host(json.load(sys.stdin))))\n")
    env = dict(os.environ, PATH=f"{fake.parent}:{os.environ['PATH']}", TMPDIR=str(tmp_path))
    # The third hang-up comes from the waiting `apache2` itself as it starts.
    # (In CI a hang-up once landed before the program held the child's
    # handle, and the child outlived it; run_ending_with_us holds stops
    # until then. That window is too narrow to hit here on purpose.)
    for stop, early in ((signal.SIGHUP, False), (signal.SIGTERM, False), (signal.SIGHUP, True)):
        hang_up = "kill -HUP $PPID\n" if early else ""
        fake.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/pid\n{hang_up}exec sleep 30\n")
        fake.chmod(0o755)
        (tmp_path / "pid").unlink(missing_ok=True)
        process = subprocess.Popen(["python3", "-S", "-c", program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=env)
        process.stdin.write(request.encode())
        process.stdin.close()
        deadline = time.monotonic() + 20
        while not (tmp_path / "pid").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not early:
            made = glob.glob(f"{tmp_path}/apache-advisor-validate-*")
            assert len(made) == 1 and os.stat(made[0]).st_mode & 0o777 == 0o700
            assert (Path(made[0]) / "tree1" / "sites-enabled" / "shop.conf").read_text() == CLEAN
            process.send_signal(stop)
        assert process.wait(timeout=20) == 128 + stop
        with pytest.raises(ProcessLookupError):  # the waiting `apache2` ended with it
            os.kill(int((tmp_path / "pid").read_text()), 0)
        assert not glob.glob(f"{tmp_path}/apache-advisor-validate-*")
