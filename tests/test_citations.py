"""What docs/evidence.md and the rules say a study found is what the study
says (issue 10, item 9). Each check states the claim in our words and, when
the seed texts are at hand (../shared/seeds: tests/shared_data.py), reads the
passage it rests on."""

from __future__ import annotations

import re

from advisor.rules import find_rule
from conftest import REPO
from shared_data import seed_text

EVIDENCE = (REPO / "docs" / "evidence.md").read_text()


def one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def rule_text(code: str) -> str:
    rule = find_rule(code)
    return one_line(" ".join((rule.doc.what, rule.doc.why, rule.doc.evidence)))


def test_hu_nanda_yang_implemented_seven_of_eight():
    text = one_line(EVIDENCE)
    assert not re.search(r"eight server-side changes together", text)
    assert re.search(r"proposed eight .{0,60}implemented seven", text), "say 8 proposed, 7 implemented"
    assert re.search(r"seven together raised throughput by 61 %", text)


def test_hu_nanda_yang_seed_says_so():
    text = seed_text("002")
    assert "proposed 8 techniques" in text and "all but one" in text and "by 61%" in text


def test_arlitt_baseline_had_no_log_because_the_authors_turned_it_off():
    text = one_line(EVIDENCE)
    defaults = re.search(r"With httpd's default[^)]*\)", text).group(0)
    assert "log" not in defaults, defaults  # not listed among httpd's defaults
    assert re.search(r"authors turned logging off.{0,80}5\.1\.2", text)
    source = seed_text("000")
    assert "This experiment has access logging turned off" in source
    assert "we leave the logging of client requests disabled" in source


def test_kegel_memory_figures_are_his_own_estimate():
    for text in (one_line(EVIDENCE), rule_text("C201")):
        assert "sizing rule" not in text
        assert re.search(r"8 MB.{0,120}256 KB.{0,80}64 KB", text)
        assert "suspect" in text and "not a rule of the time" in text
    assert "I suspect under Linux it is something like 8MB for the OS" in seed_text("003")


def test_c202_marks_its_inference_and_says_where_k_comes_from():
    why = one_line(find_rule("C202").doc.why)
    assert "rises as K shrinks" not in why and "fitted" not in why
    assert "sec. III.C, Table 2" in why and "earlier study" in why
    assert "our reading" in why
    source = seed_text("004")
    assert "no new parameters have been obtained" in source
    assert re.search(r"\\hat\{K\}\s+208\s+286\s+215\s+298", source)
    assert "rises as K" not in source and "K shrinks" not in source


def test_andersson_parameters_are_not_called_fitted_in_that_paper():
    text = one_line(EVIDENCE)
    assert "Fitted to measurements" not in text
    assert re.search(r"not fitted in this paper", text) and "Table 2" in text
    assert "fitted" not in rule_text("R302")


def test_p102_says_about_2_2_times_as_the_figures_give():
    text = rule_text("P102")
    assert "+220 %" not in text
    assert "about 2.2 times" in text
    source = seed_text("000")
    assert "7,300 responses per second" in source and "16,000 per second" in source
    assert round(16_000 / 7_300, 1) == 2.2
