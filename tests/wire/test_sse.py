"""The one SSE reader: events whole and raw across any split of the bytes, the limits a server
gone wrong runs into, and the writer's framing read back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from sparkrig.wire.sse import DONE, SseFault, SseReader, is_event_stream, sse_data, sse_events

# llama-server's stream framing (`data: {...}\n\n`), with a comment and CRLF lines as proxies send
STREAM = (
    b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n'
    b": ping\r\n\r\n"
    b"event: message\nid: 7\ndata: first\ndata: second\n\n"
    b"\n"
    b"data: [DONE]\n\n"
)


def _read_all(blocks: list[bytes]) -> list[tuple[bytes, bytes | None, str | None, str | None]]:
    reader = SseReader()
    events = [event for block in blocks for event in reader.feed(block, 0)]
    if (last := reader.finish(0)) is not None:
        events.append(last)
    return [(e.raw, e.data_bytes, e.event, e.id) for e in events]


def test_events_keep_raw_bytes_data_and_fields() -> None:
    events = _read_all([STREAM])
    assert [raw for raw, *_ in events] == [
        b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n',
        b": ping\r\n\r\n",
        b"event: message\nid: 7\ndata: first\ndata: second\n\n",
        b"\n",
        b"data: [DONE]\n\n",
    ]
    assert b"".join(raw for raw, *_ in events) == STREAM  # a relay sends the stream back as is
    assert events[1][1] is None
    assert events[3][1] is None
    assert events[2][1:] == (b"first\nsecond", "message", "7")


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_any_split_of_the_bytes_reads_the_same(size: int) -> None:
    blocks = [STREAM[at : at + size] for at in range(0, len(STREAM), size)]
    assert _read_all(blocks) == _read_all([STREAM])


def test_an_event_is_stamped_when_the_block_completing_it_arrived() -> None:
    reader = SseReader()
    assert reader.feed(b"data: a", 10) == []
    (event,) = reader.feed(b"\n\ndata: b", 20)
    assert (event.data, event.received_ns) == ("a", 20)
    last = reader.finish(30)
    assert last is not None
    assert (last.raw, last.data, last.received_ns) == (b"data: b\n\n", "b", 30)


def test_a_last_event_without_its_blank_line_is_kept_and_whitespace_is_not() -> None:
    reader = SseReader()
    reader.feed(b'data: {"a": 1}\n')
    last = reader.finish()
    assert last is not None
    assert last.raw == b'data: {"a": 1}\n\n'
    reader.feed(b"data: x\n\n  ")
    assert reader.finish() is None


def test_done_is_recognised() -> None:
    reader = SseReader()
    done, data = reader.feed(DONE + sse_data({"a": 1}))
    assert done.is_done
    assert not data.is_done


def test_a_line_past_the_limit_is_a_fault_naming_it() -> None:
    reader = SseReader(max_line_bytes=100)
    reader.feed(b"data: " + b"x" * 90)
    with pytest.raises(SseFault, match="ran past 100 bytes with no newline") as caught:
        reader.feed(b"x" * 20)
    assert caught.value.excerpt.startswith("data: xxx")


def test_an_event_past_the_line_limit_is_a_fault_comments_included() -> None:
    reader = SseReader(max_event_lines=3)
    reader.feed(b"data: 1\ndata: 2\ndata: 3\n")
    with pytest.raises(SseFault, match="ran past 3 lines"):
        reader.feed(b"data: 4\n")
    comments = SseReader(max_event_lines=3)  # an endless comment is held in memory all the same
    with pytest.raises(SseFault, match="ran past 3 lines"):
        comments.feed(b": a\n: b\nid: 1\n: c\n")


def test_a_relay_reader_without_limits_takes_them() -> None:
    reader = SseReader(max_line_bytes=None, max_event_lines=None)
    (event,) = reader.feed(b"data: 1\n" * 70_000 + b"\n")
    assert event.data_bytes is not None
    assert event.data_bytes.count(b"\n") == 69_999


def test_the_writer_frames_compact_utf8_json() -> None:
    framed = sse_data({"content": "é ✓", "n": [1, 2]})
    assert framed == 'data: {"content":"é ✓","n":[1,2]}\n\n'.encode()


def test_events_of_an_async_byte_stream() -> None:
    async def blocks() -> AsyncIterator[bytes]:
        for at in range(0, len(STREAM), 5):
            yield STREAM[at : at + 5]

    async def collect() -> list[bytes]:
        return [event.raw async for event in sse_events(blocks())]

    assert b"".join(asyncio.run(collect())) == STREAM


def test_an_event_stream_is_known_by_its_content_type() -> None:
    assert is_event_stream("text/event-stream; charset=utf-8")
    assert not is_event_stream("application/json")
    assert not is_event_stream(None)
