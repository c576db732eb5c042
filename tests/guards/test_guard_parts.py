"""The pure parts of the guards: divergence, scoring, schema checks, the empty-content table."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.client import ChatRequest
from sparkrig.client.records import RequestError, RequestRecord, TokenLogprob, TopLogprob
from sparkrig.client.request_parts import PERSON_SCHEMA
from sparkrig.detectors.schema import schema_problems
from sparkrig.errors import UsageError
from sparkrig.guards.baseline import Baseline, load_baseline, save_baseline
from sparkrig.guards.battery import choose_guards
from sparkrig.guards.determinism import (
    COMPLETIONS_AT,
    PROMPTS,
    QUICK_PROMPTS,
    both_paths,
    path_label,
)
from sparkrig.guards.divergence import first_difference, first_divergence, reference_problem
from sparkrig.guards.exact import contains_answer, counts_correctly
from sparkrig.guards.kv_facts import fact, item_code, item_name, result_if_reference_bad
from sparkrig.guards.kv_integrity import block_size_in_metrics
from sparkrig.guards.needle import ladder, where_found
from sparkrig.guards.stop_in_reasoning import stop_word_from

FIXTURES = Path(__file__).parent.parent / "fixtures"


def record(tokens: list[tuple[str, float, float]], runner_up: str = "~") -> RequestRecord:
    """A reply from (token, its logprob, the runner-up's logprob) triples; the runner-up is
    `runner_up`, or the word itself spelt with a leading "~" when that is the chosen token."""

    def other(token: str) -> str:
        return runner_up if token != runner_up else "~" + token

    return RequestRecord(
        url="http://x",
        api="chat",
        stream=True,
        model="m",
        send_ns=0,
        content="".join(token for token, _, _ in tokens),
        logprobs=[
            TokenLogprob(
                token=token,
                logprob=lp,
                top=[
                    TopLogprob(token=token, logprob=lp),
                    TopLogprob(token=other(token), logprob=runner),
                ],
            )
            for token, lp, runner in tokens
        ],
    )


def test_first_difference() -> None:
    assert first_difference("abc", "abc") is None
    assert first_difference("abc", "abd") == 2
    assert first_difference("ab", "abc") == 2


def test_a_flip_where_the_reference_was_sure_is_a_defect() -> None:
    reference = record([("The", -0.01, -6.0), (" cat", -0.02, -5.0), (" sat", -0.1, -4.0)])
    candidate = record([("The", -0.01, -6.0), (" dog", -0.3, -1.0), (" sat", -0.1, -4.0)])
    divergence = first_divergence(reference, candidate)
    assert divergence.kind == "defect"
    assert divergence.token_index == 1
    assert divergence.margin_nats == pytest.approx(4.98)


def test_a_flip_at_a_near_tie_is_not_a_defect() -> None:
    """The two replies swapped the reference's top two where it led by 0.2 nats."""
    reference = record([("The", -0.01, -6.0), (" cat", -0.7, -0.9)], runner_up=" cap")
    candidate = record([("The", -0.01, -6.0), (" cap", -0.7, -0.9)], runner_up=" cat")
    assert first_divergence(reference, candidate).kind == "near_tie"
    assert first_divergence(reference, reference).kind == "identical"


def test_a_close_flip_to_a_token_neither_considered_is_a_defect() -> None:
    """Cross-talk: another request's text lands where the model was unsure: still no swap."""
    reference = record([("The", -0.01, -6.0), (" cat", -0.7, -0.9)], runner_up=" cap")
    spliced = record([("The", -0.01, -6.0), (" invoice", 0.0, -9.0)], runner_up=" bill")
    assert first_divergence(reference, spliced).kind == "defect"


def test_counting_and_answers_are_scored_leniently_but_not_blindly() -> None:
    assert counts_correctly("1, 2, 3, 4, 5", 5)
    assert counts_correctly("1. 1\n2. 2\n3. 3\n4. 4\n5. 5", 5)  # the bundled model's style
    assert not counts_correctly("2, 3, 4, 5, 6", 5)  # digits shifted by one
    assert not counts_correctly("1, 2, 3", 5)
    assert contains_answer("2 + 2 = 4", "4")
    assert not contains_answer("2 + 2 = 14", "4")
    assert contains_answer("The capital of France is Paris.", "paris")


def test_schema_problems() -> None:
    assert schema_problems({"name": "Ann", "age": 31}, PERSON_SCHEMA) == []
    assert schema_problems({"name": "Ann"}, PERSON_SCHEMA) == ["missing 'age'"]
    assert schema_problems({"name": "Ann", "age": "31"}, PERSON_SCHEMA) == [
        "age: expected integer, got str"
    ]
    assert schema_problems({"name": "Ann", "age": True}, PERSON_SCHEMA)  # a bool is no integer


def test_block_size_comes_from_a_real_vllm_metrics_capture() -> None:
    assert block_size_in_metrics((FIXTURES / "vllm" / "metrics_after.txt").read_text()) == 16
    # a later vLLM's capture with a non-default block size, which ours lack
    assert block_size_in_metrics((FIXTURES / "vllm_metrics.txt").read_text()) == 4
    assert block_size_in_metrics("llamacpp:prompt_tokens_total 5\n") is None


def test_needle_ladder_and_where_the_code_was_found() -> None:
    assert ladder(4032) == [256, 512, 1024, 2048, 4032]
    assert ladder(256) == [256]
    assert ladder(2112) == [256, 512, 1024, 2112]  # not 2,048 beside 2,112
    assert ladder(960) == [256, 512, 960]  # the test server's 1,024-token slots
    assert where_found("It is 738291.", "") == "content"
    assert where_found("I do not know.", "the code is 738291") == "reasoning only"


def test_the_stop_word_comes_from_the_reasoning_and_not_the_answer() -> None:
    assert stop_word_from("iron weighs the same as wool", "Both weigh a kilogram.") == "iron"
    assert stop_word_from("same", "same") is None


def test_unknown_guards_and_foreign_baselines_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown guard nope — choose from exact"):
        choose_guards(["nope"], quick=False)
    assert [g.number for g in choose_guards(None, quick=True)] == [1, 2, 6, 8, 9, 12, 13]
    assert len(choose_guards(None, quick=False)) == 13
    path = tmp_path / "baseline.json"
    save_baseline(Baseline(model="a", scores={"exact": 1}), path)
    assert load_baseline(path, "a").scores == {"exact": 1}
    with pytest.raises(UsageError, match="recorded for model a, not b"):
        load_baseline(path, "b")
    path.write_text("{nope")
    with pytest.raises(UsageError, match=r"check baseline .* is not JSON"):
        load_baseline(path, "a")
    path.write_text('{"kind": "sparkrig-bench"}')  # a receipt: named, and never "delete it"
    with pytest.raises(UsageError, match="is a sparkrig bench receipt, not a check baseline"):
        load_baseline(path, "a")
    assert load_baseline(tmp_path / "none.json", "a").scores == {}


def test_kv_fact_names_are_distinct() -> None:
    names = [item_name(d, b) for d in range(12) for b in range(13)]
    assert len(set(names)) == len(names)
    assert fact(0, 0) == f"The code of the {item_name(0, 0)} is {item_code(0, 0)}."


def test_a_swap_is_found_where_the_same_text_came_as_other_tokens() -> None:
    """The candidate spelt "copper" as two tokens before the flip; the swap is matched by where
    the differing tokens start in the text, not by their index."""
    reference = record(
        [("cop", -0.1, -5.0), ("per", -0.1, -5.0), (" is", -0.1, -5.0), (" made", -0.6, -0.7)],
        runner_up=" used",
    )
    candidate = record(
        [("copper", -0.1, -5.0), (" is", -0.1, -5.0), (" used", -0.6, -0.7)], runner_up=" made"
    )
    assert first_divergence(reference, candidate).kind == "near_tie"


def test_stopping_where_the_other_went_on_is_a_near_tie_when_ending_was_an_alternative() -> None:
    """Seen on an H200: the reference went on with "\\n" (-1.67) where ending (-1.86) was its
    runner-up, and the candidate ended there."""
    went_on = record([("Done", -0.1, -5.0), (".", -0.1, -5.0), ("\n", -1.67, -1.86)], runner_up="")
    stopped = record([("Done", -0.1, -5.0), (".", -0.1, -5.0)])
    assert first_divergence(went_on, stopped).kind == "near_tie"
    assert first_divergence(stopped, went_on).kind == "near_tie"
    cut = record([("Done", -0.1, -5.0), (".", -0.1, -5.0), (" More", -0.2, -4.0)])
    assert first_divergence(cut, stopped).kind == "defect"  # ending was never in view


def test_a_kv_reference_that_lost_facts_against_its_baseline_fails() -> None:
    baseline = Baseline(model="m")
    # recorded, then compared
    assert result_if_reference_bad(baseline, 8, 9, {}, record=True) is None
    assert baseline.scores["kv_integrity"] == {"reference_correct": 8, "cells": 9}
    lost = result_if_reference_bad(baseline, 0, 9, {}, record=False)
    assert lost is not None
    assert lost.verdict == "FAIL"
    assert "0 of 9 facts read back alone, 8 in the baseline" in lost.evidence
    assert result_if_reference_bad(baseline, 7, 9, {}, record=False) is None  # one flip is allowed
    assert result_if_reference_bad(baseline, 9, 9, {}, record=False) is None


def test_a_kv_reference_that_found_nothing_without_a_baseline_skips() -> None:
    empty = Baseline(model="m")
    nothing = result_if_reference_bad(empty, 0, 9, {}, record=False)
    assert nothing is not None
    assert nothing.verdict == "SKIP"
    assert result_if_reference_bad(empty, 5, 9, {}, record=False) is None
    # a baseline of another shape (other --kv-* settings) is not held against this run
    other = Baseline(model="m", scores={"kv_integrity": {"reference_correct": 8, "cells": 12}})
    assert result_if_reference_bad(other, 3, 9, {}, record=False) is None


def test_determinism_sends_every_prompt_on_both_reply_paths_interleaved() -> None:
    requests = [ChatRequest(model="m", messages=[{"role": "user", "content": p}]) for p in "ab"]
    mixed = both_paths(requests)
    assert [(r.messages[0]["content"], r.stream) for r in mixed] == [
        ("a", True),
        ("a", False),
        ("b", True),
        ("b", False),
    ]
    assert [path_label(i) for i in range(4)] == [
        "prompt 1 streamed",
        "prompt 1 non-streamed",
        "prompt 2 streamed",
        "prompt 2 non-streamed",
    ]


def test_determinism_asks_both_endpoints_in_quick_and_full_runs() -> None:
    """Completions prompts sit among the chat ones, one of them inside --quick's share."""
    assert 0 < len(COMPLETIONS_AT) < len(PROMPTS)
    assert min(COMPLETIONS_AT) < QUICK_PROMPTS
    assert path_label(7, "completions") == "prompt 4 (completions) non-streamed"


def _reply(content: str = "", error: str | None = None) -> RequestRecord:
    failed = RequestError(kind="http_status", message=error) if error else None
    return RequestRecord(
        url="http://x",
        api="chat",
        stream=False,
        model="m",
        send_ns=0,
        content=content,
        finish_reason="stop",
        error=failed,
    )


def test_empty_or_failed_replies_cannot_be_a_reference() -> None:
    """Twelve identical empty replies are no agreement: the reference check fails on them, on a
    failed request, and passes real text."""
    assert reference_problem([_reply("Paris")] * 12) is None
    empty = reference_problem([_reply("Paris"), _reply("")], what="alone")
    assert empty is not None
    assert empty.startswith("alone reply 2 is empty")
    assert "empty replies cannot show agreement" in empty
    failed = reference_problem([_reply(error="HTTP 500 — check the server log")])
    assert failed == "reference request 1 failed: HTTP 500 — check the server log"


def test_the_three_needles_sit_at_their_depths_in_door_order() -> None:
    from sparkrig.guards.needle import THREE_NEEDLES, three_needle_prompt

    sentences = [f"Filler sentence {i}" for i in range(100)]
    prompt = three_needle_prompt(sentences)
    parts = prompt.split(". ")
    assert len(parts) == 103
    where = {
        door: parts.index(f"The access code of the {door} door is {code}")
        for door, code in THREE_NEEDLES
    }
    assert where == {"red": 10, "blue": 51, "green": 92}  # 0.1, 0.5, 0.9 of the filler, in order


def test_a_door_is_found_by_its_own_code_alone_at_a_length_the_model_can_answer() -> None:
    from sparkrig.guards.needle import door_found, three_needle_lengths

    assert door_found("The access code of the red door is 415263", "", "red") == "content"
    # the bundled model under drop-middle-fact: the blue door answered with the red one's code
    blue = "The access code of the blue door is 415263."
    assert door_found(blue, "", "blue") == "another door's code"
    assert door_found("It is 902718 or 415263.", "", "blue") == "another door's code"
    assert door_found("I do not know.", "902718", "blue") == "reasoning only"
    assert three_needle_lengths(960) == [864]  # the test session's slot: one length
    assert three_needle_lengths(8128) == [1024, 8032]  # vLLM's 8K: answerable, and the longest
