"""`sparkrig demo / bench / compare / report`: the main job, speed and its receipts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from sparkrig import defaults
from sparkrig.bench.settings import BenchSettings, PrefillTextKind
from sparkrig.cli.bench_output import paired_receipt_path, show_bench
from sparkrig.cli.common import (
    NON_NEGATIVE,
    ForceFlag,
    JsonFlag,
    Ladder,
    TelemetryClusterOption,
    TelemetryFlag,
    app,
    checked_target,
    console,
    err_console,
    ladder,
    print_json,
    ranged,
    receipt_out,
    refuse_to_replace,
    speculative_options,
)
from sparkrig.cli.model_options import bound_values, setting
from sparkrig.engines.llamacpp.server import LlamaServerSpec
from sparkrig.errors import SparkrigError, UsageError

# the settings bench shares with the receipt are declared once, in BenchSettings
_PAIRED_NOTE = "default {}; {} with --paired-with"
_SAMPLES = (defaults.BENCH_MAX_SAMPLES, defaults.BENCH_PAIRED_MAX_SAMPLES)
_ROUNDS = (defaults.BENCH_ROUNDS, defaults.BENCH_PAIRED_ROUNDS)
_CONCURRENCY = ladder("--concurrency", defaults.BENCH_MAX_CONCURRENCY)
_DEPTHS = ladder("--prefill-depths", defaults.BENCH_MAX_PREFILL_DEPTH)


@app.command()
def demo(
    model: Annotated[
        Path | None, typer.Option(help="GGUF to serve (default: the bundled SmolLM2-135M)")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="where to write the JSON record")] = None,
    spec_type: Annotated[
        str | None, typer.Option(help="speculative decoding mode, e.g. draft-simple")
    ] = None,
    force: ForceFlag = False,
) -> None:
    """The main job on this machine: serve the bundled model, smoke it, bench it, check it.

    Build or find llama-server, serve the bundled model, run a smoke workload (count, JSON, two
    concurrent), a short bench and the quick guard battery, print the tables, write the JSON
    records and the HTML report, stop the engine.

    It starts and stops only its own engine, so it needs no --apply."""
    from sparkrig.cli.demo import demo_receipts, run_demo

    out_path = receipt_out(out, "demo", force=force, page=False)
    bench_path, check_path = demo_receipts(out_path)  # written beside the record
    for path, what in (
        (bench_path, "the bench receipt"),
        (check_path, "the check receipt"),
        (bench_path.with_suffix(".html"), "the report page"),
    ):
        refuse_to_replace(path, force=force, flag=f"{what} beside --out,")
    speculative = speculative_options(spec_type, None, defaults.LOCAL_SPEC_DRAFT_MAX, None)
    receipt = asyncio.run(
        run_demo(console, model=model, out_path=out_path, speculative=speculative)
    )
    failed = [result.name for result in receipt.results if result.record.error is not None]
    if failed:
        raise SparkrigError(f"smoke requests failed: {', '.join(failed)} — see {out_path}")
    if receipt.check_failed:
        raise SparkrigError(
            f"guards failed: {', '.join(receipt.check_failed)} — see the check table above and "
            f"{out_path.with_name(out_path.stem + '.check.json')}"
        )


@app.command()
def bench(
    ctx: typer.Context,
    url: Annotated[
        str | None, typer.Argument(help="base URL of an OpenAI-compatible server")
    ] = None,
    local: Annotated[
        bool, typer.Option("--local", help="bench the embedded engine (started and stopped here)")
    ] = False,
    suite: Annotated[
        str | None,
        typer.Option(
            help="comma-separated suites: decode, concurrency, prefill, spec, multiturn "
            "(default: the first four; with --local the spec suite gets its own engine with "
            "--spec-type draft-simple)"
        ),
    ] = None,
    spec_type: Annotated[
        str | None, typer.Option(help="with --local: speculative decoding mode, e.g. draft-simple")
    ] = None,
    concurrency: Ladder = setting(BenchSettings, "concurrency", parse=_CONCURRENCY),
    prefill_depths: Ladder = setting(BenchSettings, "prefill_depths", parse=_DEPTHS),
    prefill_text: PrefillTextKind = setting(BenchSettings, "prefill_text"),
    precision: float = setting(BenchSettings, "precision"),
    max_samples: int | None = setting(
        BenchSettings, "max_samples", default=None, note=_PAIRED_NOTE.format(*_SAMPLES)
    ),
    tokens: int = setting(BenchSettings, "decode_tokens", "--tokens"),
    prompt_tokens: int = setting(BenchSettings, "prompt_tokens"),
    cached: bool = setting(BenchSettings, "cached_replays", "--cached/--no-cached"),
    rounds: int | None = setting(
        BenchSettings, "rounds", default=None, note=_PAIRED_NOTE.format(*_ROUNDS)
    ),
    client_processes: int | None = setting(BenchSettings, "client_processes"),
    slo: str | None = setting(BenchSettings, "slo"),
    max_error_rate: float = setting(BenchSettings, "max_error_rate"),
    warmup_steady: bool = setting(BenchSettings, "warmup_steady", "--warmup-steady"),
    steady_warmup_tokens: int = setting(BenchSettings, "steady_warmup_tokens"),
    arrivals: str | None = setting(BenchSettings, "arrivals"),
    find_max_load: bool = setting(
        BenchSettings, "find_max_load", "--find-max-load", note="one round per probe"
    ),
    conversations: int = setting(BenchSettings, "conversations"),
    turns: int = setting(BenchSettings, "turns"),
    parallel_conversations: int | None = setting(BenchSettings, "parallel_conversations"),
    opening_tokens: int = setting(BenchSettings, "opening_tokens"),
    paired_with: Annotated[
        str | None,
        typer.Option(
            help="a second server to bench in the same run, rounds alternating (URL round 1, "
            "this round 1, URL round 2, ...) so both are measured in the same minutes; compare "
            "judges the two receipts on paired round ratios (docs/metrics.md: paired rounds)"
        ),
    ] = None,
    paired_out: Annotated[
        Path | None,
        typer.Option(help="receipt path of the --paired-with server (default: <out>-paired)"),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="model id (default: the server's first)")
    ] = None,
    slots: int = setting(LlamaServerSpec, "parallel_slots", "--slots", note="with --local"),
    out: Annotated[
        Path | None, typer.Option(help="receipt path (default: sparkrig-runs/bench-<time>.json)")
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
    """Measure honest serving speed: decode, concurrency, prefill, speculative decoding.

    Decode speed by content type and aggregate vs per-stream speed under concurrency,
    each point repeated until its 95% interval is within --precision. `--suite multiturn`:
    conversations that grow turn by turn, with TTFT and cached share per turn. The receipt is
    rewritten after every sample, so an interrupted run keeps what it measured."""
    from sparkrig.bench.run import run_bench
    from sparkrig.bench.run_options import suites_and_settings
    from sparkrig.cli.views.bench_progress import BenchProgress
    from sparkrig.client.endpoint import api_key_from_env
    from sparkrig.doctor.telemetry_record import cluster_nodes, sampled_beside

    checked_target(url, local, "bench")
    speculative = speculative_options(spec_type, None, defaults.LOCAL_SPEC_DRAFT_MAX, None)
    if spec_type and not local:
        raise UsageError("--spec-type starts the embedded engine — add --local, or drop it")
    given = bound_values(bench, ctx.params, BenchSettings)
    suites, settings = suites_and_settings(
        given, suite=suite, local=local, paired_with=paired_with, paired_out=paired_out
    )
    out_path = receipt_out(out, "bench", force=force)
    second_path = paired_receipt_path(out_path, paired_with, paired_out, force=force)

    async def go(progress: BenchProgress) -> Any:
        kwargs: dict[str, Any] = {
            "settings": settings,
            "out_path": out_path,
            "model": model,
            "on_progress": progress.sample,
            "on_plan": progress.plan,
            "on_point_done": progress.point_done,
        }
        if local:
            from sparkrig.cli.embedded import bench_embedded

            return await bench_embedded(
                err_console, suites=suites, slots=slots, speculative=speculative, **kwargs
            )
        key = api_key_from_env(api_key_env)
        if paired_with is not None and second_path is not None:
            from sparkrig.bench.paired import run_paired_bench

            return await run_paired_bench(
                str(url),
                paired_with,
                suites=suites,
                api_key=key,
                paired_out_path=second_path,
                **kwargs,
            )
        return await run_bench(str(url), suites=suites, api_key=key, **kwargs)

    nodes = cluster_nodes(telemetry_cluster, enabled=telemetry)
    try:
        with (
            BenchProgress(err_console) as progress,
            sampled_beside(out_path, enabled=telemetry, nodes=nodes),
        ):
            result = asyncio.run(go(progress))
    except KeyboardInterrupt:
        kept = f"{out_path} and {second_path}" if second_path else str(out_path)
        err_console.print(f"interrupted — the receipt keeps every finished sample: {kept}")
        raise
    show_bench(result, out_path, second_path, as_json=as_json)


@app.command()
def compare(
    before: Annotated[Path, typer.Argument(help="the reference receipt")],
    after: Annotated[Path, typer.Argument(help="the receipt to judge")],
    tolerance: Annotated[
        float, ranged("percent change below which a point is 'same'", NON_NEGATIVE)
    ] = defaults.BENCH_COMPARE_TOLERANCE_PCT,
    as_json: JsonFlag = False,
) -> None:
    """Compare two bench receipts point by point (Welch 95% interval). Exits 1 on a regression."""
    from sparkrig.bench.compare import compare_receipts
    from sparkrig.bench.receipt import load_receipt
    from sparkrig.cli.views.bench_table import compare_table

    reference, judged = load_receipt(before), load_receipt(after)
    if reference == judged:
        err_console.print(
            f"warning: {before} and {after} hold the same run: every point compares equal — "
            "give the receipt of another run as AFTER",
            highlight=False,
        )
    rows = compare_receipts(reference, judged, tolerance)
    if as_json:
        print_json([row.model_dump(mode="json") for row in rows])
    else:
        console.print(compare_table(rows, tolerance))
    if any(row.verdict == "slower" for row in rows):
        raise typer.Exit(1)


@app.command()
def report(
    receipts: Annotated[
        list[Path],
        typer.Argument(
            help="bench, check or fabric-test receipts (JSON from `sparkrig bench`, `check` or "
            "`fabric test`)"
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(help="HTML file to write (default: the first receipt's path with .html)"),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="let --out replace a file that is not a sparkrig report"),
    ] = False,
) -> None:
    """Turn bench and check receipts into one self-contained HTML page; print their tables.

    Per check receipt the page shows every guard's verdict and evidence. Per bench
    receipt it shows model, URL, engine, host, settings and whether the run finished; its
    warnings; every point with median, 95% interval and flags; and inline SVG charts (decode by
    content type, concurrency aggregate vs per stream, speculative acceptance per draft position).
    It opens without a network. A point with degenerate output reads "invalid", never a number.
    An earlier sparkrig report at --out is replaced; any other file only with --force."""
    from sparkrig.cli.receipt_files import is_report_page, load_any_receipt
    from sparkrig.cli.views.receipt_view import receipt_view
    from sparkrig.doctor.telemetry_record import is_telemetry_path, telemetry_beside
    from sparkrig.json_files import write_text_atomically
    from sparkrig.report.html_report import render_report

    # `report runs/*.json` also matches the telemetry files: each is drawn with its receipt
    receipts = [path for path in receipts if not is_telemetry_path(path)] or receipts
    loaded = [load_any_receipt(path) for path in receipts]
    out_path = out or receipts[0].with_suffix(".html")
    if any(out_path.resolve() == path.resolve() for path in receipts):
        raise UsageError(f"--out {out_path} is one of the receipts — pick another --out")
    refuse_to_replace(out_path, force=force, ours=is_report_page, what="a sparkrig report")
    page = render_report(
        loaded,
        names=[path.name for path in receipts],
        telemetry=[telemetry_beside(path) for path in receipts],
    )
    try:
        write_text_atomically(page, out_path)
    except OSError as exc:
        raise SparkrigError(
            f"cannot write {out_path}: {exc.strerror} — pick a writable --out"
        ) from exc
    for path, receipt in zip(receipts, loaded, strict=True):
        if len(receipts) > 1:
            console.print(f"[bold]{escape(str(path))}[/]", highlight=False)
        for part in receipt_view(receipt):
            console.print(part, highlight=False)
    console.print(f"report written to {out_path}", highlight=False)
