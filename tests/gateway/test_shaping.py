"""One reply shaped event by event, on chunks shaped as llama-server streams them (llama.cpp
0.3.36 sdist with --reasoning-format deepseek: a role event, reasoning_content deltas, content
deltas, a finish event, a timings/usage event): the stop found across events, the reasoning
under both keys, and the same result for the whole reply."""

from __future__ import annotations

import copy
from typing import Any

from sparkrig.gateway.shaping import ReplyShaper, ShapePlan


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
        "id": "c1",
        "model": "m",
        "object": "chat.completion.chunk",
    }


STREAM = [
    chunk({"role": "assistant", "content": None}),
    chunk({"reasoning_content": "Think: the"}),
    chunk({"reasoning_content": " END is near"}),
    chunk({"content": "Answer one. E"}),
    chunk({"content": "N"}),
    chunk({"content": "D and more"}),
    chunk({}, "length"),
]


def shaped(plan: ShapePlan) -> tuple[list[dict[str, Any]], ReplyShaper]:
    shaper = ReplyShaper(plan)
    out = []
    for event in STREAM:
        result = shaper.shape_chunk(copy.deepcopy(event))
        if result is not None:
            out.append(result)
        if shaper.ended:
            break
    return out + shaper.finish_chunks(), shaper


def text(events: list[dict[str, Any]], key: str) -> str:
    return "".join(e["choices"][0]["delta"].get(key) or "" for e in events)


def test_a_stop_split_over_three_events_ends_the_content_and_not_the_reasoning() -> None:
    events, shaper = shaped(ShapePlan("chat", stops=["END"], keys="both"))
    assert (
        text(events, "reasoning_content") == text(events, "reasoning") == "Think: the END is near"
    )
    assert text(events, "content") == "Answer one. "
    assert events[-1]["choices"][0]["finish_reason"] == "stop"
    assert shaper.ended
    assert shaper.reply.stopped_here


def test_without_stops_the_text_is_whole_and_the_upstream_finish_stays() -> None:
    events, shaper = shaped(ShapePlan("chat", keys="reasoning"))
    assert text(events, "content") == "Answer one. END and more"
    assert text(events, "reasoning_content") == ""
    assert text(events, "reasoning") == "Think: the END is near"
    assert events[-1]["choices"][0]["finish_reason"] == "length"
    assert shaper.reply.end_marker_seen


def test_the_whole_reply_is_cut_at_the_same_place() -> None:
    message = {
        "role": "assistant",
        "content": "Answer one. END and more",
        "reasoning_content": "Think: the END is near",
    }
    body = {"choices": [{"finish_reason": "length", "index": 0, "message": message}]}
    result = ReplyShaper(ShapePlan("chat", stops=["END"], keys="both")).shape_body(body)
    choice = result["choices"][0]
    assert choice["message"]["content"] == "Answer one. "
    assert choice["message"]["reasoning"] == "Think: the END is near"
    assert choice["finish_reason"] == "stop"


def test_only_events_the_shaping_changed_are_marked_changed() -> None:
    shaper = ReplyShaper(ShapePlan("chat", stops=["END"], keys="both"))
    marks = []
    for event in STREAM[:4]:
        shaper.shape_chunk(copy.deepcopy(event))
        marks.append(shaper.unchanged)
    # role event as it came; reasoning events gain the second key; "Answer one. E" loses its "E"
    assert marks == [True, False, False, False]
    plain = ReplyShaper(ShapePlan("chat", keys="both"))
    plain.shape_chunk(chunk({"content": "Hello"}))
    assert plain.unchanged


def test_a_whitespace_first_token_goes_out_as_its_own_event_unchanged() -> None:
    """A plain reply whose first token is "\\n": the look for <think> held it and merged it into
    the next event ("\\n#"); with max_tokens 1 it moved into the finish event."""
    shaper = ReplyShaper(ShapePlan("chat", keys="both"))
    first = shaper.shape_chunk(chunk({"content": "\n"}))
    assert first is not None
    assert first["choices"][0]["delta"] == {"content": "\n"}
    assert shaper.unchanged
    second = shaper.shape_chunk(chunk({"content": "#"}))
    assert second is not None
    assert second["choices"][0]["delta"] == {"content": "#"}
    alone = ReplyShaper(ShapePlan("chat", keys="both"))
    assert alone.shape_chunk(chunk({"content": "\n"})) is not None
    finish = alone.shape_chunk(chunk({}, "length"))
    assert finish is not None
    assert "content" not in finish["choices"][0]["delta"]


def test_think_tags_after_leading_whitespace_are_still_split_off() -> None:
    shaper = ReplyShaper(ShapePlan("chat", keys="both"))
    events = [
        shaper.shape_chunk(chunk({"content": part}))
        for part in ("\n", "<think>", "hm", "</think>", "Yes")
    ]
    sent = [e for e in events if e is not None] + shaper.finish_chunks()
    assert text(sent, "reasoning_content") == "hm"
    assert text(sent, "content") == "\nYes"


def test_a_whole_reply_says_whether_the_shaping_changed_it() -> None:
    plain = {"choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "Hi"}}]}
    shaper = ReplyShaper(ShapePlan("chat", keys="both"))
    shaper.shape_body(plain)
    assert shaper.unchanged
    reasoned = {
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"content": "Hi", "reasoning": "hm"}}
        ]
    }
    shaper = ReplyShaper(ShapePlan("chat", keys="both"))
    shaper.shape_body(reasoned)
    assert not shaper.unchanged  # given under both keys
    stopped = {
        "choices": [{"index": 0, "finish_reason": "length", "message": {"content": "a END b"}}]
    }
    shaper = ReplyShaper(ShapePlan("chat", stops=["END"], keys="both"))
    shaper.shape_body(stopped)
    assert not shaper.unchanged  # cut at the stop
