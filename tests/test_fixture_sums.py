"""Every SHA256SUMS under tests/fixtures holds: a captured or replayed fixture that is edited by
hand (or re-captured without its sums) fails here, as the fixture READMEs promise."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SUMS = sorted(FIXTURES.rglob("SHA256SUMS"))


def test_there_are_sums_to_check() -> None:
    assert len(SUMS) >= 2


@pytest.mark.parametrize("sums", SUMS, ids=lambda p: str(p.parent.relative_to(FIXTURES)))
def test_each_listed_file_has_its_sum(sums: Path) -> None:
    lines = [line.split(maxsplit=1) for line in sums.read_text().splitlines() if line.strip()]
    assert lines
    for digest, name in lines:
        path = sums.parent / name.lstrip("*")
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, name
