"""Server-sent events as the gateway relays them: split at blank lines, raw bytes kept, so an
event the gateway does not change goes out exactly as it came in."""

from __future__ import annotations

import json
from typing import Any


class SseSplitter:
    """Bytes in, whole events out (each with its terminating blank line)."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, block: bytes) -> list[bytes]:
        buffer = self._pending + block
        events: list[bytes] = []
        start = 0
        while True:
            end, size = _event_end(buffer, start)
            if end == -1:
                break
            events.append(buffer[start : end + size])
            start = end + size
        self._pending = buffer[start:]
        return events

    def finish(self) -> list[bytes]:
        """A last event that came without its blank line."""
        rest, self._pending = self._pending, b""
        return [rest + b"\n\n"] if rest.strip() else []


def _event_end(buffer: bytes, start: int) -> tuple[int, int]:
    """Where the next blank line begins, and its length; (-1, 0) when none has arrived."""
    found = [
        (at, len(marker))
        for marker in (b"\n\n", b"\r\n\r\n")
        if (at := buffer.find(marker, start)) != -1
    ]
    return min(found) if found else (-1, 0)


def sse_data(chunk: dict[str, Any]) -> bytes:
    """One event as llama.cpp writes it: compact JSON, UTF-8 as it is."""
    text = json.dumps(chunk, ensure_ascii=False, separators=(",", ":"))
    return f"data: {text}\n\n".encode()
