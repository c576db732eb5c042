"""The live guards' request-side reading, pure: reasoning_effort "none" with thinking on is
flagged on the request whatever the reply (field notes: reasoning-none-thinking), and an empty
reply whose stops the gateway held back cannot be a stop inside the reasoning."""

from __future__ import annotations

from sparkrig.gateway.live_guards import empty_content_cause, reply_findings
from sparkrig.gateway.shaping import ReplyText

USAGE = {"completion_tokens": 12}


def detectors(body: dict[str, object], server: dict[str, object] | None = None) -> list[str]:
    reply = ReplyText(content="They weigh the same.", usage=USAGE, finish_reason="stop")
    return [f.detector for f in reply_findings(reply, body, server)]


def test_none_with_thinking_is_flagged_from_the_request_or_the_servers_defaults() -> None:
    none_on = {"reasoning_effort": "none", "chat_template_kwargs": {"thinking": True}}
    assert detectors(none_on) == ["reasoning_none_with_thinking"]
    assert detectors({"reasoning_effort": "none"}, {"thinking": True}) == [
        "reasoning_none_with_thinking"
    ]
    assert detectors({"reasoning_effort": "none"}) == []
    assert detectors({"reasoning_effort": "low", "chat_template_kwargs": {"thinking": True}}) == []


def test_an_empty_reply_whose_stops_were_held_is_not_a_stop_in_reasoning() -> None:
    reply = ReplyText(reasoning="The user asks", usage=USAGE, finish_reason="stop")
    body = {"stop": ["Question:"]}
    assert (empty_content_cause(reply, body) or "").startswith("stop_in_reasoning:")
    assert (empty_content_cause(reply, body, stops_held=True) or "").startswith("unknown:")


def test_reasoning_text_stands_for_the_token_count_a_stream_without_usage_lacks() -> None:
    """vLLM streams no usage unless the client asked for include_usage: a reply that thought and
    answered nothing is still classified; one with neither text nor a count is not."""
    body = {"stop": ["Question:"]}
    thought = ReplyText(reasoning="The user asks", finish_reason="stop")
    assert (empty_content_cause(thought, body) or "").startswith("stop_in_reasoning:")
    assert empty_content_cause(ReplyText(finish_reason="stop"), body) is None
    assert empty_content_cause(ReplyText(finish_reason="stop", usage=USAGE), body) is not None


def test_a_switch_sent_as_text_is_flagged_on_the_request() -> None:
    assert detectors({"chat_template_kwargs": {"thinking": "false"}}) == ["thinking_switch_as_text"]
    assert detectors({"chat_template_kwargs": {"thinking": False}}) == []
