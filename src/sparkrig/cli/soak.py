"""`sparkrig soak URL`: mixed agent-like traffic or a recorded workload, for a duration, reported
per window; the receipt and its HTML page are rewritten after every window."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sparkrig import defaults
from sparkrig.cli.common import (
    COUNT,
    NON_NEGATIVE,
    POSITIVE,
    Range,
    app,
    console,
    ranged,
    refuse_to_replace,
)
from sparkrig.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sparkrig.bench.soak_receipt import LeftOutKind, SoakReceipt
    from sparkrig.bench.soak_traffic import Kind, PlannedRequest
    from sparkrig.client import EndpointClient
    from sparkrig.wire.workload_log import WorkloadRecord


def refuse_replay_mixups(
    *,
    replay: Path | None,
    replay_format: str,
    paced: bool,
    speed: float | None,
    idle_gap: float | None,
    stagger: float | None = None,
    no_tools: bool = False,
) -> None:
    """Replay options that mean nothing without the others, refused before any work."""
    if no_tools and replay is not None:
        raise UsageError(
            "--no-tools leaves tool calls out of the mixed traffic; a replay sends what was "
            "recorded — drop one of them"
        )
    if paced and stagger is not None:
        raise UsageError(
            "--stagger spreads the closed loop's streams; a paced replay keeps the trace's own "
            "start times — drop one of them"
        )
    if replay_format != "auto" and replay is None:
        raise UsageError("--replay-format names the format of --replay FILE — add --replay FILE")
    if paced and replay is None:
        raise UsageError("--paced replays a trace's timing — add --replay FILE")
    if speed is not None and not paced:
        raise UsageError("--speed sets a paced replay's pace — add --paced (and --replay FILE)")
    if paced and idle_gap is not None:
        raise UsageError(
            "--idle-gap pauses the closed loop; a paced replay keeps the trace's own gaps — "
            "drop one of them"
        )


@app.command()
def soak(
    url: Annotated[str, typer.Argument(help="base URL of the server (or gateway) to soak")],
    replay: Annotated[
        Path | None,
        typer.Option(
            help="a workload JSONL from `gateway serve --workload-log`, a Mooncake trace, or an "
            "OTLP JSON export of GenAI spans"
        ),
    ] = None,
    replay_format: Annotated[
        str,
        typer.Option(help="auto, sparkrig, mooncake or otel; auto tells by the first record"),
    ] = "auto",
    block_tokens: Annotated[
        int, ranged("tokens per Mooncake hash block", COUNT)
    ] = defaults.TRACE_MOONCAKE_BLOCK_TOKENS,
    paced: Annotated[
        bool,
        typer.Option(
            help="open loop: send each replayed request once at its offset from the first "
            "(--concurrency does not apply); the run ends with the trace or at --duration"
        ),
    ] = False,
    speed: Annotated[
        float | None,
        ranged(
            f"with --paced: divide the trace's gaps by this [{defaults.SOAK_REPLAY_SPEED:g}]",
            POSITIVE,
        ),
    ] = None,
    concurrency: Annotated[
        int, ranged("requests in flight", Range(low=1, high=defaults.BENCH_MAX_CONCURRENCY))
    ] = defaults.SOAK_CONCURRENCY,
    duration: Annotated[
        float,
        ranged(
            "seconds to run (the 30-minute default is a check, hours a soak)",
            Range(low=1, high=defaults.SOAK_MAX_DURATION_S),
        ),
    ] = defaults.SOAK_DURATION_S,
    window: Annotated[
        float,
        ranged("seconds per reported window", Range(low=1, high=defaults.SOAK_MAX_DURATION_S)),
    ] = defaults.SOAK_WINDOW_S,
    receipt: Annotated[
        Path,
        typer.Option(
            "--out",
            "--receipt",
            help="receipt path (HTML page beside it); --out as in bench and check",
        ),
    ] = Path("soak.json"),
    model: Annotated[str | None, typer.Option(help="model id [the server's first]")] = None,
    metrics_url: Annotated[
        str | None, typer.Option(help="where restarts are read [URL/metrics]")
    ] = None,
    seed: Annotated[int, ranged("varies the mixed traffic", NON_NEGATIVE)] = 0,
    idle_gap: Annotated[
        float | None,
        ranged(
            "seconds of no traffic between windows: warm-state decay",
            Range(low=0, high=defaults.SOAK_MAX_DURATION_S),
        ),
    ] = None,
    stagger: Annotated[
        float | None,
        ranged(
            "seconds between the streams' starts: stream k joins k × this in (staggered "
            "independent arrivals; default: all at once)",
            Range(low=0, high=3600, low_open=True),
        ),
    ] = None,
    no_tools: Annotated[
        bool,
        typer.Option(
            "--no-tools",
            help="leave tool calls out of the mixed traffic, without asking the server first "
            "(by default one tool-call request goes first, and a server that answers it does "
            "not serve tool calls gets none)",
        ),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="let --out replace an existing receipt and page")
    ] = False,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            help="env var holding the API key (default: SPARKRIG_API_KEY, else VLLM_API_KEY, "
            "the variable vLLM and a cluster file's engine.api_key_env read)"
        ),
    ] = None,
) -> None:
    """Soak URL with mixed agent traffic or a replay; per-window tok/s, TTFT, errors, findings.

    Exits 1 when a request was lost, an output was bad, or the upstream went away."""
    from sparkrig.bench.soak import SoakRun, new_receipt
    from sparkrig.bench.soak_pacing import paced_replay
    from sparkrig.bench.soak_receipt import save_soak_receipt
    from sparkrig.cli.receipt_files import write_soak_report
    from sparkrig.client import EndpointClient
    from sparkrig.client.endpoint import api_key_from_env
    from sparkrig.client.probe import first_model_id
    from sparkrig.wire.trace_import import describe, import_trace, trace_summary

    refuse_to_replace(receipt, force=force, flag="--out")  # both rewritten every window
    refuse_to_replace(receipt.with_suffix(".html"), force=force, flag="--out's page")
    refuse_replay_mixups(
        replay=replay,
        replay_format=replay_format,
        paced=paced,
        speed=speed,
        idle_gap=idle_gap,
        stagger=stagger,
        no_tools=no_tools,
    )
    trace = import_trace(replay, replay_format, block_tokens=block_tokens) if replay else None
    records = trace.records if trace is not None else None
    if trace is not None:
        console.print(f"replay {replay}: {describe(trace_summary(trace))}", highlight=False)

    def saved(current: SoakReceipt) -> None:
        save_soak_receipt(current, receipt)
        write_soak_report(receipt, current)
        if current.windows and current.status == "running":
            w = current.windows[-1]
            console.print(
                f"window {w.index}: {w.requests} requests, {w.errors} lost, {w.bad_outputs} bad, "
                f"{w.aggregate_tps or 0:.1f} tok/s aggregate, TTFT p95 "
                f"{(w.ttft_p95_s or 0) * 1000:.0f} ms",
                highlight=False,
            )

    async def run() -> SoakReceipt:
        async with EndpointClient(url, api_key=api_key_from_env(api_key_env)) as client:
            served = model or await first_model_id(client)
            traffic, kinds, left_out = await traffic_for(
                client, served, records, seed=seed, no_tools=no_tools
            )
            pace_speed = defaults.SOAK_REPLAY_SPEED if speed is None else speed
            pace = paced_replay(served, records, pace_speed) if records and paced else None
            source = "mixed"
            if trace is not None:
                how = f", paced x{pace_speed:g}" if paced else ""
                source = f"replay {replay} ({trace.format}{how})"
            started = new_receipt(
                url,
                served,
                source,
                concurrency=concurrency,
                duration_s=duration,
                window_s=window,
                seed=seed,
                idle_gap_s=idle_gap,
                stagger_s=stagger,
                kinds=kinds,
                left_out=left_out,
            )
            streams = "open loop" if pace else f"{concurrency} streams"
            if stagger and not pace:
                streams += f", one every {stagger:g} s"
            console.print(
                f"soak {url}: {source}, {streams}, {duration:g} s, "
                f"windows of {window:g} s -> {receipt}",
                highlight=False,
            )
            runner = SoakRun(
                client,
                started,
                traffic,
                on_window=saved,
                metrics_url=metrics_url or f"{client.base_url}/metrics",
                paced=pace,
            )
            return await runner.run()

    done = asyncio.run(run())
    print_summary(done, receipt, duration)
    if done.lost or done.bad_outputs or done.status != "complete":
        raise typer.Exit(1)


async def traffic_for(
    client: EndpointClient,
    model: str,
    records: list[WorkloadRecord] | None,
    *,
    seed: int,
    no_tools: bool,
) -> tuple[Iterator[PlannedRequest], tuple[Kind, ...] | None, list[LeftOutKind]]:
    """A replay's records as they were recorded; or the mix, its kinds, and the kinds it leaves
    out (tool calls, when the server refuses the one probe or --no-tools says so), each said in
    one line."""
    from sparkrig.bench.soak_tool_probe import mixed_kinds
    from sparkrig.bench.soak_traffic import mixed_traffic, replayed_traffic

    if records:
        return replayed_traffic(model, records), None, []
    kinds, left_out = await mixed_kinds(client, model, no_tools=no_tools)
    for left in left_out:
        console.print(left.describe(), style="yellow", highlight=False)
    return mixed_traffic(model, seed, kinds), kinds, left_out


def print_summary(done: SoakReceipt, receipt: Path, duration: float) -> None:
    """The run's end: its counts, pacing, the kinds it left out, the first problems, and
    whether it was long enough to be a soak."""
    console.print(
        f"{done.status}: {done.requests} requests in {len(done.windows)} windows, {done.lost} "
        f"lost, {done.bad_outputs} bad outputs; receipt {receipt}, report "
        f"{receipt.with_suffix('.html')}",
        highlight=False,
    )
    if done.pacing is not None:
        console.print(done.pacing.describe(), highlight=False)
    for left in done.left_out:
        console.print(left.describe(), style="yellow", highlight=False)
    for problem in done.problems[:20]:
        console.print(f"  {problem.request_id}: {problem.kind}: {problem.message}", highlight=False)
    if duration < defaults.SOAK_SHORTEST_FAILURE_S:
        console.print(
            f"{duration:g} s ({duration / 60:.0f} min) checks the traffic, not a soak: the reports "
            "saw a rank die "
            "after 1.5 hours and a bug appear after 17 hours warm (docs/field-notes.md#soak-hours) "
            "— run --duration 21600 or more for a soak",
            style="yellow",
            highlight=False,
        )
    if done.upstream_lost_at_s is not None:
        console.print(f"the upstream went away {done.upstream_lost_at_s:.0f} s in", style="red")
