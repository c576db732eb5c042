"""`sparkrig soak URL`: mixed agent-like traffic or a recorded workload, for a duration, reported
per window; the receipt and its HTML page are rewritten after every window."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from sparkrig import defaults
from sparkrig.cli.common import COUNT, NON_NEGATIVE, Range, app, console, ranged


@app.command()
def soak(
    url: Annotated[str, typer.Argument(help="base URL of the server (or gateway) to soak")],
    replay: Annotated[
        Path | None, typer.Option(help="a workload JSONL from `gateway serve --workload-log`")
    ] = None,
    concurrency: Annotated[int, ranged("requests in flight", COUNT)] = (defaults.SOAK_CONCURRENCY),
    duration: Annotated[
        float,
        ranged("seconds to run (the 30-minute default is a check, hours a soak)", Range(low=1)),
    ] = defaults.SOAK_DURATION_S,
    window: Annotated[float, ranged("seconds per reported window", Range(low=1))] = (
        defaults.SOAK_WINDOW_S
    ),
    receipt: Annotated[Path, typer.Option(help="receipt path (HTML page beside it)")] = Path(
        "soak.json"
    ),
    model: Annotated[str | None, typer.Option(help="model id [the server's first]")] = None,
    metrics_url: Annotated[
        str | None, typer.Option(help="where restarts are read [URL/metrics]")
    ] = None,
    seed: Annotated[int, ranged("varies the mixed traffic", NON_NEGATIVE)] = 0,
    idle_gap: Annotated[
        float | None,
        ranged("seconds of no traffic between windows: warm-state decay", NON_NEGATIVE),
    ] = None,
) -> None:
    """Soak URL with mixed agent traffic or a replay; per-window tok/s, TTFT, errors, findings.

    Exits 1 when a request was lost, an output was bad, or the upstream went away."""
    from sparkrig.bench.soak import SoakRun, new_receipt
    from sparkrig.bench.soak_receipt import SoakReceipt, save_soak_receipt
    from sparkrig.bench.soak_traffic import mixed_traffic, replayed_traffic
    from sparkrig.cli.receipt_files import write_soak_report
    from sparkrig.client import EndpointClient
    from sparkrig.client.endpoint import api_key_from_env
    from sparkrig.client.probe import first_model_id
    from sparkrig.wire.workload_log import read_workload

    records = read_workload(replay) if replay is not None else None

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
        async with EndpointClient(url, api_key=api_key_from_env()) as client:
            served = model or await first_model_id(client)
            traffic = replayed_traffic(served, records) if records else mixed_traffic(served, seed)
            source = f"replay {replay}" if replay else "mixed"
            started = new_receipt(
                url,
                served,
                source,
                concurrency=concurrency,
                duration_s=duration,
                window_s=window,
                seed=seed,
                idle_gap_s=idle_gap,
            )
            console.print(
                f"soak {url}: {source}, {concurrency} streams, {duration:g} s, "
                f"windows of {window:g} s -> {receipt}",
                highlight=False,
            )
            runner = SoakRun(
                client,
                started,
                traffic,
                on_window=saved,
                metrics_url=metrics_url or f"{client.base_url}/metrics",
            )
            return await runner.run()

    done = asyncio.run(run())
    console.print(
        f"{done.status}: {done.requests} requests in {len(done.windows)} windows, {done.lost} "
        f"lost, {done.bad_outputs} bad outputs; receipt {receipt}, report "
        f"{receipt.with_suffix('.html')}",
        highlight=False,
    )
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
    if done.lost or done.bad_outputs or done.status != "complete":
        raise typer.Exit(1)
