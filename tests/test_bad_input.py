"""Bad input: one clear `file:line: what is wrong` line, exit 2, no traceback,
nothing on stdout. Each case runs the installed command as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


from conftest import assert_one_line_error

CLI = [sys.executable, "-m", "advisor"]


def run_dump(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + ["dump", *args], capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL, errors="surrogateescape")


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_missing_main_file(tmp_path):
    result = run_dump(str(tmp_path / "nope.conf"))
    assert_one_line_error(result, f"{tmp_path}/nope.conf", "no such file")


def test_missing_include_points_at_including_line(tmp_path):
    main = write(tmp_path / "httpd.conf", "ServerName a\n\nInclude missing.conf\n")
    result = run_dump(str(main))
    assert_one_line_error(result, f"{main}:3:", "missing.conf")


def test_directory_without_main_file(tmp_path):
    (tmp_path / "empty").mkdir()
    result = run_dump(str(tmp_path / "empty"))
    assert_one_line_error(result, str(tmp_path / "empty"), "no apache2.conf")


def test_directory_where_a_file_was_expected(tmp_path):
    (tmp_path / "modlist").mkdir()
    main = write(tmp_path / "httpd.conf", "ServerName a\n")
    result = run_dump(str(main), "--modules-from", str(tmp_path / "modlist"))
    assert_one_line_error(result, str(tmp_path / "modlist"), "cannot read module list")


def _dump_as_nobody(main: Path) -> subprocess.CompletedProcess:
    """Run `dump` in a forked child that dropped root (root reads any file).

    The child keeps the interpreter it was forked from, so it needs no
    access to where Python is installed; it exits through the real CLI path.
    """
    import pwd

    # Import everything the command needs first: after dropping root the
    # child may not reach the directories Python itself lives in.
    from typer.testing import CliRunner

    from advisor.cli import app

    warm_up = main.parent / "warm-up.conf"
    warm_up.write_text("Timeout 5\nInclude missing.conf\n")
    CliRunner().invoke(app, ["dump", str(warm_up)])

    nobody = pwd.getpwnam("nobody")
    read_out, write_out = os.pipe()
    read_err, write_err = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 3
        try:
            os.dup2(write_out, 1)
            os.dup2(write_err, 2)
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            sys.argv = ["apache-advisor", "dump", str(main)]
            from advisor.cli import main as cli_main

            try:
                cli_main()
                code = 0
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
        except BaseException as error:  # report, never hang the parent
            os.write(2, f"child failed: {error!r}\n".encode())
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(write_out)
    os.close(write_err)
    with os.fdopen(read_out) as out, os.fdopen(read_err) as err:
        stdout, stderr = out.read(), err.read()
    _, status = os.waitpid(pid, 0)
    return subprocess.CompletedProcess([], os.waitstatus_to_exitcode(status), stdout, stderr)


def test_unreadable_file(tmp_path):
    main = write(tmp_path / "httpd.conf", "ServerName a\nInclude secret.conf\n")
    secret = write(tmp_path / "secret.conf", "Timeout 5\n")
    secret.chmod(0)
    if os.geteuid() == 0:
        for directory in [tmp_path, *tmp_path.parents]:
            directory.chmod(directory.stat().st_mode | 0o005)
            if directory == Path("/tmp"):
                break
        result = _dump_as_nobody(main)
    else:
        result = run_dump(str(main))
    assert_one_line_error(result, f"{main}:2:", "Permission denied")


def test_bytes_that_are_not_utf8_pass_through(tmp_path):
    main = write(tmp_path / "httpd.conf", b"ServerName caf\xe9.example\nServerAdmin \xff@x\n")
    result = subprocess.run(CLI + ["dump", str(main)], capture_output=True, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert b"ServerName caf\xe9.example\n" in result.stdout
    assert b"ServerAdmin \xff@x\n" in result.stdout


def test_nul_byte(tmp_path):
    main = write(tmp_path / "httpd.conf", b"ServerName a\nTimeout 5\x00 junk\n")
    assert_one_line_error(run_dump(str(main)), f"{main}:2:", "NUL byte")


def test_unclosed_section(tmp_path):
    main = write(tmp_path / "httpd.conf", "ServerName a\n<Directory /x>\n  Require all granted\n")
    assert_one_line_error(run_dump(str(main)), f"{main}:2:", "<Directory> was not closed")


def test_unclosed_section_in_false_branch(tmp_path):
    main = write(tmp_path / "httpd.conf", "<IfModule nope_module>\n<Directory /x>\n</IfModule>\n")
    assert_one_line_error(run_dump(str(main)), f"{main}:3:", "expected </Directory>")


def test_stray_closing_tag(tmp_path):
    main = write(tmp_path / "httpd.conf", "ServerName a\n</VirtualHost>\n")
    assert_one_line_error(run_dump(str(main)), f"{main}:2:", "without matching <VirtualHost>")


def test_mismatched_closing_tag(tmp_path):
    main = write(tmp_path / "httpd.conf", "<Directory /x>\nTimeout 5\n</Location>\n")
    assert_one_line_error(run_dump(str(main)), f"{main}:3:", "expected </Directory> but saw </Location>")


def test_section_cannot_close_in_another_file(tmp_path):
    write(tmp_path / "close.conf", "</Directory>\n")
    main = write(tmp_path / "httpd.conf", "<Directory /x>\nInclude close.conf\n</Directory>\n")
    assert_one_line_error(run_dump(str(main)), f"{tmp_path}/close.conf:1:", "without matching")


def test_include_cycle(tmp_path):
    write(tmp_path / "a.conf", "Include b.conf\n")
    write(tmp_path / "b.conf", "Timeout 5\nInclude a.conf\n")
    main = write(tmp_path / "httpd.conf", "Include a.conf\n")
    result = run_dump(str(main))
    assert_one_line_error(result, f"{tmp_path}/b.conf:2:", "include cycle")
    assert "a.conf -> " in result.stderr and "b.conf -> " in result.stderr


def run_lint_saving(main: Path, cache: Path) -> subprocess.CompletedProcess:
    """`lint` with its result cache on: the reader then stats each file as it
    opens it (for the cache), where dump and --no-cache look up a file's
    identity only when it includes another."""
    environment = {**os.environ, "APACHE_ADVISOR_CACHE_DIR": str(cache)}
    environment.pop("APACHE_ADVISOR_NO_CACHE", None)
    return subprocess.run(CLI + ["lint", "--isolated", str(main)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, errors="surrogateescape", env=environment)


def test_an_include_cycle_through_a_link_is_found_either_way(tmp_path):
    # The link names the same file as a.conf: a cycle by device and inode.
    write(tmp_path / "a.conf", "Timeout 5\nInclude b.conf\n")
    write(tmp_path / "b.conf", "KeepAlive On\nInclude link.conf\n")
    os.symlink(tmp_path / "a.conf", tmp_path / "link.conf")
    main = write(tmp_path / "httpd.conf", "ServerName a\nInclude a.conf\n")
    for result in (run_dump(str(main)), run_lint_saving(main, tmp_path / "cache")):
        assert_one_line_error(result, f"{tmp_path}/b.conf:2:", "include cycle")
        assert f"{tmp_path}/a.conf -> {tmp_path}/b.conf -> {tmp_path}/link.conf" in result.stderr


def test_a_file_that_includes_nothing_may_be_read_twice(tmp_path):
    # Not a cycle: the same leaf file from two places (httpd reads it twice).
    write(tmp_path / "leaf.conf", "Timeout 5\n")
    write(tmp_path / "a.conf", "Include leaf.conf\n")
    main = write(tmp_path / "httpd.conf", "Include leaf.conf\nInclude a.conf\n")
    result = run_dump(str(main))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("Timeout 5") == 2


def test_a_file_larger_than_one_read_is_read_whole(tmp_path):
    hosts = "".join(f"<VirtualHost *:80>\n    ServerName site{n}.test\n</VirtualHost>\n" for n in range(4000))
    assert len(hosts) > 3 * 65536
    main = write(tmp_path / "httpd.conf", hosts + "ServerName last.test\n")
    dumped = run_dump(str(main))
    assert dumped.returncode == 0, dumped.stderr
    assert "ServerName site3999.test" in dumped.stdout and "ServerName last.test" in dumped.stdout
    linted = run_lint_saving(main, tmp_path / "cache")
    assert linted.returncode in (0, 1), linted.stderr


def test_a_character_cut_by_the_end_of_a_read_comes_out_whole(tmp_path):
    # A file is read 65,536 bytes at a time: a two-byte character straddles
    # the first boundary, and a byte that is not UTF-8 ends the second read;
    # both come out of the dump as they went in.
    boundary = 1 << 16
    name = "ServerName \u00e9t\u00e9.test\n".encode()
    raw = b"# " + b"x" * (boundary - 1 - len(b"ServerName ") - 3) + b"\n" + name
    assert raw.index("\u00e9".encode()) == boundary - 1
    admin = b"ServerAdmin "
    raw += b"# " + b"y" * (2 * boundary - 1 - len(admin) - len(raw) - 3) + b"\n" + admin + b"\xff@a.test\n"
    assert raw.index(b"\xff") == 2 * boundary - 1
    main = write(tmp_path / "httpd.conf", raw)
    result = subprocess.run(CLI + ["dump", str(main)], capture_output=True, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert "ServerName \u00e9t\u00e9.test".encode() in result.stdout
    assert b"ServerAdmin \xff@a.test" in result.stdout


def test_include_depth_over_limit(tmp_path):
    # A chain of 140 distinct files: no cycle, just deeper than httpd's 128.
    for level in range(140):
        write(tmp_path / f"level{level}.conf", f"Include level{level + 1}.conf\n")
    write(tmp_path / "level140.conf", "Timeout 5\n")
    main = write(tmp_path / "httpd.conf", "Include level0.conf\n")
    assert_one_line_error(run_dump(str(main)), ".conf:1:", "include depth over 128")


def test_glob_that_matches_nothing(tmp_path):
    (tmp_path / "conf.d").mkdir()
    main = write(tmp_path / "httpd.conf", "ServerName a\nInclude conf.d/*.conf\n")
    assert_one_line_error(run_dump(str(main)), f"{main}:2:", "no matches for the wildcard '*.conf'")


def test_optional_glob_that_matches_nothing_is_fine(tmp_path):
    main = write(tmp_path / "httpd.conf", "IncludeOptional conf.d/*.conf\nIncludeOptional nope.conf\nTimeout 5\n")
    result = run_dump(str(main))
    assert result.returncode == 0 and "Timeout 5" in result.stdout


def test_line_longer_than_httpd_accepts(tmp_path):
    main = tmp_path / "httpd.conf"
    with open(main, "w") as handle:
        handle.write("ServerName a\nAddType text/plain")
        chunk = " .x" * 100_000
        for _ in range(57):  # 17.1 million characters, past httpd's 16 MiB
            handle.write(chunk)
        handle.write("\n")
    assert_one_line_error(run_dump(str(main)), f"{main}:2:", "line too long")


def test_section_without_closing_bracket(tmp_path):
    main = write(tmp_path / "httpd.conf", "<Directory /x\nTimeout 5\n</Directory>\n")
    assert_one_line_error(run_dump(str(main)), f"{main}:1:", "missing closing '>'")


def test_bad_define_option(tmp_path):
    main = write(tmp_path / "httpd.conf", "Timeout 5\n")
    result = run_dump(str(main), "--define", "=x")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--define" in result.stderr


def test_bad_apache_version(tmp_path):
    main = write(tmp_path / "httpd.conf", "Timeout 5\n")
    result = run_dump(str(main), "--apache-version", "banana")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "not an httpd version" in result.stderr
