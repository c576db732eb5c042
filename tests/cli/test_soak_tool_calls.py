"""`sparkrig soak` against a server that serves no tool calls: a local stand-in answering every
tool-call request as vLLM without a tool parser does (tests/tool_refusals.py). The soak asks once,
leaves tool calls out with the server's words and the fix, loses nothing and exits 0; a 500 or a
closed connection on that first request keeps tool calls in; --no-tools leaves them out
without asking."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from aiohttp import web

from sparkrig.bench.soak_receipt import SoakReceipt, load_soak_receipt
from tests.conftest import SPARKRIG
from tests.tool_refusals import (
    VLLM_WORDS,
    ToolAnswer,
    ToolServer,
    close_the_connection,
    serve_tools,
    vllm_without_tool_parser,
)

FIX = "vLLM: serve with --enable-auto-tool-choice --tool-call-parser NAME to soak tool calls"


async def soak(server: ToolServer, receipt: Path, *options: str) -> tuple[int, str, SoakReceipt]:
    async with serve_tools(server) as url:
        process = await asyncio.create_subprocess_exec(
            SPARKRIG,
            "soak",
            url,
            "--model",
            "m",
            "--duration",
            "2",
            "--window",
            "2",
            "--concurrency",
            "1",
            "--receipt",
            str(receipt),
            *options,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, " ".join(out.decode().split()), load_soak_receipt(receipt)


async def test_a_server_without_tool_calls_passes_a_soak_that_leaves_them_out(
    tmp_path: Path,
) -> None:
    server = ToolServer(vllm_without_tool_parser)
    code, out, done = await soak(server, tmp_path / "soak.json")

    assert code == 0, out
    assert (done.status, done.lost, done.bad_outputs) == ("complete", 0, 0), done.problems
    assert done.requests > 0
    assert len(server.tool_requests) == 1  # the probe; nothing after it carried tools
    assert done.kinds == ["json", "code", "summary", "prose"]
    assert all("tool_call" not in window.kinds for window in done.windows)
    (left,) = done.left_out
    assert (left.kind, left.by, left.fix) == ("tool_call", "server", FIX)
    said = f"tool_call left out: the server refused it with HTTP 400 {VLLM_WORDS!r} — {FIX}"
    assert out.count(said) == 2, out  # before the first window and in the summary
    page = (tmp_path / "soak.html").read_text()
    assert "left out" in page
    assert "--tool-call-parser NAME" in page


def first_tool_request(answer: ToolAnswer) -> ToolAnswer:
    """`answer` for the probe only; every later tool call is served."""
    return lambda n, request: answer(n, request) if n == 0 else None


def internal_error(n: int, request: web.Request) -> web.StreamResponse:
    body = {"error": {"message": "Internal Server Error", "type": "InternalServerError"}}
    return web.json_response(body, status=500)


async def test_a_500_or_a_closed_connection_on_the_probe_keeps_tool_calls(tmp_path: Path) -> None:
    for name, answer in (
        ("500", internal_error),
        ("closed", lambda n, request: close_the_connection(request)),
    ):
        server = ToolServer(first_tool_request(answer))
        code, out, done = await soak(server, tmp_path / f"{name}.json")
        assert code == 0, (name, out)
        assert done.left_out == [], name
        assert done.kinds == ["tool_call", "json", "code", "summary", "prose"], name
        assert sum(window.kinds.get("tool_call", 0) for window in done.windows) >= 1, name
        assert len(server.tool_requests) >= 2, name  # the probe, then the mix's own
        assert "left out" not in out, name


async def test_no_tools_leaves_tool_calls_out_without_asking(tmp_path: Path) -> None:
    server = ToolServer(vllm_without_tool_parser)
    code, out, done = await soak(server, tmp_path / "soak.json", "--no-tools")

    assert code == 0, out
    assert server.tool_requests == []
    assert [(left.kind, left.by) for left in done.left_out] == [("tool_call", "flag")]
    assert out.count("tool_call left out on purpose (--no-tools)") == 2, out
    assert "left out on purpose (--no-tools)" in (tmp_path / "soak.html").read_text()


def test_no_tools_with_a_replay_is_refused(tmp_path: Path) -> None:
    workload = tmp_path / "workload.jsonl"
    workload.write_text('{"request_id": "a", "time": 1, "api": "chat", "status": 200}\n')
    result = subprocess.run(
        [SPARKRIG, "soak", "http://127.0.0.1:9", "--replay", str(workload), "--no-tools"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "--no-tools leaves tool calls out of the mixed traffic" in result.stderr
    assert "Traceback" not in result.stderr
