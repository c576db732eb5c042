"""Why a reply has no content: the classifier of the empty-content table
(docs/field-notes.md#empty-content-table), as code.

Inputs are what a client sees: finish_reason, whether the end-of-reasoning marker appeared,
which reasoning key the server used, and (when known) whether the empty rate moves with
max_tokens. The diagnosis always names the fix.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

EmptyCause = Literal[
    "not_empty",
    "stop_in_reasoning",
    "reasoning_budget",
    "loop",
    "reasoning_off_mismatch",
    "wrong_reasoning_key",
    "unclosed_pseudo_tag",
    "unknown",
]


class EmptyDiagnosis(BaseModel):
    cause: EmptyCause
    message: str


def classify_empty_content(  # noqa: PLR0911 - one return per cause of the table
    *,
    content: str,
    reasoning: str,
    finish_reason: str | None,
    end_marker_seen: bool,
    reasoning_key: str | None = None,
    client_reads_key: str = "reasoning_content",
    rate_moves_with_budget: bool | None = None,
    loop_detected: bool = False,
) -> EmptyDiagnosis:
    if content.strip():
        return EmptyDiagnosis(cause="not_empty", message="the reply has content")
    if reasoning_key is not None and reasoning_key != client_reads_key and reasoning.strip():
        return EmptyDiagnosis(
            cause="wrong_reasoning_key",
            message=(
                f"the server puts reasoning under {reasoning_key!r} and the client reads "
                f"{client_reads_key!r} — read both keys"
            ),
        )
    if finish_reason == "stop" and not end_marker_seen and reasoning.strip():
        return EmptyDiagnosis(
            cause="stop_in_reasoning",
            message=(
                "a client stop string fired inside the reasoning — keep stop strings dormant until "
                "the reasoning ends, or drop them"
            ),
        )
    if finish_reason == "stop" and not reasoning.strip():
        return EmptyDiagnosis(
            cause="reasoning_off_mismatch",
            message=(
                "the reply stopped at once with no reasoning and no content — e.g. "
                "reasoning_effort 'none' sent with thinking on; send one consistent setting"
            ),
        )
    if finish_reason == "length" and not end_marker_seen:
        if loop_detected or rate_moves_with_budget is False:
            return EmptyDiagnosis(
                cause="loop",
                message=(
                    "the reasoning never ends and more budget does not help: a real loop — check "
                    "the 8-gram novelty of the trace, try a higher temperature"
                ),
            )
        if rate_moves_with_budget:
            return EmptyDiagnosis(
                cause="reasoning_budget",
                message=(
                    "the reasoning ran out of tokens before the answer — raise max_tokens "
                    "(heavy-tailed reasoning)"
                ),
            )
        if "<" in reasoning and ">" in reasoning:
            return EmptyDiagnosis(
                cause="unclosed_pseudo_tag",
                message=(
                    "a pseudo-tag scaffold opened in the reasoning never closed, so the whole "
                    "reply was filed as reasoning — check the reasoning parser"
                ),
            )
    return EmptyDiagnosis(
        cause="unknown",
        message=("empty content with no known cause — rerun with a larger max_tokens and compare"),
    )
