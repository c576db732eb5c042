"""The counting-garbage and stray-'#' detectors: each FAILS its fault's text and passes prose,
lists, markdown and code that look like it."""

from __future__ import annotations

import pytest

from sparkrig.detectors.degenerate import (
    ENUMERATION_MIN_MARKERS,
    STRAY_HASH_MIN,
    enumeration_findings,
    stray_hash_findings,
)
from sparkrig.detectors.text import all_findings, degeneration_findings
from sparkrig.gateway.text_faults import CountInstead, StrayHashes
from tests.detectors.test_text import sample

PROSE = sample("clean_prose.txt")


def through(transform: CountInstead | StrayHashes, text: str, piece: int = 7) -> str:
    """The text as the gateway's fault would send it, fed in stream-sized pieces."""
    out = "".join(transform.feed(text[i : i + piece]) for i in range(0, len(text), piece))
    return out + transform.finish()


def test_counting_garbage_is_an_error_that_no_older_detector_sees() -> None:
    """The report's degenerate counting ("1. 2. 3. 4. …", field notes graphs-above-two-seqs)."""
    text = through(CountInstead(), PROSE)
    assert text.startswith("1. 2. 3. 4. ")
    assert [f.detector for f in all_findings(text)] == ["enumeration"]
    assert degeneration_findings(text) == []  # loop, char-run and U+FFFD let it through
    finding = enumeration_findings(text)[0]
    assert finding.severity == "error"
    assert finding.offset == 0
    assert "graphs-above-two-seqs" in finding.message


@pytest.mark.parametrize(
    "text",
    [
        "\n".join(f"{n}. step {n} of the recipe" for n in range(1, 30)),  # a real list
        "Options: 1) red 2) green 3) blue 4) amber 5) teal 6) grey 7) pink 8) gold",
        "Route 10.0.0.1 via 192.168.1.1. Version 1.2.3.4 shipped on 01.02.2026.",
        " ".join(f"{n}." for n in range(1, ENUMERATION_MIN_MARKERS)),  # one marker short
    ],
)
def test_lists_addresses_and_short_runs_are_not_counting_garbage(text: str) -> None:
    assert enumeration_findings(text) == []


def test_stray_hashes_are_an_error_that_the_separator_rule_lets_through() -> None:
    """Lone '#' mid-sentence (field notes hash-bursts-acceptance-collapse)."""
    text = through(StrayHashes(after_chars=20, every=8), PROSE)
    assert text.count("# ") >= STRAY_HASH_MIN
    assert [f.detector for f in all_findings(text)] == ["stray_hash"]
    assert degeneration_findings(text) == []
    assert "hash-bursts-acceptance-collapse" in stray_hash_findings(text)[0].message


@pytest.mark.parametrize(
    "text",
    [
        "# Title\n\n## Part\n\n> ### quoted heading\n\nPlain text.",  # markdown headings
        "```python\n# one\n# two\n# three\nx = 1  # four\n```\nDone.",  # a fenced code block
        "Use `# comment` and `#define` and `# x` in code.",  # inline code
        "Post it with #python #rust #go and see issue #42, C# and page#anchor.",
        "The # of users and the # of hosts.",  # prose's own '#', twice
        "A rule:\n" + "#" * 100 + "\nthen text.",  # a drawn rule stays the separator rule's
    ],
)
def test_headings_code_hashtags_and_rules_are_not_stray_hashes(text: str) -> None:
    assert stray_hash_findings(text) == []


def test_a_burst_of_hashes_mid_line_counts_once_and_three_bursts_fail() -> None:
    assert stray_hash_findings("the ### cycle") == []
    assert len(stray_hash_findings("the ### cycle is ## driven by #### the sun")) == 1
