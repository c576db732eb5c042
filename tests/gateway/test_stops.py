"""The gateway's stop scanner: cuts before the earliest stop, across event boundaries, and copes
with 100 stops or a 10 KB stop without holding back more than it must."""

from __future__ import annotations

import time

import pytest

from sparkrig.gateway.reasoning_fields import ThinkTags
from sparkrig.gateway.stops import ContentStops


def run(stops: list[str], pieces: list[str]) -> tuple[str, bool]:
    scanner = ContentStops(stops)
    out = "".join(scanner.feed(piece) for piece in pieces)
    return out + scanner.finish(), scanner.stopped


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        (["The answer is Paris. Question: more?"], ("The answer is Paris. ", True)),
        (["The answer is Paris. Que", "st", "ion: more?"], ("The answer is Paris. ", True)),
        (["The answer is Paris. Ques", "t no"], ("The answer is Paris. Quest no", False)),
        (["ends with Que"], ("ends with Que", False)),  # a held tail is sent when the reply ends
    ],
)
def test_stops_match_across_pieces(pieces: list[str], expected: tuple[str, bool]) -> None:
    assert run(["Question:"], pieces) == expected


def test_the_earliest_of_several_stops_wins() -> None:
    assert run(["END", "Paris"], ["The answer is Paris. END"]) == ("The answer is ", True)


def test_nothing_is_held_back_that_cannot_begin_a_stop() -> None:
    scanner = ContentStops(["Question:"])
    assert scanner.feed("Hello wor") == "Hello wor"
    assert scanner.feed("ld. Q") == "ld. "


def test_a_hundred_stops_and_a_ten_kilobyte_stop() -> None:
    stops = [f"stop-word-{n}" for n in range(99)] + ["x" * 10_000]
    text = "token " * 2000 + "stop-word-42 after"
    pieces = [text[at : at + 4] for at in range(0, len(text), 4)]
    started = time.perf_counter()
    out, stopped = run(stops, pieces)
    elapsed = time.perf_counter() - started
    assert (out, stopped) == ("token " * 2000, True)
    # 3,000 pieces against 100 stops: far under a second even on a busy machine
    assert elapsed < 5, elapsed


def test_a_long_stop_is_held_only_while_it_may_still_match() -> None:
    scanner = ContentStops(["x" * 10_000])
    assert scanner.feed("abc xxx") == "abc "
    assert scanner.feed("y") == "xxxy"


def test_think_tags_split_reasoning_from_content_across_pieces() -> None:
    tags = ThinkTags(opened_by_template=False)
    pieces = ["<th", "ink>\nadd them</th", "ink>\n\n", "4"]
    parts = [tags.feed(piece) for piece in pieces]
    reasoning = "".join(r for r, _ in parts)
    content = "".join(c for _, c in parts)
    assert (reasoning, content) == ("\nadd them", "4")


def test_a_template_opened_block_needs_only_the_close_tag() -> None:
    tags = ThinkTags(opened_by_template=True)
    assert tags.feed("The user greets me.</think>\n\nHello!") == ("The user greets me.", "Hello!")


def test_text_without_tags_is_content() -> None:
    tags = ThinkTags(opened_by_template=False)
    assert tags.feed("Plain <think> later") == ("", "Plain <think> later")
