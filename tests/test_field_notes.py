"""Citations of the field reports go through docs/field-notes.md.

The reports themselves are not in this repository, so code, tests and docs cite the note that
states a fact (`docs/field-notes.md#anchor`, or `field notes: anchor` in a comment), never a
report's number. Every anchor cited must exist as a `### anchor` heading.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTES = ROOT / "docs" / "field-notes.md"
SCANNED = ("src", "tests", "docs", "benchmarks", "examples", "README.md")
SKIPPED = (
    NOTES,
    Path(__file__).resolve(),
)
REPORT_NUMBER = re.compile(r"(?i)\bseed[ _]?0\d\d|field report 0\d\d")
# `field-notes.md#anchor` (a link or a plain path) and `field notes: anchor` (code comments).
CITED_ANCHOR = re.compile(
    r"field-notes\.md#([a-z0-9][a-z0-9-]*)|field notes:\s+([a-z0-9][a-z0-9-]*)"
)
HEADING = re.compile(r"^### (\S+)\s*$", re.MULTILINE)


def _files() -> list[Path]:
    found: list[Path] = []
    for name in SCANNED:
        top = ROOT / name
        paths = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in paths:
            if any(path == skip or skip in path.parents for skip in SKIPPED):
                continue
            if "__pycache__" in path.parts or ".egg-info" in str(path):
                continue
            found.append(path)
    return found


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""  # binary fixtures cite nothing


def test_no_file_cites_a_report_by_number() -> None:
    hits = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}: {match.group()}"
        for path in _files()
        for text in [_text(path)]
        for match in REPORT_NUMBER.finditer(text)
    ]
    assert not hits, "cite docs/field-notes.md#anchor instead:\n" + "\n".join(hits)


def test_every_cited_anchor_is_a_note() -> None:
    anchors = set(HEADING.findall(NOTES.read_text(encoding="utf-8")))
    missing = [
        f"{path.relative_to(ROOT)}: {match.group(1) or match.group(2)}"
        for path in _files()
        for match in CITED_ANCHOR.finditer(_text(path))
        if (match.group(1) or match.group(2)) not in anchors
    ]
    assert not missing, "no `### anchor` in docs/field-notes.md for:\n" + "\n".join(missing)


def test_the_notes_cite_their_sources_by_file_name() -> None:
    notes = NOTES.read_text(encoding="utf-8")
    assert re.findall(r"0\d\d_[0-9a-f]{16}\.txt", notes)


def test_the_patterns_catch_what_they_exist_for() -> None:
    """Both checks can fail: a report number and an unknown anchor are found, and the repository
    has citations for the anchor check to look at."""
    assert REPORT_NUMBER.search("as Seed 000 finding 12 showed")
    assert REPORT_NUMBER.search("field report 004 says")
    assert not REPORT_NUMBER.search("docs/field-notes.md#kv-block-256")
    cited = [
        m.group(1) or m.group(2)
        for m in CITED_ANCHOR.finditer(
            "see docs/field-notes.md#no-such-note and (field notes: another-missing)"
        )
    ]
    assert cited == ["no-such-note", "another-missing"]
    assert not set(cited) & set(HEADING.findall(NOTES.read_text(encoding="utf-8")))
    assert sum(len(CITED_ANCHOR.findall(_text(path))) for path in _files()) > 50
