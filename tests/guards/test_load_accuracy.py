"""The accuracy-under-load guard's pure parts: the exact paired interval, the bundled items'
scoring and the verdict. Its live proof is the wrong-under-load row of the fault matrix
(tests/guards/test_fault_matrix.py), and the clean row there, where it must pass."""

from __future__ import annotations

import pytest

from sparkrig import defaults
from sparkrig.client import RequestRecord
from sparkrig.guards.load_accuracy import load_accuracy_verdict
from sparkrig.guards.load_items import FAMILIES, ITEMS_PER_FAMILY, LOAD_ITEMS, LoadItem, load_items
from sparkrig.guards.paired_accuracy import (
    clopper_pearson,
    fewest_losses_that_fail,
    load_costs_accuracy,
    paired_accuracy,
)


def test_clopper_pearson_matches_the_published_exact_bounds() -> None:
    # 3 of 10: (0.0667, 0.6525) in every table of the exact interval; 5 of 5: 0.025 ** (1/5)
    low, high = clopper_pearson(3, 10)
    assert low == pytest.approx(0.06674, abs=1e-4)
    assert high == pytest.approx(0.65245, abs=1e-4)
    assert clopper_pearson(5, 5) == (pytest.approx(0.025 ** (1 / 5)), 1.0)
    assert clopper_pearson(0, 4) == (0.0, pytest.approx(1 - 0.025 ** (1 / 4)))


def test_a_loss_beyond_the_interval_fails_and_a_wobble_does_not() -> None:
    alone = [True] * 16 + [False] * 8
    broken = [False] * 13 + [True] * 3 + [False] * 8
    result = paired_accuracy(alone, broken)
    assert (result.lost, result.gained) == (13, 0)
    assert result.drop_low > 0.2
    assert load_costs_accuracy(result, min_drop=0.10)
    # two flips each way: no change beyond chance
    wobble = [False, False] + [True] * 14 + [True, True] + [False] * 6
    assert not load_costs_accuracy(paired_accuracy(alone, wobble), min_drop=0.10)
    # five lost, none gained: 5 of 5 is not beyond chance at 95% (the bound is 0.478 < 0.5)
    five = [False] * 5 + [True] * 11 + [False] * 8
    assert paired_accuracy(alone, five).drop_low < 0
    # beyond chance but under the stated minimum drop
    many_alone, many_loaded = [True] * 1000, [False] * 50 + [True] * 950
    assert paired_accuracy(many_alone, many_loaded).drop_low > 0
    assert not load_costs_accuracy(paired_accuracy(many_alone, many_loaded), min_drop=0.10)


def test_the_items_are_scored_by_their_exact_answer() -> None:
    product = LoadItem("arithmetic", "What is 12 times 3?", "36")
    assert product.is_right("12 times 3 is 36.")
    assert not product.is_right("12 times 3 is 47.")
    assert not product.is_right("12 times 3 is 360.")
    door = next(item for item in LOAD_ITEMS if "door" in item.prompt)
    passage = door.prompt.split("\n\n")[0]
    assert door.is_right(f"The code is {door.answer}.")
    assert not door.is_right(passage)  # an echo of the passage holds every code: not right
    json_item = next(item for item in LOAD_ITEMS if item.prompt.startswith("Reply with a JSON"))
    assert json_item.is_right('{\n  "id": "10",\n  "name')  # the bundled model's reply
    assert json_item.is_right('{"id": 10}')
    assert not json_item.is_right('{\n  "key": "id",\n  "value":')


def test_the_items_are_generated_the_same_every_time_from_every_family() -> None:
    assert load_items() == LOAD_ITEMS
    assert len(LOAD_ITEMS) == len(FAMILIES) * ITEMS_PER_FAMILY == 66
    assert len({item.prompt for item in LOAD_ITEMS}) == len(LOAD_ITEMS)
    assert {item.kind for item in LOAD_ITEMS} == {"arithmetic", "lookup", "format"}
    for item in LOAD_ITEMS:
        expected = item.answer or item.pattern
        assert any(ch.isdigit() for ch in expected), item  # digits: what the fault alters
        if item.kind == "lookup":
            assert item.answer in item.prompt
            assert item.answer not in item.distractors


def test_an_eleven_point_drop_on_the_bundled_items_fails_and_24_items_could_not_see_it() -> None:
    """docs/guards.md states these: the fewest items lost that FAIL, as the drop they make."""
    n, min_drop = len(LOAD_ITEMS), defaults.CHECK_LOAD_ACCURACY_MIN_DROP
    assert fewest_losses_that_fail(n, 0, min_drop) == 7  # 10.6 points
    assert fewest_losses_that_fail(n, 1, min_drop) == 8  # net 7: 10.6 points
    assert fewest_losses_that_fail(n, 2, min_drop) == 10  # net 8: 12.1 points
    assert fewest_losses_that_fail(24, 0, min_drop) == 6  # the former 24 items: 25 points
    field_drop = 0.747 - 0.636
    assert (fewest_losses_that_fail(n, 1, min_drop) - 1) / n < field_drop


def _records(texts: list[str]) -> list[RequestRecord]:
    return [
        RequestRecord(url="u", api="chat", stream=False, model="m", send_ns=0, content=text)
        for text in texts
    ]


def test_the_verdict_names_the_first_item_lost() -> None:
    items = tuple(item for item in LOAD_ITEMS if item.answer)[:8]
    answers = [item.answer for item in items]
    alone = _records([f"It is {answer}." for answer in answers])
    clean = load_accuracy_verdict(items, alone, alone, concurrency=4)
    assert clean.verdict == "PASS", clean.evidence
    shifted = _records([f"It is {answer}0." for answer in answers])
    broken = load_accuracy_verdict(items, alone, shifted, concurrency=4)
    assert broken.verdict == "FAIL"
    assert "item 1 'What is 10 times 2?" in broken.evidence
    nothing = load_accuracy_verdict(items, shifted, shifted, concurrency=4)
    assert nothing.verdict == "FAIL"
    assert "no item is right alone" in nothing.evidence
