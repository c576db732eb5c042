"""How a guard describes a reply that has no answer: its finish, its token count and the start of
its reasoning, the three things that tell a model that wrote nothing from one that thought and
never answered (seen live on vLLM 0.26.0: SmolLM2 after a `<think>` it was never trained on)."""

from __future__ import annotations

from sparkrig.client.records import RequestRecord
from sparkrig.errors import excerpt


def answerless_shape(record: RequestRecord) -> str:
    """'finish stop, 1 token, no reasoning' or '…, reasoning '<|im_start|>''."""
    count = record.completion_tokens
    tokens = "tokens not counted" if count is None else f"{count} token{'s' * (count != 1)}"
    reasoning = "no reasoning"
    if record.reasoning.strip():
        reasoning = f"reasoning {excerpt(record.reasoning, 60)!r}"
    return f"finish {record.finish_reason or 'not sent'}, {tokens}, {reasoning}"
