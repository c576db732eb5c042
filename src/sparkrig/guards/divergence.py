"""Where two temperature-0 replies part, and whether the reference was near a tie there."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from sparkrig import defaults
from sparkrig.client import RequestRecord

DivergenceKind = Literal["identical", "near_tie", "defect"]


class Divergence(BaseModel):
    kind: DivergenceKind
    char_offset: int | None = None
    token_index: int | None = None
    margin_nats: float | None = None  # reference: chosen minus runner-up logprob at the flip
    reference_excerpt: str = ""
    candidate_excerpt: str = ""


def first_difference(a: str, b: str) -> int | None:
    """Index of the first differing character; None when the strings are equal."""
    if a == b:
        return None
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))


def token_at(record: RequestRecord, char_offset: int) -> int | None:
    """Index of the logprob token whose text covers `char_offset` of the content."""
    position = 0
    for index, token in enumerate(record.logprobs):
        position += len(token.token)
        if position > char_offset:
            return index
    return None


def margin_at(record: RequestRecord, token_index: int) -> float | None:
    """Chosen logprob minus the best other candidate's, at one position; None without top-2."""
    if token_index >= len(record.logprobs):
        return None
    token = record.logprobs[token_index]
    others = [top.logprob for top in token.top if top.token != token.token]
    if token.logprob is None or not others:
        return None
    return token.logprob - max(others)


def first_divergence(
    reference: RequestRecord,
    candidate: RequestRecord,
    near_tie_nats: float = defaults.CHECK_NEAR_TIE_NATS,
) -> Divergence:
    """Compare content exactly; at the first difference, classify by the reference's margin.

    A flip where the reference's top two were within `near_tie_nats` is arithmetic noise of a
    batched kernel; a flip where the reference was sure is a defect. With no logprobs to tell,
    it is a defect.
    """
    offset = first_difference(reference.content, candidate.content)
    if offset is None:
        return Divergence(kind="identical")
    index = token_at(reference, offset)
    margin = margin_at(reference, index) if index is not None else None
    kind: DivergenceKind = (
        "near_tie" if margin is not None and margin <= near_tie_nats else "defect"
    )
    start = max(0, offset - 20)
    return Divergence(
        kind=kind, char_offset=offset, token_index=index, margin_nats=margin,
        reference_excerpt=reference.content[start : offset + 40],
        candidate_excerpt=candidate.content[start : offset + 40],
    )  # fmt: skip
