"""`sparkrig fabric test CLUSTER.toml`: prove the data plane with neighbour-only collectives.

Plan first; `--apply` probes every node, starts one worker per node through the executors and
writes the receipt after every result."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sparkrig import defaults
from sparkrig.cli.common import (
    COUNT,
    PORT,
    WAIT_SECONDS,
    ForceFlag,
    print_json,
    ranged,
    receipt_out,
)
from sparkrig.cli.fabric import (
    ClusterArg,
    ExecutorOption,
    JsonFlag,
    NetnsOption,
    NetnsPrefixOption,
    console,
    fabric_app,
)
from sparkrig.errors import FabricError

if TYPE_CHECKING:
    from sparkrig.fabric.collectives.fabric_test import TestSettings
    from sparkrig.fabric.collectives.results import FabricTestReceipt
    from sparkrig.fabric.plan_model import FabricPlan
    from sparkrig.fabric.runner import ExecutorSpec
    from sparkrig.launch.executors import Executor


@fabric_app.command("test")
def fabric_test_command(
    cluster_file: ClusterArg,
    apply: Annotated[bool, typer.Option("--apply", help="run; without it, print the plan")] = False,
    executor: ExecutorOption = None,
    netns: NetnsOption = None,
    netns_prefix: NetnsPrefixOption = None,
    backend: Annotated[
        str, typer.Option(help="auto (nccl when every node has a GPU), gloo or nccl")
    ] = "auto",
    sizes: Annotated[
        str | None,
        typer.Option(help="ladder, e.g. 8K,64K,1M (default: 8 KiB x8 to 64 MiB, 256 MiB on GPU)"),
    ] = None,
    iterations: Annotated[
        int, ranged("timed iterations per size", COUNT)
    ] = defaults.FABRIC_TEST_ITERATIONS,
    port: Annotated[int, ranged("master port on rank 0", PORT)] = defaults.FABRIC_TEST_PORT,
    checks: Annotated[bool, typer.Option("--checks/--no-checks", help="correctness first")] = True,
    liveness: Annotated[
        float,
        ranged(
            "seconds without a heartbeat before a node is named hung",
            WAIT_SECONDS,
            "--liveness-timeout",
            "--liveness",
        ),
    ] = defaults.FABRIC_TEST_LIVENESS_S,
    python: Annotated[
        str | None,
        typer.Option(help="python on the nodes (default: this one; python3 on an ssh node)"),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="receipt path (default: sparkrig-runs/fabric-test-<time>.json)"),
    ] = None,
    force: ForceFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Correctness, latency and bus bandwidth of built-in vs sparkrig collectives on every node,
    and bytes per cable direction. The nodes are reached as the cluster file says; `--executor
    local` rehearses every node here on 127.0.0.1, which tests no cable."""
    from sparkrig.config import load_cluster
    from sparkrig.fabric.collectives.fabric_test import TestSettings, master_address, worker_argv
    from sparkrig.fabric.collectives.results import default_ladder, parse_sizes
    from sparkrig.fabric.collectives.schedule import ring_of
    from sparkrig.fabric.plan import plan_fabric
    from sparkrig.launch.node_executors import (
        ExecutorChoice,
        every_node_here,
        node_python,
        resolve_executors,
    )

    cluster = load_cluster(cluster_file)
    plan = plan_fabric(cluster)
    order = ring_of(plan)
    ladder = parse_sizes(sizes) if sizes is not None else None
    # `--executor local` (or a file whose executors are all local) rehearses the whole cluster
    # here: every rank a local process on loopback
    choice = ExecutorChoice(
        executor,
        tuple(netns or ()),
        netns_prefix,
        loopback=True,
        no_executor_fix="give it one (ssh), pass --executor ssh or netns, or rehearse on this "
        "machine's loopback with --executor local (no cable is tested)",
    )
    specs = resolve_executors(cluster, choice)
    loopback = every_node_here(specs)
    settings = TestSettings(
        backend=backend,
        sizes=ladder,
        iterations=iterations,
        port=port,
        checks=checks,
        liveness_s=liveness,
        loopback=loopback,
    )
    pythons = {node: python or node_python(spec) for node, spec in specs.items()}
    shown_sizes = ladder or default_ladder(gpu=backend == "nccl")
    if not apply:
        where = (
            "this machine's loopback, 127.0.0.1: a rehearsal, no cable is tested"
            if loopback
            else _kinds(specs)
        )
        console.print(
            f"{plan.cluster}: {plan.topology}, ranks {' → '.join(order)} → {order[0]}, "
            f"master {master_address(plan, loopback)}:{port}, on {where}",
            highlight=False,
        )
        for node in order:
            argv = worker_argv(
                plan,
                node,
                python=pythons[node],
                settings=settings,
                backend=backend,
                sizes=shown_sizes,
            )
            console.print(f"{node}: {shlex.join(argv)}", highlight=False, markup=False)
        console.print("nothing started — add --apply to run the test")
        return
    out_path = receipt_out(out, "fabric-test", force=force)  # before any node is touched
    receipt = _run(plan, specs, settings, pythons, out_path)
    if as_json:
        print_json(receipt.model_dump(mode="json"))
        if receipt.rehearsal:  # stdout is the receipt alone; its `rehearsal` field says it too
            from sparkrig.cli.common import err_console
            from sparkrig.fabric.collectives.results import REHEARSAL_NOTE

            err_console.print(REHEARSAL_NOTE, highlight=False)
    else:
        from sparkrig.cli.views.fabric_test_table import fabric_test_view

        console.print(fabric_test_view(receipt))
    failed = sum(len(c.failed) for c in receipt.checks)
    if failed:
        raise FabricError(f"{failed} correctness check(s) failed — see the table; receipt kept")
    if receipt.cables_idle:
        raise FabricError(
            "no byte of the test crossed a cable (every cable interface's counters stood still): "
            "the collectives ran over another network — check that the nodes' cable interfaces "
            "are up and addressed (`sparkrig fabric apply CLUSTER --apply`, `sparkrig doctor`); "
            "receipt kept"
        )


def _kinds(specs: dict[str, ExecutorSpec]) -> str:
    """How the nodes are reached, for the plan line and the receipt: `ssh`, `local, ssh`."""
    return ", ".join(dict.fromkeys(spec.kind for spec in specs.values()))


def _check_cables(plan: FabricPlan, runners: dict[str, Executor]) -> None:
    """Every cable interface up and carrying on every node, or one line naming each that is
    not, before any worker starts."""
    from sparkrig.fabric.link_state import cable_problems

    problems = []
    for node in plan.rank_order:
        shown = runners[node].run(["ip", "-j", "link", "show"])
        if not shown.ok:
            raise FabricError(
                f"node {node}: `ip -j link show` failed: {shown.error_line} — install iproute2"
            )
        problems += cable_problems(plan, node, shown.stdout)
    if problems:
        raise FabricError(
            f"cable interfaces not carrying: {'; '.join(problems)} — plug the cable in at both "
            "ends, or run `sparkrig fabric apply CLUSTER --apply` (then `sparkrig doctor "
            "CLUSTER`); no worker was started"
        )


def _probe_nodes(
    plan: FabricPlan,
    runners: dict[str, Executor],
    settings: TestSettings,
    pythons: dict[str, str],
) -> dict[str, dict[str, Any]]:
    """What each node has (torch, GPUs; on rank 0 whether the master port is free)."""
    from sparkrig.fabric.collectives.fabric_test import master_address, probe_argv

    if not settings.loopback:
        _check_cables(plan, runners)
    master = plan.rank_order[0]
    bind = f"{master_address(plan, settings.loopback)}:{settings.port}"
    probes: dict[str, dict[str, Any]] = {}
    for node in plan.rank_order:
        argv = probe_argv(pythons[node], bind if node == master else None)
        result = runners[node].run(argv, timeout=defaults.FABRIC_TEST_PROBE_TIMEOUT_S)
        if not result.ok:
            raise FabricError(
                f"node {node} cannot run the fabric-test worker: {result.error_line} — install "
                f"sparkrig there ({defaults.COLLECTIVES_INSTALL_HINT})"
            )
        probes[node] = json.loads(result.stdout.strip().splitlines()[-1])
    return probes


def _run(
    plan: FabricPlan,
    specs: dict[str, ExecutorSpec],
    settings: TestSettings,
    pythons: dict[str, str],
    out_path: Path,
) -> FabricTestReceipt:
    from rich.progress import Progress

    from sparkrig.cli.common import err_console
    from sparkrig.cli.receipt_files import write_report
    from sparkrig.fabric.collectives.fabric_test import (
        decide_backend,
        gloo_cables_unreachable,
        receipt_update,
        worker_argv,
    )
    from sparkrig.fabric.collectives.results import (
        FabricTestReceipt,
        default_ladder,
        save_receipt,
    )
    from sparkrig.launch.executors import executors_for
    from sparkrig.launch.fabric_test_run import Worker, run_workers

    order = list(plan.rank_order)
    runners: dict[str, Executor] = executors_for(specs)
    probes = _probe_nodes(plan, runners, settings, pythons)
    backend = decide_backend(probes, settings.backend, order[0], settings.port)
    if (why := gloo_cables_unreachable(plan, backend, settings.loopback)) is not None:
        raise FabricError(why)
    sizes = settings.sizes or default_ladder(gpu=backend == "nccl")
    receipt = FabricTestReceipt(
        cluster=plan.cluster,
        topology=plan.topology,
        rank_order=order,
        executor=_kinds(specs),
        rehearsal=settings.loopback,
        backend=backend,
        torch_version=probes[order[0]]["torch"],
        iterations=settings.iterations,
    )
    save_receipt(receipt, out_path)
    workers = [
        Worker(
            node,
            rank,
            runners[node].argv_for(
                worker_argv(
                    plan,
                    node,
                    python=pythons[node],
                    settings=settings,
                    backend=backend,
                    sizes=sizes,
                )
            ),
        )
        for rank, node in enumerate(order)
    ]
    events: dict[str, list[dict[str, Any]]] = {}
    total = len(sizes) * 8 * len(order) + len(order)

    with Progress(console=err_console, transient=True) as bar:
        task = bar.add_task("fabric test", total=total)

        def on_event(worker: Worker, event: dict[str, Any]) -> None:
            nonlocal receipt
            events[worker.node] = worker.events
            if event["event"] in ("point", "checks"):
                bar.advance(task)
            if event["event"] in ("point", "checks", "counters"):
                receipt = receipt_update(receipt, plan, events)
                save_receipt(receipt, out_path)

        try:
            run_workers(workers, settings.liveness_s, on_event)
        except FabricError as exc:
            receipt = receipt.model_copy(update={"problems": [str(exc)]})
            save_receipt(receipt, out_path)
            raise
    receipt = receipt_update(receipt, plan, {w.node: w.events for w in workers})
    measured = any(point.seconds for point in receipt.points)
    receipt = receipt.model_copy(update={"complete": True, "measured": measured})
    save_receipt(receipt, out_path)
    page = write_report(out_path, receipt)
    err_console.print(f"receipt written to {out_path}; report {page}", highlight=False)
    return receipt
