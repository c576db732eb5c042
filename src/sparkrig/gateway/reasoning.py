"""Reasoning emulation: a plain model served as if it were a reasoning model.

The first `reasoning_chars` characters of each chat reply become `reasoning_content`, the rest
`content`, split by characters so a streamed and a non-streamed reply split alike. The gateway
applies the request's stop strings itself, to the content only, as a correct reasoning server
does (field notes: stop-in-reasoning); the stop-in-reasoning fault applies them to the
reasoning too, which decapitates the reply: reasoning cut at the stop, no content,
finish_reason "stop".
"""

from __future__ import annotations

from typing import Any, NamedTuple


def stop_strings(body: dict[str, Any]) -> list[str]:
    """The request's `stop` as a list (it may be one string or a list); empty strings dropped."""
    stop = body.get("stop")
    values = [stop] if isinstance(stop, str) else stop if isinstance(stop, list) else []
    return [value for value in values if isinstance(value, str) and value]


class StopScanner:
    """Cut a text stream at the first stop string, holding back any tail that may begin one."""

    def __init__(self, stops: list[str]) -> None:
        self._stops = stops
        self._pending = ""
        self.stopped = False

    def feed(self, text: str) -> str:
        if self.stopped:
            return ""
        text = self._pending + text
        hits = [at for at in (text.find(stop) for stop in self._stops) if at != -1]
        if hits:
            self.stopped = True
            self._pending = ""
            return text[: min(hits)]
        held = self._longest_stop_prefix_at_end(text)
        self._pending = text[len(text) - held :] if held else ""
        return text[: len(text) - held]

    def finish(self) -> str:
        out, self._pending = ("" if self.stopped else self._pending), ""
        return out

    def _longest_stop_prefix_at_end(self, text: str) -> int:
        longest = 0
        for stop in self._stops:
            for size in range(min(len(stop) - 1, len(text)), longest, -1):
                if text.endswith(stop[:size]):
                    longest = size
                    break
        return longest


class Split(NamedTuple):
    reasoning: str
    content: str


class ReasoningEmulation:
    """Split one reply's text into reasoning and content and apply the stop strings."""

    def __init__(self, reasoning_chars: int, stops: list[str], *, stop_in_reasoning: bool) -> None:
        self._left = reasoning_chars
        self._reasoning_stops = StopScanner(stops if stop_in_reasoning else [])
        self._content_stops = StopScanner(stops)
        self.ended: str | None = None
        self.stopped_in_reasoning = False

    @property
    def in_content(self) -> bool:
        return self._left == 0 and not self.stopped_in_reasoning

    def feed(self, text: str) -> Split:
        if self.ended:
            return Split("", "")
        head, text = text[: self._left], text[self._left :]
        self._left -= len(head)
        reasoning = self._reasoning_stops.feed(head)
        if self._reasoning_stops.stopped:
            self.stopped_in_reasoning = True
            self.ended = "stop"
            return Split(reasoning, "")
        if self._left == 0:
            reasoning += self._reasoning_stops.finish()
        content = self._content_stops.feed(text) if text else ""
        if self._content_stops.stopped:
            self.ended = "stop"
        return Split(reasoning, content)

    def finish(self) -> Split:
        if self.ended:
            return Split("", "")
        return Split(self._reasoning_stops.finish(), self._content_stops.finish())
