"""The lenient readers the gateway relays with: anything not of the documented type reads as
absent, so an odd field is passed on untouched. (The strict readers are proven through the
client, tests/client and tests/hostile.)"""

from __future__ import annotations

from typing import Any

from sparkrig.wire.openai import first_choice, json_object, logprob_items, string, text_holder


def test_json_object_refuses_everything_but_an_object() -> None:
    assert json_object(b'{"a": 1}') == {"a": 1}
    for raw in (b"[1]", b"5", b"not json", b"\xff{}", b""):
        assert json_object(raw) is None


def test_first_choice_only_when_choices_start_with_an_object() -> None:
    assert first_choice({"choices": [{"index": 0}]}) == {"index": 0}
    chunks: list[dict[str, Any]] = [{}, {"choices": 5}, {"choices": []}, {"choices": ["x"]}]
    for chunk in chunks:
        assert first_choice(chunk) is None


def test_text_holder_and_string() -> None:
    delta = {"content": "hi"}
    assert text_holder({"delta": delta}) is delta
    assert text_holder({"message": delta}, "message") is delta
    choice = {"delta": "garbage", "text": "t"}
    assert text_holder(choice) is choice
    assert string(delta, "content") == "hi"
    assert string({"content": 5}, "content") == ""


def test_logprob_items() -> None:
    assert logprob_items({"logprobs": {"content": [{"token": "a"}]}}) == [{"token": "a"}]
    assert logprob_items({"logprobs": {"content": "x"}}) is None
    assert logprob_items({"logprobs": None}) is None
