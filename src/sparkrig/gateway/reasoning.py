"""Reasoning emulation: a plain model served as if it were a reasoning model.

The first `reasoning_chars` characters of each chat reply become `reasoning_content`, the rest
`content`, split by characters so a streamed and a non-streamed reply split alike. The gateway
applies the request's stop strings itself, to the content only, as a correct reasoning server
does (field notes: stop-in-reasoning); the stop-in-reasoning fault applies them to the
reasoning too, which decapitates the reply: reasoning cut at the stop, no content,
finish_reason "stop".
"""

from __future__ import annotations

from typing import NamedTuple

from sparkrig.gateway.stops import ContentStops


class Split(NamedTuple):
    reasoning: str
    content: str


class ReasoningEmulation:
    """Split one reply's text into reasoning and content and apply the stop strings."""

    def __init__(self, reasoning_chars: int, stops: list[str], *, stop_in_reasoning: bool) -> None:
        self._left = reasoning_chars
        self._reasoning_stops = ContentStops(stops if stop_in_reasoning else [])
        self._content_stops = ContentStops(stops)
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
