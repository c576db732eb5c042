"""The --find-max-load search, pure: which level it probes next, where it stops, and the answer
read off the probed points."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sparkrig.bench.goodput import PointGoodput
from sparkrig.bench.max_load import LoadSearch, max_load_result, worst_case_probes


def _search(low: int, high: int, capacity: int) -> LoadSearch:
    """Run the search against a server that meets the SLO up to `capacity` streams."""
    search = LoadSearch(low, high)
    while (level := search.next_level()) is not None:
        search.record(level, level <= capacity)
    return search


@pytest.mark.parametrize("capacity", range(34))
def test_the_search_finds_the_boundary_to_adjacent_levels(capacity: int) -> None:
    search = _search(1, 32, capacity)
    if capacity < 1:
        assert (search.meeting, search.failing) == (None, 1)
    elif capacity >= 32:
        assert (search.meeting, search.failing) == (32, None)
    else:
        assert (search.meeting, search.failing) == (capacity, capacity + 1)
    assert len(search.probed) == len(set(search.probed))  # no level probed twice
    assert len(search.probed) <= worst_case_probes(1, 32)


def test_the_search_probes_both_ends_then_bisects() -> None:
    assert _search(1, 8, 5).probed == [1, 8, 4, 6, 5]
    assert _search(4, 4, 9).probed == [4]
    assert worst_case_probes(1, 8) == 5
    assert worst_case_probes(4, 4) == 1
    with pytest.raises(ValueError, match="low <= high"):
        LoadSearch(0, 4)


@dataclass
class Probe:
    load: int | None
    invalid: bool
    goodput: PointGoodput | None


def _goodput(holds: bool | None) -> PointGoodput:
    return PointGoodput(
        slo="ttft_p99=1s",
        requests=8,
        met=8 if holds else 0,
        unjudged=0,
        share=1.0 if holds else 0.0,
        share_ci95=(0.6, 1.0) if holds else (0.0, 0.4),
        requests_per_s=None,
        tokens_per_s=None,
        terms=[],
        holds=holds,
    )


def test_the_answer_is_read_off_the_probes() -> None:
    probes = [Probe(1, False, _goodput(True)), Probe(4, False, _goodput(False))]
    probes += [Probe(2, False, _goodput(True)), Probe(3, False, _goodput(False))]
    result = max_load_result(probes, "ttft_p99=1s", 1, 4)
    assert result is not None
    assert (result.highest_meeting, result.lowest_failing, result.resolved) == (2, 3, True)
    assert [p.load for p in result.probes] == [1, 4, 2, 3]
    assert "c=2 meets, c=3 fails" in result.describe()


def test_an_invalid_or_unjudged_level_does_not_meet() -> None:
    probes = [Probe(1, True, _goodput(True)), Probe(None, False, _goodput(True))]
    result = max_load_result(probes, "ttft_p99=1s", 1, 4)
    assert result is not None
    assert (result.highest_meeting, result.lowest_failing, result.resolved) == (None, 1, True)
    assert "no level meets" in result.describe()
    unjudged = max_load_result([Probe(1, False, _goodput(None))], "ttft_p99=1s", 1, 4)
    assert unjudged is not None
    assert unjudged.highest_meeting is None


def test_a_search_cut_short_says_it_is_unresolved() -> None:
    probes = [Probe(1, False, _goodput(True)), Probe(8, False, _goodput(False))]
    result = max_load_result(probes, "ttft_p99=1s", 1, 8)
    assert result is not None
    assert not result.resolved
    assert "unresolved" in result.describe()
    top = max_load_result([], "x", 1, 8)
    assert top is None
    met_top = max_load_result(
        [Probe(1, False, _goodput(True)), Probe(8, False, _goodput(True))], "ttft_p99=1s", 1, 8
    )
    assert met_top is not None
    assert met_top.resolved
    assert "raise the top of --concurrency" in met_top.describe()
