"""The cheap detectors on every reply `gateway serve` relays: U+FFFD, n-gram loop, markup or
special-token leak, JSON that fails the schema the request asked for, tool-call arguments that
do not parse; and, for an empty content with real completion tokens, the empty-content
classifier. Three findings are the request's own, flagged whatever the reply: reasoning_effort
"none" with thinking on (field notes: reasoning-none-thinking) and a thinking switch off beside a
top-level effort that turns another one on, each with what the reply made of it; and a switch
sent as text, which the server reads as true. Pure: they read the finished reply and the request,
and never alter either."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from sparkrig.detectors.empty_content import SWITCH_CONFLICT, classify_empty_content
from sparkrig.detectors.schema import schema_problems
from sparkrig.detectors.text import (
    loop_findings,
    markup_leak_findings,
    replacement_char_findings,
)
from sparkrig.gateway.shaping import ReplyText
from sparkrig.gateway.stops import stop_strings
from sparkrig.outside_numbers import count_or_none
from sparkrig.wire.reasoning_families import (
    FIX_NONE_WITH_THINKING,
    NONE_WITH_THINKING_OUTCOMES,
    ThinkingAsk,
    thinking_asked,
)

NONE_WITH_THINKING = "reasoning_none_with_thinking"
SWITCH_CONFLICT_DETECTOR = "thinking_switch_conflict"
TEXT_SWITCH_DETECTOR = "thinking_switch_as_text"
EMPTY_CONTENT = "empty_content"


class LiveFinding(BaseModel):
    detector: str = Field(
        description="replacement_char, loop, markup_leak, json_schema, tool_args, "
        "empty_content, reasoning_none_with_thinking, thinking_switch_conflict or "
        "thinking_switch_as_text"
    )
    message: str = Field(description="what happened — what it means")
    evidence: str = Field(default="", description="a short excerpt")


def completion_tokens(reply: ReplyText) -> int | None:
    if reply.usage and (tokens := count_or_none(reply.usage.get("completion_tokens"))) is not None:
        return tokens
    if reply.timings and (tokens := count_or_none(reply.timings.get("predicted_n"))) is not None:
        return tokens
    return None


def request_findings(thinking: ThinkingAsk, reply: ReplyText | None = None) -> list[LiveFinding]:
    """What the request shows: reasoning_effort 'none' with thinking on, and a switch on beside
    a switch off, each with what its reply made of it (where the reply lands depends on the
    runtime: vLLM 0.26.0's own code replayed on a CPU, tests/fixtures/vllm/replay/); and each
    switch sent as text."""
    whence = "the server's default chat_template_kwargs" if thinking.inherited else "the request"
    findings = []
    if thinking.none_with_thinking:
        findings.append(
            LiveFinding(
                detector=NONE_WITH_THINKING,
                evidence=f"reasoning_effort 'none', thinking on (from {whence})",
                message=(
                    f"reasoning_effort 'none' with thinking on: {_landed(reply)} "
                    f"({NONE_WITH_THINKING_OUTCOMES}) — {FIX_NONE_WITH_THINKING}"
                ),
            )
        )
    if thinking.switch_conflict:
        findings.append(
            LiveFinding(
                detector=SWITCH_CONFLICT_DETECTOR,
                evidence=f"one thinking switch on, one off (thinking read as "
                f"{_on_off(thinking.thinking)}; effort "
                f"{'not set' if thinking.effort is None else repr(thinking.effort)})",
                message=f"{_landed(reply)}: {SWITCH_CONFLICT}",
            )
        )
    findings += [
        LiveFinding(
            detector=TEXT_SWITCH_DETECTOR,
            evidence=f"chat_template_kwargs.{key} sent as text",
            message=(
                f"chat_template_kwargs.{key} is text, not a boolean: the server's renderer and "
                'parser read it by its truth, so any non-empty text ("false" included) turns '
                "thinking on — send true or false as JSON booleans"
            ),
        )
        for key in thinking.text_switches
    ]
    return findings


def _on_off(switch: bool | None) -> str:
    return "not set" if switch is None else "on" if switch else "off"


def _landed(reply: ReplyText | None) -> str:
    if reply is None:
        return "the reply is not known"
    if reply.reasoning.strip() and not reply.content.strip():
        return "this reply landed whole in reasoning, content empty"
    if reply.content.strip() and not reply.reasoning.strip():
        return (
            "this reply came without reasoning: the server read it as thinking off, or its "
            "thinking is in the content, unmarked"
        )
    if reply.content.strip():
        return "this reply has reasoning and content"
    return "this reply is empty"


def reply_findings(
    reply: ReplyText,
    body: dict[str, Any],
    server_kwargs: Mapping[str, Any] | None = None,
    *,
    stops_held: bool = False,
) -> list[LiveFinding]:
    """Every finding on one relayed request; `server_kwargs` is the upstream's
    --default-chat-template-kwargs, which the request inherits."""
    thinking = thinking_asked(body, server_kwargs)
    findings = request_findings(thinking, reply)
    findings += [
        LiveFinding(detector=f.detector, message=f.message, evidence=f.evidence)
        for detect in (replacement_char_findings, loop_findings)
        for text in (reply.content, reply.reasoning)
        if text
        for f in detect(text)
    ]
    findings += [
        LiveFinding(detector=f.detector, message=f.message, evidence=f.evidence)
        for f in markup_leak_findings(reply.content)
    ]
    findings += _schema_findings(reply, body)
    findings += _tool_findings(reply)
    if empty := empty_content_cause(reply, body, thinking, stops_held=stops_held):
        findings.append(LiveFinding(detector=EMPTY_CONTENT, message=empty))
    return findings


def empty_content_cause(
    reply: ReplyText,
    body: dict[str, Any],
    thinking: ThinkingAsk | None = None,
    *,
    stops_held: bool = False,
) -> str | None:
    """'cause: message' for an empty content with real completion tokens; None otherwise.
    `stops_held`: the gateway kept the request's stops from the upstream, so none fired there.
    Reasoning text is proof of tokens too: vLLM streams no usage unless the client asked for
    `include_usage`, and a reply that thought but answered nothing is the case this is for."""
    tokens = completion_tokens(reply)
    if reply.content.strip() or reply.tool_arguments:
        return None
    if not tokens and not reply.reasoning.strip():
        return None
    asked = thinking or thinking_asked(body)
    diagnosis = classify_empty_content(
        content=reply.content,
        reasoning=reply.reasoning,
        finish_reason=reply.finish_reason,
        end_marker_seen=reply.end_marker_seen,
        loop_detected=bool(loop_findings(reply.reasoning)) if reply.reasoning else False,
        none_with_thinking=asked.none_with_thinking,
        request_had_stops=bool(stop_strings(body)) and not stops_held,
        switch_conflict=asked.switch_conflict,
    )
    return f"{diagnosis.cause}: {diagnosis.message}"


def _schema_findings(reply: ReplyText, body: dict[str, Any]) -> list[LiveFinding]:
    response_format = body.get("response_format")
    if not isinstance(response_format, dict) or reply.finish_reason == "length":
        return []  # a reply cut by its budget is judged by its finish_reason, not its JSON
    kind = response_format.get("type")
    if kind not in ("json_object", "json_schema") or not reply.content.strip():
        return []
    try:
        value = json.loads(reply.content)
    except json.JSONDecodeError as exc:
        return [
            LiveFinding(
                detector="json_schema",
                evidence=reply.content[:80],
                message=(
                    f"the request asked for JSON and the content is not JSON ({exc.msg} at char "
                    f"{exc.pos}) — check the server applies response_format"
                ),
            )
        ]
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    problems = schema_problems(value, schema) if isinstance(schema, dict) else []
    if not problems:
        return []
    return [
        LiveFinding(
            detector="json_schema",
            evidence=reply.content[:80],
            message=(
                f"the JSON fails its requested schema ({'; '.join(problems[:3])}) — check the "
                "server "
                "enforces json_schema"
            ),
        )
    ]


def _tool_findings(reply: ReplyText) -> list[LiveFinding]:
    if reply.finish_reason == "length":
        return []
    findings = []
    for index, text in sorted(reply.tool_arguments.items()):
        try:
            json.loads(text or "{}")
        except json.JSONDecodeError as exc:
            findings.append(
                LiveFinding(
                    detector="tool_args",
                    evidence=text[:80],
                    message=(
                        f"tool call {index}'s arguments do not parse as JSON ({exc.msg} at char "
                        f"{exc.pos}) — check the server's tool-call parser"
                    ),
                )
            )
    return findings
