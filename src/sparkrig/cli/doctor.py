"""`sparkrig doctor`: host, fabric and service checks on every node. Changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sparkrig.cli.common import JsonFlag, app, console, print_json

if TYPE_CHECKING:
    from sparkrig.fabric.runner import CommandRunner


@app.command()
def doctor(
    cluster_file: Annotated[
        Path | None, typer.Argument(help="cluster TOML; without it, this machine only")
    ] = None,
    server: Annotated[
        str | None,
        typer.Option(
            "--server", "--live", help="a running server's URL: its model vs the file, /metrics"
        ),
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            help="local, netns or ssh (default: the cluster file's \\[executor])",
        ),
    ] = None,
    netns_prefix: Annotated[
        str | None, typer.Option("--netns-prefix", help="netns executor: namespace = PREFIX + node")
    ] = None,
    node: Annotated[
        str | None, typer.Option("--node", help="local executor: the node this machine is")
    ] = None,
    model_dir: Annotated[
        str | None,
        typer.Option(
            "--model-dir",
            help="where the weights live (default: \\[model] path if it is "
            "a directory, else the Hugging Face cache)",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "--save", help="also write every raw output to DIR/NODE/"),
    ] = None,
    load: Annotated[
        Path | None,
        typer.Option("--load", help="check outputs saved with --out instead of collecting"),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Collect each node's tool output once (ip, sysfs, nvidia-smi, dpkg, meminfo, vmstat,
    findmnt, chronyc, systemctl …) and run every check on it: each finding says what was seen,
    why it matters and the exact fix, which doctor prints and never runs. Exit 1 on any error."""
    from sparkrig.cli.views.doctor_table import doctor_view
    from sparkrig.doctor.capture_files import load_captures, save_captures
    from sparkrig.doctor.session import check_captures, collect_for, local_node_name
    from sparkrig.launch.executors import executors_for
    from sparkrig.launch.node_executors import ExecutorChoice, node_python, resolve_executors

    cluster = None
    if cluster_file is not None:
        from sparkrig.config import load_cluster

        cluster = load_cluster(cluster_file)
    if load is not None:
        captures = load_captures(load)
    else:
        choice = ExecutorChoice(
            kind=executor, netns_prefix=netns_prefix, node=node, this_machine=local_node_name()
        )
        specs = resolve_executors(cluster, choice)
        runners: dict[str, CommandRunner] = dict(executors_for(specs))
        pythons = {node: node_python(spec) for node, spec in specs.items()}
        captures = collect_for(runners, cluster, model_dir, pythons)
    if out is not None:
        save_captures(captures, out)
    report, no_plan = check_captures(captures, cluster, model_dir)
    if server is not None:
        from sparkrig.doctor.live import live_findings

        report = report.model_copy(
            update={"findings": [*report.findings, *live_findings(server, cluster)]}
        )
    if as_json:
        print_json(report.model_dump(mode="json"))
    else:
        if no_plan:
            console.print(f"no fabric plan, plan checks left out: {no_plan}", highlight=False)
        console.print(doctor_view(report))
    if report.errors:
        raise typer.Exit(1)
