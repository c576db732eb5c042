"""The GPU test bed's think template (benchmarks/vllm_gpu/think-template.jinja) on the real
llama-server with the bundled model: llama.cpp splits the thinking into reasoning_content only for
a template that puts an earlier turn's reasoning_content back in its think block, which this one
now does (before, every word stayed in content). With thinking=false the reply is all content."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.launch.local import LocalInstance
from tests.gateway.replies import chat, send
from tests.own_server import own_llama_server, reasoning_args

pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="session")]

TEMPLATE = Path(__file__).parents[2] / "benchmarks" / "vllm_gpu" / "think-template.jinja"
BUDGET = {"max_tokens": 40, "cache_prompt": False}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def think_server(engine: EngineInstall, bundled_model: Path) -> AsyncIterator[LocalInstance]:
    args = reasoning_args(TEMPLATE)
    async with own_llama_server(engine, bundled_model, extra_args=args) as record:
        yield record


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
