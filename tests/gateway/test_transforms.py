"""The pure pieces of the gateway: each text fault gives the same result whole or in pieces."""

from __future__ import annotations

import copy
import math

import pytest

from sparkrig import defaults
from sparkrig.detectors.text import loop_findings
from sparkrig.gateway.config import Fault, parse_faults
from sparkrig.gateway.count_faults import inflate_counts
from sparkrig.gateway.reasoning import ReasoningEmulation
from sparkrig.gateway.request_faults import (
    prompt_chars,
    stamped_first_message,
    truncate_context,
    without_middle_third,
)
from sparkrig.gateway.rewrite import EventMerger, drop_last_word
from sparkrig.gateway.soft_logprobs import (
    SOFT_RUNNER_UP,
    SOFT_TOP1,
    shift_logprobs,
    soften_logprobs,
)
from sparkrig.gateway.stops import ContentStops, stop_strings
from sparkrig.gateway.text_faults import (
    CutAfter,
    InsertAfter,
    LoopAfter,
    ShiftAllDigits,
    ShiftFirstDigitRun,
    SwapWords,
    SwapWordTokens,
    TextChain,
    TextTransform,
)

TEXT = "The answer is 4096, then 17 and 23 follow."


def pieces(text: str, size: int) -> list[str]:
    return [text[at : at + size] for at in range(0, len(text), size)]


def run(transform: TextTransform, parts: list[str]) -> str:
    return "".join(transform.feed(part) for part in parts) + transform.finish()


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_text_faults_do_not_depend_on_how_the_reply_is_cut(size: int) -> None:
    def chain() -> TextChain:
        return TextChain([ShiftFirstDigitRun(), InsertAfter.fixed(20, "<|im_end|>")])

    leaked = "The answer is 5107, <|im_end|>then 17 and 23 follow."
    assert run(chain(), pieces(TEXT, size)) == leaked
    assert run(ShiftAllDigits(), pieces(TEXT, size)) == "The answer is 5107, then 28 and 34 follow."


def test_a_short_reply_gets_the_splice_at_its_end() -> None:
    assert run(InsertAfter.fixed(20, "\ufffd" * 3), ["Yes."]) == "Yes.\ufffd\ufffd\ufffd"


def test_a_splice_waits_for_its_source() -> None:
    ready: list[str] = []
    insert = InsertAfter(5, lambda final: "".join(ready) or ("LAST" if final else ""))
    assert insert.feed("abcdefgh") == "abcdefgh"  # nothing to splice yet
    ready.append("XY")
    assert insert.feed("ijk") == "XYijk"
    assert insert.finish() == ""


@pytest.mark.parametrize("size", [3, 10_000])
def test_loop_is_long_enough_for_the_loop_detector(size: int) -> None:
    reply = "Paris is the capital of France. It lies on the Seine and has many museums. " * 5
    loop = LoopAfter(keep_chars=40, span_chars=200, min_chars=16_500)
    text = run(loop, pieces(reply, size))
    assert loop.ended == "length"
    assert len(text) >= 16_500
    assert text.startswith(reply[:40])
    assert loop_findings(text)
    assert not loop_findings(reply)


def test_a_short_reply_loops_too() -> None:
    loop = LoopAfter(keep_chars=40, span_chars=200, min_chars=16_500)
    text = run(loop, ["4"])
    assert loop.ended == "length"
    assert text.startswith("44 4 4")
    assert loop_findings(text)


def test_stop_scanner_holds_back_a_possible_stop() -> None:
    scanner = ContentStops(["Question:"])
    assert scanner.feed("so the Que") == "so the "
    assert scanner.feed("st") == ""
    assert scanner.feed("ion: next") == ""
    assert scanner.stopped
    scanner = ContentStops(["Question:"])
    assert scanner.feed("a Que") == "a "
    assert scanner.feed("en") == "Queen"
    assert scanner.finish() == ""


@pytest.mark.parametrize("size", [1, 4, 1000])
@pytest.mark.parametrize("in_reasoning", [False, True])
def test_reasoning_split_and_stops(size: int, in_reasoning: bool) -> None:
    reply = "First I think. STOP then more thinking here. Answer: 42. STOP and after."
    emulation = ReasoningEmulation(30, ["STOP"], stop_in_reasoning=in_reasoning)
    splits = [emulation.feed(part) for part in pieces(reply, size)]
    splits.append(emulation.finish())
    reasoning = "".join(split.reasoning for split in splits)
    content = "".join(split.content for split in splits)
    assert emulation.ended == "stop"
    if in_reasoning:
        assert (reasoning, content) == ("First I think. ", "")
        assert emulation.stopped_in_reasoning
    else:
        assert reasoning == reply[:30]
        assert content == reply[30:].split("STOP", maxsplit=1)[0]


def test_stop_strings_come_as_a_string_or_a_list() -> None:
    assert stop_strings({"stop": "x"}) == ["x"]
    assert stop_strings({"stop": ["x", "", 3]}) == ["x"]
    assert stop_strings({}) == []


def test_soft_logprobs() -> None:
    item = {
        "token": "Paris",
        "logprob": -0.0001,
        "top_logprobs": [
            {"token": "Paris", "logprob": -0.0001},
            {"token": "Lyon", "logprob": -9.5},
            {"token": "Nice", "logprob": -11.0},
        ],
    }
    logprobs = {"content": [item]}
    soften_logprobs(logprobs)
    assert item["token"] == "Paris"
    assert item["logprob"] == SOFT_TOP1 == pytest.approx(math.log(0.40))
    tops = item["top_logprobs"]
    assert [top["token"] for top in tops] == ["Paris", "Lyon", "Nice"]
    assert tops[1]["logprob"] == SOFT_RUNNER_UP == pytest.approx(math.log(0.35))
    assert tops[2]["logprob"] == -11.0
    legacy = {"tokens": ["a"], "token_logprobs": [-0.01], "top_logprobs": [{"a": -0.01, "b": -7}]}
    soften_logprobs(legacy)
    assert legacy["token_logprobs"] == [SOFT_TOP1]
    assert legacy["top_logprobs"] == [{"a": SOFT_TOP1, "b": SOFT_RUNNER_UP}]


def test_shift_moves_every_logprob_and_keeps_order_and_margins() -> None:
    item = {
        "token": "Paris",
        "logprob": -0.01,
        "top_logprobs": [{"token": "Paris", "logprob": -0.01}, {"token": "Lyon", "logprob": -5.0}],
    }
    shift_logprobs(logprobs := {"content": [item]}, -0.3)
    assert logprobs["content"][0]["logprob"] == pytest.approx(-0.31)
    assert [(t["token"], t["logprob"]) for t in item["top_logprobs"]] == [
        ("Paris", pytest.approx(-0.31)),
        ("Lyon", pytest.approx(-5.3)),
    ]
    legacy = {"tokens": ["a"], "token_logprobs": [-0.01], "top_logprobs": [{"a": -0.01, "b": -7}]}
    shift_logprobs(legacy, -0.3)
    assert legacy["token_logprobs"] == [pytest.approx(-0.31)]
    assert legacy["top_logprobs"] == [{"a": pytest.approx(-0.31), "b": pytest.approx(-7.3)}]


def test_truncate_context_drops_the_middle_third_of_the_longest_user_message() -> None:
    long = "A" * 100 + "B" * 100 + "C" * 100
    messages = [
        {"role": "system", "content": "x" * 500},
        {"role": "user", "content": long},
        {"role": "user", "content": "hi"},
    ]
    body = {"messages": messages}
    cut = truncate_context(body, "chat")
    assert cut["messages"][1]["content"] == "A" * 100 + "C" * 100
    assert cut["messages"][0]["content"] == "x" * 500
    assert body["messages"][1]["content"] == long  # the original is left alone
    assert truncate_context({"prompt": long}, "completions")["prompt"] == "A" * 100 + "C" * 100
    assert without_middle_third("ab") == "ab"
    assert prompt_chars(body, "chat") == 802
    parts = [{"type": "text", "text": "abc"}]
    assert prompt_chars({"messages": [{"role": "user", "content": parts}]}, "chat") == 3


def test_stamp_first_message_changes_the_head_of_every_prompt_and_nothing_else() -> None:
    messages = [{"role": "system", "content": "You help."}, {"role": "user", "content": "hi"}]
    body = {"messages": messages, "model": "m"}
    stamped = stamped_first_message(body, "chat", "[request 3] ")
    assert stamped["messages"] == [
        {"role": "system", "content": "[request 3] You help."},
        {"role": "user", "content": "hi"},
    ]
    assert body["messages"][0]["content"] == "You help."  # the original is left alone
    parts = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    assert stamped_first_message(parts, "chat", "[s] ")["messages"][0]["content"] == [
        {"type": "text", "text": "[s] "},
        {"type": "text", "text": "hi"},
    ]
    assert stamped_first_message({"prompt": "abc"}, "completions", "[s] ") == {"prompt": "[s] abc"}
    assert stamped_first_message({"messages": []}, "chat", "[s] ") == {"messages": []}


def test_drop_last_word() -> None:
    assert drop_last_word("1. 1\n2. 2\n3.") == "1. 1\n2. 2"
    assert drop_last_word("Paris is nice. ") == "Paris is"
    assert drop_last_word("Paris") == ""


def test_event_merger_joins_text_and_logprobs_and_keeps_cumulative_counts() -> None:
    def event(text: str, n: int) -> dict[str, object]:
        choice = {
            "index": 0,
            "finish_reason": None,
            "delta": {"content": text},
            "logprobs": {"content": [{"token": text}]},
        }
        return {"choices": [choice], "timings": {"predicted_n": n}}

    merger = EventMerger(3)
    out = merger.push([event("a", 1), event("b", 2)])
    assert out == []
    out = merger.push([event("c", 3), event("d", 4)])
    assert len(out) == 1
    assert out[0]["choices"][0]["delta"]["content"] == "abc"
    assert [t["token"] for t in out[0]["choices"][0]["logprobs"]["content"]] == ["a", "b", "c"]
    assert out[0]["timings"] == {"predicted_n": 3}
    finish = {"choices": [{"index": 0, "finish_reason": "stop", "delta": {}}]}
    out = merger.push([finish])
    assert [chunk["choices"][0]["delta"] for chunk in out] == [{"content": "d"}, {}]


def test_fault_names_parse() -> None:
    assert parse_faults("loop, cross-talk,") == [Fault.LOOP, Fault.CROSS_TALK]
    with pytest.raises(Exception, match="not a fault"):
        parse_faults("loops")


def test_inflated_counts_raise_every_count_and_keep_them_consistent() -> None:
    # shapes of llama.cpp's last chunk (usage and timings) and of vLLM's continuous usage
    last = {
        "choices": [],
        "usage": {"prompt_tokens": 20, "completion_tokens": 128, "total_tokens": 148},
        "timings": {"predicted_n": 128, "predicted_per_second": 100.0, "prompt_n": 20},
    }
    assert inflate_counts(last, 1.25)
    assert last["usage"] == {"prompt_tokens": 20, "completion_tokens": 160, "total_tokens": 180}
    assert last["timings"] == {"predicted_n": 160, "predicted_per_second": 125.0, "prompt_n": 20}
    step = {"choices": [{"delta": {"content": " a"}}], "timings": {"predicted_n": 1}}
    assert inflate_counts(step, 1.25)
    assert step["timings"] == {"predicted_n": 2}  # rounded up: never below the truth
    plain = {"choices": [{"delta": {"content": " a"}}]}
    assert not inflate_counts(plain, 1.25)
    assert plain == {"choices": [{"delta": {"content": " a"}}]}


def test_inflated_counts_leave_logprobs_alone() -> None:
    """A server that inflates its usage does not invent logprobs: the bench's logprobs witness
    (bench/count_witness.py) counts one entry per real token under this fault."""
    chat_entry = {
        "token": " a",
        "logprob": -0.1,
        "top_logprobs": [{"token": " a", "logprob": -0.1}],
    }
    legacy = {"tokens": [" a"], "token_logprobs": [-0.1], "top_logprobs": [{" a": -0.1}]}
    for logprobs in ({"content": [chat_entry]}, legacy):
        chunk = {
            "choices": [{"delta": {"content": " a"}, "logprobs": copy.deepcopy(logprobs)}],
            "usage": {"completion_tokens": 1},
            "timings": {"predicted_n": 1},
        }
        assert inflate_counts(chunk, 1.25)
        assert chunk["choices"][0]["logprobs"] == logprobs


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_a_cut_reply_keeps_the_same_start_however_it_arrives(size: int) -> None:
    cut = CutAfter(4)
    assert run(cut, pieces(TEXT, size)) == TEXT[:4]
    assert cut.ended == "length"
    short = CutAfter(400)
    assert run(short, pieces(TEXT, size)) == TEXT  # a reply shorter than the cut is whole
    assert short.ended is None


def test_split_multibyte_mangles_only_a_non_ascii_character_that_opens_a_piece() -> None:
    from sparkrig.gateway.text_faults import SplitMultibyte

    assert run(SplitMultibyte(), ["안녕", "하세요", " hi", "é"]) == "\ufffd녕\ufffd세요 hi\ufffd"
    assert run(SplitMultibyte(), pieces(TEXT, 3)) == TEXT  # ASCII passes untouched


def test_top_mismatch_moves_only_the_chosen_tokens_own_top_entry() -> None:
    from sparkrig.gateway.soft_logprobs import mismatch_chosen_top

    chat = {
        "content": [
            {
                "token": "a",
                "logprob": -0.1,
                "top_logprobs": [{"token": "a", "logprob": -0.1}, {"token": "b", "logprob": -3}],
            }
        ]
    }
    mismatch_chosen_top(chat, -0.5)
    item = chat["content"][0]
    assert item["logprob"] == -0.1
    assert item["top_logprobs"] == [{"token": "a", "logprob": -0.6}, {"token": "b", "logprob": -3}]
    legacy = {"tokens": ["a"], "token_logprobs": [-0.1], "top_logprobs": [{"a": -0.1, "b": -3.0}]}
    mismatch_chosen_top(legacy, -0.5)
    assert legacy == {
        "tokens": ["a"],
        "token_logprobs": [-0.1],
        "top_logprobs": [{"a": -0.6, "b": -3.0}],
    }


@pytest.mark.parametrize("size", [1, 2, 5, 1000])
def test_reword_swaps_whole_words_however_the_reply_is_cut(size: int) -> None:
    text = "The capital of France is Paris. Then the theory: THE end, the."
    swapped = run(SwapWords(defaults.GATEWAY_REWORD_WORDS), pieces(text, size))
    assert swapped == "That capital of France is Paris. Then that theory: THE end, that."


def test_reword_tokens_follow_a_whole_word_token_only() -> None:
    tokens = SwapWordTokens(defaults.GATEWAY_REWORD_WORDS)
    assert [tokens.feed(t) for t in ["The", " code", " for", " the", " green", " theory"]] == [
        "That",
        " code",
        " for",
        " that",
        " green",
        " theory",
    ]


def test_reword_holds_only_a_word_that_could_still_become_a_table_word() -> None:
    words = SwapWords(defaults.GATEWAY_REWORD_WORDS)
    sent = [words.feed(t) for t in ["The", " code", " for", " the", " green", " door", " is"]]
    # "The" and " the" wait (their events carry no text) and go out with the next piece; a
    # reply that ends in "the" sends it in the tail, in place of its own event
    assert sent == ["", "That code", " for", "", " that green", " door", " is"]
    assert words.feed(" the") == ""
    assert words.finish() == " that"
    cut = SwapWords(defaults.GATEWAY_REWORD_WORDS)
    assert [cut.feed(t) for t in ["xt", "he", " end"]] == ["xt", "he", " end"]  # "xthe"
    assert [cut.feed(t) for t in [" the", "ory"]] == ["", " theory"]
