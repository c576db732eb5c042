"""The embedded default engine as a context: build or find llama-server, serve, always stop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from rich.console import Console

from sparkrig import defaults
from sparkrig.bench.receipt import BenchReceipt, save_receipt
from sparkrig.bench.run import run_bench
from sparkrig.cli.engine import find_or_build_engine
from sparkrig.client.first_completion import answer_one_completion
from sparkrig.engines.llamacpp.gguf_model import resolve_model
from sparkrig.engines.llamacpp.server import SpeculativeOptions
from sparkrig.launch.local import (
    LocalInstance,
    embedded_server,
    plan_local,
    start_local,
    stop_local,
)


@asynccontextmanager
async def embedded_engine(
    console: Console,
    *,
    model: Path | None = None,
    speculative: SpeculativeOptions | None = None,
    parallel_slots: int = defaults.LOCAL_PARALLEL_SLOTS,
    context_tokens: int = defaults.LOCAL_CONTEXT_TOKENS,
    prefill_threads: int | None = None,
) -> AsyncIterator[LocalInstance]:
    """The embedded llama-server, stopped on the way out; `prefill_threads` sets its
    --threads-batch (default: its decode threads)."""
    engine = find_or_build_engine(console)
    model_path = resolve_model(model)
    server = embedded_server(
        engine,
        model_path,
        alias=defaults.BUNDLED_MODEL_ALIAS if model is None else model_path.stem,
        parallel_slots=parallel_slots,
        context_tokens=context_tokens,
        speculative=speculative,
        extra_args=() if prefill_threads is None else ("--threads-batch", str(prefill_threads)),
    )
    console.print(f"starting llama-server on {server.host}:{server.port} with {model_path.name}")
    plan = plan_local(server, port_was_chosen=True, engine_build=engine.label)
    record = await start_local(plan, answer_one_completion)
    console.print(f"ready (pid {record.pid}, {engine.label})")
    try:
        yield record
    finally:
        await stop_local(record)
        console.print(f"stopped llama-server (pid {record.pid})")


async def bench_embedded(
    console: Console,
    *,
    suites: list[str],
    slots: int,
    speculative: SpeculativeOptions | None,
    **bench_args: Any,
) -> BenchReceipt:
    """Bench the embedded engine. Without `speculative`, the spec suite gets an engine of its
    own (draft-simple, the model drafting for itself), so speculation never touches the other
    suites' figures; both engines' points land in one receipt."""
    restart_for_spec = "spec" in suites and speculative is None
    first = [name for name in suites if not (restart_for_spec and name == "spec")]
    receipt = None
    if first:
        async with embedded_engine(
            console, parallel_slots=slots, speculative=speculative
        ) as record:
            receipt = await run_bench(record.base_url, suites=first, **bench_args)
    if restart_for_spec:
        drafting = SpeculativeOptions(spec_type="draft-simple")
        async with embedded_engine(console, parallel_slots=slots, speculative=drafting) as record:
            receipt = await run_bench(
                record.base_url, suites=["spec"], continue_receipt=receipt, **bench_args
            )
        receipt.warnings.append(
            "spec suite ran on a second embedded engine with --spec-type draft-simple "
            f"(the model drafting for itself) at {record.base_url}"
        )
        save_receipt(receipt, bench_args["out_path"])
    assert receipt is not None  # suites is never empty: check_suites ran first
    return receipt
