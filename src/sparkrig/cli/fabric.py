"""`sparkrig fabric …`: plan, apply / restore, discover, gids. Thin wiring; stages are imported
inside the commands so `sparkrig --help` stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from sparkrig.cli.common import COUNT, print_json, ranged
from sparkrig.errors import UsageError

fabric_app = typer.Typer(
    help="Switchless fabric: plan addresses, routes and NCCL settings from the cables; apply, "
    "restore, discover.",
    no_args_is_help=True,
)
console = Console()

ClusterArg = Annotated[Path, typer.Argument(help="cluster TOML (see examples/)")]
JsonFlag = Annotated[bool, typer.Option("--json", help="print machine-readable JSON")]
TpOption = Annotated[
    int | None,
    ranged("tensor-parallel size (default: the file's, else every node)", COUNT, "--tp"),
]
ExecutorOption = Annotated[
    str | None,
    typer.Option(
        "--executor",
        help="how to reach the nodes: local, netns or ssh (default: the cluster file's "
        "\\[executor] and each node's executor, as up, doctor and sync use them)",
    ),
]
NetnsOption = Annotated[
    list[str] | None,
    typer.Option("--netns", help="NODE=NAMESPACE for the netns executor (repeat per node)"),
]
NetnsPrefixOption = Annotated[
    str | None,
    typer.Option("--netns-prefix", help="netns executor: namespace = PREFIX + node name"),
]
NodeOption = Annotated[
    str | None, typer.Option("--node", help="local executor: the node this machine is")
]


@fabric_app.command("plan")
def plan_command(
    cluster_file: ClusterArg,
    tp: TpOption = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="write netplan, ip scripts, env, graph XML here")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Show ranks in cable order, each cable's subnets and addresses, and relay routes."""
    from sparkrig.cli.views.fabric_table import plan_view
    from sparkrig.config import load_cluster
    from sparkrig.fabric.plan import plan_fabric
    from sparkrig.fabric.render import write_plan_files

    plan = plan_fabric(load_cluster(cluster_file), tp)
    written = write_plan_files(plan, out) if out is not None else []
    if as_json:
        print_json(plan.model_dump(mode="json"))
        return
    console.print(plan_view(plan))
    if written:
        console.print(f"wrote {len(written)} files to {out}", highlight=False)


@fabric_app.command("apply")
def apply_command(
    cluster_file: ClusterArg,
    apply: Annotated[bool, typer.Option("--apply", help="act; without it, print the plan")] = False,
    restore: Annotated[
        bool, typer.Option("--restore", help="undo the last apply exactly, from its journal")
    ] = False,
    executor: ExecutorOption = None,
    netns: NetnsOption = None,
    netns_prefix: NetnsPrefixOption = None,
    node: NodeOption = None,
    tp: TpOption = None,
) -> None:
    """Set MTU, addresses, routes and forwarding on the nodes and write the NCCL graph files
    their ranks read; `--restore` undoes it."""
    from sparkrig.config import load_cluster
    from sparkrig.fabric.apply import apply_plan, journal_path
    from sparkrig.fabric.apply import restore as restore_journal
    from sparkrig.fabric.plan import plan_fabric
    from sparkrig.fabric.steps import node_steps
    from sparkrig.launch.executors import executor_for, executors_for
    from sparkrig.launch.node_executors import ExecutorChoice, resolve_executors

    cluster = load_cluster(cluster_file)
    name = cluster.name or cluster_file.stem
    path = journal_path(name)
    if restore:
        if apply:
            raise UsageError("--apply and --restore exclude each other — pick one")
        journal = restore_journal(path, executor_for)
        undone = [e for e in journal.entries if e.undo is not None]
        for entry in reversed(undone):
            console.print(f"{entry.node}: {entry.undo_shown}", highlight=False)
        console.print(f"restored {len(undone)} change(s) of {name}", highlight=False)
        return
    plan = plan_fabric(cluster, tp)
    choice = ExecutorChoice(
        executor,
        tuple(netns or ()),
        netns_prefix,
        node,
        no_executor_fix="give it one (ssh), pass --executor ssh or netns, or change only this "
        "machine as one node with --node NAME",
    )
    specs = resolve_executors(cluster, choice)
    if not apply:
        for node_name in plan.rank_order:
            if node_name not in specs:
                continue
            target = specs[node_name].target or specs[node_name].kind
            console.print(f"[bold]{node_name}[/] ({target})")
            for step in node_steps(plan, node_name):
                console.print(f"  {step.shown}", highlight=False, markup=False)
        console.print("nothing changed — add --apply to run these commands")
        return
    runners = executors_for(specs)
    journal = apply_plan(plan, runners, specs, path)
    changed = sum(1 for e in journal.entries if e.undo is not None)
    console.print(
        f"applied {name} on {', '.join(journal.executors)}: {changed} change(s), journal {path}",
        highlight=False,
    )


@fabric_app.command("discover")
def discover_command(
    cluster_file: ClusterArg,
    executor: ExecutorOption = None,
    netns: NetnsOption = None,
    netns_prefix: NetnsPrefixOption = None,
    write: Annotated[
        bool, typer.Option("--write", help="replace the cables section of the cluster file")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Find which port faces which node from the wires; print or --write the cables.

    Temporary IPv6 link-local addresses and one all-nodes echo per interface; every node at
    once, so ssh (or netns for rehearsals), from the file's executors or --executor."""
    from sparkrig.config import load_cluster
    from sparkrig.fabric.discover import cables_toml, discover_cables, with_cables
    from sparkrig.json_files import read_text_file, write_text_atomically
    from sparkrig.launch.executors import executors_for
    from sparkrig.launch.node_executors import ExecutorChoice, node_python, resolve_executors

    needs_all = "discover needs every node at once — use --executor ssh (or netns for rehearsals)"
    if executor == "local":
        raise UsageError(needs_all)
    cluster = load_cluster(cluster_file)
    choice = ExecutorChoice(
        executor,
        tuple(netns or ()),
        netns_prefix,
        no_executor_fix="give it one (ssh), or pass --executor ssh (or netns for rehearsals): "
        "discover needs every node at once",
    )
    specs = resolve_executors(cluster, choice)
    here = [name for name, spec in specs.items() if spec.kind == "local"]
    if len(here) > 1:  # two nodes that are both this machine share its interfaces
        raise UsageError(
            f"the cluster file reaches {', '.join(here)} through the local executor, all this "
            f"machine: {needs_all}"
        )
    runners = executors_for(specs)
    probes = {
        name: [node_python(spec), "-m", "sparkrig.fabric.probe"] for name, spec in specs.items()
    }
    cables = discover_cables(cluster, runners, probes)
    if write:  # beside it, then renamed over it: an interrupted write leaves the old file
        target = cluster_file.resolve()  # a linked cluster file is rewritten where it lives
        text = read_text_file(target, what="cluster file", fix="pass a cluster TOML")
        write_text_atomically(with_cables(text, cables), target)  # keeps its mode
    if as_json:
        print_json([str(cable) for cable in cables])
        return
    console.print(cables_toml(cables), highlight=False, markup=False, end="")
    if write:
        console.print(f"cables of {cluster_file} rewritten ({len(cables)} found)", highlight=False)


@fabric_app.command("gids")
def gids_command(
    cluster_file: ClusterArg,
    node: Annotated[str, typer.Option("--node", help="the node this machine is")],
    sysfs: Annotated[Path, typer.Option("--sysfs", help="sysfs root to read")] = Path("/sys"),
    as_json: JsonFlag = False,
) -> None:
    """Show the RoCE v2 GID index of this node's fabric RDMA devices, read from sysfs.

    Read now, never cached: it differs per node and device and moves after reboots. Exits 1
    when one is missing."""
    from rich.table import Table

    from sparkrig.config import load_cluster
    from sparkrig.fabric.gid import read_gid_table, resolve_gid_index
    from sparkrig.fabric.plan import plan_fabric

    if not sysfs.is_dir():
        raise UsageError(f"--sysfs {sysfs} is not a folder — pass the sysfs root, e.g. /sys")
    plan = plan_fabric(load_cluster(cluster_file))
    if node not in plan.rank_order:
        raise UsageError(f"--node {node} is not a node — use one of {', '.join(plan.rank_order)}")
    found = [
        resolve_gid_index(i.rdma, i.address.ip, read_gid_table(sysfs, i.rdma), netdev=i.netdev)
        for i in plan.node(node).interfaces
    ]
    if as_json:
        print_json([f.model_dump(mode="json") for f in found])
    else:
        table = Table(title=f"RoCE v2 GID index on {node}")
        for column in ("device", "address", "index", "problem"):
            table.add_column(column)
        for f in found:
            index = "—" if f.index is None else str(f.index)
            table.add_row(f.device, str(f.address), index, f.problem or "")
        console.print(table)
    if any(f.index is None for f in found):
        raise typer.Exit(1)
