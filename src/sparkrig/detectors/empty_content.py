"""Why a reply has no content: the classifier of the empty-content table
(docs/field-notes.md#empty-content-table), as code, row for row.

| finish | `</think>` seen | also known | cause |
|---|---|---|---|
| stop | n/a | the request sent reasoning_effort "none" with thinking on | reasoning_off_mismatch |
| stop | no | (the request had stop strings, or it is not known) | stop_in_reasoning |
| length | no | the rate moves with max_tokens, or it is not known | reasoning_budget |
| length | no | the rate does not move (or a loop is seen) | loop |
| stop | yes | the server's reasoning key is not the one the client reads | wrong_reasoning_key |
| any | no | the reasoning is a pseudo-tag scaffold | unclosed_pseudo_tag |
| stop | no | one switch on, one off (thinking false, top-level effort) | switch_conflict |
| stop | any | no reasoning text either: the model wrote nothing | no_output |

(The pseudo-tag row is the note after the table, field notes: pseudo-tag-scaffold. The last two
rows are the project's, not a report's. vLLM 0.26.0's own code, replayed on a CPU, files a
whole reply to a request with one switch on and one off in reasoning, content null, on a
template that reads only `thinking` (tests/fixtures/vllm/replay/). And a live vLLM 0.26.0
whose template opened `<think>` for SmolLM2, which was never trained on one, answered 16 of 20
chat asks with one token, the end of turn: no reasoning, no content
(tests/fixtures/vllm/live/think-inherit.txt and its like). Such a reply is no row of the
report's table, and its request's other marks (effort "none" with thinking on, a switch
conflict) did not make it.)

Inputs are what a client sees (finish_reason, whether the end-of-reasoning marker appeared,
which reasoning key the server used) and what the request said (reasoning_effort "none" with
thinking on; whether it sent stop strings). Every diagnosis names the report's fix.
"""

from __future__ import annotations

import re
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
    "switch_conflict",
    "no_output",
    "unknown",
]
# an upper-case pseudo-tag like <STORE_AND_RETURN> or <STDERR> (field notes: pseudo-tag-scaffold)
_PSEUDO_TAG = re.compile(r"</?[A-Z][A-Z0-9_]{2,}>")

MISMATCH = (
    "reasoning_effort 'none' with thinking on: the prompt is formatted for chat mode while the "
    "reasoning parser waits for </think>, so the whole reply is filed as reasoning — do not send "
    "'none' with thinking on; drop reasoning_effort (alone it is fine) or turn thinking off"
)
STOP_IN_REASONING = (
    "a client stop string fired inside the reasoning (the chain of thought restated it) before "
    "</think> — keep stop strings dormant until the reasoning ends (gateway serve does), or send "
    "no stop strings"
)
BUDGET = (
    "the reasoning used the whole max_tokens before </think>: a budget, not a hang (reasoning is "
    "heavy-tailed: 48–440 tokens on a trivial prompt) — raise max_tokens and re-measure; if the "
    "empty rate does not move with the budget it is a loop"
)
LOOP = (
    "the reasoning never ends and more budget does not help: a repetition loop — check the "
    "8-gram novelty of the trace; sample at the checkpoint's own temperature"
)
PSEUDO_TAG = (
    "the model wrote a pseudo-tag scaffold as its whole output and never closed </think>, so the "
    "parser filed everything as reasoning — a known rare output; retry, or inspect the reasoning"
)

SWITCH_CONFLICT = (
    "thinking off with a top-level reasoning_effort other than 'none': vLLM adds "
    "enable_thinking true beside it; DeepSeek V4's renderer and parser read either key as on and "
    "think, and a template that reads only `thinking` writes a chat prompt while the parser "
    "expects thinking, so a whole (not streamed) reply lands in reasoning with content null "
    "(vLLM 0.26.0, replayed) — send one switch: drop reasoning_effort, or turn thinking on"
)

NO_OUTPUT = (
    "the model wrote nothing: finish stop with neither content nor reasoning, so it ended its "
    "turn at once (or a stop string matched its first words) — check the prompt the server "
    "renders for this request (a think opener the model was never trained on ends its turn at "
    "once), and compare the same request without stop strings and with thinking off"
)


class EmptyDiagnosis(BaseModel):
    cause: EmptyCause
    message: str


def looks_like_pseudo_tags(reasoning: str) -> bool:
    return bool(_PSEUDO_TAG.search(reasoning))


def classify_empty_content(  # noqa: PLR0911 - one return per row of the table
    *,
    content: str,
    reasoning: str,
    finish_reason: str | None,
    end_marker_seen: bool,
    reasoning_key: str | None = None,
    client_reads_key: str = "reasoning_content",
    rate_moves_with_budget: bool | None = None,
    loop_detected: bool = False,
    none_with_thinking: bool = False,
    request_had_stops: bool | None = None,
    switch_conflict: bool = False,
) -> EmptyDiagnosis:
    if content.strip():
        return EmptyDiagnosis(cause="not_empty", message="the reply has content")
    if reasoning_key is not None and reasoning_key != client_reads_key and reasoning.strip():
        return EmptyDiagnosis(
            cause="wrong_reasoning_key",
            message=(
                f"the answer is missing at the client only: the server puts reasoning under "
                f"{reasoning_key!r} and the client reads {client_reads_key!r} — read "
                f"{reasoning_key!r} (or both keys)"
            ),
        )
    if finish_reason == "stop" and not reasoning.strip():
        return EmptyDiagnosis(cause="no_output", message=NO_OUTPUT)
    if finish_reason == "stop" and none_with_thinking:
        return EmptyDiagnosis(cause="reasoning_off_mismatch", message=MISMATCH)
    if finish_reason == "stop" and switch_conflict and not end_marker_seen:
        return EmptyDiagnosis(cause="switch_conflict", message=SWITCH_CONFLICT)
    if end_marker_seen:
        return _unknown()
    scaffold = looks_like_pseudo_tags(reasoning)
    if finish_reason == "stop" and reasoning.strip():
        if request_had_stops is False:  # no stop could fire: not the first row
            if scaffold:
                return EmptyDiagnosis(cause="unclosed_pseudo_tag", message=PSEUDO_TAG)
            return _unknown()
        return EmptyDiagnosis(cause="stop_in_reasoning", message=STOP_IN_REASONING)
    if finish_reason == "length":
        if loop_detected or rate_moves_with_budget is False:
            return EmptyDiagnosis(cause="loop", message=LOOP)
        if scaffold and rate_moves_with_budget is None:
            return EmptyDiagnosis(cause="unclosed_pseudo_tag", message=PSEUDO_TAG)
        return EmptyDiagnosis(cause="reasoning_budget", message=BUDGET)
    return _unknown()


def _unknown() -> EmptyDiagnosis:
    return EmptyDiagnosis(
        cause="unknown",
        message=(
            "empty content that matches no row of the empty-content table — rerun with a larger "
            "max_tokens and compare, and read the reply's reasoning and reasoning_content keys"
        ),
    )
