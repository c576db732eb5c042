"""The serving-stall verdict on vLLM 0.26.0's real /metrics captures (tests/fixtures/vllm/).
The captures were taken idle, so `vllm:num_requests_running` is set to 2 in a copy of each
(BUILT from the real text, one sample value changed in the exact exposition format)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

from sparkrig.client.endpoint import ChatRequest, EndpointClient
from sparkrig.client.metrics import MetricsSnapshot, parse_metrics
from sparkrig.client.serving_stall import serving_stall
from tests.conftest import SPARKRIG

VLLM = Path(__file__).resolve().parent.parent / "fixtures" / "vllm"
RUNNING = 'vllm:num_requests_running{engine="0",model_name="smollm2-135m-instruct"}'


def running(name: str, requests: int, taken_ns: int) -> MetricsSnapshot:
    text = (VLLM / name).read_text()
    assert f"{RUNNING} 0.0" in text
    return parse_metrics(text.replace(f"{RUNNING} 0.0", f"{RUNNING} {requests}.0"), taken_ns)


def test_counters_still_while_requests_run_is_a_stall_with_the_stack_step() -> None:
    before = running("metrics_after.txt", 2, 0)
    after = running("metrics_after.txt", 2, 10_000_000_000)
    verdict = serving_stall(before, after)
    assert verdict.state == "stalled"
    assert "2 requests running but no token generated or read in 10.0 s" in verdict.message
    assert "py-spy dump" in verdict.message


def test_moving_counters_are_no_stall() -> None:
    before = running("metrics_idle.txt", 2, 0)
    after = running("metrics_after.txt", 2, 10_000_000_000)
    verdict = serving_stall(before, after)
    assert verdict.state == "moving"
    assert "generated_tokens +8314" in verdict.message


def test_no_running_request_is_idle() -> None:
    idle = parse_metrics((VLLM / "metrics_idle.txt").read_text(), 0)
    assert serving_stall(idle, idle).state == "idle"


async def _stall_cli(url: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        SPARKRIG, "stall", url, "--window", "1", "--json", stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode or 0, out.decode()


async def test_a_real_llama_server_idle_then_decoding_is_no_stall(llama_server: Any) -> None:
    code, out = await _stall_cli(llama_server.base_url)
    assert (code, json.loads(out)["state"]) == (0, "idle")
    request = ChatRequest(
        model=llama_server.alias,
        messages=[{"role": "user", "content": "Write a long story about a lighthouse."}],
        max_tokens=600,
        extra={"ignore_eos": True},
    )
    async with EndpointClient(llama_server.base_url) as client:
        sending = asyncio.create_task(client.send(request))
        await asyncio.sleep(0.5)  # the request is running
        code, out = await _stall_cli(llama_server.base_url)
        sending.cancel()  # the verdict is in: no need to wait for 600 tokens
        with contextlib.suppress(asyncio.CancelledError):
            await sending
    verdict = json.loads(out)
    assert (code, verdict["state"]) == (0, "moving"), verdict
    # llama.cpp adds a request's tokens to its counters when it ends; its decode steps move
    assert "decode_steps +" in verdict["message"]
