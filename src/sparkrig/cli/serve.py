"""`sparkrig up / status / logs / down`: local instances and clusters."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from sparkrig import defaults
from sparkrig.cli.common import (
    COUNT,
    WAIT_SECONDS,
    ApplyFlag,
    JsonFlag,
    app,
    console,
    print_json,
    ranged,
    speculative_options,
)
from sparkrig.cli.model_options import setting
from sparkrig.engines.llamacpp.server import LlamaServerSpec, SpeculativeOptions
from sparkrig.errors import SparkrigError, UsageError

# --- local serving ----------------------------------------------------------------------------


ClusterFileArg = Annotated[
    Path | None,
    typer.Argument(help="cluster TOML with engine and model tables (none: --local instances)"),
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
    port: int | None = setting(LlamaServerSpec, "port", default=None, note="default: a free one"),
    slots: int = setting(LlamaServerSpec, "parallel_slots", "--slots"),
    ctx: int = setting(LlamaServerSpec, "context_tokens", "--ctx"),
    threads: int = setting(LlamaServerSpec, "threads"),
    spec_type: Annotated[
        str | None, typer.Option(help="speculative decoding: draft-simple or an ngram-* mode")
    ] = None,
    draft_model: Annotated[
        Path | None, typer.Option(help="draft GGUF for draft-simple (default: the served model)")
    ] = None,
    spec_draft_max: int = setting(SpeculativeOptions, "draft_max", "--spec-draft-max"),
    spec_synth_rates: Annotated[
        str | None,
        typer.Option(help="per-position synthetic acceptance, e.g. 0.9,0.5 (benchmarking)"),
    ] = None,
    ready_timeout: Annotated[
        float, ranged("seconds to wait for ready", WAIT_SECONDS)
    ] = defaults.READY_TIMEOUT_S,
    profile: Annotated[
        str | None, typer.Option(help="cluster: the table profiles.NAME instead of profile")
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="cluster: stop the recorded cluster, then start")
    ] = False,
    cold: Annotated[
        bool,
        typer.Option("--cold", help="cluster: empty every node's JIT caches first (qualification)"),
    ] = False,
    apply: ApplyFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Start an engine across a cluster (workers first, ready by liveness) or --local.

    With a cluster file: print the per-node plan; with --apply start the
    workers, then the head, and wait ready by liveness (every node alive and advancing, head
    healthy, one real completion). With --local: llama-server on 127.0.0.1."""
    from sparkrig.client.first_completion import answer_one_completion
    from sparkrig.engines.llamacpp.build import require_installed
    from sparkrig.engines.llamacpp.gguf_model import resolve_model
    from sparkrig.launch.local import embedded_server, plan_local, start_local

    if cluster_file is not None:
        if local:
            raise UsageError("--local and a cluster file contradict each other — pick one")
        from sparkrig.cli.cluster import up_cluster

        up_cluster(
            cluster_file, profile=profile, apply=apply, replace=replace, as_json=as_json, cold=cold
        )
        return
    if not local:
        raise UsageError(
            "say what to start — a cluster file (`sparkrig up cluster.toml`) or --local"
        )
    speculative = speculative_options(spec_type, draft_model, spec_draft_max, spec_synth_rates)
    model_path = resolve_model(model)
    engine = require_installed()
    server = embedded_server(
        engine,
        model_path,
        alias=defaults.BUNDLED_MODEL_ALIAS if model is None else model_path.stem,
        port=port,
        parallel_slots=slots,
        context_tokens=ctx,
        threads=threads,
        speculative=speculative,
    )
    plan = plan_local(
        server,
        port_was_chosen=port is None,
        engine_build=engine.label,
        ready_timeout_s=ready_timeout,
    )
    process = plan.processes[0]
    if not apply:
        if as_json:
            print_json(
                {
                    "applied": False,
                    "name": plan.cluster,
                    "argv": process.argv,
                    "log": plan.log_path(process),
                }
            )
            return
        console.print(
            f"[bold]plan[/]: start {plan.cluster} on {server.host}:{server.port}, "
            f"log {plan.log_path(process)}"
        )
        # one line however narrow the terminal, so the command can be copied as it is
        console.print(
            "  " + shlex.join(process.argv), soft_wrap=True, highlight=False, markup=False
        )
        console.print("nothing started — add --apply to start it")
        return
    record = asyncio.run(start_local(plan, answer_one_completion))
    if as_json:
        print_json({"applied": True, **record.model_dump(mode="json"), "base_url": record.base_url})
        return
    console.print(
        f"[green]ready[/]: {record.name} pid {record.pid} at {record.base_url}/v1 "
        f"(model {record.alias})"
    )


@app.command()
def status(cluster_file: ClusterFileArg = None, as_json: JsonFlag = False) -> None:
    """Show what sparkrig started: per node phase and readiness, or the --local instances.

    With a cluster file: per node phase, pid, uptime and last log line, and whether the
    cluster is ready (exit 1 when not). Without: the --local instances."""
    from sparkrig.client.first_completion import answer_one_completion
    from sparkrig.launch.local import instance_status
    from sparkrig.launch.state import load_local_states

    if cluster_file is not None:
        from sparkrig.cli.cluster import status_cluster

        status_cluster(cluster_file, as_json=as_json)
        return

    async def statuses() -> list[Any]:
        return [
            await instance_status(state, answer_one_completion) for state in load_local_states()
        ]

    rows = asyncio.run(statuses())
    if as_json:
        print_json([row.model_dump(mode="json") for row in rows])
        return
    if not rows:
        console.print("no instances recorded — start one with `sparkrig up --local --apply`")
        return
    table = Table()
    for header in ("name", "state", "pid", "url", "model", "uptime", "slots busy/total", "spec"):
        table.add_column(header)
    for row in rows:
        slots = "—" if row.slots_total is None else f"{row.slots_busy}/{row.slots_total}"
        table.add_row(
            row.name,
            row.state,
            str(row.pid or "—"),
            row.base_url,
            row.alias,
            f"{row.uptime_s:.0f}s",
            slots,
            row.speculative or "—",
        )
    console.print(table)


def _select(name: str | None) -> list[Any]:
    """The recorded local launches (LaunchState), or the one named."""
    from sparkrig.launch.state import load_local_states, local_dir

    states = load_local_states()
    if name is not None:
        states = [state for state in states if state.cluster == name]
        if not states:
            raise SparkrigError(
                f"no instance named {name} is recorded — `sparkrig status` lists them"
            )
    if not states:
        raise SparkrigError(
            f"nothing is running: no instance is recorded in {local_dir()} — start one with "
            "`sparkrig up --local --apply`"
        )
    return states


def _is_cluster_file(path: Path) -> bool:
    """A cluster file is TOML; anything else given to `logs --scan` is a log to read."""
    return path.suffix.lower() == ".toml"


@app.command()
def logs(
    cluster_file: ClusterFileArg = None,
    node: Annotated[str | None, typer.Argument(help="cluster: the node whose log to show")] = None,
    name: Annotated[str | None, typer.Option(help="instance name (default: the only one)")] = None,
    lines: Annotated[int, ranged("how many last lines", COUNT, "-n", "--lines")] = 40,
    scan: Annotated[
        bool, typer.Option("--scan", help="read every node's log for known failure signatures")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Print the last lines of an engine log: a cluster node's, or a --local instance's.

    --scan reads every rank's log and kernel log for the catalogued signatures instead; `logs
    --scan FILE` scans a log you hold (not a .toml: copied from a node, `docker logs`,
    journal output; `-` reads standard input)."""
    if scan:
        from sparkrig.cli.log_scan import scan_cluster_logs, scan_log_file, scan_logs

        if cluster_file is not None and not _is_cluster_file(cluster_file):
            scan_log_file(cluster_file, as_json=as_json)  # a log the user holds, or `-`
        elif cluster_file is not None:
            scan_cluster_logs(cluster_file, as_json=as_json)
        else:
            scan_logs(_select(name)[0], as_json=as_json)
        return
    if cluster_file is not None:
        from sparkrig.cli.cluster import logs_cluster

        logs_cluster(cluster_file, node, lines)
        return
    from sparkrig.launch.lifecycle import read_log

    states = _select(name)
    if len(states) > 1:
        names = ", ".join(state.cluster for state in states)
        raise UsageError(f"several instances are recorded ({names}) — pick one with --name")
    if not states[0].started:
        raise SparkrigError(
            f"{states[0].cluster} never started its server (`up` was stopped first), so it has no "
            f"log — `sparkrig down --name {states[0].cluster} --apply` forgets it"
        )
    sys.stdout.write(read_log(states[0].started[0], lines))


@app.command()
def sync(
    cluster_file: Annotated[Path, typer.Argument(help="cluster TOML with engine and model tables")],
    source: Annotated[
        str | None,
        typer.Option(
            "--from", help="the node whose image and model are copied (default: the head)"
        ),
    ] = None,
    fan_out: Annotated[
        int, ranged("nodes copied to at once", COUNT, "--fan-out")
    ] = defaults.SYNC_FAN_OUT,
    apply: ApplyFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Make the engine image and the model the same on every node, then prove it.

    Compares each node with the source (the head unless --from): the image by its layer digests
    and config (not its ID), the model by its files and sizes. With --apply copies only what
    differs — the image as `RUNTIME save | RUNTIME load`, each missing or resized model file
    through a partial file renamed when whole (an interrupted sync resumes) — --fan-out nodes at
    a time, then checks again with a sha256 of every copied file on both sides. Without
    --apply it prints the plan and exits 1 when a node differs."""
    from sparkrig.cli.cluster import sync_cluster

    sync_cluster(cluster_file, source=source, fan_out=fan_out, apply=apply, as_json=as_json)


@app.command()
def down(
    cluster_file: ClusterFileArg = None,
    name: Annotated[str | None, typer.Option(help="stop only this instance")] = None,
    missing_ok: Annotated[
        bool, typer.Option("--missing-ok", help="exit 0 when nothing is recorded")
    ] = False,
    apply: ApplyFlag = False,
) -> None:
    """Stop only the engine processes sparkrig recorded starting; idempotent.

    Never any other process: a cluster's, head first, or the --local instances. Idempotent."""
    from sparkrig.launch.lifecycle import bring_down
    from sparkrig.launch.state import is_running_here

    if cluster_file is not None:
        from sparkrig.cli.cluster import down_cluster

        down_cluster(cluster_file, apply=apply)
        return

    try:
        states = _select(name)
    except SparkrigError:
        if missing_ok:
            console.print("nothing to stop")
            return
        raise
    if not apply:
        for state in states:
            for record in state.started:
                running = "running" if is_running_here(record) else "not running (record only)"
                console.print(f"[bold]plan[/]: stop {state.cluster} pid {record.pid} ({running})")
        console.print("nothing stopped — add --apply to stop")
        return
    for state in states:
        for record, outcome in asyncio.run(bring_down(state)):
            console.print(f"{state.cluster} pid {record.pid}: {outcome}")


# --- endpoint tools ---------------------------------------------------------------------------
