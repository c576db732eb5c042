"""Pure text detectors: each takes a reply's text and returns the problems it shows.

A detector never changes the text: markup leaks are flagged, not stripped, because stripping hides
the fault. Every threshold is a constant below, with where its value comes from: a note of
docs/field-notes.md (cited as "field notes: <anchor>"), the research notes on quality guards
(not in this repository), or a choice of this project, said as such.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Final

from sparkrig.detectors.degenerate import enumeration_findings, stray_hash_findings
from sparkrig.detectors.finding import EVIDENCE_CHARS, Detector, TextFinding, excerpt

# Distinct leaked markers a message names; the count covers all of them.
MARKERS_SHOWN: Final = 5

# --- loop: word 8-gram novelty ----------------------------------------------------------------
# A genuine non-termination is 3 consecutive 4,000-character windows each under 2% novel word
# 8-grams (field notes: loop-8gram-windows). The same source warns that block-level uniqueness
# reads high on plainly looping text, so it is not used. As implemented: windows are
# consecutive and non-overlapping from character 0; words are `\w+` runs, lowercased; an 8-gram
# belongs to the window its first word starts in; an occurrence is novel when the same 8 words
# appear nowhere earlier in the text (an earlier window or earlier in the same window); novelty
# is novel occurrences / all occurrences in the window.
LOOP_WINDOW_CHARS: Final = 4000
LOOP_NGRAM_WORDS: Final = 8
LOOP_NOVELTY_MAX: Final = 0.02  # a window below this share of novel 8-grams is exhausted
LOOP_CONSECUTIVE_WINDOWS: Final = 3
# Below this length there are not 3 whole windows, so the rule cannot be applied: no finding.
LOOP_MIN_CHARS: Final = LOOP_WINDOW_CHARS * LOOP_CONSECUTIVE_WINDOWS

# --- long runs of one character ---------------------------------------------------------------
# Broken decoding shows bursts of '#' and repeated characters (field notes: garble-signatures);
# the reports give no run lengths. Setting the bar above every legitimate run, and so missing
# shorter garbled runs, is this project's choice. The longest legitimate run we know of is 64:
# the hex digits of an all-zero 256-bit value (a null hash or key in code). The research notes'
# agent sanity check flags 18, which would catch 10**18 or a zero-padded 64-bit literal.
CHAR_RUN_MIN: Final = 65
# Rules and underlines are drawn one line wide: 72-120 columns in practice. 160 is twice the
# 80-column convention, so no drawn line reaches it. '#' is here because code draws rules with
# it, so a burst of '#' (field notes: garble-signatures) shorter than 160 goes unflagged.
SEPARATOR_RUN_MIN: Final = 160
SEPARATOR_CHARS: Final = frozenset("-=_*#~.+─━═")

# --- script drift -----------------------------------------------------------------------------
# Language mixing, bursts of non-Latin characters and Chinese drift (field notes:
# garble-signatures). Flag when foreign letters are both more than a few
# and more than a small share of all letters, counting every script other than the expected one.
# Count > 5: the research notes' garble_tap rule, so quoting a word or a name (谢谢) passes.
# Share > 2% of letters, not garble_tap's 5%: one Han character carries about a word, so a whole
# sentence of Chinese (40 Han) spliced into a 1,116-character English reply is only 4.2% of its
# letters (tests/fixtures/text/script_drift_han_in_english.txt) and 5% would miss it.
SCRIPT_DRIFT_MAX_LETTERS: Final = 5
SCRIPT_DRIFT_MAX_SHARE: Final = 0.02
DEFAULT_SCRIPT: Final = "Latin"

# --- reply starts mid-word --------------------------------------------------------------------
# Research notes, cold-replay row: a reply that "starts mid-word" marks a corrupted prompt tail.
# Heuristic: the reply opens with a lowercase ASCII letter, and its first word is one of these
# English endings, none of which is a word on its own. It misses any other fragment ("ntinued"),
# capitalised fragments, and other languages; it flags a reply that opens by quoting a suffix.
MID_WORD_FRAGMENTS: Final = frozenset(
    {
        "ing",
        "ings",
        "ed",
        "tion",
        "tions",
        "sion",
        "sions",
        "ation",
        "ations",
        "ment",
        "ments",
        "ness",
        "ity",
        "ities",
        "ous",
        "ious",
        "ive",
        "ives",
        "ly",
        "ably",
        "ibly",
        "ize",
        "ized",
        "izes",
        "ise",
        "ised",
        "ence",
        "ences",
        "ance",
        "ances",
        "ful",
        "ible",
        "ular",
    }
)

# --- markup leaks -----------------------------------------------------------------------------
# Special tokens with ASCII bars (`<|im_end|>`, and `<|DSML|tool_calls>`, field notes:
# markup-leaks) or full-width bars (`<｜end▁of▁sentence｜>`, `<｜DSML｜invoke ...>`):
# a name right after the bar, a second bar, then anything up to `>` on the same line.
_SPECIAL_TOKEN = re.compile(
    r"[<＜]/?[|｜][A-Za-z_▁][^<>＜＞\n|｜]{0,64}[|｜]"  # `<|name|`, `▁` is SentencePiece's space
    r"[^<>＜＞\n]{0,128}[>＞]"  # attributes (DSML's `invoke name="..."`), then the close
)
# Reasoning and tool tags: `<think>`/`</think>` and leaked prompt/tool XML (field notes:
# markup-leaks), `<available_skills` (research notes).
_MARKUP_TAG = re.compile(
    r"[<＜]/?(?:think|tool_calls?|available_skills)"
    r"(?:[>＞]|[\s/][^<>＜＞\n]{0,128}[>＞]|(?=\s|$))"  # closed, closed after attributes, or open
)

_WORD = re.compile(r"\w+")
_CHAR_RUN = re.compile(rf"(\S)\1{{{CHAR_RUN_MIN - 1},}}")  # CHAR_RUN_MIN or more of one character
_LEADING_WORD = re.compile(r"\s*([a-z][A-Za-z]*)(?![A-Za-z])")
# First words of Unicode letter names that name a form or a symbol rather than a script.
_NOT_A_SCRIPT: Final = frozenset(
    {
        "MODIFIER",
        "MATHEMATICAL",
        "SUPERSCRIPT",
        "SCRIPT",
        "DOUBLE-STRUCK",
        "BLACK-LETTER",
        "TURNED",
        "VERTICAL",
        "ROMAN",
        "MICRO",
        "FEMININE",
        "MASCULINE",
        "CARON",
        "EULER",
        "PLANCK",
        "OHM",
        "KELVIN",
        "ANGSTROM",
        "INFORMATION",
        "ALEF",
        "BET",
        "GIMEL",
        "DALET",
    }
)
_SCRIPT_ALIASES: Final = {"CJK": "Han", "IDEOGRAPHIC": "Han", "KATAKANA-HIRAGANA": "Katakana"}


def replacement_char_findings(text: str) -> list[TextFinding]:
    """Any U+FFFD is an error: a field report gates on zero over three passes.

    (field notes: replacement-char-gate)
    """
    count = text.count("\ufffd")
    if not count:
        return []
    first = text.index("\ufffd")
    message = (
        f"{count} U+FFFD replacement character(s), first at character {first} — the engine emitted "
        "bytes that are not valid UTF-8 (corrupted tokens, or a multi-byte character cut apart); "
        "the text is damaged: check the engine and its detokenizer, not the prompt"
    )
    return [
        TextFinding(
            detector="replacement_char",
            severity="error",
            message=message,
            evidence=excerpt(text, first),
            offset=first,
        )
    ]


def window_novelty(text: str) -> list[float | None]:
    """Share of word 8-grams in each whole window that appear nowhere earlier in the text.

    An 8-gram belongs to the window its first word starts in, so one that crosses a boundary is
    counted once; one repeated inside a window is novel only the first time. `None` for a window
    where no 8-gram starts. A trailing partial window is not measured.
    """
    windows = len(text) // LOOP_WINDOW_CHARS
    matches = list(_WORD.finditer(text))
    words = [match.group().lower() for match in matches]
    novel, total = [0] * windows, [0] * windows
    seen: set[tuple[str, ...]] = set()
    for i in range(len(words) - LOOP_NGRAM_WORDS + 1):
        window = matches[i].start() // LOOP_WINDOW_CHARS
        if window >= windows:
            break
        gram = tuple(words[i : i + LOOP_NGRAM_WORDS])
        total[window] += 1
        if gram not in seen:
            seen.add(gram)
            novel[window] += 1
    return [n / t if t else None for n, t in zip(novel, total, strict=True)]


def loop_findings(text: str) -> list[TextFinding]:
    """A repetition loop: novelty under 2% in 3 consecutive 4,000-character windows.

    Texts shorter than `LOOP_MIN_CHARS` hold fewer than 3 whole windows and cannot be judged by
    this rule: they get no finding (the character-run detector still sees short floods).
    """
    if len(text) < LOOP_MIN_CHARS:
        return []
    novelties = window_novelty(text)
    for first in range(len(novelties) - LOOP_CONSECUTIVE_WINDOWS + 1):
        run = novelties[first : first + LOOP_CONSECUTIVE_WINDOWS]
        if all(value is not None and value < LOOP_NOVELTY_MAX for value in run):
            offset = first * LOOP_WINDOW_CHARS
            shares = ", ".join(f"{value:.1%}" for value in run if value is not None)
            message = (
                f"word {LOOP_NGRAM_WORDS}-gram novelty stayed under {LOOP_NOVELTY_MAX:.0%} for "
                f"{LOOP_CONSECUTIVE_WINDOWS} consecutive {LOOP_WINDOW_CHARS:,}-character windows "
                f"from character {offset} ({shares}) — the output is a repetition loop, not a long "
                "answer: a larger max_tokens will not end it; check sampling (the checkpoint's "
                "recommended temperature) and the serving stack"
            )
            return [
                TextFinding(
                    detector="loop",
                    severity="error",
                    message=message,
                    evidence=excerpt(text, offset),
                    offset=offset,
                )
            ]
    return []


def char_run_findings(text: str) -> list[TextFinding]:
    """Runs of one non-space character: `CHAR_RUN_MIN` long, or `SEPARATOR_RUN_MIN` for rules."""
    runs = [
        match
        for match in _CHAR_RUN.finditer(text)
        if match.group(1) not in SEPARATOR_CHARS or len(match.group()) >= SEPARATOR_RUN_MIN
    ]
    if not runs:
        return []
    first = runs[0]
    longest = max(len(match.group()) for match in runs)
    message = (
        f"{len(runs)} run(s) of one repeated character, the first {len(first.group())} × "
        f"{first.group(1)!r} at character {first.start()}, the longest {longest} — the model "
        "degenerated into repeating one token; check the engine's decode path and sampling"
    )
    return [
        TextFinding(
            detector="char_run",
            severity="error",
            message=message,
            evidence=excerpt(text, first.start()),
            offset=first.start(),
        )
    ]


def empty_findings(text: str) -> list[TextFinding]:
    """Empty or whitespace-only content is an error."""
    if text.strip():
        return []
    message = (
        f"the content is empty or only whitespace ({len(text)} characters) — if tokens were "
        "billed, classify it by finish_reason and whether </think> arrived before reporting it "
        "(a stop string inside reasoning, a budget too small for the reasoning, or a loop)"
    )
    return [
        TextFinding(
            detector="empty",
            severity="error",
            message=message,
            evidence=repr(text[:EVIDENCE_CHARS]),
            offset=0,
        )
    ]


def markup_leak_findings(text: str) -> list[TextFinding]:
    """Special tokens and reasoning/tool tags in the content, in ASCII and full-width forms."""
    matches = sorted(
        [*_SPECIAL_TOKEN.finditer(text), *_MARKUP_TAG.finditer(text)], key=lambda m: m.start()
    )
    if not matches:
        return []
    kinds = ", ".join(list(dict.fromkeys(match.group() for match in matches))[:MARKERS_SHOWN])
    first = matches[0].start()
    message = (
        f"{len(matches)} special-token or markup marker(s) in the content ({kinds}), first at "
        f"character {first} — control text of the chat template, the reasoning parser or the tool "
        "parser reached the reply, or decoding is corrupted; fix the template or parser and do "
        "not strip the markers, which would hide the fault"
    )
    return [
        TextFinding(
            detector="markup_leak",
            severity="error",
            message=message,
            evidence=excerpt(text, first),
            offset=first,
        )
    ]


def letter_script(char: str) -> str | None:
    """The script of a letter from its Unicode name ("Latin", "Han", ...); None if not a letter.

    Letters whose name starts with a form or symbol word (MODIFIER, MATHEMATICAL, ...) have no
    script here; a letter with no name in this Python's Unicode tables is "Unknown".
    """
    if not char.isalpha():
        return None
    if char < "\x80":
        return "Latin"
    words = unicodedata.name(char, "").split()
    if words and words[0] in ("FULLWIDTH", "HALFWIDTH"):
        words = words[1:]
    if not words:
        return "Unknown"
    if words[0] in _NOT_A_SCRIPT:
        return None
    return _SCRIPT_ALIASES.get(words[0], words[0].title())


def script_drift_findings(
    text: str, expected_script: str | tuple[str, ...] = DEFAULT_SCRIPT
) -> list[TextFinding]:
    """Too many letters outside the expected script(s), e.g. Han inside an English answer.

    Pass a tuple for text that mixes scripts by design, e.g. ("Latin", "Greek") for maths.
    """
    expected = {expected_script} if isinstance(expected_script, str) else set(expected_script)
    letters = 0
    foreign: Counter[str] = Counter()
    first: int | None = None
    for offset, char in enumerate(text):
        script = letter_script(char)
        if script is None:
            continue
        letters += 1
        if script not in expected:
            foreign[script] += 1
            first = offset if first is None else first
    count = sum(foreign.values())
    if first is None or count <= SCRIPT_DRIFT_MAX_LETTERS:
        return []
    share = count / letters
    if share <= SCRIPT_DRIFT_MAX_SHARE:
        return []
    scripts = ", ".join(f"{name} {n}" for name, n in foreign.most_common())
    wanted = "/".join(sorted(expected))
    message = (
        f"{count} of {letters} letters ({share:.1%}) are not {wanted} ({scripts}), first at "
        f"character {first} — the reply drifted into another script (language mixing, a symptom "
        "of corrupted decode state); if the answer should be in that script, pass it as the "
        "expected script"
    )
    return [
        TextFinding(
            detector="script_drift",
            severity="error",
            message=message,
            evidence=excerpt(text, first),
            offset=first,
        )
    ]


def mid_word_start_findings(text: str) -> list[TextFinding]:
    """The reply opens with a word ending such as "ing the ..." (heuristic; see the constants)."""
    match = _LEADING_WORD.match(text)
    if match is None or match.group(1) not in MID_WORD_FRAGMENTS:
        return []
    offset = match.start(1)
    message = (
        f"the reply starts with the word ending {match.group(1)!r} — it begins in the middle of "
        "a word, a sign that the end of the prompt or the first tokens were corrupted (for example "
        "by chunked prefill or a cold-start draft mismatch); compare it with the reply on a "
        "warm server or with speculative decoding off"
    )
    return [
        TextFinding(
            detector="mid_word_start",
            severity="warning",
            message=message,
            evidence=excerpt(text, offset),
            offset=offset,
        )
    ]


DEGENERATION_DETECTORS: Final[tuple[Detector, ...]] = (
    empty_findings,
    loop_findings,
    replacement_char_findings,
    char_run_findings,
)


def degeneration_findings(text: str) -> list[TextFinding]:
    """The checks a benchmark applies to every scored output: empty, loop, U+FFFD, char runs."""
    return [finding for detect in DEGENERATION_DETECTORS for finding in detect(text)]


def all_findings(
    text: str, expected_script: str | tuple[str, ...] = DEFAULT_SCRIPT
) -> list[TextFinding]:
    """Every detector for a prose reply expected in `expected_script`: the degeneration checks,
    markup, script drift, mid-word starts, and the counting-garbage and stray-'#' detectors of
    detectors/degenerate.py (which a reply asked to count or to write markdown could trip, so
    they are not among the degeneration checks a benchmark applies to every output)."""
    return [
        *degeneration_findings(text),
        *markup_leak_findings(text),
        *script_drift_findings(text, expected_script),
        *mid_word_start_findings(text),
        *enumeration_findings(text),
        *stray_hash_findings(text),
    ]
