"""The bench's warning for a thinking model at a cap the reasoning fills (field notes:
thinking-needs-budget), on records in the shape the DeepSeek-V4 stand-in gives
(tests/gateway/deepseek_upstream.py): finish length, reasoning, content null."""

from __future__ import annotations

from sparkrig.bench.thinking_budget import truncated_thinking_warning
from sparkrig.client import RequestRecord


def record(model: str, *, content: str, reasoning: str, finish: str) -> RequestRecord:
    return RequestRecord(
        url="http://127.0.0.1:1",
        api="chat",
        stream=True,
        model=model,
        send_ns=0,
        content=content,
        reasoning=reasoning,
        finish_reason=finish,
    )


def test_a_reply_cut_inside_its_reasoning_warns_with_the_familys_off_switch() -> None:
    cut = record("deepseek-v4-flash", content="", reasoning="The user asks", finish="length")
    warning = truncated_thinking_warning([cut])
    assert warning is not None
    assert "measures truncation" in warning
    assert 'send {"chat_template_kwargs": {"thinking": false}}' in warning
    glm = record("glm-5.3-flash", content="", reasoning="Let me", finish="length")
    assert "no switch is known for family glm-5" in (truncated_thinking_warning([glm]) or "")


def test_an_answered_or_plainly_long_reply_does_not_warn() -> None:
    answered = record("deepseek-v4-flash", content="Same.", reasoning="The", finish="length")
    plain = record("deepseek-v4-flash", content="one two three", reasoning="", finish="length")
    stopped = record("deepseek-v4-flash", content="", reasoning="The user", finish="stop")
    assert truncated_thinking_warning([answered, plain, stopped]) is None
