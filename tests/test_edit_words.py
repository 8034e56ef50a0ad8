"""The fix planner's word splitter (advisor.lint.edits._words, a regular
expression since issue 29) against a character-by-character reading of the
rule it states: the spans must be the same for any line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.lint.edits import _spans, _spans_by_words, _words

BLANKS = " \t\f\v"


def walked_words(content: str, position: int) -> list[tuple[int, int]]:
    """Quoted: from the quote to its closing quote, a backslash taking the
    next character along (no closing quote: to the end). Otherwise: up to
    the next blank."""
    spans = []
    while True:
        while position < len(content) and content[position] in BLANKS:
            position += 1
        if position >= len(content):
            return spans
        begin, quote = position, content[position] if content[position] in "\"'" else ""
        position += 1
        while position < len(content):
            if quote and content[position] == "\\" and position + 1 < len(content):
                position += 2
            elif quote and content[position] == quote:
                position += 1
                break
            elif not quote and content[position] in BLANKS:
                break
            else:
                position += 1
        spans.append((begin, position))


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=' \t\f\v"\'\\ab#\r$', max_size=16), st.integers(min_value=0, max_value=16))
def test_the_splitter_groups_words_as_the_rule_says(content, position):
    position = min(position, len(content))
    assert _words(content, position) == walked_words(content, position)


def test_a_directive_line_splits_into_its_name_and_words():
    line = '    Header set X-Note "a \\" b" # kept'
    assert [line[a:b] for a, b in _words(line, 0)] == ["Header", "set", "X-Note", '"a \\" b"', "#", "kept"]


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=' \t\f\v\r"\'\\ab#$.{}', max_size=20))
def test_the_quick_reading_of_a_plain_line_finds_the_spans_words_find(content):
    # `_spans` reads a line without quotes or '#' with one match; any line
    # must come out as the word-by-word reading has it.
    assert _spans(content) == _spans_by_words(content)
