"""The embedded default engine as a context: build or find llama-server, serve, always stop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from rich.console import Console

from sparkrig import defaults
from sparkrig.client.readiness import answer_one_completion
from sparkrig.engines.llamacpp.gguf_model import resolve_model
from sparkrig.engines.llamacpp.server import LlamaServerSpec, SpeculativeOptions
from sparkrig.launch.local import free_port, plan_local, start_local, stop_instances
from sparkrig.launch.process_record import InstanceRecord
from sparkrig.report.build_progress import install_engine_with_progress


@asynccontextmanager
async def embedded_engine(
    console: Console,
    *,
    model: Path | None = None,
    speculative: SpeculativeOptions | None = None,
    parallel_slots: int = defaults.LOCAL_PARALLEL_SLOTS,
) -> AsyncIterator[InstanceRecord]:
    engine = install_engine_with_progress(console)
    model_path = resolve_model(model)
    server = LlamaServerSpec(
        binary=engine.server_binary,
        model=model_path,
        alias=defaults.BUNDLED_MODEL_ALIAS if model is None else model_path.stem,
        port=free_port(defaults.LOCAL_HOST),
        parallel_slots=parallel_slots,
        speculative=speculative,
    )
    console.print(f"starting llama-server on {server.host}:{server.port} with {model_path.name}")
    record = await start_local(plan_local(server, port_was_chosen=True), answer_one_completion)
    console.print(f"ready (pid {record.pid})")
    try:
        yield record
    finally:
        stop_instances([record])
        console.print(f"stopped llama-server (pid {record.pid})")
