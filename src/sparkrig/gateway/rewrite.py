"""Apply a ReplyPlan to a reply: a non-streamed body, or a stream one parsed event at a time.

Pure: the proxy hands in parsed JSON and sends what comes back. Only choice 0 is rewritten.
"""

from __future__ import annotations

import copy
from typing import Any

from sparkrig import defaults
from sparkrig.gateway.count_faults import inflate_counts
from sparkrig.gateway.ledger import TrackedRequest
from sparkrig.gateway.logprob_tokens import retext_tokens, splice_index
from sparkrig.gateway.plan import ReplyPlan
from sparkrig.gateway.reasoning import Split
from sparkrig.gateway.soft_logprobs import mismatch_chosen_top, shift_logprobs, soften_logprobs
from sparkrig.gateway.text_faults import ShiftFirstDigitRun
from sparkrig.outside_numbers import count_or_none
from sparkrig.wire.openai import first_choice, logprob_items, text_holder

Chunk = dict[str, Any]
# a text longer than this (a loop) is sent as several events, as a server would stream it
_EVENT_CHARS = defaults.GATEWAY_LOOP_SPAN_CHARS


def drop_last_word(text: str) -> str:
    """stream-mismatch: the text without its last word (and the space before it)."""
    stripped = text.rstrip()
    cut = max(stripped.rfind(" "), stripped.rfind("\n"), stripped.rfind("\t"))
    return stripped[:cut] if cut > 0 else ""


def rewrite_body(plan: ReplyPlan, request: TrackedRequest, body: Chunk) -> Chunk:
    """A whole non-streamed reply, rewritten in place and returned."""
    if plan.inflate_counts:
        inflate_counts(body, plan.inflate_counts)
    choice = first_choice(body)
    if choice is None:
        return body
    holder = choice.get("message") if plan.api == "chat" else choice
    key = "content" if plan.api == "chat" else "text"
    if not isinstance(holder, dict):
        return body
    text = holder.get(key)
    if isinstance(text, str):
        request.received.append(text)
    if plan.pipeline is not None and isinstance(text, str):
        first, last = plan.pipeline.feed(text), plan.pipeline.finish()
        items = logprob_items(choice)
        if items is not None:
            reasoning_chars = len(first.reasoning + last.reasoning)
            at = splice_index(items, reasoning_chars + defaults.GATEWAY_SPLICE_AFTER_CHARS)
            plan.pipeline.follow_in_tokens(items, at)
        text = first.content + last.content
        if plan.emulated_reasoning:
            holder["reasoning_content"] = first.reasoning + last.reasoning
            text = None if plan.pipeline.decapitated else text
        if plan.pipeline.ended:
            choice["finish_reason"] = plan.pipeline.ended
    if isinstance(text, str):
        text = _body_only_faults(plan, request, choice, text)
    if key in holder or text is not None:
        holder[key] = text
    _logprob_faults(plan, choice)
    if plan.break_tool_args:
        _break_tool_args(holder.get("tool_calls") or [])
    return body


def _logprob_faults(plan: ReplyPlan, choice: dict[str, Any]) -> bool:
    """degrade-after and soft-body-alone soften, drift-after shifts; True when either did."""
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict) or not (
        plan.soften_logprobs or plan.shift_logprobs or plan.mismatch_top
    ):
        return False
    if plan.soften_logprobs:
        soften_logprobs(logprobs)
    if plan.shift_logprobs:
        shift_logprobs(logprobs, plan.shift_logprobs)
    if plan.mismatch_top:
        mismatch_chosen_top(logprobs, defaults.GATEWAY_TOP_MISMATCH_NATS)
    return True


def _body_only_faults(
    plan: ReplyPlan, request: TrackedRequest, choice: dict[str, Any], text: str
) -> str:
    """The faults of the non-streamed path alone: stream-mismatch, and body-under-load when the
    request overlapped another generation (its neighbours are known once the reply is whole)."""
    if plan.drop_last_word:
        text = drop_last_word(text)
    if plan.corrupt_body_under_load and request.neighbours:
        text = ShiftFirstDigitRun().feed(text)  # whole: the run cannot be cut
        if (items := logprob_items(choice)) is not None:
            retext_tokens(items, ShiftFirstDigitRun())
    return text


def _break_tool_args(calls: list[Any]) -> None:
    """broken-tool-args, whole: each call's arguments lose their last character."""
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("arguments"), str):
            function["arguments"] = function["arguments"][:-1]


class StreamRewriter:
    """One streamed reply. `rewrite` answers the events to send for one upstream event (None:
    send it unchanged); `ended` says the gateway ended the reply and stops reading upstream."""

    def __init__(self, plan: ReplyPlan, request: TrackedRequest) -> None:
        self.plan = plan
        self.request = request
        self.ended = False
        self._held_args: dict[int, str] = {}
        self._held_logprobs: list[Any] = []
        self._merger = EventMerger(plan.merge_events) if plan.merge_events else None

    def rewrite(self, chunk: Chunk) -> list[Chunk] | None:
        factor = self.plan.inflate_counts
        inflated = bool(factor) and inflate_counts(chunk, factor)
        events = self._rewrite_one(chunk)
        if events is None and inflated:
            events = [chunk]
        if self._merger is None:
            return events
        return self._merger.push([chunk] if events is None else events)

    def finish(self) -> list[Chunk]:
        """The upstream stream ended (or the gateway ended it): what is still to send."""
        return self._merger.flush() if self._merger else []

    def _rewrite_one(self, chunk: Chunk) -> list[Chunk] | None:
        choice = first_choice(chunk)
        if choice is None:
            return None
        delta = choice.get("delta") if self.plan.api == "chat" else choice
        key = "content" if self.plan.api == "chat" else "text"
        if not isinstance(delta, dict):
            return None
        piece = delta.get(key)
        piece = piece if isinstance(piece, str) else ""
        if piece:
            self.request.received.append(piece)
        changed = _logprob_faults(self.plan, choice)
        if self.plan.break_tool_args and delta.get("tool_calls"):
            self._hold_last_argument_char(delta["tool_calls"])
            changed = True
        if self.plan.pipeline is None or not (piece or choice.get("finish_reason")):
            return [chunk] if changed else None
        return self._rewrite_text(chunk, choice, key, piece)

    def _rewrite_text(
        self, chunk: Chunk, choice: dict[str, Any], key: str, piece: str
    ) -> list[Chunk]:
        pipeline = self.plan.pipeline
        assert pipeline is not None
        split = pipeline.feed(piece) if piece else Split("", "")
        items = logprob_items(choice)
        if items is not None:
            pipeline.follow_in_tokens(items)
        finish_reason = choice.get("finish_reason")
        tail = Split("", "")
        if finish_reason and not pipeline.ended:
            tail = pipeline.finish()
            if piece:  # the finishing event carries text itself: the tail joins it
                split, tail = Split(split[0] + tail[0], split[1] + tail[1]), Split("", "")
        if pipeline.ended:
            self.ended = True
            choice["finish_reason"] = finish_reason = pipeline.ended
        out: list[Chunk] = []
        if tail.reasoning or tail.content:
            extra = copy.deepcopy(chunk)
            extra["choices"][0]["finish_reason"] = None
            out += self._with_text(extra, key, tail)
        if piece:
            if split.reasoning or split.content or finish_reason:
                out += self._with_text(chunk, key, split)
            elif isinstance(choice.get("logprobs"), dict):  # held back: its logprobs go later
                self._held_logprobs.extend(choice["logprobs"].get("content") or [])
        elif finish_reason:
            out.append(chunk)
        return out

    def _with_text(self, chunk: Chunk, key: str, split: Split) -> list[Chunk]:
        """The event carrying `split`; a long text (a loop) goes out as several events, the
        original's finish_reason on the last one."""
        choice = chunk["choices"][0]
        size = _EVENT_CHARS
        parts = [split.content[at : at + size] for at in range(0, len(split.content), size)]
        parts = parts or [""]
        finish_reason = choice.get("finish_reason")
        events = [chunk]
        for _ in parts[1:]:
            extra = copy.deepcopy(chunk)
            for field in ("timings", "usage"):
                extra.pop(field, None)
            extra["choices"][0].pop("logprobs", None)
            events.append(extra)
        for index, (event, part) in enumerate(zip(events, parts, strict=True)):
            event_choice = event["choices"][0]
            holder = event_choice["delta"] if self.plan.api == "chat" else event_choice
            self._set_text(event_choice, holder, key, split.reasoning if index == 0 else "", part)
            event_choice["finish_reason"] = finish_reason if index == len(events) - 1 else None
        return events

    def _set_text(
        self, choice: dict[str, Any], delta: dict[str, Any], key: str, reasoning: str, text: str
    ) -> None:
        if self.plan.emulated_reasoning and reasoning:
            delta["reasoning_content"] = reasoning
        if text or key == "text":
            delta[key] = text
        else:
            delta.pop(key, None)
        logprobs = choice.get("logprobs")
        if self._held_logprobs and (reasoning or text) and isinstance(logprobs, dict):
            logprobs["content"] = self._held_logprobs + list(logprobs.get("content") or [])
            self._held_logprobs = []

    def _hold_last_argument_char(self, calls: list[Any]) -> None:
        """broken-tool-args: each call's arguments lose their last character, in a stream too:
        the last character seen is held back and dropped when the stream ends."""
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
                continue
            index = count_or_none(call.get("index", 0)) or 0  # an odd index: the first call
            text = self._held_args.get(index, "") + function["arguments"]
            function["arguments"], self._held_args[index] = text[:-1], text[-1:]


class EventMerger:
    """merged-events: every `size` consecutive content events become one event. Texts and
    logprobs lists are joined; the last event's other fields (llama.cpp's cumulative
    `timings.predicted_n`, vLLM's cumulative usage) stay, so counts still add up."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._group: list[Chunk] = []

    def push(self, chunks: list[Chunk]) -> list[Chunk]:
        out: list[Chunk] = []
        for chunk in chunks:
            if _is_plain_content(chunk):
                self._group.append(chunk)
                if len(self._group) == self._size:
                    out += self.flush()
            else:
                out += [*self.flush(), chunk]
        return out

    def flush(self) -> list[Chunk]:
        group, self._group = self._group, []
        if len(group) <= 1:
            return group
        merged = copy.deepcopy(group[-1])
        choice = merged["choices"][0]
        holder = text_holder(choice)
        for key in ("content", "reasoning_content", "reasoning", "text"):
            parts = [text_holder(first_choice(chunk) or {}).get(key) for chunk in group]
            if any(isinstance(part, str) for part in parts):
                holder[key] = "".join(part for part in parts if isinstance(part, str))
        logprob_lists = [(first_choice(chunk) or {}).get("logprobs") for chunk in group]
        if all(isinstance(lp, dict) for lp in logprob_lists):
            choice["logprobs"] = _join_logprobs(logprob_lists)  # type: ignore[arg-type]
        return [merged]


def _is_plain_content(chunk: Chunk) -> bool:
    choice = first_choice(chunk)
    if choice is None or choice.get("finish_reason") or len(chunk.get("choices") or []) != 1:
        return False
    holder = text_holder(first_choice(chunk) or {})
    if holder.get("tool_calls"):
        return False
    return any(
        isinstance(holder.get(key), str) and holder[key]
        for key in ("content", "reasoning_content", "reasoning", "text")
    )


def _join_logprobs(parts: list[dict[str, Any]]) -> dict[str, Any]:
    joined = copy.deepcopy(parts[-1])
    for key in ("content", "tokens", "token_logprobs", "top_logprobs", "text_offset"):
        lists = [part.get(key) for part in parts]
        if all(isinstance(value, list) for value in lists):
            joined[key] = [item for value in lists for item in value]  # type: ignore[union-attr]
    return joined
