"""`sparkrig up/status/logs/down CLUSTER.toml`: the cluster side of those commands, wired from
`cli/serve.py` when a cluster file is given (without one they act on `--local` instances)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from sparkrig.cli.common import print_json
from sparkrig.config.cluster import Cluster
from sparkrig.engines.adapter import LocalEngine
from sparkrig.engines.registry import adapter_for
from sparkrig.errors import SparkrigError, UsageError
from sparkrig.launch.cluster_plan import LaunchPlan, plan_launch
from sparkrig.paths import state_dir

console = Console()
err_console = Console(stderr=True)


def load_plan(path: Path, profile: str | None) -> tuple[Cluster, LaunchPlan]:
    from sparkrig.config import load_cluster

    cluster = load_cluster(path)
    local = LocalEngine()
    if cluster.engine is not None and cluster.model is not None:
        local = adapter_for(cluster.engine.kind).local_engine(cluster.engine, cluster.model.path)
    plan = plan_launch(
        cluster,
        profile_name=profile,
        local_state_dir=state_dir(),
        default_binaries=local.binaries,
        default_server_args=local.server_args,
        bundled_model=local.bundled_model,
    )
    return cluster, plan


def _api_key(cluster: Cluster) -> str | None:
    """The engine's API key from the variable engine.api_key_env names (never printed)."""
    from sparkrig.client.endpoint import api_key_from_env

    return api_key_from_env(cluster.engine.api_key_env) if cluster.engine else None


def up_cluster(
    path: Path,
    *,
    profile: str | None,
    apply: bool,
    replace: bool,
    as_json: bool,
    cold: bool = False,
) -> None:
    from sparkrig.cli.views.cluster_table import plan_view
    from sparkrig.client.first_completion import completion_probe
    from sparkrig.launch.api_reach import unreached_api_warning
    from sparkrig.launch.executors import LocalExecutor
    from sparkrig.launch.lifecycle import bring_down, bring_up, runners_for
    from sparkrig.launch.state import load_state

    cluster, plan = load_plan(path, profile)
    unreached = unreached_api_warning(plan, LocalExecutor())
    if unreached is not None:
        plan = plan.model_copy(update={"warnings": [*plan.warnings, unreached]})
    probe = completion_probe(_api_key(cluster))
    if not apply:
        if as_json:
            print_json({"applied": False, **plan.model_dump(mode="json")})
            return
        console.print(plan_view(plan), highlight=False, soft_wrap=True)
        if cold:
            from sparkrig.launch.cache_parity import cold_plan

            for node, dirs in cold_plan(plan.processes).items():
                for folder in dict.fromkeys(dirs.values()):
                    console.print(f"[bold]plan[/]: cold: empty {folder} on {node}", highlight=False)
        console.print("nothing started — add --apply to start it (workers first, then the head)")
        return
    existing = load_state(plan.cluster)
    if existing is not None and existing.started:
        if not replace:
            raise UsageError(
                f"cluster {plan.cluster} is already recorded as up — `sparkrig down {path} "
                "--apply` first, or pass --replace to stop it and start again"
            )
        for record, outcome in asyncio.run(bring_down(existing)):
            err_console.print(f"replace: {record.process.key} pid {record.pid}: {outcome}")
    say = (
        (lambda line: None) if as_json else (lambda line: err_console.print(line, highlight=False))
    )
    if unreached is not None:  # said before minutes of boot, not only when readiness fails
        err_console.print(f"warning: {unreached}", highlight=False, soft_wrap=True)
    state = asyncio.run(bring_up(plan, runners_for(plan), probe, say, cold=cold))
    if as_json:
        print_json({"applied": True, **state.model_dump(mode="json")})
        return
    console.print(
        f"[green]ready[/]: {plan.cluster} at {plan.api_url}/v1 (model {plan.model_name}); "
        f"{len(state.started)} processes on {len({r.process.node for r in state.started})} nodes",
        highlight=False,
    )


def state_for(path: Path) -> Any:
    from sparkrig.config import load_cluster
    from sparkrig.launch.state import load_state

    cluster = load_cluster(path)
    return cluster, load_state(cluster.name or path.stem)


def status_cluster(path: Path, *, as_json: bool) -> None:
    from sparkrig.cli.views.cluster_table import status_table
    from sparkrig.client.first_completion import completion_probe
    from sparkrig.launch.lifecycle import launch_status

    cluster, state = state_for(path)
    if state is None:
        if as_json:
            print_json({"cluster": cluster.name, "ready": False, "rows": []})
        else:
            console.print(
                f"{cluster.name}: nothing recorded — start it with `sparkrig up {path} --apply`"
            )
        raise typer.Exit(1)
    status = asyncio.run(launch_status(state, completion_probe(_api_key(cluster))))
    if as_json:
        print_json(status.model_dump(mode="json"))
    else:
        console.print(status_table(status), highlight=False)
    if not status.ready:
        raise typer.Exit(1)


def logs_cluster(path: Path, node: str | None, lines: int) -> None:
    from sparkrig.launch.lifecycle import read_log

    cluster, state = state_for(path)
    if state is None:
        raise SparkrigError(
            f"{cluster.name}: nothing recorded — start it with `sparkrig up {path} --apply`"
        )
    names = list(dict.fromkeys(r.process.node for r in state.started))
    if node is None:
        raise UsageError(f"name the node — one of {', '.join(names)}: `sparkrig logs {path} NODE`")
    records = [r for r in state.started if r.process.node == node]
    if not records:
        raise UsageError(f"node {node} has no recorded process — use one of {', '.join(names)}")
    for record in records:
        if len(records) > 1:
            console.print(f"[bold]== {record.process.key} ({record.log_path})[/]", highlight=False)
        sys.stdout.write(read_log(record, lines))


def down_cluster(path: Path, *, apply: bool) -> None:
    from sparkrig.launch.lifecycle import bring_down

    cluster, state = state_for(path)
    if state is None or not state.started:
        console.print(f"{cluster.name}: nothing recorded, nothing to stop")
        return
    if not apply:
        for record in reversed(state.started):
            container = record.process.container
            removal = (
                f", then remove container {container.name} if it carries {state.cluster}'s label"
                if container is not None
                else ""
            )
            console.print(
                f"[bold]plan[/]: stop {record.process.key} pid {record.pid} "
                f"({record.executor.kind} {record.executor.target or ''}){removal}",
                highlight=False,
            )
        console.print("nothing stopped — add --apply to stop (only these recorded processes)")
        return
    outcomes = asyncio.run(bring_down(state))
    for record, outcome in outcomes:
        console.print(f"{record.process.key} pid {record.pid}: {outcome}", highlight=False)
    unreached = [r.process.node for r, outcome in outcomes if outcome.startswith("not reached")]
    if unreached:
        raise SparkrigError(
            f"could not reach {', '.join(unreached)}; their records are kept — fix the "
            f"connection and run `sparkrig down {path} --apply` again"
        )


def sync_cluster(
    path: Path, *, source: str | None, fan_out: int, apply: bool, as_json: bool
) -> None:
    from sparkrig.launch.executors import executors_for
    from sparkrig.launch.sync import apply_sync, plan_sync

    _, plan = load_plan(path, None)
    executors = executors_for({access.node: access.executor for access in plan.access})
    sync = asyncio.run(plan_sync(plan, executors, source))
    if apply and not sync.in_step:
        sync = asyncio.run(
            apply_sync(
                sync,
                plan,
                executors,
                fan_out=fan_out,
                say=lambda line: err_console.print(line, highlight=False),
            )
        )
    if as_json:
        print_json(sync.model_dump(mode="json"))
    else:
        _print_sync(sync, applied=apply)
    if not apply and not sync.in_step:
        raise typer.Exit(code=1)  # something differs and nothing was copied


def _print_sync(sync: Any, *, applied: bool) -> None:
    from sparkrig.cli.views.cluster_table import sync_table

    console.print(sync_table(sync))
    for line in sync.verified:
        console.print(f"[green]verified[/]: {line}", highlight=False)
    if sync.in_step:
        console.print(f"every node holds what {sync.source} holds", highlight=False)
    elif not applied:
        console.print("nothing copied — add --apply to copy what differs", highlight=False)
