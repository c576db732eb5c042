"""A benchmark of a thinking model at a cap the reasoning fills measures truncation, not the
model: reasoning spends max_tokens before any content, and even a trivial prompt took 48–440
reasoning tokens (docs/field-notes.md#thinking-needs-budget). Pure: the sample's records in,
one warning (naming the model family's way to turn thinking off) or None out."""

from __future__ import annotations

import json
from collections.abc import Sequence

from sparkrig.client import RequestRecord
from sparkrig.wire.reasoning_families import family_of


def truncated_thinking_warning(records: Sequence[RequestRecord]) -> str | None:
    """Set when a reply spent its whole max_tokens reasoning: finish length, reasoning, no
    content."""
    cut = [
        record
        for record in records
        if record.finish_reason == "length"
        and record.reasoning.strip()
        and not record.content.strip()
    ]
    if not cut:
        return None
    family = family_of(cut[0].model)
    off = family.thinking_off_fields()
    how = (
        f"send {json.dumps(off)} to turn thinking off"
        if off
        else f"turn thinking off (no switch is known for family {family.name})"
    )
    return (
        "replies spent the whole max_tokens reasoning (finish length, no content): a thinking "
        "model at this cap measures truncation, not decode — raise --tokens well past the "
        f"reasoning (48–440 tokens on a trivial prompt), or {how} "
        "(docs/field-notes.md#thinking-needs-budget)"
    )
