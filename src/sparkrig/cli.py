"""The `sparkrig` command: thin wiring of typer commands onto the packages."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sparkrig import __version__, defaults
from sparkrig.errors import SparkrigError, UsageError
from sparkrig.fabric_cli import fabric_app

app = typer.Typer(
    help="Serve LLMs across a few directly wired GPU boxes, and prove output and speed are right.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
engine_app = typer.Typer(help="The embedded llama.cpp engine: build it, show what is built.")
app.add_typer(engine_app, name="engine")
app.add_typer(fabric_app, name="fabric")

console = Console()
err_console = Console(stderr=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="print machine-readable JSON")]
ApplyFlag = Annotated[bool, typer.Option("--apply", help="act; without it, only print the plan")]


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="show tracebacks on errors")] = False,
    version: Annotated[bool, typer.Option("--version", help="print the version")] = False,
) -> None:
    if version:
        console.print(__version__)
        raise typer.Exit()


# --- engine -----------------------------------------------------------------------------------


@engine_app.command("install")
def engine_install(
    force: Annotated[bool, typer.Option("--force", help="rebuild even if a build exists")] = False,
) -> None:
    """Build llama-server and ggml-rpc-server from llama.cpp source (once per version)."""
    from sparkrig.report.build_progress import install_engine_with_progress

    found = install_engine_with_progress(console, force=force)
    console.print(f"llama-server ready: {found.server_binary}")


@engine_app.command("info")
def engine_info(as_json: JsonFlag = False) -> None:
    """Show where the embedded engine is, its version and its build flags."""
    from sparkrig.engines.llamacpp.build import find_installed, install_dir
    from sparkrig.engines.llamacpp.version import server_version

    found = find_installed()
    if found is None:
        info: dict[str, Any] = {"installed": False, "expected_at": str(install_dir())}
    else:
        info = {"installed": True, **found.model_dump(mode="json")}
        info["server_binary"] = str(found.server_binary)
        info["rpc_binary"] = str(found.rpc_binary) if found.rpc_binary.exists() else None
        info["version"] = server_version(found.server_binary)
    if as_json:
        _print_json(info)
        return
    if not info["installed"]:
        console.print(
            f"not built yet (would live in {info['expected_at']}) — run `sparkrig engine install`"
        )
        raise typer.Exit(1)
    table = Table(show_header=False)
    for key in ("version", "server_binary", "rpc_binary", "source", "built_at", "build_seconds"):
        table.add_row(key, str(info.get(key)))
    table.add_row("flags", " ".join(info.get("flags") or []) or "—")
    console.print(table)


# --- local serving ----------------------------------------------------------------------------


def _speculative(
    spec_type: str | None, draft_model: Path | None, draft_max: int, synth_rates: str | None
) -> Any:
    from sparkrig.engines.llamacpp.server import SPEC_TYPES, SpeculativeOptions

    if spec_type is None:
        if synth_rates or draft_model:
            raise UsageError(
                "--draft-model and --spec-synth-rates need --spec-type — "
                "add --spec-type draft-simple"
            )
        return None
    if spec_type not in SPEC_TYPES:
        raise UsageError(
            f"--spec-type {spec_type} is not known — use one of {', '.join(SPEC_TYPES)}"
        )
    rates = None
    if synth_rates:
        try:
            rates = [float(part) for part in synth_rates.split(",")]
        except ValueError as exc:
            raise UsageError(
                f"--spec-synth-rates {synth_rates!r} is not a list of numbers — "
                "write e.g. 0.9,0.5,0.2"
            ) from exc
    return SpeculativeOptions(
        spec_type=spec_type, draft_model=draft_model, draft_max=draft_max, synth_rates=rates
    )


ClusterFileArg = Annotated[
    Path | None,
    typer.Argument(help="cluster TOML with [engine] and [model] (without it: --local instances)"),
]


@app.command()
def up(
    cluster_file: ClusterFileArg = None,
    local: Annotated[
        bool, typer.Option("--local", help="serve on this machine with the embedded llama-server")
    ] = False,
    model: Annotated[
        Path | None, typer.Option(help="GGUF to serve (default: the bundled SmolLM2-135M)")
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="port on 127.0.0.1 (default: a free one)")
    ] = None,
    slots: Annotated[
        int, typer.Option(help="parallel slots for continuous batching")
    ] = defaults.LOCAL_PARALLEL_SLOTS,
    ctx: Annotated[
        int, typer.Option(help="context tokens shared by all slots")
    ] = defaults.LOCAL_CONTEXT_TOKENS,
    threads: Annotated[
        int, typer.Option(help="CPU threads (default: all cores but one)", min=1)
    ] = defaults.LOCAL_THREADS,
    spec_type: Annotated[
        str | None, typer.Option(help="speculative decoding: draft-simple or an ngram-* mode")
    ] = None,
    draft_model: Annotated[
        Path | None, typer.Option(help="draft GGUF for draft-simple (default: the served model)")
    ] = None,
    spec_draft_max: Annotated[
        int, typer.Option(help="tokens drafted per step")
    ] = defaults.LOCAL_SPEC_DRAFT_MAX,
    spec_synth_rates: Annotated[
        str | None,
        typer.Option(help="per-position synthetic acceptance, e.g. 0.9,0.5 (benchmarking)"),
    ] = None,
    ready_timeout: Annotated[
        float, typer.Option(help="seconds to wait for ready")
    ] = defaults.READY_TIMEOUT_S,
    profile: Annotated[
        str | None, typer.Option(help="cluster: a [profiles.NAME] instead of [profile]")
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="cluster: stop the recorded cluster, then start")
    ] = False,
    apply: ApplyFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Start an engine. With a cluster file: print the per-node plan; with --apply start the
    workers, then the head, and wait ready by liveness (every node alive and advancing, head
    healthy, one real completion). With --local: llama-server on 127.0.0.1."""
    from sparkrig.client.readiness import answer_one_completion
    from sparkrig.engines.llamacpp.build import require_installed
    from sparkrig.engines.llamacpp.gguf_model import resolve_model
    from sparkrig.engines.llamacpp.server import LlamaServerSpec
    from sparkrig.launch.local import free_port, plan_local, start_local

    if cluster_file is not None:
        if local:
            raise UsageError("--local and a cluster file contradict each other — pick one")
        from sparkrig.cluster_cli import up_cluster

        up_cluster(cluster_file, profile=profile, apply=apply, replace=replace, as_json=as_json)
        return
    if not local:
        raise UsageError(
            "say what to start — a cluster file (`sparkrig up cluster.toml`) or --local"
        )
    speculative = _speculative(spec_type, draft_model, spec_draft_max, spec_synth_rates)
    model_path = resolve_model(model)
    server = LlamaServerSpec(
        binary=require_installed().server_binary,
        model=model_path,
        alias=defaults.BUNDLED_MODEL_ALIAS if model is None else model_path.stem,
        port=port if port is not None else free_port(defaults.LOCAL_HOST),
        parallel_slots=slots,
        context_tokens=ctx,
        threads=threads,
        speculative=speculative,
    )
    plan = plan_local(server, port_was_chosen=port is None)
    if not apply:
        if as_json:
            _print_json(
                {"applied": False, "name": plan.name, "argv": plan.argv, "log": str(plan.log_path)}
            )
            return
        console.print(
            f"[bold]plan[/]: start {plan.name} on {server.host}:{server.port}, log {plan.log_path}"
        )
        console.print("  " + " ".join(plan.argv))
        console.print("nothing started — add --apply to start it")
        return
    record = asyncio.run(start_local(plan, answer_one_completion, ready_timeout))
    if as_json:
        _print_json(
            {"applied": True, **record.model_dump(mode="json"), "base_url": record.base_url}
        )
        return
    console.print(
        f"[green]ready[/]: {record.name} pid {record.pid} at {record.base_url}/v1 "
        f"(model {record.alias})"
    )


@app.command()
def status(cluster_file: ClusterFileArg = None, as_json: JsonFlag = False) -> None:
    """With a cluster file: per node phase, pid, uptime and last log line, and whether the
    cluster is ready (exit 1 when not). Without: the --local instances."""
    from sparkrig.launch.status import instance_statuses

    if cluster_file is not None:
        from sparkrig.cluster_cli import status_cluster

        status_cluster(cluster_file, as_json=as_json)
        return

    rows = asyncio.run(instance_statuses())
    if as_json:
        _print_json([row.model_dump(mode="json") for row in rows])
        return
    if not rows:
        console.print("no instances recorded — start one with `sparkrig up --local --apply`")
        return
    table = Table()
    for header in ("name", "state", "pid", "url", "model", "uptime", "slots busy/total", "spec"):
        table.add_column(header)
    for row in rows:
        slots = "—" if row.slots_total is None else f"{row.slots_busy}/{row.slots_total}"
        table.add_row(row.name, row.state, str(row.pid), row.base_url, row.alias,
                      f"{row.uptime_s:.0f}s", slots, row.speculative or "—")  # fmt: skip
    console.print(table)


def _select(name: str | None) -> list[Any]:
    from sparkrig.launch.process_record import load_records, records_dir

    records = load_records()
    if name is not None:
        records = [record for record in records if record.name == name]
        if not records:
            raise SparkrigError(
                f"no instance named {name} is recorded — `sparkrig status` lists them"
            )
    if not records:
        raise SparkrigError(
            f"nothing is running: no instance is recorded in {records_dir()} — start one with "
            "`sparkrig up --local --apply`"
        )
    return records


@app.command()
def logs(
    cluster_file: ClusterFileArg = None,
    node: Annotated[str | None, typer.Argument(help="cluster: the node whose log to show")] = None,
    name: Annotated[str | None, typer.Option(help="instance name (default: the only one)")] = None,
    lines: Annotated[int, typer.Option("-n", "--lines", help="how many last lines")] = 40,
) -> None:
    """Print the last lines of an engine log: a cluster node's, or a --local instance's."""
    if cluster_file is not None:
        from sparkrig.cluster_cli import logs_cluster

        logs_cluster(cluster_file, node, lines)
        return
    records = _select(name)
    if len(records) > 1:
        names = ", ".join(record.name for record in records)
        raise UsageError(f"several instances are recorded ({names}) — pick one with --name")
    text = records[0].log_path.read_text(errors="replace") if records[0].log_path.exists() else ""
    sys.stdout.write("\n".join(text.splitlines()[-lines:]) + "\n")


@app.command()
def down(
    cluster_file: ClusterFileArg = None,
    name: Annotated[str | None, typer.Option(help="stop only this instance")] = None,
    missing_ok: Annotated[
        bool, typer.Option("--missing-ok", help="exit 0 when nothing is recorded")
    ] = False,
    apply: ApplyFlag = False,
) -> None:
    """Stop the engine processes sparkrig recorded starting (never any other process): a
    cluster's, head first, or the --local instances. Idempotent."""
    from sparkrig.launch.local import stop_instances
    from sparkrig.launch.process_record import is_running

    if cluster_file is not None:
        from sparkrig.cluster_cli import down_cluster

        down_cluster(cluster_file, apply=apply)
        return

    try:
        records = _select(name)
    except SparkrigError:
        if missing_ok:
            console.print("nothing to stop")
            return
        raise
    if not apply:
        for record in records:
            state = "running" if is_running(record) else "not running (record only)"
            console.print(f"[bold]plan[/]: stop {record.name} pid {record.pid} ({state})")
        console.print("nothing stopped — add --apply to stop")
        return
    for record, outcome in stop_instances(records):
        console.print(f"{record.name} pid {record.pid}: {outcome}")


@app.command()
def lint(
    cluster_file: Annotated[Path, typer.Argument(help="cluster TOML to check")],
    profile: Annotated[
        str | None, typer.Option(help="check only [profiles.NAME] (default: every profile)")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Check a cluster file against the field reports' pitfalls (cudagraph sizes, DSpark k,
    memory on unified memory, JIT caches on NFS, TP on the cables, …); each finding names its
    fix and its source. Exits 1 on any error."""
    from sparkrig.cluster_cli import lint_file

    lint_file(cluster_file, profile, as_json)


@app.command("plan-capacity")
def plan_capacity(
    cluster_file: Annotated[Path, typer.Argument(help="cluster TOML with a [profile]")],
    profile: Annotated[str | None, typer.Option(help="a [profiles.NAME] instead")] = None,
    steps_per_second: Annotated[
        float | None, typer.Option(help="measured decode steps/s, for the spec-decode ceiling")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """KV pool math: full-length requests that fit (pool / max_model_len), tokens per sequence
    with every sequence live, and the speculative ceiling steps/s × (k+1)."""
    from sparkrig.cluster_cli import capacity_file

    capacity_file(cluster_file, profile, steps_per_second, as_json)


# --- endpoint tools ---------------------------------------------------------------------------


@app.command()
def ask(
    url: Annotated[str, typer.Argument(help="base URL of an OpenAI-compatible server")],
    prompt: Annotated[str, typer.Argument(help="the user message")],
    model: Annotated[
        str | None, typer.Option(help="model id (default: the server's first)")
    ] = None,
    max_tokens: Annotated[int, typer.Option(help="tokens to generate at most")] = 128,
    no_stream: Annotated[bool, typer.Option("--no-stream", help="ask for one JSON reply")] = False,
    api_key_env: Annotated[
        str, typer.Option(help="env var holding the API key")
    ] = defaults.API_KEY_ENV,
    as_json: JsonFlag = False,
) -> None:
    """Send one chat request through sparkrig's client and show its timing record."""
    from sparkrig.client.probe import ask_once

    record = asyncio.run(ask_once(url, prompt, model=model, max_tokens=max_tokens,
                                  stream=not no_stream, api_key_env=api_key_env))  # fmt: skip
    if as_json:
        _print_json(record.model_dump(mode="json"))
    if record.error is not None:
        raise SparkrigError(record.error.message)
    if not as_json:
        console.print(record.content, markup=False, highlight=False)
        console.print(
            f"[dim]{record.completion_tokens} tokens ({record.token_source}), "
            f"TTFT {_ms(record.ttft_s)}, decode {_rate(record.decode_tps)}, "
            f"finish {record.finish_reason}[/]"
        )


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value * 1000:.0f} ms"


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} tok/s"


@app.command()
def metrics(
    url: Annotated[str, typer.Argument(help="base URL of the server (its /metrics is read)")],
    as_json: JsonFlag = False,
) -> None:
    """Scrape /metrics and show sparkrig's canonical quantities (None = not exposed)."""
    from sparkrig.client.probe import scrape_once

    snapshot = asyncio.run(scrape_once(url))
    values = {quantity.value: value for quantity, value in snapshot.canonical().items()}
    if as_json:
        _print_json({"engine": snapshot.engine, "quantities": values})
        return
    table = Table(title=f"/metrics · {snapshot.engine or 'unknown engine'}")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    for key, value in values.items():
        table.add_row(key, "not exposed" if value is None else str(value))
    console.print(table)


@app.command()
def demo(
    model: Annotated[
        Path | None, typer.Option(help="GGUF to serve (default: the bundled SmolLM2-135M)")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="where to write the JSON record")] = None,
    spec_type: Annotated[
        str | None, typer.Option(help="speculative decoding mode, e.g. draft-simple")
    ] = None,
) -> None:
    """The main job on this machine: serve the bundled model, smoke it, bench it, check it.

    Build or find llama-server, serve the bundled model, run a smoke workload (count, JSON, two
    concurrent), a short bench and the quick guard battery, print the tables, write the JSON
    records and the HTML report, stop the engine.

    It starts and stops only its own engine, so it needs no --apply."""
    from sparkrig.demo import run_demo

    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out_path = out or Path("sparkrig-runs") / f"demo-{stamp}.json"
    speculative = _speculative(spec_type, None, defaults.LOCAL_SPEC_DRAFT_MAX, None)
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


def _ladder(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise UsageError(
            f"--concurrency {text!r} is not a list of whole numbers — e.g. 1,2,4,8"
        ) from exc
    if not values or any(value <= 0 for value in values):
        raise UsageError(f"--concurrency {text!r} needs values of 1 or more — e.g. 1,2,4,8")
    return values


@app.command()
def bench(
    url: Annotated[
        str | None, typer.Argument(help="base URL of an OpenAI-compatible server")
    ] = None,
    local: Annotated[
        bool, typer.Option("--local", help="bench the embedded engine (started and stopped here)")
    ] = False,
    suite: Annotated[
        str | None,
        typer.Option(
            help="comma-separated suites: decode, concurrency, prefill, spec (default: all four; "
            "with --local the spec suite gets its own engine with --spec-type draft-simple)"
        ),
    ] = None,
    spec_type: Annotated[
        str | None, typer.Option(help="with --local: speculative decoding mode, e.g. draft-simple")
    ] = None,
    concurrency: Annotated[str, typer.Option(help="concurrency ladder")] = ",".join(
        map(str, defaults.BENCH_CONCURRENCY_LADDER)
    ),
    precision: Annotated[
        float,
        typer.Option(help="stop a point when the 95% half-width is within this share of the mean"),
    ] = defaults.BENCH_PRECISION,
    max_samples: Annotated[
        int, typer.Option(help="samples per point at most")
    ] = defaults.BENCH_MAX_SAMPLES,
    tokens: Annotated[
        int, typer.Option(help="tokens generated per request")
    ] = defaults.BENCH_DECODE_TOKENS,
    rounds: Annotated[
        int,
        typer.Option(
            min=1,
            help="passes over every point; compare judges by the spread between rounds, so "
            "3 gives verdicts that hold across runs on a shared machine",
        ),
    ] = 1,
    model: Annotated[
        str | None, typer.Option(help="model id (default: the server's first)")
    ] = None,
    slots: Annotated[
        int, typer.Option(help="with --local: parallel slots")
    ] = defaults.LOCAL_PARALLEL_SLOTS,
    out: Annotated[
        Path | None, typer.Option(help="receipt path (default: sparkrig-runs/bench-<time>.json)")
    ] = None,
    api_key_env: Annotated[
        str, typer.Option(help="env var holding the API key")
    ] = defaults.API_KEY_ENV,
    as_json: JsonFlag = False,
) -> None:
    """Measure honest serving speed: decode, concurrency, prefill, speculative decoding.

    Decode speed by content type and aggregate vs per-stream speed under concurrency,
    each point repeated until its 95% interval is within --precision. The receipt is rewritten
    after every sample, so an interrupted run keeps what it measured."""
    from sparkrig.bench.point import BenchSettings
    from sparkrig.bench.run import check_suites, run_bench
    from sparkrig.client.endpoint import api_key_from_env
    from sparkrig.report.bench_table import bench_table, spec_table
    from sparkrig.report.html_report import write_report

    if (url is None) == (not local):
        raise UsageError("give either a server URL or --local — e.g. `sparkrig bench --local`")
    speculative = _speculative(spec_type, None, defaults.LOCAL_SPEC_DRAFT_MAX, None)
    if spec_type and not local:
        raise UsageError("--spec-type starts the embedded engine — add --local, or drop it")
    suites = check_suites(
        [
            name.strip()
            for name in (suite or "decode,concurrency,prefill,spec").split(",")
            if name.strip()
        ]
    )
    settings = BenchSettings(
        precision=precision, max_samples=max_samples, decode_tokens=tokens,
        concurrency=_ladder(concurrency), rounds=rounds,
    )  # fmt: skip
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out_path = out or Path("sparkrig-runs") / f"bench-{stamp}.json"

    from sparkrig.report.bench_progress import BenchProgress

    async def go(progress: BenchProgress) -> Any:
        kwargs: dict[str, Any] = {
            "settings": settings, "out_path": out_path, "model": model,
            "on_progress": progress.sample, "on_plan": progress.plan,
            "on_point_done": progress.point_done,
        }  # fmt: skip
        if local:
            from sparkrig.embedded import bench_embedded

            return await bench_embedded(
                err_console, suites=suites, slots=slots, speculative=speculative, **kwargs
            )
        key = api_key_from_env(api_key_env)
        return await run_bench(str(url), suites=suites, api_key=key, **kwargs)

    try:
        with BenchProgress(err_console) as progress:
            receipt = asyncio.run(go(progress))
    except KeyboardInterrupt:
        err_console.print(f"interrupted — the receipt keeps every finished sample: {out_path}")
        raise
    if as_json:
        _print_json(receipt.model_dump(mode="json"))
        return
    console.print(bench_table(receipt))
    if (acceptance := spec_table(receipt)) is not None:
        console.print(acceptance)
    for warning in receipt.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    for point in receipt.points:
        for warning in point.warnings:
            console.print(f"[yellow]{point.suite}/{point.name}:[/] {warning}", highlight=False)
    page = write_report(out_path, receipt)
    console.print(f"receipt written to {out_path}; report {page}", highlight=False)


@app.command()
def compare(
    before: Annotated[Path, typer.Argument(help="the reference receipt")],
    after: Annotated[Path, typer.Argument(help="the receipt to judge")],
    tolerance: Annotated[
        float, typer.Option(help="percent change below which a point is 'same'")
    ] = 3.0,
    as_json: JsonFlag = False,
) -> None:
    """Compare two bench receipts point by point (Welch 95% interval). Exits 1 on a regression."""
    from sparkrig.bench.compare import compare_receipts
    from sparkrig.bench.receipt import load_receipt
    from sparkrig.report.bench_table import compare_table

    rows = compare_receipts(load_receipt(before), load_receipt(after), tolerance)
    if as_json:
        _print_json([row.model_dump(mode="json") for row in rows])
    else:
        console.print(compare_table(rows, tolerance))
    if any(row.verdict == "slower" for row in rows):
        raise typer.Exit(1)


@app.command()
def check(
    url: Annotated[
        str | None, typer.Argument(help="base URL of an OpenAI-compatible server")
    ] = None,
    local: Annotated[
        bool, typer.Option("--local", help="check the embedded engine (started and stopped here)")
    ] = False,
    quick: Annotated[
        bool, typer.Option("--quick", help="guards 1, 2 (reduced), 6, 8, 9: a few minutes")
    ] = False,
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
    kv_block_tokens: Annotated[
        int | None, typer.Option(help="KV block size in tokens (default: from /metrics, or 256)")
    ] = None,
    needle_cap: Annotated[
        int, typer.Option(help="longest needle prompt in tokens (capped by the server's context)")
    ] = defaults.CHECK_NEEDLE_CAP_TOKENS,
    repeat_every: Annotated[
        float | None,
        typer.Option(
            help="after the battery, rerun the margin probe every this many seconds until "
            "Ctrl-C (a soak: seed 000's bug showed only after hours)"
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="model id (default: the server's first)")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="receipt path (default: sparkrig-runs/check-<time>.json)")
    ] = None,
    api_key_env: Annotated[
        str, typer.Option(help="env var holding the API key")
    ] = defaults.API_KEY_ENV,
    as_json: JsonFlag = False,
) -> None:
    """Run the guards that catch silent serving corruption; exit 1 on any FAIL.

    Each guard compares the server with itself (alone vs concurrent, streamed vs not, cold vs
    cached) or with a recorded baseline (docs/guards.md). The receipt is rewritten after every
    guard, so an interrupted run keeps what it found."""
    from sparkrig.client.endpoint import api_key_from_env
    from sparkrig.guards.battery import choose_guards
    from sparkrig.guards.context import CheckSettings
    from sparkrig.report.check_table import check_table, result_line

    if (url is None) == (not local):
        raise UsageError("give either a server URL or --local — e.g. `sparkrig check --local`")
    if quick and full:
        raise UsageError("--quick and --full contradict each other — pick one")
    names = [name.strip() for name in guard.split(",") if name.strip()] if guard else None
    settings = CheckSettings(
        quick=quick, kv_block_tokens=kv_block_tokens, needle_cap_tokens=needle_cap
    )
    choose_guards(names, quick)  # a bad guard name fails before any engine starts
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out_path = out or Path("sparkrig-runs") / f"check-{stamp}.json"
    debug = "--debug" in sys.argv

    async def go() -> Any:
        from sparkrig.guards.soak import check_with_soak

        kwargs: dict[str, Any] = {
            "settings": settings, "out_path": out_path, "guards": names, "model": model,
            "baseline_path": baseline, "record_baseline": record_baseline, "reraise": debug,
            "show": lambda result: err_console.print(result_line(result), highlight=False),
            "say": lambda line: err_console.print(line, highlight=False),
        }  # fmt: skip
        if local:
            from sparkrig.embedded import embedded_engine

            kwargs["baseline_scope"] = "embedded"
            async with embedded_engine(
                err_console, context_tokens=defaults.CHECK_LOCAL_CONTEXT_TOKENS
            ) as record:
                return await check_with_soak(record.base_url, repeat_every, **kwargs)
        kwargs["api_key"] = api_key_from_env(api_key_env)
        return await check_with_soak(str(url), repeat_every, **kwargs)

    try:
        receipt = asyncio.run(go())
    except KeyboardInterrupt:
        err_console.print(f"interrupted — the receipt keeps every finished guard: {out_path}")
        raise
    if as_json:
        _print_json(receipt.model_dump(mode="json"))
    else:
        console.print(check_table(receipt))
        console.print(f"receipt: {out_path}", highlight=False)
    if receipt.failed:
        raise typer.Exit(1)


@app.command()
def report(
    receipts: Annotated[
        list[Path], typer.Argument(help="bench receipts (JSON written by `sparkrig bench`)")
    ],
    out: Annotated[
        Path | None,
        typer.Option(help="HTML file to write (default: the first receipt's path with .html)"),
    ] = None,
) -> None:
    """Turn bench receipts into one self-contained HTML page and print their tables.

    Per receipt the page shows model, URL, engine, host, settings and whether the run finished; its
    warnings; every point with median, 95% interval and flags; and inline SVG charts (decode by
    content type, concurrency aggregate vs per stream, speculative acceptance per draft position).
    It opens without a network. A point with degenerate output reads "invalid", never a number."""
    from sparkrig.bench.receipt import load_receipt
    from sparkrig.report.bench_table import bench_table, spec_table
    from sparkrig.report.html_report import render_report

    loaded = [load_receipt(path) for path in receipts]
    out_path = out or receipts[0].with_suffix(".html")
    if any(out_path.resolve() == path.resolve() for path in receipts):
        raise UsageError(f"--out {out_path} is one of the receipts — pick another --out")
    page = render_report(loaded, names=[path.name for path in receipts])
    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise SparkrigError(
            f"cannot write {out_path}: {exc.strerror} — pick a writable --out"
        ) from exc
    for path, receipt in zip(receipts, loaded, strict=True):
        if len(receipts) > 1:
            console.print(f"[bold]{escape(str(path))}[/]", highlight=False)
        console.print(bench_table(receipt))
        if (acceptance := spec_table(receipt)) is not None:
            console.print(acceptance)
    console.print(f"report written to {out_path}", highlight=False)


from sparkrig.gateway_cli import gateway  # noqa: E402  (its own module: merges stay trivial)

app.command()(gateway)


def main() -> None:
    from sparkrig.launch.signals import stop_cleanly_on_sigterm

    stop_cleanly_on_sigterm()
    debug = "--debug" in sys.argv
    try:
        app()
    except SparkrigError as exc:
        if debug:
            raise
        # messages quote server text ("[/INST]" …): never let rich read it as markup
        err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
