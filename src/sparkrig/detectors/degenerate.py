"""Degenerate output that the loop and character-run rules let through: counting garbage and
stray '#' tokens in prose.

Both are signatures the field reports name. A stack with CUDA graphs above two sequences
answered every prompt with "1. 2. 3. 4. …" while its speculation counters looked healthy, and a
first published 16-stream figure had been measuring that nonsense (field notes:
graphs-above-two-seqs). A KV-cache dtype at long context injected stray `#` tokens mid-sentence
that grew into code fragments and loops (field notes: hash-bursts-acceptance-collapse,
garble-signatures). The reports give no counts for either; the thresholds below are this
project's, chosen so that ordinary prose, markdown and code pass (tests/detectors/).

These detectors judge prose: a reply asked to count, or to write a markdown document, can trip
them, so they run where the task is known to be prose (the garble guard) and not among the
degeneration checks a benchmark applies to every output.
"""

from __future__ import annotations

import re
from typing import Final

from sparkrig.detectors.finding import TextFinding, excerpt

# --- counting garbage -------------------------------------------------------------------------
# A run of list markers with no words between them: "1. 2. 3. 4." or "1) 2) 3)". A real list has
# an item after each marker; dotted numbers (an address, a version, a date) make at most 4 markers
# in a row. 8 bare markers in a row is the project's bar.
ENUMERATION_MIN_MARKERS: Final = 8
_BARE_MARKERS = re.compile(
    rf"(?<![\w.])(?:\d{{1,4}}[.)]\s*){{{ENUMERATION_MIN_MARKERS},}}"  # 8+ markers, nothing else
)

# --- stray '#' --------------------------------------------------------------------------------
# A '#' (or a run of them shorter than the separator bar of detectors/text.py) that stands alone
# mid-line in prose: not a markdown heading (line start, after optional spaces or '>'), not in
# code (a fenced block or `inline code`), not a hashtag or an issue number ('#' before a letter
# or digit), not part of a word or an address ('C#', 'page#anchor': a letter or digit before it).
# Prose uses a lone '#' for "number" once in a while ("the # of users"), so one or two pass;
# three in one reply is the project's bar.
STRAY_HASH_MIN: Final = 3
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
_HEADING = re.compile(r"^[ \t>]*#+", re.MULTILINE)
_STRAY_HASH = re.compile(r"(?<![\w#])#{1,159}(?![\w#])")


def enumeration_findings(text: str) -> list[TextFinding]:
    """A run of `ENUMERATION_MIN_MARKERS` or more bare list markers ("1. 2. 3. …")."""
    runs = list(_BARE_MARKERS.finditer(text))
    if not runs:
        return []
    first = runs[0]
    markers = len(re.findall(r"\d+[.)]", first.group()))
    message = (
        f"{markers} list markers in a row with nothing between them, from character "
        f"{first.start()} — the reply counts instead of answering (degenerate counting, as a "
        "stack with CUDA graphs above two sequences answered every prompt: field notes "
        "graphs-above-two-seqs); a speed measured on it measures nonsense: try the same prompt "
        "with CUDA graphs off or at one sequence"
    )
    return [
        TextFinding(
            detector="enumeration",
            severity="error",
            message=message,
            evidence=excerpt(text, first.start()),
            offset=first.start(),
        )
    ]


def _masked(text: str) -> str:
    """The text with code and markdown heading markers blanked out, offsets kept."""
    blank = _CODE.sub(lambda match: " " * len(match.group()), text)
    return _HEADING.sub(lambda match: " " * len(match.group()), blank)


def stray_hash_findings(text: str) -> list[TextFinding]:
    """`STRAY_HASH_MIN` or more lone '#' tokens in the prose of a reply."""
    strays = list(_STRAY_HASH.finditer(_masked(text)))
    if len(strays) < STRAY_HASH_MIN:
        return []
    first = strays[0].start()
    message = (
        f"{len(strays)} stray '#' token(s) in the prose, first at character {first} — lone '#' "
        "mid-sentence is how a corrupted KV cache first showed at long context before the text "
        "turned into loops (field notes: hash-bursts-acceptance-collapse); compare the reply "
        "with the KV-cache dtype at its default and at a shorter context"
    )
    return [
        TextFinding(
            detector="stray_hash",
            severity="error",
            message=message,
            evidence=excerpt(text, first),
            offset=first,
        )
    ]
