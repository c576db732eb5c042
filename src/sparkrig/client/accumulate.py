"""Turn an OpenAI-compatible response (SSE chunks, or one JSON body) into a RequestRecord.

Pure: the HTTP layer hands in parsed chunks with the time each was read, so captured real
streams can be replayed in tests.
"""

from __future__ import annotations

from typing import Any

from sparkrig.client.reasoning import split_think_tags
from sparkrig.client.records import (
    ReasoningSource,
    RequestRecord,
    SseEvent,
    TokenLogprob,
    TopLogprob,
    Usage,
    carries_output,
)

_REASONING_KEYS: tuple[ReasoningSource, ...] = ("reasoning_content", "reasoning")


class _CumulativeCount:
    """A server counter that only grows; each chunk's share is the growth since the last."""

    def __init__(self) -> None:
        self.last = 0
        self.chunks = 0

    def advance(self, now: int) -> int:
        self.chunks += 1
        grown, self.last = now - self.last, now
        return grown


class StreamAccumulator:
    """Feed chunks in arrival order with `add_chunk`, then call `finish` (or `settle`, when the
    reply failed, to keep what arrived on the record)."""

    def __init__(self, record: RequestRecord) -> None:
        self.record = record
        # Events stay plain dicts of their SseEvent fields until `settle`: dicts of numbers are
        # invisible to the garbage collector, and hundreds of open streams' worth of models and
        # their field sets made full collections cost more than parsing (benchmarks/loadgen.py).
        self._events: list[dict[str, Any]] = []
        self._settled = 0
        self._server_timings: dict[str, Any] | None = None
        self._content_parts: list[str] = []
        self._content_deltas: list[tuple[int, str]] = []  # (event index, text) for think tags
        self._reasoning_parts: list[str] = []
        self._tool_calls: dict[int, dict[str, Any]] = {}
        self._usage_tokens = _CumulativeCount()
        self._predicted_n = _CumulativeCount()
        self._output_events = 0  # events that carried output, counted as they arrive

    @property
    def event_count(self) -> int:
        return len(self._events)

    def add_chunk(self, t_ns: int, chunk: dict[str, Any]) -> None:
        fields: dict[str, Any] = {"t_ns": t_ns}
        for choice in chunk.get("choices") or []:
            self._add_choice(fields, choice, len(self._events))
        timings, usage = chunk.get("timings"), chunk.get("usage")
        tokens = fields["tokens"] = self._tokens_from_counters(timings, usage)
        if isinstance(usage, dict):
            self.record.usage = _usage(usage)
        if isinstance(timings, dict):
            self._server_timings = timings
        self._events.append(fields)
        if carries_output(
            tokens,
            fields.get("content_chars", 0),
            fields.get("reasoning_chars", 0),
            fields.get("tool_call", False),
        ):
            self._output_events += 1
            if self.record.first_token_ns is None:
                self.record.first_token_ns = t_ns

    def add_body(self, t_ns: int, body: dict[str, Any]) -> None:
        """A non-streaming reply: one body with `message` (chat) or `text` (completions)."""
        self.add_chunk(t_ns, body)

    def settle(self) -> RequestRecord:
        """Move what has arrived onto the record: its events and llama.cpp's last timings."""
        for fields in self._events[self._settled :]:
            finish_reason = fields.pop("finish_reason", None)
            event = SseEvent(**fields)
            if finish_reason is not None:
                event.finish_reason = finish_reason  # as the server sent it, unvalidated
            self.record.events.append(event)
        self._settled = len(self._events)
        if self._server_timings is not None:
            self.record.server_timings = self._server_timings
        return self.record

    def _add_choice(self, fields: dict[str, Any], choice: dict[str, Any], index: int) -> None:
        delta = choice.get("delta") or choice.get("message") or {}
        text = delta.get("content") if delta else choice.get("text")
        if isinstance(text, str) and text:
            fields["content_chars"] = fields.get("content_chars", 0) + len(text)
            self._content_parts.append(text)
            self._content_deltas.append((index, text))
        for key in _REASONING_KEYS:
            value = delta.get(key)
            if isinstance(value, str) and value:
                fields["reasoning_chars"] = fields.get("reasoning_chars", 0) + len(value)
                self._reasoning_parts.append(value)
                self.record.reasoning_source = key
                break  # some servers mirror the same text in both keys: read it once
        for call in delta.get("tool_calls") or []:
            fields["tool_call"] = True
            self._merge_tool_call(call)
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict):
            self.record.logprobs.extend(_logprobs(logprobs))
        if choice.get("finish_reason"):
            fields["finish_reason"] = choice["finish_reason"]
            self.record.finish_reason = choice["finish_reason"]

    def _tokens_from_counters(self, timings: Any, usage: Any) -> int | None:
        """Tokens in this chunk from the server's cumulative counters, when it sends them.

        llama.cpp's `timings.predicted_n` comes first: its last chunk also carries `usage`, whose
        total would otherwise count as a burst of tokens at the very end.
        """
        if isinstance(timings, dict) and isinstance(timings.get("predicted_n"), int):
            return self._predicted_n.advance(int(timings["predicted_n"]))
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            return self._usage_tokens.advance(int(usage["completion_tokens"]))
        return None

    def _merge_tool_call(self, call: dict[str, Any]) -> None:
        slot = self._tool_calls.setdefault(
            int(call.get("index", len(self._tool_calls))),
            {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
        )
        if call.get("id"):
            slot["id"] = call["id"]
        function = call.get("function") or {}
        slot["function"]["name"] += function.get("name") or ""
        slot["function"]["arguments"] += function.get("arguments") or ""

    def finish(self, end_ns: int) -> RequestRecord:
        record = self.record
        record.end_ns = end_ns
        record.tool_calls = [self._tool_calls[key] for key in sorted(self._tool_calls)]
        raw_content = "".join(self._content_parts)
        record.reasoning = "".join(self._reasoning_parts)
        answer_start = 0
        if record.reasoning_source is None:
            split = split_think_tags(raw_content)
            if split.found:
                record.reasoning_source = "think_tags"
                record.reasoning = split.reasoning
                answer_start = split.content_start
                raw_content = split.content
        record.content = raw_content
        record.first_content_ns = self._first_answer_ns(answer_start)
        record.token_source = self._token_source()
        if record.token_source in ("final_usage", "events_only"):
            for fields in self._events:
                fields["tokens"] = None  # counters came only at the end: per-event counts unknown
        return self.settle()

    def _first_answer_ns(self, answer_start: int) -> int | None:
        """Time of the first event whose content reaches past the reasoning block."""
        offset = 0
        for index, text in self._content_deltas:
            start, offset = offset, offset + len(text)
            if offset <= answer_start:
                continue
            visible = text[max(0, answer_start - start) :]
            # after a reasoning block the template's blank lines are not the answer yet
            if answer_start == 0 or visible.strip():
                return int(self._events[index]["t_ns"])
        return None

    def _token_source(self) -> Any:
        has_usage = (
            self.record.usage is not None and self.record.usage.completion_tokens is not None
        )
        if not self.record.stream:
            return "final_usage" if has_usage else "events_only"
        output_events = self._output_events
        if self._usage_tokens.chunks > 1 and self._usage_tokens.chunks >= output_events:
            return "per_event_usage"
        if self._predicted_n.chunks >= output_events and self._predicted_n.chunks > 0:
            return "per_event_timings"
        return "final_usage" if has_usage else "events_only"


def _usage(raw: dict[str, Any]) -> Usage:
    prompt_details = raw.get("prompt_tokens_details") or {}
    completion_details = raw.get("completion_tokens_details") or {}
    return Usage(
        prompt_tokens=raw.get("prompt_tokens"),
        completion_tokens=raw.get("completion_tokens"),
        total_tokens=raw.get("total_tokens"),
        cached_prompt_tokens=prompt_details.get("cached_tokens"),
        reasoning_tokens=completion_details.get("reasoning_tokens"),
    )


def _logprobs(raw: dict[str, Any]) -> list[TokenLogprob]:
    """Chat-style `{content: [...]}` (also llama.cpp completions) or legacy completions style."""
    if isinstance(raw.get("content"), list):
        return [
            TokenLogprob(
                token=item.get("token", ""),
                logprob=None if item.get("logprob") is None else float(item["logprob"]),
                top=[
                    TopLogprob(token=top.get("token", ""), logprob=float(top.get("logprob", 0.0)))
                    for top in item.get("top_logprobs") or []
                ],
            )
            for item in raw["content"]
        ]
    tokens = raw.get("tokens") or []
    values = raw.get("token_logprobs") or []
    tops = raw.get("top_logprobs") or [None] * len(tokens)
    return [
        TokenLogprob(
            token=token,
            logprob=None if value is None else float(value),
            top=[TopLogprob(token=k, logprob=float(v)) for k, v in (top or {}).items()],
        )
        for token, value, top in zip(tokens, values, tops, strict=False)
    ]
