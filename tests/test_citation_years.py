"""Every citation of a seed study gives the year it was published (issue 9).

Arlitt & Williamson's "Understanding Web server configuration issues"
appeared in Software: Practice and Experience 34(2) in 2004; a citation with
another year sends a reader to a paper that does not exist.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CITED = re.compile(r"Arlitt\s+(?:&|and)\s+Williamson(?:'s)?,?\s*\(?\s*(\d{4})")


def citation_years(root: Path = REPO) -> list[tuple[str, int, str]]:
    """(file, line, year) of every year-bearing Arlitt & Williamson citation in code and docs."""
    found = []
    for folder in ("advisor", "rules", "tuner", "docs", "bench"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".py", ".md", ".json") or not path.is_file():
                continue
            text = path.read_text(errors="replace")
            for match in CITED.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append((str(path.relative_to(root)), line, match.group(1)))
    readme = root / "README.md"
    if readme.exists():
        text = readme.read_text()
        found += [("README.md", text.count("\n", 0, m.start()) + 1, m.group(1)) for m in CITED.finditer(text)]
    return found


def test_the_pattern_finds_each_citation_form():
    text = ("Arlitt & Williamson (2005, section 4.4.2) ... Arlitt & Williamson's (2005, section 4) ..."
            " Arlitt & Williamson 2004, sec. 5.1.2 ... Arlitt and Williamson (2004)")
    assert [m.group(1) for m in CITED.finditer(text)] == ["2005", "2005", "2004", "2004"]


def test_arlitt_and_williamson_is_cited_as_2004_everywhere():
    found = citation_years()
    assert len(found) >= 10, "the scan should see the many citations in rules and docs"
    wrong = [f"{file}:{line}: {year}" for file, line, year in found if year != "2004"]
    assert not wrong, "Arlitt & Williamson is 2004 (SP&E 34(2)): " + ", ".join(wrong)
