"""Faults from real HTTP servers: the client records each one and never raises, and the CLI
prints one `error: what — fix` line (a traceback only with --debug)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from sparkrig.client.endpoint import ChatRequest, EndpointClient
from sparkrig.client.records import RequestRecord
from sparkrig.paths import STATE_ENV
from tests.wire.error_shapes import (
    OLD_VLLM_BODY,
    VLLM_BAD_SCHEMA_BODY,
    VLLM_ENGINE_GENERATE_ERROR_EVENT,
    VLLM_GENERATION_ERROR_EVENT,
)

HOST = "127.0.0.1"
from tests.conftest import SPARKRIG  # noqa: E402

CLI_TIMEOUT_S = 60
SERVER_ERROR_BODY = '{"error": {"code": 500, "message": "model exploded: out of memory"}}'
TEMPLATE_ERROR_BODY = '{"error": {"message": "prompt too long near [/INST] — shorten it"}}'
BRACKETED_ANSWER = "Close it with [/INST]; tick [x] when done."
LOGIN_PAGE = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>log in</body></html>"


# --- a server that misbehaves in every way, one path prefix per fault -------------------------


def sse_event(chunk: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(chunk)}\n\n".encode()


def content_chunk(text: str, finish_reason: str | None = None) -> dict[str, Any]:
    delta = {"content": text} if text else {}
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}


async def start_event_stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    return response


async def answers_well(request: web.Request) -> web.StreamResponse:
    response = await start_event_stream(request)
    for chunk in (content_chunk("Hello"), content_chunk(" world"), content_chunk("", "stop")):
        await response.write(sse_event(chunk))
    await response.write(b"data: [DONE]\n\n")
    return response


async def fails_with_500(request: web.Request) -> web.Response:
    return web.Response(status=500, text=SERVER_ERROR_BODY, content_type="application/json")


async def answers_with_a_web_page(request: web.Request) -> web.Response:
    return web.Response(text=LOGIN_PAGE, content_type="text/html")


async def ends_stream_early(request: web.Request) -> web.StreamResponse:
    """Two good events, then the stream ends cleanly but with no finish_reason and no [DONE]."""
    response = await start_event_stream(request)
    await response.write(sse_event(content_chunk("Hello")))
    await response.write(sse_event(content_chunk(" wor")))
    return response


async def drops_connection(request: web.Request) -> web.StreamResponse:
    """Two good events, then the TCP connection is closed mid-reply (a crash, a proxy reset)."""
    response = await start_event_stream(request)
    await response.write(sse_event(content_chunk("Hello")))
    await response.write(sse_event(content_chunk(" wor")))
    await asyncio.sleep(0.3)  # let the client read both before the reset
    assert request.transport is not None
    request.transport.abort()
    return response


async def sends_broken_event(request: web.Request) -> web.StreamResponse:
    response = await start_event_stream(request)
    await response.write(sse_event(content_chunk("Hello")))
    await response.write(b'data: {"choices": [{"delta": {"content": "oops\n\n')
    await response.write(b"data: [DONE]\n\n")
    return response


async def never_answers(request: web.Request) -> web.Response:
    await asyncio.sleep(30)
    return web.Response(text="too late")


async def rejects_a_prompt_quoting_its_template(request: web.Request) -> web.Response:
    return web.Response(status=400, text=TEMPLATE_ERROR_BODY, content_type="application/json")


async def answers_with_brackets(request: web.Request) -> web.StreamResponse:
    response = await start_event_stream(request)
    await response.write(sse_event(content_chunk(BRACKETED_ANSWER)))
    await response.write(sse_event(content_chunk("", "stop")))
    await response.write(b"data: [DONE]\n\n")
    return response


async def serves_a_web_page_as_metrics(request: web.Request) -> web.Response:
    return web.Response(text=LOGIN_PAGE, content_type="text/html")


async def vllm_engine_error_mid_stream(request: web.Request) -> web.StreamResponse:
    """vLLM 0.26.0 when its engine fails a request: HTTP 200, and as the stream's only event the
    error with an empty message, then [DONE] (tests/wire/error_shapes.py cites the source)."""
    response = await start_event_stream(request)
    await response.write(f"data: {VLLM_ENGINE_GENERATE_ERROR_EVENT}\n\n".encode())
    await response.write(b"data: [DONE]\n\n")
    return response


async def vllm_generation_error_after_text(request: web.Request) -> web.StreamResponse:
    response = await start_event_stream(request)
    await response.write(sse_event(content_chunk("Hello")))
    await response.write(f"data: {VLLM_GENERATION_ERROR_EVENT}\n\n".encode())
    await response.write(b"data: [DONE]\n\n")
    return response


async def old_vllm_error_mid_stream(request: web.Request) -> web.StreamResponse:
    """The error at the top level with "object": "error", which has no `choices` to read."""
    response = await start_event_stream(request)
    await response.write(f"data: {OLD_VLLM_BODY}\n\n".encode())
    await response.write(b"data: [DONE]\n\n")
    return response


def json_reply(status: int, body: str) -> web.Response:
    return web.Response(status=status, text=body, content_type="application/json")


# what vLLM's engine_error_handler sends for an EngineGenerateError of a request not streamed
VLLM_EMPTY_500_BODY = json.dumps(
    json.loads(VLLM_ENGINE_GENERATE_ERROR_EVENT), separators=(",", ":")
)


async def vllm_empty_500(request: web.Request) -> web.Response:
    return json_reply(500, VLLM_EMPTY_500_BODY)


async def vllm_bad_schema_400(request: web.Request) -> web.Response:
    return json_reply(400, VLLM_BAD_SCHEMA_BODY)


FAULTS = {
    "ok": answers_well,
    "http500": fails_with_500,
    "web-page": answers_with_a_web_page,
    "ends-early": ends_stream_early,
    "drops": drops_connection,
    "broken-event": sends_broken_event,
    "slow": never_answers,
    "template-error": rejects_a_prompt_quoting_its_template,
    "brackets": answers_with_brackets,
    "vllm-engine-error": vllm_engine_error_mid_stream,
    "vllm-generation-error": vllm_generation_error_after_text,
    "old-vllm-error": old_vllm_error_mid_stream,
    "vllm-empty-500": vllm_empty_500,
    "vllm-bad-schema-400": vllm_bad_schema_400,
}


class FaultServer:
    def __init__(self, port: int) -> None:
        self.port = port

    def url(self, fault: str) -> str:
        """Base URL whose /v1/chat/completions (and /metrics) shows `fault`."""
        return f"http://{HOST}:{self.port}/{fault}"


@pytest.fixture(scope="module")
async def faults() -> AsyncIterator[FaultServer]:
    app = web.Application()
    for name, handler in FAULTS.items():
        app.router.add_post(f"/{name}/v1/chat/completions", handler)
    app.router.add_get("/web-page/metrics", serves_a_web_page_as_metrics)
    # cancel handlers whose client left, so teardown does not wait for `never_answers`
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, HOST, 0)
        await site.start()
        yield FaultServer(runner.addresses[0][1])
    finally:
        await runner.cleanup()


@pytest.fixture(scope="module")
def closed_url() -> Iterator[str]:
    """A port that refuses connections: bound (so nothing else takes it) but not listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind((HOST, 0))
        yield f"http://{HOST}:{holder.getsockname()[1]}"


def hello() -> ChatRequest:
    return ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=8)


async def send_once(base_url: str, timeout_s: float = 10.0) -> RequestRecord:
    async with EndpointClient(base_url, timeout_s=timeout_s) as client:
        return await client.send(hello())


# --- the client records every fault and never raises ------------------------------------------


async def test_http_error_keeps_status_and_body(faults: FaultServer) -> None:
    record = await send_once(faults.url("http500"))

    assert record.error is not None
    assert record.error.kind == "http_status"
    assert record.error.status == 500
    assert record.error.body == SERVER_ERROR_BODY
    assert " — " in record.error.message
    assert not record.ok


async def test_web_page_instead_of_json_is_non_json(faults: FaultServer) -> None:
    record = await send_once(faults.url("web-page"))

    assert record.error is not None
    assert record.error.kind == "non_json"
    assert record.error.body == LOGIN_PAGE
    assert " — " in record.error.message


@pytest.mark.parametrize(
    ("fault", "says"),
    [("ends-early", "ended after 2 events"), ("drops", "closed mid-reply")],
)
async def test_stream_cut_before_finish_keeps_the_events_it_got(
    faults: FaultServer, fault: str, says: str
) -> None:
    record = await send_once(faults.url(fault))

    assert record.error is not None
    assert record.error.kind == "stream_cut"
    assert says in record.error.message
    assert " — " in record.error.message
    assert [event.content_chars for event in record.events] == [len("Hello"), len(" wor")]
    assert record.finish_reason is None


async def test_event_that_is_not_json_is_non_json(faults: FaultServer) -> None:
    record = await send_once(faults.url("broken-event"))

    assert record.error is not None
    assert record.error.kind == "non_json"
    assert record.error.body == '{"choices": [{"delta": {"content": "oops'
    assert len(record.events) == 1


# --- the server's own error text is never lost ---------------------------------------------------


async def test_vllm_error_event_with_no_message_says_so_and_shows_the_event(
    faults: FaultServer,
) -> None:
    record = await send_once(faults.url("vllm-engine-error"))

    assert record.error is not None
    assert record.error.kind == "protocol"
    assert record.error.message.startswith(
        "the server sent an error event mid-stream with no message: "
        + VLLM_ENGINE_GENERATE_ERROR_EVENT
        + " — "
    )
    assert "EngineGenerateError" in record.error.message  # where to look: the server's log
    assert record.error.server is not None
    assert (record.error.server.type, record.error.server.code) == ("InternalServerError", "500")
    assert record.error.body == VLLM_ENGINE_GENERATE_ERROR_EVENT


async def test_vllm_error_event_after_some_text_keeps_the_text_and_the_message(
    faults: FaultServer,
) -> None:
    record = await send_once(faults.url("vllm-generation-error"))

    assert record.error is not None
    assert record.error.message == (
        "the server reported an error mid-stream: 'Internal server error' "
        "(InternalServerError, code 500) — read its log"
    )
    assert [event.content_chars for event in record.events] == [len("Hello")]


async def test_an_older_vllm_error_at_the_top_level_is_an_error_not_a_cut_stream(
    faults: FaultServer,
) -> None:
    record = await send_once(faults.url("old-vllm-error"))

    assert record.error is not None
    assert record.error.kind == "protocol"
    assert "'The model `x` does not exist.' (NotFoundError, code 404)" in record.error.message


@pytest.mark.parametrize(
    ("fault", "status", "says"),
    [
        (
            "vllm-empty-500",
            500,
            f"the server sent an error body with no message: {VLLM_EMPTY_500_BODY} — the cause "
            "is only in the server's log",
        ),
        (
            "vllm-bad-schema-400",
            400,
            "\"Failed to transform json schema into a grammar: No module named 'xgrammar'\" "
            "(BadRequestError, code 400) — read the server's message and its log",
        ),
    ],
)
async def test_an_error_body_gives_the_servers_text_or_says_it_gave_none(
    faults: FaultServer, fault: str, status: int, says: str
) -> None:
    record = await send_once(faults.url(fault))

    assert record.error is not None
    assert record.error.kind == "http_status"
    assert record.error.status == status
    assert says in record.error.message
    assert record.error.server is not None


async def test_refused_connection_is_connect(closed_url: str) -> None:
    record = await send_once(closed_url)

    assert record.error is not None
    assert record.error.kind == "connect"
    assert closed_url in record.error.message
    assert " — " in record.error.message
    assert record.events == []


async def test_server_slower_than_the_timeout_is_timeout(faults: FaultServer) -> None:
    record = await send_once(faults.url("slow"), timeout_s=0.5)

    assert record.error is not None
    assert record.error.kind == "timeout"
    assert " — " in record.error.message
    assert record.e2e_s is not None
    assert 0.5 <= record.e2e_s < 5


async def test_good_reply_from_the_same_server_is_ok(faults: FaultServer) -> None:
    record = await send_once(faults.url("ok"))

    assert record.error is None
    assert record.content == "Hello world"
    assert record.finish_reason == "stop"


async def test_failures_among_many_concurrent_requests_do_not_end_the_run(
    faults: FaultServer, closed_url: str
) -> None:
    targets = ["ok", "http500", "ok", "web-page", "ok", "ends-early", "ok", "broken-event"] * 3
    records = await asyncio.gather(
        *(send_once(faults.url(name)) for name in targets), send_once(closed_url)
    )

    kinds = [None if record.error is None else record.error.kind for record in records]
    assert kinds == [
        None,
        "http_status",
        None,
        "non_json",
        None,
        "stream_cut",
        None,
        "non_json",
    ] * 3 + ["connect"]
    assert {record.content for record in records if record.ok} == {"Hello world"}


# --- the CLI: one line on stderr, a traceback only with --debug -------------------------------


async def run_cli(*args: str, state_dir: Path) -> tuple[int, str, str]:
    """Run the installed `sparkrig` script without blocking the loop that serves the faults."""
    env = {**os.environ, STATE_ENV: str(state_dir)}
    for name in ("SPARKRIG_API_KEY", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    process = await asyncio.create_subprocess_exec(
        SPARKRIG,
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), CLI_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


CLI_FAULTS = [
    ("ask", "http500"),
    ("ask", "web-page"),
    ("ask", "ends-early"),
    ("ask", "closed"),
    ("ask", "vllm-engine-error"),
    ("metrics", "web-page"),
    ("metrics", "closed"),
]
CLI_FAULT_IDS = [f"{command}-{target}" for command, target in CLI_FAULTS]


def cli_args(command: str, target: str, faults: FaultServer, closed_url: str) -> list[str]:
    url = closed_url if target == "closed" else faults.url(target)
    return [command, url, "hi", "--model", "m"] if command == "ask" else [command, url]


@pytest.mark.parametrize(("command", "target"), CLI_FAULTS, ids=CLI_FAULT_IDS)
async def test_cli_prints_one_error_line_without_traceback(
    faults: FaultServer, closed_url: str, tmp_path: Path, command: str, target: str
) -> None:
    code, _, stderr = await run_cli(
        *cli_args(command, target, faults, closed_url), state_dir=tmp_path
    )

    assert code == 1
    assert "Traceback" not in stderr
    lines = stderr.rstrip("\n").split("\n")
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ")
    assert " — " in lines[0]


@pytest.mark.parametrize(("command", "target"), CLI_FAULTS, ids=CLI_FAULT_IDS)
async def test_cli_shows_the_traceback_with_debug(
    faults: FaultServer, closed_url: str, tmp_path: Path, command: str, target: str
) -> None:
    code, _, stderr = await run_cli(
        "--debug", *cli_args(command, target, faults, closed_url), state_dir=tmp_path
    )

    assert code != 0
    assert "Traceback (most recent call last)" in stderr
    assert "sparkrig.errors." in stderr


# Server and model text must never be read as rich markup: `[/INST]` would raise rich's
# MarkupError (a traceback) and `[x]` would silently vanish.


async def test_cli_error_quoting_markup_like_text_stays_one_line(
    faults: FaultServer, tmp_path: Path
) -> None:
    code, _, stderr = await run_cli(
        "ask", faults.url("template-error"), "hi", "--model", "m", state_dir=tmp_path
    )

    assert code == 1
    assert "Traceback" not in stderr
    assert stderr.startswith("error: ")
    assert "[/INST]" in stderr


async def test_cli_ask_prints_the_answer_verbatim(faults: FaultServer, tmp_path: Path) -> None:
    code, stdout, stderr = await run_cli(
        "ask", faults.url("brackets"), "hi", "--model", "m", state_dir=tmp_path
    )

    assert code == 0, stderr
    assert BRACKETED_ANSWER in stdout
