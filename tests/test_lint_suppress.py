"""Suppression comments: line, section and file scope; unused and invalid ones."""

from __future__ import annotations

from pathlib import Path

from advisor.lint.suppress import parse_file
from lint_helpers import lint_json

HEAD = ("LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so\n"
        "LoadModule reqtimeout_module /usr/lib/apache2/modules/mod_reqtimeout.so\n"
        "ServerName s.test\nServerTokens Prod\nTraceEnable Off\nEnableSendfile On\n")


def lint_text(tmp_path: Path, body: str, *args: str) -> list[tuple[str, int]]:
    path = tmp_path / "httpd.conf"
    path.write_text(body)
    # HEAD writes no access log; S512 would flag every body, and these tests
    # are about the comments, not about logging.
    return sorted((f["code"], f["line"]) for f in lint_json(str(path), "--ignore", "S512", *args))


def test_comment_before_a_directive_silences_only_that_directive(tmp_path):
    body = HEAD + ("# apache-advisor: disable=R301 -- slow uploads, ticket 42\n"
                   "Timeout 300\n"
                   "<VirtualHost *:80>\n    ServerName a\n    Timeout 400\n</VirtualHost>\n")
    assert lint_text(tmp_path, body) == [("R301", 11)]


def test_stacked_comments_and_several_codes(tmp_path):
    body = HEAD + ("# apache-advisor: disable=R301,P102 -- both known\n"
                   "# a plain comment between is fine\n"
                   "KeepAlive Off\n"
                   "Timeout 300\n")
    # Only the next directive (line 9) is covered: R301 on line 10 stays, and
    # the R301 part of the comment is unused on line 9.
    assert lint_text(tmp_path, body) == [("A001", 7), ("R301", 10)]


def test_comment_before_a_section_covers_the_whole_section(tmp_path):
    body = HEAD + ("# apache-advisor: disable=P102,R301 -- legacy host, retiring in May\n"
                   "<VirtualHost *:80>\n    ServerName a\n    KeepAlive Off\n    Timeout 300\n</VirtualHost>\n"
                   "<VirtualHost *:80>\n    ServerName b\n    KeepAlive Off\n</VirtualHost>\n")
    assert lint_text(tmp_path, body) == [("P102", 15)]


def test_top_of_file_comment_followed_by_blank_line_covers_the_file(tmp_path):
    body = ("# Site config\n# apache-advisor: disable=R301 -- whole file\n\n" + HEAD +
            "Timeout 300\n<VirtualHost *:80>\n    ServerName a\n    Timeout 301\n</VirtualHost>\n")
    assert lint_text(tmp_path, body) == []


def test_file_scope_covers_findings_on_defaults_at_line_one(tmp_path):
    body = ("# apache-advisor: disable=S501,S503 -- set by the fronting proxy\n\n"
            "LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so\n"
            "LoadModule reqtimeout_module /usr/lib/apache2/modules/mod_reqtimeout.so\n"
            "EnableSendfile On\n")
    assert lint_text(tmp_path, body) == []


def test_disable_file_works_anywhere(tmp_path):
    body = HEAD + "Timeout 300\nKeepAlive Off\n# apache-advisor: disable-file=P102 -- lab box\n"
    assert lint_text(tmp_path, body) == [("R301", 7)]


def test_disable_all(tmp_path):
    body = HEAD + "# apache-advisor: disable=all -- vendor file\nTimeout 300\n"
    assert lint_text(tmp_path, body) == []
    unused = HEAD + "# apache-advisor: disable=all -- vendor file\nTimeout 30\n"
    assert lint_text(tmp_path, unused) == [("A001", 7)]


def test_suppression_in_an_included_file(tmp_path):
    (tmp_path / "site.conf").write_text("# apache-advisor: disable=P102 -- load balancer\nKeepAlive Off\n")
    body = HEAD + "Include site.conf\n"
    assert lint_text(tmp_path, body) == []


def test_unused_suppression_of_a_code_not_selected_is_not_reported(tmp_path):
    body = HEAD + "# apache-advisor: disable=P102 -- x\nKeepAlive On\n"
    assert lint_text(tmp_path, body) == [("A001", 7)]
    assert lint_text(tmp_path, body, "--select", "R,A") == []
    assert lint_text(tmp_path, body, "--ignore", "A001") == []


def test_invalid_suppressions(tmp_path):
    body = HEAD + ("# apache-advisor: disable=P1O1 -- letter O\nTimeout 30\n"
                   "# apache-advisor: enable=P101\nTimeout 31\n"
                   "#apache-advisor:disable=\nTimeout 32\n"
                   "# Written for apache-advisor's corpus: prose, not a suppression\n")
    assert lint_text(tmp_path, body) == [("A002", 7), ("A002", 9), ("A002", 11), ("E406", 8),
                                         ("E406", 10)]


def test_parse_file_scopes():
    text = ("# apache-advisor: disable=P101 -- file\n\nA 1\n"
            "# apache-advisor: disable=P102\n<S>\nB 2\n</S>\n"
            "# apache-advisor: disable=P103 -- lost\n\nC 3\n")
    parsed = parse_file("f.conf", text, {"P101", "P102", "P103"}, {5: 7})
    scopes = {(s.codes, s.whole_file, s.start, s.end) for s in parsed.suppressions}
    assert scopes == {(("P101",), True, 0, 0), (("P102",), False, 5, 7)}
    assert [(p.line, "applies to nothing" in p.message) for p in parsed.problems] == [(8, True)]
    reasons = {s.codes: s.reason for s in parsed.suppressions}
    assert reasons == {("P101",): "file", ("P102",): None}


def test_a_dead_line_is_silenced_by_a_comment_before_the_line_that_overrides_it(tmp_path):
    """E406 stands on the dead line, in the admin's file; a drop-in read last
    that overrides on purpose says so before its own line."""
    dropin = tmp_path / "tuned.conf"
    dropin.write_text("# apache-advisor: disable=E406 -- overrides the pool on purpose, tune session\n"
                      "KeepAliveTimeout 3\n"
                      "MaxKeepAliveRequests 200\n")
    body = HEAD + ("KeepAliveTimeout 15\nMaxKeepAliveRequests 50\n"
                   f'Include "{dropin}"\n')
    found = lint_text(tmp_path, body)
    # KeepAliveTimeout's dead line (7) is silenced by the comment before the
    # drop-in's line 2; MaxKeepAliveRequests (8) has no such comment.
    assert ("E406", 7) not in found and ("E406", 8) in found
    assert not any(code == "A001" for code, _ in found)  # the comment was used
    # Without the comment the finding is back: the comment did it.
    dropin.write_text("KeepAliveTimeout 3\nMaxKeepAliveRequests 200\n")
    assert ("E406", 7) in lint_text(tmp_path, body)
