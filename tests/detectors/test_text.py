"""Text detectors on real SmolLM2-135M output: each fires on a faulty sample and not on clean text.

Where each sample came from is in tests/fixtures/README.md ("Text samples").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.detectors.text import (
    LOOP_MIN_CHARS,
    LOOP_NOVELTY_MAX,
    LOOP_WINDOW_CHARS,
    TextFinding,
    all_findings,
    char_run_findings,
    degeneration_findings,
    empty_findings,
    letter_script,
    loop_findings,
    markup_leak_findings,
    mid_word_start_findings,
    replacement_char_findings,
    script_drift_findings,
    window_novelty,
)

TEXT = Path(__file__).parents[1] / "fixtures" / "text"
CLEAN = ["clean_prose.txt", "clean_long.txt"]


def sample(name: str) -> str:
    return (TEXT / name).read_text(encoding="utf-8")


def exhausted(novelties: list[float | None]) -> bool:
    return all(value is not None and value < LOOP_NOVELTY_MAX for value in novelties)


def only(findings: list[TextFinding], detector: str) -> TextFinding:
    assert [finding.detector for finding in findings] == [detector]
    return findings[0]


# --- clean text passes everything -------------------------------------------------------------


@pytest.mark.parametrize("name", CLEAN)
def test_clean_real_text_has_no_finding(name: str) -> None:
    assert all_findings(sample(name)) == []


def test_clean_long_text_is_long_enough_for_the_loop_rule_to_judge_it() -> None:
    text = sample("clean_long.txt")

    novelties = window_novelty(text)

    assert len(text) >= LOOP_MIN_CHARS
    assert all(value is not None and value > 0.5 for value in novelties)


# --- 1. replacement characters ----------------------------------------------------------------


def test_replacement_character_from_a_reply_cut_mid_emoji_is_an_error() -> None:
    finding = only(
        replacement_char_findings(sample("replacement_char_cut.txt")), "replacement_char"
    )

    assert finding.severity == "error"
    assert finding.offset == 0
    assert "U+FFFD" in finding.message


def test_replacement_character_inside_text_is_found_at_its_offset() -> None:
    clean = sample("clean_prose.txt")
    text = clean[:100] + "\ufffd" + clean[100:]

    assert only(replacement_char_findings(text), "replacement_char").offset == 100


# --- 2. loops ---------------------------------------------------------------------------------


def test_real_temperature_0_loop_is_found() -> None:
    text = sample("loop_temp0.txt")

    finding = only(loop_findings(text), "loop")

    assert finding.severity == "error"
    assert finding.offset % LOOP_WINDOW_CHARS == 0
    assert text[finding.offset :].startswith(finding.evidence)


def test_loop_onset_is_the_first_of_three_exhausted_windows() -> None:
    text = sample("loop_temp0.txt")
    novelties = window_novelty(text)

    onset = only(loop_findings(text), "loop").offset // LOOP_WINDOW_CHARS

    assert exhausted(novelties[onset : onset + 3])
    assert not any(exhausted(novelties[start : start + 3]) for start in range(onset))


def test_loop_shorter_than_three_windows_cannot_be_judged() -> None:
    text = sample("loop_temp0.txt")[: LOOP_MIN_CHARS - 1]

    assert loop_findings(text) == []


def test_novelty_ignores_case_and_punctuation_between_words() -> None:
    words = " ".join(f"w{i}" for i in range(1, 1200))
    text = (words + ". " + words.upper() + ", ") * 3

    novelties = window_novelty(text)

    assert novelties[0] == 1.0
    assert exhausted(novelties[-3:])


# --- 3. long runs of one character ------------------------------------------------------------


@pytest.mark.parametrize("name", ["char_run_emoji.txt", "char_run_fullwidth_question.txt"])
def test_real_run_of_one_character_is_an_error(name: str) -> None:
    text = sample(name)

    finding = only(char_run_findings(text), "char_run")

    assert finding.severity == "error"
    assert set(finding.evidence) == {text[finding.offset]}


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("0x" + "0" * 64, False),  # all-zero 256-bit value: the longest legitimate run we know
        ("0x" + "0" * 65, True),
        ("=" * 120, False),  # a drawn rule one line wide
        ("#" * 160, True),
    ],
)
def test_run_thresholds(text: str, found: bool) -> None:
    assert bool(char_run_findings(text)) is found


# --- 4. empty output --------------------------------------------------------------------------


def test_real_streamed_reply_with_billed_tokens_and_no_text_is_empty() -> None:
    finding = only(empty_findings(sample("empty_stream_cut.txt")), "empty")

    assert finding.severity == "error"


def test_whitespace_only_is_empty() -> None:
    assert only(empty_findings("\n \n\t"), "empty").evidence == repr("\n \n\t")


# --- degeneration_findings --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "detector"),
    [
        ("replacement_char_cut.txt", "replacement_char"),
        ("loop_temp0.txt", "loop"),
        ("char_run_emoji.txt", "char_run"),
        ("empty_stream_cut.txt", "empty"),
    ],
)
def test_degeneration_findings_run_the_four_scored_output_checks(name: str, detector: str) -> None:
    assert detector in {finding.detector for finding in degeneration_findings(sample(name))}


def test_degeneration_findings_skip_the_content_checks() -> None:
    assert degeneration_findings(sample("leak_ascii_im_end.txt")) == []


# --- 5. markup leaks --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "marker"),
    [
        ("leak_ascii_im_end.txt", "<|im_end|>"),
        ("leak_fullwidth_dsml.txt", "<｜DSML｜tool_calls>"),
        ("leak_think_tags.txt", "</think>"),
        ("leak_tool_call.txt", "<tool_call>"),
    ],
)
def test_leaked_marker_is_flagged_and_left_in_place(name: str, marker: str) -> None:
    text = sample(name)

    finding = only(markup_leak_findings(text), "markup_leak")

    assert marker in finding.message
    assert marker in text  # flagged, never stripped
    assert text[finding.offset :].startswith(finding.evidence)


@pytest.mark.parametrize("text", ["a <|> b", "f <| x |> y", "<thinker>", "x < y | z > w"])
def test_operators_and_lookalike_tags_are_not_leaks(text: str) -> None:
    assert markup_leak_findings(text) == []


# --- 6. script drift --------------------------------------------------------------------------


def test_a_chinese_sentence_spliced_into_an_english_reply_is_drift() -> None:
    text = sample("script_drift_han_in_english.txt")

    finding = only(script_drift_findings(text), "script_drift")

    assert "Han 40" in finding.message
    assert "(4.2%)" in finding.message  # why the share bar is 2%, not garble_tap's 5%
    assert letter_script(text[finding.offset]) == "Han"


def test_real_chinese_reply_drifts_from_latin_but_not_from_han() -> None:
    text = sample("reply_chinese.txt")

    assert only(script_drift_findings(text), "script_drift").severity == "error"
    assert script_drift_findings(text, expected_script="Han") == []


def test_a_few_foreign_letters_are_not_drift() -> None:
    text = sample("clean_prose.txt") + " (in Chinese: 谢谢)"

    assert script_drift_findings(text) == []


@pytest.mark.parametrize(
    ("char", "script"),
    [
        ("a", "Latin"),
        ("é", "Latin"),
        ("Ａ", "Latin"),
        ("中", "Han"),
        ("한", "Hangul"),
        ("α", "Greek"),
        ("µ", None),
        ("ℝ", None),
        ("7", None),
    ],
)
def test_letter_script(char: str, script: str | None) -> None:
    assert letter_script(char) == script


# --- 7. starts mid-word -----------------------------------------------------------------------


def test_real_continuation_that_starts_mid_word_is_a_warning() -> None:
    finding = only(mid_word_start_findings(sample("mid_word_start.txt")), "mid_word_start")

    assert finding.severity == "warning"
    assert finding.evidence.startswith("ings ")


@pytest.mark.parametrize(
    "text", ["ingredients are listed below", "npm install sparkrig", "iPhone models", "ion trap"]
)
def test_lowercase_openings_that_are_words_are_not_mid_word(text: str) -> None:
    assert mid_word_start_findings(text) == []


@pytest.mark.parametrize("text", ["tion of the plan", "  ed by the board", "ly."])
def test_suffix_fragments_are_mid_word(text: str) -> None:
    assert only(mid_word_start_findings(text), "mid_word_start").evidence == text.lstrip()


# --- all_findings -----------------------------------------------------------------------------


def test_all_findings_runs_every_other_detector_on_a_text_with_every_other_fault() -> None:
    text = "".join(
        [
            "tion ",
            sample("leak_ascii_im_end.txt"),
            "\ufffd",
            "!" * 70,
            sample("loop_temp0.txt"),
            "中文字符" * 200,
        ]
    )

    detectors = [finding.detector for finding in all_findings(text)]

    assert sorted(detectors) == sorted(
        ["loop", "replacement_char", "char_run", "markup_leak", "script_drift", "mid_word_start"]
    )


def test_all_findings_on_empty_text_reports_only_empty() -> None:
    assert [finding.detector for finding in all_findings("")] == ["empty"]
