"""The empty-content classifier, one test per row of the report's table, each built from the
row's own example shape (docs/field-notes.md#empty-content-table): what the client received
(finish_reason, content null, the reasoning, whether `</think>` appeared) and what the request
said. Each row also has the case it must not claim."""

from __future__ import annotations

from typing import Any

from sparkrig.detectors.empty_content import classify_empty_content

# a chain of thought restating "Question:", as the recipe's stop example (field notes:
# stop-in-reasoning), cut at that stop
CUT_REASONING = "The user asks which is heavier."
LONG_REASONING = " ".join(["Let me add one and one carefully."] * 60)  # ~420 words, no answer


def cause(**reply: Any) -> str:
    reply.setdefault("content", "")
    return classify_empty_content(**reply).cause


def test_row_stop_no_end_tag_is_a_stop_inside_the_reasoning() -> None:
    # an evaluation harness sends up to four stop strings; one fired inside the reasoning
    reply = {"finish_reason": "stop", "reasoning": CUT_REASONING, "end_marker_seen": False}
    diagnosis = classify_empty_content(content="", request_had_stops=True, **reply)
    assert diagnosis.cause == "stop_in_reasoning"
    assert "dormant until the reasoning ends" in diagnosis.message
    assert cause(**reply) == "stop_in_reasoning"  # stops not known: still this row
    assert cause(**reply, request_had_stops=False) != "stop_in_reasoning"  # no stop could fire
    assert cause(content="They weigh the same.", **reply) == "not_empty"


def test_row_length_no_end_tag_is_the_budget() -> None:
    # heavy-tailed reasoning used the whole max_tokens on a trivial prompt
    reply = {"finish_reason": "length", "reasoning": LONG_REASONING, "end_marker_seen": False}
    diagnosis = classify_empty_content(content="", rate_moves_with_budget=True, **reply)
    assert diagnosis.cause == "reasoning_budget"
    assert "raise max_tokens and re-measure" in diagnosis.message
    assert cause(**reply) == "reasoning_budget"  # the rate not measured yet: read as the budget
    assert cause(**reply, rate_moves_with_budget=False) != "reasoning_budget"


def test_row_length_rate_does_not_move_is_a_loop() -> None:
    reply = {"finish_reason": "length", "reasoning": LONG_REASONING, "end_marker_seen": False}
    assert cause(**reply, rate_moves_with_budget=False) == "loop"
    assert cause(**reply, loop_detected=True) == "loop"
    assert cause(**reply, rate_moves_with_budget=True) != "loop"


def test_row_effort_none_with_thinking_is_the_mode_mismatch_not_a_stop_in_reasoning() -> None:
    # the report's shape: the whole (chat-mode) answer filed as reasoning, content null,
    # finish stop, real completion tokens, no </think>
    reply = {
        "finish_reason": "stop",
        "reasoning": "They weigh the same: one kilogram each.",
        "end_marker_seen": False,
    }
    diagnosis = classify_empty_content(content="", none_with_thinking=True, **reply)
    assert diagnosis.cause == "reasoning_off_mismatch"
    assert "do not send 'none' with thinking on" in diagnosis.message
    assert "drop reasoning_effort" in diagnosis.message
    # the same reply from a request without that pair is the first row, not this one
    assert cause(**reply) == "stop_in_reasoning"
    assert cause(**reply, request_had_stops=True, none_with_thinking=True) == (
        "reasoning_off_mismatch"
    )


def test_row_stop_end_tag_seen_is_the_wrong_reasoning_key() -> None:
    # the answer is missing at the client only: the server sends `reasoning`, the client reads
    # `reasoning_content`
    reply = {"finish_reason": "stop", "reasoning": CUT_REASONING, "end_marker_seen": True}
    diagnosis = classify_empty_content(content="", reasoning_key="reasoning", **reply)
    assert diagnosis.cause == "wrong_reasoning_key"
    assert "read 'reasoning'" in diagnosis.message
    assert cause(**reply, reasoning_key="reasoning_content") != "wrong_reasoning_key"


def test_the_row_after_the_table_is_an_unclosed_pseudo_tag_scaffold() -> None:
    scaffold = "<STORE_AND_RETURN> 570 </STORE_AND_RETURN> <STDERR> final</STDERR>630"
    reply = {"reasoning": scaffold, "end_marker_seen": False}
    assert cause(finish_reason="stop", request_had_stops=False, **reply) == "unclosed_pseudo_tag"
    assert cause(finish_reason="length", **reply) == "unclosed_pseudo_tag"
    plain = {"reasoning": CUT_REASONING, "end_marker_seen": False}
    assert cause(finish_reason="stop", request_had_stops=False, **plain) == "unknown"
    assert cause(finish_reason="length", **plain) != "unclosed_pseudo_tag"


def test_a_reply_that_fits_no_row_is_unknown_and_says_what_to_try() -> None:
    # reasoning closed by </think>, read under the key the server used, and no answer after it
    diagnosis = classify_empty_content(
        content="", reasoning=CUT_REASONING, finish_reason="stop", end_marker_seen=True
    )
    assert diagnosis.cause == "unknown"
    assert "larger max_tokens" in diagnosis.message


def test_the_projects_row_a_reply_with_nothing_at_all_is_no_output() -> None:
    """vLLM 0.26.0 live (tests/fixtures/vllm/live/think-inherit.txt): SmolLM2 after a `<think>`
    it was never trained on ended its turn at once, one token, content and reasoning null. The
    request's own marks do not make such a reply the mismatch or the conflict, whose answers
    land in reasoning."""
    nothing = {"content": "", "reasoning": "", "finish_reason": "stop", "end_marker_seen": False}
    diagnosis = classify_empty_content(**nothing)
    assert diagnosis.cause == "no_output"
    assert "ended its turn at once" in diagnosis.message
    assert classify_empty_content(**nothing, none_with_thinking=True).cause == "no_output"
    assert classify_empty_content(**nothing, switch_conflict=True).cause == "no_output"
    assert classify_empty_content(**nothing, request_had_stops=True).cause == "no_output"
    assert cause(finish_reason="stop", reasoning="1 + 1", end_marker_seen=False) != "no_output"
    assert cause(finish_reason="length", reasoning="", end_marker_seen=False) != "no_output"


def test_the_projects_row_a_switch_on_and_one_off_is_the_conflict() -> None:
    # vLLM 0.26.0's own code (tests/fixtures/vllm/replay/, testbed:effort-high-off): thinking
    # false plus a top-level effort "high"; a template that reads only `thinking` wrote a chat
    # prompt, the parser read enable_thinking and filed the chat answer as reasoning
    reply = {"finish_reason": "stop", "reasoning": "1 + 1 = 2.", "end_marker_seen": False}
    diagnosis = classify_empty_content(content="", switch_conflict=True, **reply)
    assert diagnosis.cause == "switch_conflict"
    assert "send one switch" in diagnosis.message
    assert cause(**reply) != "switch_conflict"  # no conflict in the request: not this row
    marked = reply | {"end_marker_seen": True}
    assert cause(**marked, switch_conflict=True) != "switch_conflict"
    assert cause(content="1 + 1 = 2.", switch_conflict=True, **reply) == "not_empty"
