"""`sparkrig check`: the guard battery."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from sparkrig import defaults
from sparkrig.cli.common import (
    POSITIVE,
    ForceFlag,
    JsonFlag,
    TelemetryClusterOption,
    TelemetryFlag,
    app,
    checked_target,
    console,
    err_console,
    print_json,
    ranged,
    receipt_out,
)
from sparkrig.cli.model_options import bound_values, setting
from sparkrig.errors import UsageError
from sparkrig.guards.settings import CheckSettings


@app.command()
def check(
    ctx: typer.Context,
    url: Annotated[
        str | None, typer.Argument(help="base URL of an OpenAI-compatible server")
    ] = None,
    local: Annotated[
        bool, typer.Option("--local", help="check the embedded engine (started and stopped here)")
    ] = False,
    quick: bool = setting(
        CheckSettings, "quick", "--quick", note="about 15 s on the embedded engine"
    ),
    full: Annotated[bool, typer.Option("--full", help="every guard (the default)")] = False,
    guard: Annotated[
        str | None, typer.Option(help="comma-separated guards to run, e.g. margin,needle")
    ] = None,
    record_baseline: Annotated[
        bool,
        typer.Option(
            "--record-baseline",
            help="save this run's capability scores (exact, needle, acceptance) as the baseline "
            "later runs are judged against; run it on a known-good server",
        ),
    ] = False,
    baseline: Annotated[
        Path | None, typer.Option(help="baseline file (default: one per server and model)")
    ] = None,
    kv_block_tokens: int | None = setting(CheckSettings, "kv_block_tokens"),
    needle_cap: int = setting(CheckSettings, "needle_cap_tokens", "--needle-cap"),
    load_concurrency: int | None = setting(CheckSettings, "load_concurrency"),
    slots: int | None = setting(CheckSettings, "slots"),
    repeat_every: Annotated[
        float | None,
        ranged(
            "after the battery, rerun the margin and drift probes every this many seconds until "
            "Ctrl-C (a soak: some faults show only after hours)",
            POSITIVE,
        ),
    ] = None,
    against: Annotated[
        Path | None,
        typer.Option(
            help="an earlier build's check receipt: this run's temperature-0 replies must be "
            "identical to its replies (exact, determinism, load_accuracy keep them), else WARN "
            "(near-ties only, within the thresholds) or FAIL"
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="model id (default: the server's first)")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="receipt path (default: sparkrig-runs/check-<time>.json)")
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            help="env var holding the API key (default: SPARKRIG_API_KEY, else VLLM_API_KEY, "
            "the variable vLLM and a cluster file's engine.api_key_env read)"
        ),
    ] = None,
    telemetry: TelemetryFlag = True,
    telemetry_cluster: TelemetryClusterOption = None,
    force: ForceFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Run the guards that catch silent serving corruption; exit 1 on any FAIL.

    Each guard compares the server with itself (alone vs concurrent, streamed vs not, cold vs
    cached) or with a recorded baseline (docs/guards.md). The receipt is rewritten after every
    guard, so an interrupted run keeps what it found."""
    from sparkrig.cli.views.check_table import check_table, result_line
    from sparkrig.client.endpoint import api_key_from_env
    from sparkrig.doctor.telemetry_record import cluster_nodes, sampled_beside
    from sparkrig.guards.battery import guard_names

    checked_target(url, local, "check")
    if quick and full:
        raise UsageError("--quick and --full contradict each other — pick one")
    settings = CheckSettings(**bound_values(check, ctx.params, CheckSettings))
    names = guard_names(guard, quick)  # a bad guard name fails before any engine starts
    previous = None
    if against is not None:
        from sparkrig.guards.identity import load_previous_receipt

        previous = (against, load_previous_receipt(against))  # a bad file fails before any start
    out_path = receipt_out(out, "check", force=force, page=False)
    debug = "--debug" in sys.argv

    async def go() -> Any:
        from sparkrig.guards.soak import check_with_soak

        kwargs: dict[str, Any] = {
            "settings": settings,
            "out_path": out_path,
            "guards": names,
            "model": model,
            "baseline_path": baseline,
            "record_baseline": record_baseline,
            "against": previous,
            "reraise": debug,
            "show": lambda result: err_console.print(result_line(result), highlight=False),
            "say": lambda line: err_console.print(line, highlight=False),
        }
        if local:
            from sparkrig.cli.embedded import embedded_engine

            kwargs["baseline_scope"] = "embedded"
            async with embedded_engine(
                err_console,
                context_tokens=defaults.CHECK_LOCAL_CONTEXT_TOKENS,
                prefill_threads=defaults.CHECK_LOCAL_PREFILL_THREADS,
            ) as record:
                return await check_with_soak(record.base_url, repeat_every, **kwargs)
        kwargs["api_key"] = api_key_from_env(api_key_env)
        return await check_with_soak(str(url), repeat_every, **kwargs)

    nodes = cluster_nodes(telemetry_cluster, enabled=telemetry)
    try:
        with sampled_beside(out_path, enabled=telemetry, nodes=nodes):
            receipt = asyncio.run(go())
    except KeyboardInterrupt:
        err_console.print(f"interrupted — the receipt keeps every finished guard: {out_path}")
        raise
    if as_json:
        print_json(receipt.model_dump(mode="json"))
    else:
        console.print(check_table(receipt))
        console.print(f"receipt: {out_path}", highlight=False)
    if receipt.failed:
        raise typer.Exit(1)
