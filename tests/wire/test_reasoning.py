"""split_think_tags: reasoning and answer out of one content string."""

from __future__ import annotations

from sparkrig.wire.reasoning import ThinkSplit, split_think_tags


def test_text_without_tags_is_all_answer() -> None:
    assert split_think_tags("Hello there") == ThinkSplit("", "Hello there", 0, False)


def test_think_block_is_split_and_both_parts_stripped() -> None:
    text = "<think>\nadd them\n</think>\n\n4"

    split = split_think_tags(text)

    assert split == ThinkSplit("add them", "4", text.index("\n\n4"), True)


def test_text_before_the_think_block_stays_in_the_answer() -> None:
    split = split_think_tags("Sure. <think>check</think> It is 4.")

    assert split.reasoning == "check"
    assert split.content == "Sure.  It is 4."
    assert split.found


def test_empty_think_block_is_found_with_no_reasoning() -> None:
    assert split_think_tags("<think></think>Hi") == ThinkSplit(
        "", "Hi", len("<think></think>"), True
    )


def test_lone_close_tag_makes_everything_before_it_reasoning() -> None:
    text = "The user greets me.</think>\n\nHello!"

    split = split_think_tags(text)

    assert split == ThinkSplit("The user greets me.", "Hello!", text.index("\n\nHello"), True)


def test_unclosed_think_tag_makes_the_rest_reasoning_and_no_answer() -> None:
    text = "<think>still working it out"

    assert split_think_tags(text) == ThinkSplit("still working it out", "", len(text), True)


def test_only_the_first_think_block_is_reasoning() -> None:
    split = split_think_tags("<think>a</think>b <think>c</think>")

    assert split.reasoning == "a"
    assert split.content == "b <think>c</think>"
