"""sparkrig's reading of the reports' thinking requests beside what vLLM 0.26.0's own code does
with them: tests/fixtures/vllm/replay/think-0.26.0.json, made by benchmarks/vllm_replay/replay.py
from the vLLM wheel on a CPU: vLLM's own chat endpoint with a stand-in engine that writes a fixed
reply for the prompt's mode through vLLM's detokenizer (its README says more).

What the record shows and these tests hold sparkrig to:
- the chat-template kwargs sparkrig builds are vLLM's, key for key;
- on DeepSeek V4's own renderer, sparkrig reads thinking on exactly where vLLM renders a
  thinking prompt, but for two named cases where it reads "on" on purpose;
- vLLM still matches stop strings inside the reasoning, and sparkrig reads every request whose
  reply a stop cut there as a reasoning one (so the gateway keeps its stops);
- every request whose reply vLLM files in the wrong place (thinking in the content, a chat
  answer in reasoning, or a whole reply that differs from the streamed one) gets a finding on
  that request from the gateway's live guards, and a coherent reply to a coherent request none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sparkrig.gateway.live_guards import (
    NONE_WITH_THINKING,
    SWITCH_CONFLICT_DETECTOR,
    TEXT_SWITCH_DETECTOR,
    empty_content_cause,
    reply_findings,
)
from sparkrig.gateway.shaping import ReplyText
from sparkrig.wire.reasoning_families import served_kwargs, thinking_asked
from tests.vllm_live import landed, replay_contradictions

ROOT = Path(__file__).resolve().parents[2]
RECORD = json.loads((ROOT / "tests/fixtures/vllm/replay/think-0.26.0.json").read_text())
ROWS: list[dict[str, Any]] = RECORD["rows"]
SERVERS: dict[str, Any] = RECORD["provenance"]["servers"]
RENDER_ONLY = {"add_generation_prompt", "continue_final_message"}  # vLLM's, not the switch's
REQUEST_FINDINGS = {NONE_WITH_THINKING, SWITCH_CONFLICT_DETECTOR, TEXT_SWITCH_DETECTOR}
# where sparkrig reads thinking "on" and vLLM 0.26.0's DeepSeek V4 renderer writes a chat prompt
ON_PURPOSE = {
    # the request asks for thinking and for none: read as reasoning, and flagged on the request
    "effort-none": "none_with_thinking",
    "effort-none-on": "none_with_thinking",
    "effort-none-kwargs": "none_with_thinking",
    # report 004 saw this body reason (field notes: agent-benchmark-request); holding its stops
    # is harmless where the server answers in chat mode
    "effort-low-kwargs": "agent-benchmark-request",
}


def row_id(row: dict[str, Any]) -> str:
    return f"{row['server']}:{row['ask']}"


def defaults(row: dict[str, Any]) -> dict[str, Any]:
    return dict(SERVERS[row["server"]]["defaults"])


def body(row: dict[str, Any]) -> dict[str, Any]:
    return {"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], **row["request"]}


def misfiled(row: dict[str, Any]) -> bool:
    """vLLM put the reply somewhere the prompt's mode does not: thinking written into the content,
    a chat answer filed as reasoning, or a whole reply unlike the streamed one."""
    whole = row["whole"]
    if whole != row["stream"]:
        return True
    if row["prompt_mode"] == "thinking":
        return not whole["reasoning"]
    return bool(whole["reasoning"])


def cut_in_reasoning(row: dict[str, Any]) -> bool:
    """One of the request's stop strings matched inside the reasoning: vLLM's detokenizer
    matches stops against the whole output, so the reply ends there, content null."""
    return bool(row["stop_matched"]) and row["whole"]["content"] is None


def reply(parts: dict[str, str | None], finish: str = "stop") -> ReplyText:
    return ReplyText(
        content=parts["content"] or "",
        reasoning=parts["reasoning"] or "",
        finish_reason=finish,
        usage={"completion_tokens": 12},
    )


def test_the_record_is_vllm_0_26_0_from_the_locked_wheel() -> None:
    provenance = RECORD["provenance"]
    lock = (ROOT / "benchmarks/vllm_gpu/wheels.lock").read_text()
    assert provenance["versions"]["vllm"] == "0.26.0"
    assert f"vllm==0.26.0 --hash=sha256:{provenance['vllm_wheel_sha256']}" in lock
    assert {row["server"] for row in ROWS} == set(SERVERS)


def test_the_record_holds_misfiled_replies_for_the_guards_to_catch() -> None:
    """The record is not all coherent: the tests below can fail (the set is pinned, so a new
    replay that changes it is read before it is accepted)."""
    assert sorted(row_id(row) for row in ROWS if misfiled(row)) == [
        "testbed:effort-high-off",
        "testbed:effort-high-off-stream",
        "testbed:effort-none",
        "testbed:effort-none-kwargs",
        "testbed:effort-none-on",
    ]
    assert sorted(row_id(row) for row in ROWS if cut_in_reasoning(row)) == [
        "dsv4-chat-default:on-stop-stream",
        "dsv4-thinking-default:budget-stop",
        "dsv4-thinking-default:inherit-stop",
        "dsv4-thinking-default:on-stop-stream",
        "testbed:budget-stop",
        "testbed:inherit-stop",
        "testbed:on-stop-stream",
    ]


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_sparkrig_builds_the_kwargs_vllm_serves(row: dict[str, Any]) -> None:
    theirs = {k: v for k, v in row["served_kwargs"].items() if k not in RENDER_ONLY}
    assert served_kwargs(row["request"], defaults(row)) == theirs


@pytest.mark.parametrize(
    "row", [row for row in ROWS if row["server"].startswith("dsv4")], ids=row_id
)
def test_thinking_is_read_as_deepseek_v4s_renderer_reads_it(row: dict[str, Any]) -> None:
    asked = thinking_asked(row["request"], defaults(row))
    renders_thinking = row["prompt_mode"] == "thinking"
    if asked.thinking is True and not renders_thinking:
        reason = ON_PURPOSE.get(row["ask"])
        assert reason is not None, "sparkrig reads thinking on where vLLM renders chat mode"
        assert reason != "none_with_thinking" or asked.none_with_thinking
    else:
        assert asked.thinking is renders_thinking


@pytest.mark.parametrize("row", [row for row in ROWS if misfiled(row)], ids=row_id)
def test_every_misfiled_reply_is_flagged_on_its_request(row: dict[str, Any]) -> None:
    for parts in (row["whole"], row["stream"]):
        found = {f.detector for f in reply_findings(reply(parts), body(row), defaults(row))}
        assert found & REQUEST_FINDINGS, parts


@pytest.mark.parametrize("row", [row for row in ROWS if cut_in_reasoning(row)], ids=row_id)
def test_a_stop_string_fires_inside_the_reasoning_and_the_gateway_holds_it(
    row: dict[str, Any],
) -> None:
    """vLLM 0.26.0 still matches stop strings against the reasoning (field notes:
    stop-in-reasoning): the reply is cut there, content null. sparkrig reads each such request
    as a reasoning one, so the gateway keeps its stops from the upstream; a reply cut anyway is
    classified as the stop inside the reasoning."""
    assert row["finish_reason"] == "stop"
    assert row["whole"] == row["stream"]
    assert thinking_asked(row["request"], defaults(row)).thinking is True
    cut = reply(row["whole"])
    assert (empty_content_cause(cut, body(row)) or "").startswith("stop_in_reasoning:")


@pytest.mark.parametrize(
    "row", [row for row in ROWS if not misfiled(row) and not cut_in_reasoning(row)], ids=row_id
)
def test_a_coherent_reply_gets_no_finding_beyond_a_contradictory_ask(row: dict[str, Any]) -> None:
    """A request that asks for thinking and against it in one body, or sends its switch as
    text, is flagged whatever the reply (DeepSeek V4 thinks on `thinking: false` + effort
    "high", and on `thinking: "false"`); nothing else is."""
    asked = thinking_asked(row["request"], defaults(row))
    whole = reply(row["whole"], row["finish_reason"])
    found = {f.detector for f in reply_findings(whole, body(row), defaults(row))}
    allowed = {NONE_WITH_THINKING} if asked.none_with_thinking else set()
    allowed |= {SWITCH_CONFLICT_DETECTOR} if asked.switch_conflict else set()
    allowed |= {TEXT_SWITCH_DETECTOR} if asked.text_switches else set()
    assert found <= allowed


def test_the_finding_says_where_this_reply_landed() -> None:
    """Whole: the chat answer filed as reasoning, content null, classified as the switch
    conflict; streamed: the same request answered in content."""
    row = next(r for r in ROWS if row_id(r) == "testbed:effort-high-off")
    whole, streamed = reply(row["whole"]), reply(row["stream"])
    found = {f.detector: f.message for f in reply_findings(whole, body(row), defaults(row))}
    assert set(found) == {SWITCH_CONFLICT_DETECTOR, "empty_content"}
    assert "landed whole in reasoning" in found[SWITCH_CONFLICT_DETECTOR]
    assert found["empty_content"].startswith("switch_conflict:")
    cause = empty_content_cause(whole, body(row), thinking_asked(body(row), defaults(row)))
    assert cause == found["empty_content"]
    found = {f.detector: f.message for f in reply_findings(streamed, body(row), defaults(row))}
    assert set(found) == {SWITCH_CONFLICT_DETECTOR}
    assert "without reasoning" in found[SWITCH_CONFLICT_DETECTOR]


def test_none_with_thinking_lands_by_runtime() -> None:
    """The report's runtime filed it all as reasoning; vLLM 0.26.0 answers in content: on
    DeepSeek V4's renderer in chat mode, on a template that reads only `thinking` with the
    thinking inside the content and its </think> dropped."""
    dsv4 = next(r for r in ROWS if row_id(r) == "dsv4-thinking-default:effort-none-on")
    testbed = next(r for r in ROWS if row_id(r) == "testbed:effort-none-on")
    assert dsv4["prompt_mode"] == "chat"
    assert dsv4["whole"]["reasoning"] is None
    assert testbed["prompt_mode"] == "thinking"
    assert testbed["whole"]["reasoning"] is None
    content = testbed["whole"]["content"]
    assert "basic arithmetic" in content
    assert "</think>" not in content


def test_effort_levels_on_deepseek_v4s_encoding() -> None:
    """Report 001's runtime added the model's high text for max (field notes:
    reasoning-effort-levels); vLLM 0.26.0's own encoding adds nothing for low and high and its
    max text for max and xhigh, which the registry's efforts now say."""
    chars = {
        row["ask"]: row["prompt_chars"]
        for row in ROWS
        if row["server"] == "dsv4-thinking-default" and row["prompt_mode"] == "thinking"
    }
    assert chars["inherit"] == chars["effort-low"] == chars["effort-high"]
    assert chars["effort-max"] == chars["effort-xhigh"] > chars["inherit"] + 400


def _as_capture(parts: dict[str, str | None], streamed: bool) -> bytes:
    """A reply in vLLM's own wire shape (`reasoning` and `content`), whole or as SSE."""
    if not streamed:
        message = {"role": "assistant", **parts}
        return json.dumps({"choices": [{"index": 0, "message": message}]}).encode()
    events = [
        {"choices": [{"index": 0, "delta": {key: value}}]}
        for key, value in parts.items()
        if value is not None
    ]
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"


@pytest.mark.parametrize("row", [r for r in ROWS if r["server"] == "testbed"], ids=row_id)
def test_the_live_comparison_passes_the_replay_itself_and_fails_a_reply_in_the_wrong_place(
    row: dict[str, Any],
) -> None:
    """tests/wire/test_think_live_vs_replay.py judges the live think capture with
    `replay_contradictions`: here it judges the replay's own replies (no contradiction), and a
    reply put where the prompt's mode and the parser's first state say it cannot be (one)."""
    thinks = row["whole"]["reasoning"] is not None
    for streamed in (False, True):
        parts = row["stream"] if streamed else row["whole"]
        reasoning, content = landed(_as_capture(parts, streamed))
        assert replay_contradictions(row, streamed, reasoning, content) == []
        if row["prompt_mode"] == "thinking" and thinks:
            wrong = {"reasoning": None, "content": "all of it"}
        elif row["prompt_mode"] == "thinking" or streamed:
            wrong = {"reasoning": "some thinking", "content": "an answer"}
        elif row["whole"]["content"] is None:
            wrong = {"reasoning": None, "content": "an answer"}
        else:
            continue  # a whole chat-mode reply may hold either: nothing to contradict
        reasoning, content = landed(_as_capture(wrong, streamed))
        assert replay_contradictions(row, streamed, reasoning, content), wrong
