"""A llama-server of a test's own (the bundled model; one slot unless told otherwise), started,
ready by liveness and stopped when the block ends, even when a test fails; and the flags that make
it a reasoning server on a template that opens <think> (tests/gateway/conftest.py says how)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sparkrig.client.first_completion import answer_one_completion
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.launch.local import (
    LocalInstance,
    embedded_server,
    is_running,
    plan_local,
    start_local,
    stop_local,
)
from sparkrig.launch.state import LaunchState

THINK_TEMPLATE = Path(__file__).parent / "fixtures" / "templates" / "chatml_think.jinja"
REASONING_TOKENS = 24


def reasoning_args(template: Path = THINK_TEMPLATE) -> list[str]:
    """llama-server's flags for a template that opens <think>: llama.cpp's reasoning split, and
    the block closed after REASONING_TOKENS tokens."""
    return [
        "--jinja",
        "--chat-template-file",
        str(template),
        "--reasoning-format",
        "deepseek",
        "--reasoning-budget",
        str(REASONING_TOKENS),
    ]


@asynccontextmanager
async def own_llama_server(
    engine: EngineInstall, model: Path, **options: Any
) -> AsyncIterator[LocalInstance]:
    """`options` go to `embedded_server` (slots, context, speculation, extra arguments)."""
    server = embedded_server(engine, model, **({"parallel_slots": 1} | options))
    plan = plan_local(server, port_was_chosen=True, engine_build=engine.label)
    record = await start_local(plan, answer_one_completion)
    try:
        yield record
    finally:
        await stop_local(record)


def stop_recorded_engines(state: Path) -> None:
    """Stop every engine a sparkrig process recorded under the state folder `state` and left
    running: a test that kills that process when it fails must not leave its engine behind."""
    for record in (state / "local").glob("*.json"):
        try:
            launch = LaunchState.model_validate_json(record.read_text())
        except ValueError:  # the record half written: nothing was started from it yet
            continue
        if launch.started and is_running(instance := LocalInstance.of(launch)):
            asyncio.run(stop_local(instance))
