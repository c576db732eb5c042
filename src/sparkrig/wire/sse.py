"""Server-sent events from bytes, and events back to bytes: the one SSE reader of sparkrig.

`SseReader` is fed blocks as they arrive and returns the events each block completes. Every event
keeps its raw bytes (so a relay can send an event it leaves alone exactly as it came), its joined
`data` lines, its `event:` and `id:` fields, and the time the block completing it arrived. A
blank line ends an event; one with no `data:` line (a comment, a keep-alive, a stray blank line)
is still an event, with `data_bytes` None, so a relay passes it on and a reader skips it.

Lines are split from whatever bytes have arrived: aiohttp's readline cost more than the rest of an
event's handling at hundreds of streams (benchmarks/loadgen.py).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import dataclass
from time import perf_counter_ns
from typing import Any

# One SSE line; bounds memory against a server gone wrong.
MAX_LINE_BYTES = 16 * 1024 * 1024
# Lines of one event before its blank line: `data:` lines, and comments and fields too, since
# the event's raw bytes are kept whatever its lines are.
MAX_EVENT_LINES = 65_536
_EXCERPT_BYTES = 500

DONE = b"data: [DONE]\n\n"
EVENT_STREAM = "text/event-stream"


def is_event_stream(content_type: str | None) -> bool:
    """A reply whose Content-Type says it is server-sent events."""
    return EVENT_STREAM in (content_type or "")


class SseFault(ValueError):
    """The bytes are not an event stream within the reader's limits; `excerpt` is the start of
    what broke it (the client records it on the request)."""

    def __init__(self, message: str, excerpt: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.excerpt = excerpt


@dataclass(frozen=True, slots=True)
class ReceivedEvent:
    """One event as it came off the wire (the client records what it carried as
    `client.records.SseEvent`)."""

    raw: bytes
    """the event's bytes, through its blank line"""
    data_bytes: bytes | None
    """the `data:` values joined by newlines; None when the event has no `data:` line"""
    event: str | None
    id: str | None
    received_ns: int
    """`time.perf_counter_ns()` when the block that completed the event arrived"""

    @property
    def data(self) -> str | None:
        """The data as text; bytes that are not UTF-8 stay visible as U+FFFD."""
        return None if self.data_bytes is None else self.data_bytes.decode(errors="replace")

    @property
    def is_done(self) -> bool:
        """OpenAI's `data: [DONE]`, the end of a reply."""
        return self.data_bytes is not None and self.data_bytes.strip() == b"[DONE]"


class SseReader:
    """Bytes in, whole events out. A limit of None turns that bound off (a relay passes on what
    it gets and leaves the judging to the client behind it)."""

    def __init__(
        self,
        *,
        max_line_bytes: int | None = MAX_LINE_BYTES,
        max_event_lines: int | None = MAX_EVENT_LINES,
    ) -> None:
        self._max_line_bytes = max_line_bytes
        self._max_event_lines = max_event_lines
        self._pending = b""  # an unfinished line waits for the next block
        self._lines: list[bytes] = []  # the current event's finished lines, without "\n"
        self._data: list[bytes] = []
        self._event: str | None = None
        self._id: str | None = None

    def feed(self, block: bytes, received_ns: int | None = None) -> list[ReceivedEvent]:
        """The events `block` completes, stamped `received_ns` (default: now)."""
        t_ns = perf_counter_ns() if received_ns is None else received_ns
        lines = (self._pending + block if self._pending else block).split(b"\n")
        self._pending = lines.pop()
        if self._max_line_bytes is not None and len(self._pending) > self._max_line_bytes:
            raise SseFault(
                f"an SSE line ran past {self._max_line_bytes} bytes with no newline — is this "
                "an event stream? check the server or proxy",
                self._pending[:_EXCERPT_BYTES].decode(errors="replace"),
            )
        events: list[ReceivedEvent] = []
        for line in lines:
            if (event := self._take(line, t_ns)) is not None:
                events.append(event)
        if self._max_event_lines is not None and len(self._lines) > self._max_event_lines:
            raise SseFault(
                f"an SSE event ran past {self._max_event_lines} lines (data lines, comments, "
                "fields) with no blank line — is this an event stream? check the server or proxy"
            )
        return events

    def finish(self, received_ns: int | None = None) -> ReceivedEvent | None:
        """At the end of the bytes: an event that came without its blank line, if any."""
        t_ns = perf_counter_ns() if received_ns is None else received_ns
        pending, self._pending = self._pending, b""
        if pending:
            self._take(pending, t_ns)
        if not any(line.strip() for line in self._lines):
            self._clear()
            return None
        self._lines.append(b"")  # the blank line it lacked
        return self._close(t_ns)

    def _take(self, raw_line: bytes, t_ns: int) -> ReceivedEvent | None:
        self._lines.append(raw_line)
        line = raw_line.rstrip(b"\r")
        if not line:
            return self._close(t_ns)
        if line.startswith(b"data:"):
            self._data.append(line[5:].lstrip(b" "))
        elif line.startswith(b"event:"):
            self._event = line[6:].strip().decode(errors="replace")
        elif line.startswith(b"id:"):
            self._id = line[3:].strip().decode(errors="replace")
        return None  # a comment (":") or a field this reader does not use

    def _close(self, t_ns: int) -> ReceivedEvent:
        raw = b"\n".join(self._lines) + b"\n"
        data = b"\n".join(self._data) if self._data else None
        event = ReceivedEvent(raw, data, self._event, self._id, t_ns)
        self._clear()
        return event

    def _clear(self) -> None:
        self._lines = []
        self._data = []
        self._event = self._id = None


async def sse_events(
    blocks: AsyncIterable[bytes], reader: SseReader | None = None
) -> AsyncGenerator[ReceivedEvent, None]:
    """Every event of a byte stream (e.g. aiohttp's `content.iter_any()`), each stamped when its
    block arrived; the last one may have come without its blank line."""
    reader = reader or SseReader()
    async for block in blocks:
        for event in reader.feed(block, perf_counter_ns()):
            yield event
    if (last := reader.finish()) is not None:
        yield last


def sse_data(chunk: dict[str, Any]) -> bytes:
    """One event as llama.cpp writes it: compact JSON, UTF-8 as it is."""
    text = json.dumps(chunk, ensure_ascii=False, separators=(",", ":"))
    return f"data: {text}\n\n".encode()
