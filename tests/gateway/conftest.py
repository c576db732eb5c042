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

from sparkrig.client.first_completion import answer_one_completion
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.launch.local import (
    LocalInstance,
    embedded_server,
    plan_local,
    start_local,
    stop_local,
)
from tests.conftest import FIXTURES

THINK_TEMPLATE = FIXTURES / "templates" / "chatml_think.jinja"
REASONING_TOKENS = 24


def reasoning_args() -> list[str]:
    return [
        "--jinja",
        "--chat-template-file",
        str(THINK_TEMPLATE),
        "--reasoning-format",
        "deepseek",
        "--reasoning-budget",
        str(REASONING_TOKENS),
    ]


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def reasoning_server(
    engine: EngineInstall, bundled_model: Path, session_state_dir: Path
) -> AsyncIterator[LocalInstance]:
    server = embedded_server(engine, bundled_model, parallel_slots=2, extra_args=reasoning_args())
    plan = plan_local(server, port_was_chosen=True, engine_build=engine.label)
    record = await start_local(plan, answer_one_completion)
    try:
        yield record
    finally:
        await stop_local(record)
