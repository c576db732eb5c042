"""docs/doctor.md stays true: it lists every check, and the field notes every check cites exist."""

from __future__ import annotations

import re
from pathlib import Path

from sparkrig.doctor.registry import checks

ROOT = Path(__file__).parent.parent.parent
DOC = (ROOT / "docs" / "doctor.md").read_text()
NOTES = (ROOT / "docs" / "field-notes.md").read_text()


def test_doc_lists_every_check_with_its_source() -> None:
    for check in checks():
        row = next((line for line in DOC.splitlines() if line.startswith(f"| `{check.name}`")), "")
        assert row, f"{check.name} is not in docs/doctor.md"
        assert check.source in row


def test_every_cited_field_note_exists() -> None:
    sections = set(re.findall(r"^#{2,3} (.+)$", NOTES, flags=re.MULTILINE))
    for check in checks():
        if check.source.startswith("docs/field-notes.md"):
            section = check.source.split("(", 1)[1].rstrip(")")
            assert section in sections, f"{check.name} cites a missing note: {section}"
