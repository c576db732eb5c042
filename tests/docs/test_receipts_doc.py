"""docs/receipts.md: its tables are what the receipt models write (regenerated, compared), and
every field they show says what it holds, in a reader's words rather than Python's."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from sparkrig.report.receipt_kinds import RECEIPT_MODELS
from tests.docs.model_reference import model_reference

_PYTHON_WORDS = re.compile(r"\b(None|True|False)\b")


def shown_fields() -> list[tuple[str, str]]:
    """Every field the page's tables show, as `kind: key`, with its description."""
    return [
        (f"{kind}: {key}", description)
        for kind, model in RECEIPT_MODELS.items()
        for key, _, description in model_reference().receipt_rows(model)
    ]


def test_the_receipt_tables_are_current() -> None:
    reference = model_reference()
    text = reference.RECEIPTS.path.read_text(encoding="utf-8")
    assert reference.updated(reference.RECEIPTS, text) == text, (
        "docs/receipts.md is stale: run `make docs`"
    )


def test_the_page_has_a_table_for_every_receipt_kind() -> None:
    text = model_reference().RECEIPTS.path.read_text(encoding="utf-8")
    assert [kind for kind in RECEIPT_MODELS if f"### `{kind}`" not in text] == []


def test_every_field_shown_is_described() -> None:
    undescribed = [key for key, description in shown_fields() if not description.strip()]
    assert undescribed == [], "add Field(description=...) to: " + ", ".join(undescribed)


def test_no_description_speaks_python() -> None:
    python = [key for key, description in shown_fields() if _PYTHON_WORDS.search(description)]
    assert python == [], (
        "say unset, absent, yes or no instead of None, True or False in: " + ", ".join(python)
    )


def test_the_tables_go_two_levels_deep() -> None:
    keys = {key for key, _ in shown_fields()}
    assert "sparkrig-bench: points[].summary" in keys
    assert not any(key.startswith("sparkrig-bench: points[].summary.") for key in keys)


def test_a_field_without_a_description_is_named_down_to_the_second_level() -> None:
    class Deep(BaseModel):
        untold: int

    class Inner(BaseModel):
        told: int = Field(description="told")
        untold: int
        deep: Deep = Field(description="below the tables")

    class Outer(BaseModel):
        inner: list[Inner]

    rows = model_reference().rows(Outer, depth=2)
    assert [key for key, _, description in rows if not description] == ["inner", "inner[].untold"]
