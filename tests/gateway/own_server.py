"""A llama-server of a test's own (one slot, the bundled model), for tests that kill it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sparkrig.client.first_completion import answer_one_completion
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.launch.local import (
    LocalInstance,
    embedded_server,
    plan_local,
    start_local,
    stop_local,
)


@asynccontextmanager
async def own_llama_server(engine: EngineInstall, model: Path) -> AsyncIterator[LocalInstance]:
    server = embedded_server(engine, model, parallel_slots=1)
    plan = plan_local(server, port_was_chosen=True, engine_build=engine.label)
    record = await start_local(plan, answer_one_completion)
    try:
        yield record
    finally:
        await stop_local(record)
