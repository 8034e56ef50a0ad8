"""Read configuration text the way httpd's own reader does.

This follows httpd 2.4's `ap_cfg_getline` (line continuation, trimming),
`ap_resolve_env` (`${VAR}` expansion over the whole line) and
`ap_getword_conf` (splitting into words with quotes and backslashes).

Why not apacheconfig: it treats `#` after a directive as a comment (httpd
passes it on as an argument), it folds the configuration into a dictionary
that loses the order of different directives, it does not report where a
directive came from, and its PLY tables make it ~25 times slower than httpd
on a large tree. httpd's own rules are short enough to follow exactly.
"""

from __future__ import annotations

import re
from typing import Callable

from advisor.errors import ConfigError

# httpd reads configuration lines into a buffer of at most VARBUF_MAX_LEN
# (16 MiB) and fails with "Line too long" past it.
MAX_LINE_LENGTH = 16 * 1024 * 1024 - 1

_WHITESPACE = " \t\n\r\f\v"


# A logical line: (text after continuation and trimming, first physical line,
# last physical line). httpd reports the last one. A tuple because a large
# tree has tens of thousands of them.
LogicalLine = tuple[str, int, int]
# A line a macro expansion produced: (text, first line, last line, file of the
# macro body, (httpd's pseudo file name for the expansion, line within it)).
MacroLine = tuple[str, int, int, str, tuple[str, int]]

# Characters Python's str.split() treats as blanks but httpd's apr_isspace
# does not: where a file has none, the fast str.split() splits like httpd.
_NOT_HTTPD_BLANKS = re.compile("[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


def splits_like_httpd(text: str) -> bool:
    """True when str.split() on this text splits exactly where httpd would."""
    if text.isascii():
        # In ASCII only the four separator controls differ; `in` is a fast scan.
        return not ("\x1c" in text or "\x1d" in text or "\x1e" in text or "\x1f" in text)
    return _NOT_HTTPD_BLANKS.search(text) is None


def decode(data: bytes) -> str:
    """httpd reads bytes, not text: keep bytes that are not UTF-8 as they are
    (surrogate escapes) so they round-trip to the output unchanged."""
    return data.decode("utf-8", errors="surrogateescape")


def _nul_error(text: str, path: str) -> ConfigError:
    line = text.count("\n", 0, text.index("\0")) + 1
    return ConfigError("NUL byte in configuration line", path, line,
                       "httpd silently drops the rest of such a line; remove the byte")


def logical_lines(text: str, path: str, keep_blank: bool = False, first_line: int = 1) -> list[LogicalLine]:
    """The non-empty, non-comment lines of a file as httpd sees them.

    A backslash right before the end of a physical line joins the next line
    (the backslash goes, the next line's leading blanks stay). This happens
    before comments are recognised, so a comment ending in a backslash
    swallows the following line, exactly as in httpd.
    """
    if "\0" in text:
        raise _nul_error(text, path)
    if ("\\" not in text or ("\\\n" not in text and "\\\r\n" not in text)) and not keep_blank \
            and len(text) <= MAX_LINE_LENGTH:
        # No continuation anywhere (the common case): one line per line.
        return [
            (line, number, number)
            for number, piece in enumerate(text.split("\n"), 1)
            if (line := piece.strip(_WHITESPACE)) and line[0] != "#"
        ]
    physical = text.split("\n")
    # A file that ends with a newline yields a last empty piece: not a line.
    last_has_newline = len(physical) > 1 and physical[-1] == ""
    if last_has_newline:
        physical.pop()
    count = len(physical)
    long_text = len(text) > MAX_LINE_LENGTH
    out: list[LogicalLine] = []
    append = out.append
    index = 0
    offset = first_line - 1
    while index < count:
        piece = physical[index]
        index += 1
        tail = piece[-2:]
        if tail and (tail[-1] == "\\" or tail == "\\\r") and (index < count or last_has_newline):
            start = index
            parts = [piece[: -1 if tail[-1] == "\\" else -2]]
            while True:
                if index >= count:
                    # httpd counts the line it tried to read at the end of
                    # the file: the directive ends one line further down.
                    index += 1
                    break
                piece = physical[index]
                index += 1
                tail = piece[-2:]
                if tail and (tail[-1] == "\\" or tail == "\\\r") and (index < count or last_has_newline):
                    parts.append(piece[: -1 if tail[-1] == "\\" else -2])
                    continue
                parts.append(piece)
                break
            line = "".join(parts)
        else:
            start = index
            line = piece
        if long_text and len(line) > MAX_LINE_LENGTH:
            raise ConfigError(
                f"line too long ({len(line)} characters; httpd's limit is {MAX_LINE_LENGTH})",
                path,
                index,
                "httpd refuses to start with such a line; split it with '\\' continuations",
            )
        line = line.strip(_WHITESPACE)
        if line and line[0] != "#":
            append((line, start + offset, index + offset))
        elif keep_blank and not line:
            append((line, start + offset, index + offset))
    return out


def resolve_env(line: str, lookup: Callable[[str], str | None], undefined: list[str] | None = None) -> str:
    """Expand `${NAME}` the way httpd's ap_resolve_env does: from Define'd
    variables, then the environment; an undefined name stays as written."""
    if "${" not in line:
        return line
    out: list[str] = []
    pos = 0
    length = len(line)
    while pos < length:
        start = line.find("${", pos)
        if start < 0:
            break
        end = line.find("}", start + 2)
        if end < 0:
            break
        name = line[start + 2 : end]
        value = lookup(name)
        if value is None:
            if undefined is not None:
                undefined.append(name)
            out.append(line[pos : end + 1])
        else:
            out.append(line[pos:start])
            out.append(value)
        pos = end + 1
    out.append(line[pos:])
    return "".join(out)


def _unescape(word: str, quote: str) -> str:
    # httpd's substring_conf: a backslash escapes another backslash, and
    # inside quotes also the quote character; any other backslash stays.
    if "\\" not in word:
        return word
    out: list[str] = []
    i = 0
    n = len(word)
    while i < n:
        ch = word[i]
        if ch == "\\" and i + 1 < n and (word[i + 1] == "\\" or (quote and word[i + 1] == quote)):
            out.append(word[i + 1])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def next_word(line: str, pos: int = 0) -> tuple[str, int]:
    """One word from `pos` (ap_getword_conf): returns the word and the
    position of the next word (trailing blanks skipped)."""
    n = len(line)
    while pos < n and line[pos] in _WHITESPACE:
        pos += 1
    if pos >= n:
        return "", n
    quote = line[pos]
    if quote == '"' or quote == "'":
        end = pos + 1
        while end < n and line[end] != quote:
            if line[end] == "\\" and end + 1 < n and line[end + 1] in (quote, "\\"):
                end += 2
            else:
                end += 1
        word = _unescape(line[pos + 1 : end], quote)
        if end < n:  # skip the closing quote
            end += 1
    else:
        end = pos
        while end < n and line[end] not in _WHITESPACE:
            end += 1
        word = _unescape(line[pos:end], "")
    while end < n and line[end] in _WHITESPACE:
        end += 1
    return word, end


# One word of ap_getword_conf in a text without backslashes: a quoted word
# runs to its closing quote (or the end), any other word to the next blank.
# An empty quoted word matches no group and gives "" all the same.
_PLAIN_WORD = re.compile(r'"([^"]*)"?|\'([^\']*)\'?|(\S+)')


def split_words(text: str, plain: bool | None = None) -> list[str]:
    """All words of an argument string, as httpd's directive handlers see them.

    `plain` says the text holds no blank that Python splits on and httpd
    does not (see splits_like_httpd); None: find out."""
    if "\\" not in text:
        if plain is None:
            plain = splits_like_httpd(text)
        if plain:
            if '"' not in text and "'" not in text:
                return text.split()
            # Quotes without backslashes: nothing to unescape, and \s (and
            # strip's blank) is httpd's blank in a plain text.
            return [double or single or bare for double, single, bare in _PLAIN_WORD.findall(text.strip())]
    text = text.strip(_WHITESPACE)
    words: list[str] = []
    pos = 0
    n = len(text)
    while pos < n:
        word, pos = next_word(text, pos)
        words.append(word)
    return words
