"""A llama-server of a test's own (one slot, the bundled model), for tests that kill it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sparkrig import defaults
from sparkrig.client.first_completion import answer_one_completion
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.engines.llamacpp.server import LlamaServerSpec
from sparkrig.launch.local import free_port, plan_local, start_local, stop_instances
from sparkrig.launch.process_record import InstanceRecord


@asynccontextmanager
async def own_llama_server(engine: EngineInstall, model: Path) -> AsyncIterator[InstanceRecord]:
    server = LlamaServerSpec(
        binary=engine.server_binary,
        model=model,
        alias=defaults.BUNDLED_MODEL_ALIAS,
        port=free_port(defaults.LOCAL_HOST),
        parallel_slots=1,
        extra_args=engine.server_args,
    )
    plan = plan_local(server, port_was_chosen=True, engine_build=engine.label)
    record = await start_local(plan, answer_one_completion)
    try:
        yield record
    finally:
        stop_instances([record])
