"""Client stop strings applied by the gateway, to the content only (field notes: stop-in-reasoning).

Pure: text in, text out. Matching works across event boundaries: a tail that may begin a stop is
held back until the next piece decides it. The text is cut where the upstream would cut it: just
before the first stop string, the stop itself not sent (OpenAI's and llama.cpp's default).
A long stop list or a long stop costs one `str.find` per stop per piece, and the held tail is
never longer than the longest stop.
"""

from __future__ import annotations

from typing import Any


def stop_strings(body: dict[str, Any]) -> list[str]:
    """The request's `stop` as a list (it may be one string or a list); empty strings dropped."""
    stop = body.get("stop")
    values = [stop] if isinstance(stop, str) else stop if isinstance(stop, list) else []
    return [value for value in values if isinstance(value, str) and value]


class ContentStops:
    """Cut a text stream at the earliest stop string."""

    def __init__(self, stops: list[str]) -> None:
        self._stops = [stop for stop in dict.fromkeys(stops) if stop]
        self._held = ""
        self.stopped = False

    @property
    def active(self) -> bool:
        return bool(self._stops)

    def feed(self, text: str) -> str:
        """The part of `text` that can be sent now."""
        if self.stopped:
            return ""
        text = self._held + text
        hits = [at for at in (text.find(stop) for stop in self._stops) if at != -1]
        if hits:
            self.stopped = True
            self._held = ""
            return text[: min(hits)]
        keep = self._partial_stop_at_end(text)
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def finish(self) -> str:
        """The reply ended: a held tail was not a stop after all."""
        held, self._held = ("" if self.stopped else self._held), ""
        return held

    def _partial_stop_at_end(self, text: str) -> int:
        """Length of the longest end of `text` that is the beginning of some stop."""
        longest = 0
        for stop in self._stops:
            first = stop[0]
            start = max(len(text) - len(stop) + 1, 0)
            at = text.find(first, start)
            while at != -1:
                size = len(text) - at
                if size <= longest:
                    break
                if stop.startswith(text[at:]):
                    longest = size
                    break
                at = text.find(first, at + 1)
        return longest
