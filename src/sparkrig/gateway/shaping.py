"""What `gateway serve` does to one reply: one reasoning field, and the client's stops applied to
the content only when the request is a reasoning one. It also keeps the reply's text, tool calls,
finish reason and counts for the live guards and the workload record. Pure: parsed JSON in and
out; only choice 0 is shaped, as every client of these servers reads only that one.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from sparkrig.gateway.reasoning_fields import (
    UPSTREAM_KEYS,
    ReasoningKeys,
    ThinkTags,
    put_reasoning,
    take_reasoning,
)
from sparkrig.gateway.request_faults import Api
from sparkrig.gateway.stops import ContentStops
from sparkrig.outside_numbers import count_or_none
from sparkrig.wire.openai import first_choice, string

Chunk = dict[str, Any]


@dataclass
class ShapePlan:
    """Decided when the request arrives."""

    api: Api
    stops: list[str] = field(default_factory=list)  # applied here (held back from upstream)
    keys: ReasoningKeys | None = None  # None: the reasoning keys are left as they came
    opened_by_template: bool = False


@dataclass
class ReplyText:
    """The reply as the client received it, for the guards and the workload record."""

    content: str = ""
    reasoning: str = ""
    reasoning_key: str | None = None
    end_marker_seen: bool = False
    tool_arguments: dict[int, str] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    stopped_here: bool = False


class ReplyShaper:
    def __init__(self, plan: ShapePlan) -> None:
        self.plan = plan
        self.reply = ReplyText()
        self.ended = False
        self._stops = ContentStops(plan.stops)
        self._tags = ThinkTags(opened_by_template=plan.opened_by_template) if plan.keys else None
        self._last: Chunk | None = None
        self._finished = False
        self.unchanged = False  # the last reply or chunk shaped is exactly as it came

    # --- a whole reply ---------------------------------------------------------------------

    def shape_body(self, body: Chunk) -> Chunk:
        """The reply shaped in place; `unchanged` says whether it still is as it came."""
        self._counts(body)
        self.unchanged = True
        choice = first_choice(body)
        if choice is None:
            return body
        if self.plan.api == "completions":
            self.reply.content = string(choice, "text")
            self.reply.finish_reason = choice.get("finish_reason")
            return body
        message = choice.get("message")
        if not isinstance(message, dict):
            return body
        had_content = message.get("content") is not None
        before = (message.get("content"), choice.get("finish_reason"))
        reasoning, content = self._split(message, string(message, "content"), final=True)
        content = self._stops.feed(content)
        if self._stops.stopped:
            choice["finish_reason"] = "stop"
            self.reply.stopped_here = True
        else:
            content += self._stops.finish()
        message["content"] = content if (content or had_content) else message.get("content")
        put_reasoning(message, reasoning, self._keys)
        self._calls(message.get("tool_calls"))
        self.reply.content, self.reply.reasoning = content, reasoning
        self.reply.finish_reason = choice.get("finish_reason")
        # no reasoning key came or went, the content and finish_reason are as they came
        self.unchanged = not reasoning and before == (message["content"], self.reply.finish_reason)
        return body

    # --- a stream, one event at a time ------------------------------------------------------

    def shape_chunk(self, chunk: Chunk) -> Chunk | None:
        """The event to send for one upstream event; None: nothing to send (text held back).
        `ended` turns True when a stop fired here: the reply is over."""
        self._counts(chunk)
        self.unchanged = True
        choice = first_choice(chunk)
        if choice is None or self.ended:
            return None if self.ended else chunk
        self._last = chunk
        finish_reason = choice.get("finish_reason")
        if self.plan.api == "completions":
            self.reply.content += string(choice, "text")
            self.reply.finish_reason = finish_reason or self.reply.finish_reason
            return chunk
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return chunk
        had_text = bool(string(delta, "content") or any(string(delta, k) for k in UPSTREAM_KEYS))
        before = (delta.get("content"), finish_reason, any(k in delta for k in UPSTREAM_KEYS))
        reasoning, content = self._split(delta, string(delta, "content"), final=False)
        content = self._stops.feed(content) if content else ""
        if self._stops.stopped:
            finish_reason = choice["finish_reason"] = "stop"
            self.ended = self.reply.stopped_here = True
        elif finish_reason:
            tail_reasoning, tail_content = self._flush()
            reasoning, content = reasoning + tail_reasoning, content + tail_content
        self._finished = self._finished or bool(finish_reason)
        self._set_delta(delta, reasoning, content)
        self._calls(delta.get("tool_calls"))
        if finish_reason:
            self.reply.finish_reason = finish_reason
        if had_text and not (reasoning or content or finish_reason or delta.get("tool_calls")):
            return None
        # no reasoning key came or went, the content and finish_reason are as they came
        self.unchanged = (
            not before[2]
            and not reasoning
            and before[:2] == (delta.get("content"), choice.get("finish_reason"))
        )
        return chunk

    def finish_chunks(self) -> list[Chunk]:
        """The upstream stream ended without a finish_reason: what is still held back."""
        if self._finished or self.ended or self._last is None or self.plan.api != "chat":
            return []
        reasoning, content = self._flush()
        if not (reasoning or content):
            return []
        chunk = copy.deepcopy(self._last)
        for extra in ("usage", "timings"):
            chunk.pop(extra, None)
        choice = chunk["choices"][0]
        choice["finish_reason"] = None
        choice["delta"] = {}
        self._set_delta(choice["delta"], reasoning, content)
        return [chunk]

    # --- shared -----------------------------------------------------------------------------

    @property
    def _keys(self) -> ReasoningKeys:
        if self.plan.keys is not None:
            return self.plan.keys
        key = self.reply.reasoning_key
        return "reasoning" if key == "reasoning" else "reasoning_content"

    def _split(self, holder: dict[str, Any], content: str, *, final: bool) -> tuple[str, str]:
        reasoning, key = take_reasoning(holder)
        self.reply.reasoning_key = self.reply.reasoning_key or key
        if reasoning and (content or not final):
            self.reply.end_marker_seen = self.reply.end_marker_seen or bool(content)
        if self._tags is not None:
            tag_reasoning, content = self._tags.feed(content) if content else ("", "")
            if final:
                tail_reasoning, tail_content = self._tags.finish()
                tag_reasoning, content = tag_reasoning + tail_reasoning, content + tail_content
            if tag_reasoning:
                self.reply.reasoning_key = self.reply.reasoning_key or "think_tags"
            reasoning += tag_reasoning
            self.reply.end_marker_seen = self.reply.end_marker_seen or self._tags.closed
        if self.reply.reasoning and content:
            self.reply.end_marker_seen = True
        return reasoning, content

    def _flush(self) -> tuple[str, str]:
        reasoning, content = self._tags.finish() if self._tags else ("", "")
        content = self._stops.feed(content) if content else ""
        if self._stops.stopped:
            self.reply.stopped_here = True
            return reasoning, content
        return reasoning, content + self._stops.finish()

    def _set_delta(self, delta: dict[str, Any], reasoning: str, content: str) -> None:
        if content:
            delta["content"] = content
        elif delta.get("content"):  # its text held back; an empty "" goes out as it came
            delta.pop("content")
        put_reasoning(delta, reasoning, self._keys)
        self.reply.content += content
        self.reply.reasoning += reasoning

    def _calls(self, calls: Any) -> None:
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                index = count_or_none(call.get("index", 0)) or 0  # an odd index: the first call
                text = self.reply.tool_arguments.get(index, "") + function["arguments"]
                self.reply.tool_arguments[index] = text

    def _counts(self, chunk: Chunk) -> None:
        if isinstance(chunk.get("usage"), dict):
            self.reply.usage = chunk["usage"]
        if isinstance(chunk.get("timings"), dict):
            self.reply.timings = chunk["timings"]
