"""The reasoning-family registry: each family is matched by its model id, says how it is asked
to think and where a report is silent; `thinking_asked` reads the reports' request shapes the way
the server does, the server's default chat-template kwargs included (field notes:
reasoning-families)."""

from __future__ import annotations

from typing import Any

import pytest

from sparkrig.wire.reasoning_families import (
    FAMILIES,
    SWITCH_KEYS,
    family_of,
    thinking_asked,
)


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("deepseek-v4-flash-dspark", "deepseek-v4"),
        ("DeepSeek-V4.1-Flash-1017", "deepseek-v4.1"),
        ("/mnt/hf-cache/DeepSeek-V4-Flash-0731", "deepseek-v4"),
        ("deepseek-ai/DeepSeek-R1-0528", "deepseek-r1"),
        ("glm-5.3-flash", "glm-5"),
        ("Qwen3-8B", "qwen3"),
        ("openai/gpt-oss-120b", "gpt-oss"),
        ("llama-3", "think-tags"),
        (None, "think-tags"),
    ],
)
def test_a_model_id_finds_its_family(model: str | None, family: str) -> None:
    assert family_of(model).name == family


def test_every_family_cites_its_notes_and_says_where_the_reports_are_silent() -> None:
    assert FAMILIES.names() == [
        "deepseek-v4.1",
        "deepseek-v4",
        "deepseek-r1",
        "glm-5",
        "qwen3",
        "gpt-oss",
        "think-tags",
    ]
    for family in FAMILIES.entries():
        assert "docs/field-notes.md#" in family.source
        if family.reply_key is None or family.think_in_prompt is None:
            assert family.silent, family.name
    deepseek = FAMILIES.get("deepseek-v4")
    assert deepseek.reply_key == "reasoning"
    assert deepseek.think_in_prompt is True
    assert "content null" in deepseek.efforts["none"]
    assert "79 tokens" in deepseek.efforts["max"]
    glm = FAMILIES.get("glm-5")
    assert "how a request turns thinking on or off" in glm.silent
    assert glm.vllm_reasoning_parsers == ()
    assert any("no report serves GLM-5.x" in line for line in glm.silent)
    v41 = FAMILIES.get("deepseek-v4.1")
    assert v41.vllm_reasoning_parsers == ("deepseek_v41", "deepseek_v4")
    assert (v41.switch_key, v41.reply_key, v41.efforts) == (
        deepseek.switch_key,
        deepseek.reply_key,
        deepseek.efforts,
    )


def test_each_family_is_asked_to_think_its_own_way() -> None:
    assert family_of("deepseek-v4-flash").thinking_on_fields() == {
        "chat_template_kwargs": {"thinking": True}
    }
    assert family_of("qwen3-8b").thinking_on_fields() == {
        "chat_template_kwargs": {"enable_thinking": True}
    }
    assert family_of("gpt-oss-20b").thinking_on_fields() == {"reasoning_effort": "high"}
    assert family_of("glm-5.3-flash").thinking_on_fields() == {}
    assert not family_of("glm-5.3-flash").can_be_asked
    assert family_of("llama-3").thinking_on_fields() == {
        "chat_template_kwargs": dict.fromkeys(SWITCH_KEYS, True)
    }


@pytest.mark.parametrize(
    ("body", "server", "thinking", "inherited", "mismatch"),
    [
        ({}, {}, None, False, False),
        ({"chat_template_kwargs": {"thinking": True}}, {}, True, False, False),
        (
            {"chat_template_kwargs": {"thinking": True, "reasoning_effort": "low"}},
            {},
            True,
            False,
            False,
        ),
        ({"chat_template_kwargs": {"reasoning_effort": "low"}}, {}, True, False, False),
        ({"reasoning_effort": "high"}, {"thinking": False}, True, False, False),
        ({}, {"thinking": True}, True, True, False),
        ({}, {"thinking": False}, False, True, False),
        ({"chat_template_kwargs": {"thinking": False}}, {"thinking": True}, False, False, False),
        ({"chat_template_kwargs": {"enable_thinking": False}}, {}, False, False, False),
        ({"reasoning_effort": "none"}, {}, False, False, False),
        (
            {"reasoning_effort": "none", "chat_template_kwargs": {"thinking": True}},
            {},
            True,
            False,
            True,
        ),
        ({"reasoning_effort": "none"}, {"thinking": True}, True, True, True),
        (
            {"chat_template_kwargs": {"reasoning_effort": "none", "thinking": True}},
            {},
            True,
            False,
            True,
        ),
    ],
)
def test_a_request_is_read_the_servers_way(
    body: dict[str, Any],
    server: dict[str, Any],
    thinking: bool | None,
    inherited: bool,
    mismatch: bool,
) -> None:
    asked = thinking_asked(body, server)
    assert (asked.thinking, asked.inherited, asked.none_with_thinking) == (
        thinking,
        inherited,
        mismatch,
    )


@pytest.mark.parametrize(
    ("body", "server", "conflict"),
    [
        # the request's own thinking false, and its top-level effort adds enable_thinking true
        ({"chat_template_kwargs": {"thinking": False}, "reasoning_effort": "high"}, {}, True),
        ({"chat_template_kwargs": {"thinking": False}, "reasoning_effort": "high"}, None, True),
        # an effort on a thinking-off server: DeepSeek V4's way to think, not a conflict
        ({"reasoning_effort": "high"}, {"thinking": False}, False),
        # the request names enable_thinking itself: vLLM adds nothing beside it
        (
            {"chat_template_kwargs": {"enable_thinking": False}, "reasoning_effort": "high"},
            {},
            False,
        ),
        # 'none' with thinking on is its own finding, not this one
        ({"chat_template_kwargs": {"thinking": True}, "reasoning_effort": "none"}, {}, False),
    ],
)
def test_a_request_that_turns_one_switch_on_and_one_off_is_a_conflict(
    body: dict[str, Any], server: dict[str, Any] | None, conflict: bool
) -> None:
    asked = thinking_asked(body, server)
    assert asked.switch_conflict is conflict
    assert asked.thinking is not False or not conflict  # a conflict reads as reasoning


@pytest.mark.parametrize(
    ("body", "server", "thinking", "inherited", "texts"),
    [
        # the renderers read a switch by its truth: the text "false" is on (replayed on vLLM)
        ({"chat_template_kwargs": {"thinking": "false"}}, {"thinking": False}, True, False, 1),
        ({"chat_template_kwargs": {"enable_thinking": 0}}, {}, False, False, 0),
        # vLLM's merge_kwargs: a request's None or "auto" leaves the server's default
        ({"chat_template_kwargs": {"thinking": None}}, {"thinking": True}, True, True, 0),
        ({"chat_template_kwargs": {"thinking": "auto"}}, {"thinking": False}, False, True, 0),
    ],
)
def test_a_switch_is_read_by_its_truth_and_unset_by_none_or_auto(
    body: dict[str, Any], server: dict[str, Any], thinking: bool, inherited: bool, texts: int
) -> None:
    asked = thinking_asked(body, server)
    assert (asked.thinking, asked.inherited, len(asked.text_switches)) == (
        thinking,
        inherited,
        texts,
    )
