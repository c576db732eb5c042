"""Where two temperature-0 replies part, and whether the reference was near a tie there."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

from pydantic import BaseModel, Field

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
    reference_top: list[tuple[str, float]] = Field(
        default_factory=list, description="the reference's candidates where the texts part"
    )
    candidate_top: list[tuple[str, float]] = Field(
        default_factory=list, description="the candidate's candidates there"
    )


def reference_problem(records: Sequence[RequestRecord], what: str = "reference") -> str | None:
    """Why these replies cannot serve as a reference to compare against, or None.

    A failed request has no text; an empty reply (no content, reasoning or tool call) agrees
    with every other empty reply, so twelve "identical" empty replies would prove nothing."""
    for index, record in enumerate(records, start=1):
        if record.error is not None:
            return f"{what} request {index} failed: {record.error.message}"
        if not (record.content or record.reasoning or record.tool_calls):
            return (
                f"{what} reply {index} is empty ({len(record.events)} events, finish_reason "
                f"{record.finish_reason or 'not sent'}): empty replies cannot show agreement — "
                "check the server answers this prompt (its chat template, its stop strings)"
            )
    return None


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


def token_start(record: RequestRecord, char_offset: int) -> tuple[int, int] | None:
    """(index, first character) of the logprob token that covers `char_offset`."""
    position = 0
    for index, token in enumerate(record.logprobs):
        if position + len(token.token) > char_offset:
            return index, position
        position += len(token.token)
    return None


def leading_pair_swapped(
    reference: RequestRecord, candidate: RequestRecord, char_offset: int
) -> bool:
    """Where the texts part, each reply chose a token the other had among its alternatives: the
    two candidates traded places, as a change of arithmetic does. Tokens are matched by where
    they start in the text, since the same text can come as different tokens. A token from
    nowhere (another request's text, a corrupted block) is in neither list."""
    ours_at, theirs_at = token_start(reference, char_offset), token_start(candidate, char_offset)
    if ours_at is None or theirs_at is None:
        return _stopped_at_a_tie(reference, candidate, char_offset)
    if ours_at[1] != theirs_at[1]:
        return False
    ours, theirs = reference.logprobs[ours_at[0]], candidate.logprobs[theirs_at[0]]
    if ours.token == theirs.token:
        return False
    return theirs.token in {t.token for t in ours.top} and ours.token in {
        t.token for t in theirs.top
    }


END_OF_TEXT: Final = ""  # how llama.cpp and vLLM print the end-of-generation token


def _stopped_at_a_tie(reference: RequestRecord, candidate: RequestRecord, char_offset: int) -> bool:
    """One reply ended where the other went on: a near-tie when the one that went on had ending
    there among its alternatives."""
    for record in (reference, candidate):
        found = token_start(record, char_offset)
        if found is None or found[1] != char_offset:
            continue
        token = record.logprobs[found[0]]
        return any(top.token == END_OF_TEXT for top in token.top)
    return False


def first_divergence(
    reference: RequestRecord,
    candidate: RequestRecord,
    near_tie_nats: float = defaults.CHECK_NEAR_TIE_NATS,
) -> Divergence:
    """Compare content exactly; at the first difference, classify it.

    A near-tie flip: the two replies swapped the reference's top two tokens there, and the
    reference led by at most `near_tie_nats` — the arithmetic of another batch shape or cache
    state. Anything else is a defect: a confident token replaced, or a token neither reply
    considered. With no logprobs to tell, it is a defect.
    """
    offset = first_difference(reference.content, candidate.content)
    if offset is None:
        return Divergence(kind="identical")
    index = token_at(reference, offset)
    margin = margin_at(reference, index) if index is not None else None
    if margin is None and index is None:  # the reference ended here: judge from the other
        found = token_start(candidate, offset)
        margin = margin_at(candidate, found[0]) if found is not None else None
    near_tie = (
        margin is not None
        and margin <= near_tie_nats
        and leading_pair_swapped(reference, candidate, offset)
    )
    kind: DivergenceKind = "near_tie" if near_tie else "defect"
    start = max(0, offset - 20)
    return Divergence(
        reference_top=_top_at(reference, offset),
        candidate_top=_top_at(candidate, offset),
        kind=kind,
        char_offset=offset,
        token_index=index,
        margin_nats=margin,
        reference_excerpt=reference.content[start : offset + 40],
        candidate_excerpt=candidate.content[start : offset + 40],
    )


def _top_at(record: RequestRecord, char_offset: int) -> list[tuple[str, float]]:
    found = token_start(record, char_offset)
    if found is None:
        return []
    return [(top.token, round(top.logprob, 4)) for top in record.logprobs[found[0]].top]
