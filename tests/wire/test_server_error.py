"""server_error keeps a server's own words in every shape an error comes in, and never leaves an
empty cause. The shapes, vLLM 0.26.0's exact text among them, are in tests/wire/error_shapes.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sparkrig.wire.server_error import server_error
from tests.wire.error_shapes import (
    LLAMACPP_BODY,
    OLD_VLLM_BODY,
    VLLM_BAD_SCHEMA_BODY,
    VLLM_ENGINE_GENERATE_ERROR_EVENT,
    VLLM_GENERATION_ERROR_EVENT,
    VLLM_VALIDATION_BODY,
)


def read(text: str) -> Any:
    return server_error(json.loads(text), text)


def test_vllm_engine_generate_error_says_there_was_no_message_and_shows_it_all() -> None:
    error = read(VLLM_ENGINE_GENERATE_ERROR_EVENT)

    assert error is not None
    assert error.message is None
    assert (error.type, error.code) == ("InternalServerError", "500")
    said = error.describe("an error event")
    assert said == (
        "the server sent an error event with no message: " + VLLM_ENGINE_GENERATE_ERROR_EVENT
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (VLLM_GENERATION_ERROR_EVENT, "'Internal server error' (InternalServerError, code 500)"),
        (
            VLLM_BAD_SCHEMA_BODY,
            "\"Failed to transform json schema into a grammar: No module named 'xgrammar'\" "
            "(BadRequestError, code 400)",
        ),
        (OLD_VLLM_BODY, "'The model `x` does not exist.' (NotFoundError, code 404)"),
        (
            LLAMACPP_BODY,
            "'the request exceeds the available context size' "
            "(exceed_context_size_error, code 400)",
        ),
        ('{"error": "bad key"}', "'bad key'"),
    ],
    ids=["vllm-generation-error", "vllm-400-body", "old-vllm-top-level", "llamacpp", "bare-string"],
)
def test_the_servers_own_text_type_and_code_are_kept(text: str, said: str) -> None:
    error = read(text)

    assert error is not None
    assert error.describe() == said


def test_a_multi_line_validation_message_stays_one_line_with_its_param() -> None:
    error = read(VLLM_VALIDATION_BODY)

    assert error is not None
    assert error.param == "messages"
    said = error.describe()
    assert "\n" not in said
    assert said.startswith("\"1 validation error: {'type': 'missing'")
    assert said.endswith("(Bad Request, code 400, param messages)")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"error": {"message": 42, "code": 500}}, "42"),
        ({"error": {"message": {"detail": "x"}}}, '{"detail": "x"}'),
        ({"error": {"message": ["a", "b"]}}, '["a", "b"]'),
        ({"error": 7}, "7"),
        ({"object": "error", "message": True}, "true"),
    ],
)
def test_a_message_of_another_type_is_shown_as_its_json(value: Any, message: str) -> None:
    error = server_error(value)

    assert error is not None
    assert error.message == message


@pytest.mark.parametrize(
    "value",
    [
        {"error": {}},
        {"error": {"message": "\t\n", "type": None}},
        {"error": ""},
        {"error": []},
        {"error": {"message": {}}},
        {"object": "error"},
    ],
)
def test_an_error_with_no_text_says_so_and_shows_the_json(value: Any) -> None:
    error = server_error(value)

    assert error is not None
    described = error.describe("an error event")
    assert described == f"the server sent an error event with no message: {json.dumps(value)}"


def test_odd_types_for_type_and_code_are_text_too() -> None:
    error = server_error({"error": {"message": "m", "type": ["x"], "code": {"n": 1}}})

    assert error is not None
    assert error.describe() == '\'m\' (["x"], code {"n": 1})'


def test_a_long_message_or_raw_json_is_cut_and_says_so() -> None:
    long = server_error({"error": {"message": "x" * 5000}})
    empty = server_error({"error": {"message": "", "detail": "y" * 5000}})

    assert long is not None
    assert long.message is not None
    assert "(5000 characters, cut)" in long.message
    assert empty is not None
    assert "characters, cut)" in empty.describe()
    assert len(empty.describe()) < 400


@pytest.mark.parametrize(
    "value",
    [
        {"choices": [{"index": 0, "delta": {"content": "hi"}}]},
        {"error": None, "choices": []},
        {"error": False},
        {"object": "chat.completion.chunk"},
        ["error"],
        "error",
        None,
    ],
)
def test_a_reply_that_reports_no_error_reads_as_none(value: Any) -> None:
    assert server_error(value) is None
