"""A real reasoning upstream for the gateway's tests: llama-server with the bundled model and a
chat template that opens `<think>` in the prompt (tests/fixtures/templates/chatml_think.jinja).

No small real reasoning model is available as a package here, so reasoning is made this way:
llama.cpp sees the template open the block, files the model's text as `reasoning_content`, and
`--reasoning-budget` closes the block after REASONING_TOKENS tokens, after which the text is
content. The reasoning/content split, the deltas and llama.cpp's own stop handling are all the
real server's (its stops fire inside the reasoning, reproducing the bug of field notes:
stop-in-reasoning)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.launch.local import LocalInstance
from tests.own_server import own_llama_server, reasoning_args


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def reasoning_server(
    engine: EngineInstall, bundled_model: Path, session_state_dir: Path
) -> AsyncIterator[LocalInstance]:
    args = reasoning_args()
    async with own_llama_server(engine, bundled_model, parallel_slots=2, extra_args=args) as record:
        yield record
