"""Turn an OpenAI-compatible response (SSE chunks, or one JSON body) into a RequestRecord.

Pure: the HTTP layer hands in parsed chunks with the time each was read, so captured real
streams can be replayed in tests.
"""

from __future__ import annotations

from typing import Any

from sparkrig.client.records import (
    RequestRecord,
    SseEvent,
    TokenLogprob,
    TopLogprob,
    Usage,
    carries_output,
)
from sparkrig.wire import openai as field
from sparkrig.wire.reasoning import REASONING_KEYS, split_think_tags


class _CumulativeCount:
    """A server counter that only grows; each chunk's share is the growth since the last."""

    def __init__(self) -> None:
        self.last = 0
        self.chunks = 0

    def chunk_share(self, now: int) -> int:
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
        """Raises `MalformedField` (wire.openai) for a field of the wrong type; the caller records
        it."""
        fields: dict[str, Any] = {"t_ns": t_ns}
        for position, choice in enumerate(field.items(chunk.get("choices"), "choices")):
            where = f"choices[{position}]"
            if not isinstance(choice, dict):
                raise field.MalformedField(where, "an object", choice)
            self._add_choice(fields, choice, len(self._events), where)
        timings = field.mapping(chunk.get("timings"), "timings")
        usage = field.mapping(chunk.get("usage"), "usage")
        tokens = fields["tokens"] = self._tokens_from_counters(timings, usage)
        if usage is not None:
            self.record.usage = _usage(usage)
        if timings is not None:
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

    def _add_choice(
        self, fields: dict[str, Any], choice: dict[str, Any], index: int, where: str
    ) -> None:
        key = "delta" if choice.get("delta") is not None else "message"
        delta = field.mapping(choice.get(key), f"{where}.{key}") or {}
        if delta:
            text = field.text(delta.get("content"), f"{where}.{key}.content")
        else:
            text = field.text(choice.get("text"), f"{where}.text")
        if text:
            fields["content_chars"] = fields.get("content_chars", 0) + len(text)
            self._content_parts.append(text)
            self._content_deltas.append((index, text))
        for reasoning_key in REASONING_KEYS:
            value = field.text(delta.get(reasoning_key), f"{where}.{key}.{reasoning_key}")
            if value:
                fields["reasoning_chars"] = fields.get("reasoning_chars", 0) + len(value)
                self._reasoning_parts.append(value)
                self.record.reasoning_source = reasoning_key
                break  # some servers mirror the same text in both keys: read it once
        calls = field.items(delta.get("tool_calls"), f"{where}.{key}.tool_calls")
        for position, call in enumerate(calls):
            fields["tool_call"] = True
            self._merge_tool_call(call, f"{where}.{key}.tool_calls[{position}]")
        logprobs = field.mapping(choice.get("logprobs"), f"{where}.logprobs")
        if logprobs is not None:
            entries = _logprobs(logprobs, f"{where}.logprobs")
            self.record.logprobs.extend(entries)
            if entries:
                fields["logprob_entries"] = fields.get("logprob_entries", 0) + len(entries)
        finish_reason = field.text(choice.get("finish_reason"), f"{where}.finish_reason")
        if finish_reason:
            fields["finish_reason"] = finish_reason
            self.record.finish_reason = finish_reason

    def _tokens_from_counters(
        self, timings: dict[str, Any] | None, usage: dict[str, Any] | None
    ) -> int | None:
        """Tokens in this chunk from the server's cumulative counters, when it sends them.

        llama.cpp's `timings.predicted_n` comes first: its last chunk also carries `usage`, whose
        total would otherwise count as a burst of tokens at the very end.
        """
        if timings is not None:
            predicted = field.count(timings.get("predicted_n"), "timings.predicted_n")
            if predicted is not None:
                return self._predicted_n.chunk_share(predicted)
        if usage is not None:
            completion = field.count(usage.get("completion_tokens"), "usage.completion_tokens")
            if completion is not None:
                return self._usage_tokens.chunk_share(completion)
        return None

    def _merge_tool_call(self, call: Any, where: str) -> None:
        if not isinstance(call, dict):
            raise field.MalformedField(where, "an object", call)
        index = field.count(call.get("index"), f"{where}.index")
        slot = self._tool_calls.setdefault(
            len(self._tool_calls) if index is None else index,
            {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
        )
        if call_id := field.text(call.get("id"), f"{where}.id"):
            slot["id"] = call_id
        function = field.mapping(call.get("function"), f"{where}.function") or {}
        slot["function"]["name"] += field.text(function.get("name"), f"{where}.function.name") or ""
        slot["function"]["arguments"] += (
            field.text(function.get("arguments"), f"{where}.function.arguments") or ""
        )

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
    prompt_details = field.mapping(raw.get("prompt_tokens_details"), "usage.prompt_tokens_details")
    completion_details = field.mapping(
        raw.get("completion_tokens_details"), "usage.completion_tokens_details"
    )
    return Usage(
        prompt_tokens=field.count(raw.get("prompt_tokens"), "usage.prompt_tokens"),
        completion_tokens=field.count(raw.get("completion_tokens"), "usage.completion_tokens"),
        total_tokens=field.count(raw.get("total_tokens"), "usage.total_tokens"),
        cached_prompt_tokens=field.count(
            (prompt_details or {}).get("cached_tokens"), "usage.prompt_tokens_details.cached_tokens"
        ),
        reasoning_tokens=field.count(
            (completion_details or {}).get("reasoning_tokens"),
            "usage.completion_tokens_details.reasoning_tokens",
        ),
    )


def _logprobs(raw: dict[str, Any], where: str) -> list[TokenLogprob]:
    """Chat-style `{content: [...]}` (also llama.cpp completions) or legacy completions style."""
    if isinstance(raw.get("content"), list):
        return [
            _chat_logprob(item, f"{where}.content[{n}]") for n, item in enumerate(raw["content"])
        ]
    tokens = field.items(raw.get("tokens"), f"{where}.tokens")
    values = field.items(raw.get("token_logprobs"), f"{where}.token_logprobs")
    tops = field.items(raw.get("top_logprobs"), f"{where}.top_logprobs") or [None] * len(tokens)
    result = []
    for n, (token, value, top) in enumerate(zip(tokens, values, tops, strict=False)):
        alternatives = field.mapping(top, f"{where}.top_logprobs[{n}]") or {}
        result.append(
            TokenLogprob(
                token=field.text(token, f"{where}.tokens[{n}]") or "",
                logprob=field.number(value, f"{where}.token_logprobs[{n}]"),
                top=[
                    TopLogprob(
                        token=k, logprob=_required_number(v, f"{where}.top_logprobs[{n}].{k}")
                    )
                    for k, v in alternatives.items()
                ],
            )
        )
    return result


def _chat_logprob(item: Any, where: str) -> TokenLogprob:
    if not isinstance(item, dict):
        raise field.MalformedField(where, "an object", item)
    top = []
    for n, alternative in enumerate(field.items(item.get("top_logprobs"), f"{where}.top_logprobs")):
        at = f"{where}.top_logprobs[{n}]"
        if not isinstance(alternative, dict):
            raise field.MalformedField(at, "an object", alternative)
        top.append(
            TopLogprob(
                token=field.text(alternative.get("token"), f"{at}.token") or "",
                logprob=_required_number(alternative.get("logprob", 0.0), f"{at}.logprob"),
            )
        )
    return TokenLogprob(
        token=field.text(item.get("token"), f"{where}.token") or "",
        logprob=field.number(item.get("logprob"), f"{where}.logprob"),
        top=top,
    )


def _required_number(value: Any, where: str) -> float:
    number = field.number(value, where)
    if number is None:
        raise field.MalformedField(where, "a number", value)
    return number
