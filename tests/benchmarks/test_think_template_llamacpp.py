"""The GPU test bed's think template (benchmarks/vllm_gpu/think-template.jinja) on the real
llama-server with the bundled model: llama.cpp splits the thinking into reasoning_content only for
a template that puts an earlier turn's reasoning_content back in its think block, which this one
now does (before, every word stayed in content). With thinking=false the reply is all content."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from sparkrig.client.first_completion import answer_one_completion
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.launch.local import (
    LocalInstance,
    embedded_server,
    plan_local,
    start_local,
    stop_local,
)
from tests.gateway.replies import chat, send

pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="session")]

TEMPLATE = Path(__file__).parents[2] / "benchmarks" / "vllm_gpu" / "think-template.jinja"
BUDGET = {"max_tokens": 40, "cache_prompt": False}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def think_server(engine: EngineInstall, bundled_model: Path) -> AsyncIterator[LocalInstance]:
    args = ["--jinja", "--chat-template-file", str(TEMPLATE), "--reasoning-format", "deepseek"]
    args += ["--reasoning-budget", "24"]
    server = embedded_server(engine, bundled_model, parallel_slots=1, extra_args=args)
    record = await start_local(
        plan_local(server, port_was_chosen=True, engine_build=engine.label), answer_one_completion
    )
    try:
        yield record
    finally:
        await stop_local(record)


async def test_the_thinking_is_split_from_the_content(think_server: LocalInstance) -> None:
    body = chat("Write a short story about a cat.", stream=False, **BUDGET)
    reply = await send(think_server.base_url, body)
    assert reply.reasoning.strip(), reply.raw[:400]
    assert (reply.content or "").strip(), reply.raw[:400]


async def test_thinking_false_closes_the_block_and_all_is_content(
    think_server: LocalInstance,
) -> None:
    off = {"chat_template_kwargs": {"thinking": False}}
    body = chat("Write a short story about a cat.", stream=False, **off, **BUDGET)
    reply = await send(think_server.base_url, body)
    assert not reply.reasoning.strip(), reply.raw[:400]
    assert (reply.content or "").strip()
