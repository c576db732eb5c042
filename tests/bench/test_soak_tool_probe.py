"""A mixed soak's one tool-call probe, through the real client against a local stand-in server
(tests/tool_refusals.py): tool calls leave the mix only when an engine says, in its own words,
that it serves none; a transport failure, another 5xx or another 400 keeps them. And the mix
without tool calls keeps the default mix's numbering."""

from __future__ import annotations

import itertools

import pytest
from aiohttp import web

from sparkrig import defaults
from sparkrig.bench.soak_tool_probe import mixed_kinds, probe_tool_calls
from sparkrig.bench.soak_traffic import KINDS, mixed_request, mixed_traffic, task_prompt
from sparkrig.client import ChatRequest, EndpointClient
from sparkrig.launch.local import free_port
from tests.tool_refusals import (
    LLAMA_WORDS,
    VLLM_WORDS,
    ToolServer,
    close_the_connection,
    llama_without_jinja,
    serve_tools,
    vllm_without_tool_parser,
)

MODEL = "m"
NO_TOOLS = ("json", "code", "summary", "prose")


async def test_vllm_without_a_tool_parser_leaves_tool_calls_out_with_its_words_and_the_fix() -> (
    None
):
    server = ToolServer(vllm_without_tool_parser)
    async with serve_tools(server) as url, EndpointClient(url) as client:
        kinds, left_out = await mixed_kinds(client, MODEL, no_tools=False)
    assert kinds == NO_TOOLS
    (left,) = left_out
    assert (left.kind, left.by) == ("tool_call", "server")
    assert left.server_said == f"HTTP 400 {VLLM_WORDS!r}"
    assert left.fix is not None
    assert "--enable-auto-tool-choice --tool-call-parser NAME" in left.fix
    assert VLLM_WORDS in left.describe()
    (probe,) = server.tool_requests  # one request, of the mix's tool call, on a short budget
    assert probe["tools"][0]["function"]["name"] == "get_weather"
    assert probe["max_tokens"] == 16
    assert "tool_choice" not in probe  # as the mix sends it: the server's default, "auto"


async def test_llama_server_without_jinja_leaves_tool_calls_out() -> None:
    async with serve_tools(ToolServer(llama_without_jinja)) as url, EndpointClient(url) as client:
        left = await probe_tool_calls(client, MODEL)
    assert left is not None
    assert left.server_said == f"HTTP 500 {LLAMA_WORDS!r}"
    assert left.fix is not None
    assert "--jinja" in left.fix


def error_reply(status: int, message: str) -> web.StreamResponse:
    body = {"error": {"message": message, "type": "BadRequestError", "param": None, "code": status}}
    return web.json_response(body, status=status)


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (500, VLLM_WORDS),  # the right words at the wrong status: not the engine's refusal
        (500, "Internal Server Error"),
        (503, "the engine is overloaded"),
        (400, "The model's chat template does not accept tools"),  # an unrelated 400
        (400, f"{VLLM_WORDS} (and something else)"),  # not the whole message
        (400, LLAMA_WORDS),  # llama.cpp's words come at 500
    ],
)
async def test_any_other_error_keeps_tool_calls(status: int, message: str) -> None:
    server = ToolServer(lambda n, request: error_reply(status, message))
    async with serve_tools(server) as url, EndpointClient(url) as client:
        kinds, left_out = await mixed_kinds(client, MODEL, no_tools=False)
    assert (kinds, left_out) == (KINDS, [])
    assert len(server.tool_requests) == 1


async def test_a_connection_closed_on_the_probe_keeps_tool_calls() -> None:
    server = ToolServer(lambda n, request: close_the_connection(request))
    async with serve_tools(server) as url, EndpointClient(url) as client:
        assert await probe_tool_calls(client, MODEL) is None
    assert len(server.tool_requests) == 1


async def test_a_server_that_is_not_there_keeps_tool_calls() -> None:
    async with EndpointClient(f"http://127.0.0.1:{free_port('127.0.0.1')}") as client:
        kinds, left_out = await mixed_kinds(client, MODEL, no_tools=False)
    assert (kinds, left_out) == (KINDS, [])


async def test_a_server_that_serves_tool_calls_keeps_them() -> None:
    server = ToolServer(lambda n, request: None)  # the stand-in's own tool-call reply
    async with serve_tools(server) as url, EndpointClient(url) as client:
        kinds, left_out = await mixed_kinds(client, MODEL, no_tools=False)
    assert (kinds, left_out) == (KINDS, [])
    assert len(server.tool_requests) == 1


async def test_no_tools_leaves_them_out_without_asking() -> None:
    server = ToolServer(vllm_without_tool_parser)
    async with serve_tools(server) as url, EndpointClient(url) as client:
        kinds, left_out = await mixed_kinds(client, MODEL, no_tools=True)
    assert kinds == NO_TOOLS
    assert [(left.kind, left.by, left.server_said) for left in left_out] == [
        ("tool_call", "flag", None)
    ]
    assert server.tool_requests == []


@pytest.mark.parametrize("seed", [0, 3])
def test_the_default_mix_is_numbered_as_before(seed: int) -> None:
    """Request n of a seed is the request it always was: its id, kind, budget, temperature and
    the pick of its prompt follow n and the seed over all five kinds."""
    for n, planned in enumerate(itertools.islice(mixed_traffic(MODEL, seed), 30)):
        assert planned.request_id == f"soak-{seed}-{n}"
        assert planned.kind == KINDS[(n + seed) % 5]
        request = planned.request
        assert isinstance(request, ChatRequest)
        assert request.temperature == defaults.SOAK_TEMPERATURES[(n + seed) % 3]
        if planned.kind in ("summary", "code", "prose"):
            assert request.max_tokens == defaults.SOAK_MAX_TOKENS[(n // 5 + seed) % 3]
        assert request.messages[-1]["content"] == task_prompt(planned.kind, n // 5)
    eighth = mixed_request(MODEL, 8, 0)
    assert (eighth.kind, eighth.request.max_tokens) == ("summary", 128)


def test_a_mix_without_tool_calls_cycles_over_the_other_kinds() -> None:
    sent = list(itertools.islice(mixed_traffic(MODEL, 0, NO_TOOLS), 12))
    assert [planned.kind for planned in sent[:4]] == list(NO_TOOLS)
    assert {planned.kind for planned in sent} == set(NO_TOOLS)
    assert [planned.request_id for planned in sent] == [f"soak-0-{n}" for n in range(12)]
    assert all(isinstance(p.request, ChatRequest) and p.request.tools is None for p in sent)
