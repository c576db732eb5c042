"""`sparkrig fabric test`, pure parts: what each node runs (ranks in cable order, the master
address, the environment from the fabric plan), the decisions on what the nodes' probes report
(torch present and the same everywhere, GPUs for NCCL, the master port free), and the receipt
built from the workers' JSON lines."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sparkrig import defaults
from sparkrig.errors import FabricError, PortInUseError, UsageError
from sparkrig.fabric.collectives.results import (
    CableLoad,
    CheckCount,
    FabricTestReceipt,
    Point,
    make_point,
)
from sparkrig.fabric.collectives.schedule import ring_of
from sparkrig.fabric.plan_model import FabricPlan, NodePlan

WORKER_MODULE = "sparkrig.fabric.collectives.worker"


@dataclass(frozen=True)
class TestSettings:
    backend: str
    """auto, gloo or nccl"""
    sizes: list[int] | None
    """None: the default ladder for the backend"""
    iterations: int = defaults.FABRIC_TEST_ITERATIONS
    warmup: int = defaults.FABRIC_TEST_WARMUP
    port: int = defaults.FABRIC_TEST_PORT
    checks: bool = True
    counter_bytes: int = 4 * 1024 * 1024
    liveness_s: float = defaults.FABRIC_TEST_LIVENESS_S
    loopback: bool = False
    """every node a local process on 127.0.0.1 (the local executor): no cables to count"""


def master_address(plan: FabricPlan, loopback: bool) -> str:
    return defaults.LOCAL_HOST if loopback else str(plan.node(plan.rank_order[0]).control_address)


def probe_argv(python: str, bind: str | None) -> list[str]:
    return [python, "-m", WORKER_MODULE, "probe", *(["--bind", bind] if bind else [])]


def worker_argv(
    plan: FabricPlan,
    node: str,
    *,
    python: str,
    settings: TestSettings,
    backend: str,
    sizes: list[int],
) -> list[str]:
    """`env VARS python -m worker run …`: env through the `env` binary so the same line works
    through every executor."""
    order = ring_of(plan)
    node_plan = plan.node(node)
    env = (
        {"GLOO_SOCKET_IFNAME": "lo"}
        if settings.loopback
        else {
            var.name: var.value
            for var in node_plan.env
            if var.name
            in (
                "GLOO_SOCKET_IFNAME",
                "NCCL_SOCKET_IFNAME",
                "NCCL_IB_HCA",
                "NCCL_IB_SUBNET_AWARE_ROUTING",
                "NCCL_IB_DISABLE",
                "NCCL_ALGO",
            )
        }
    )
    if backend == "gloo" and not settings.loopback and node_plan.interfaces:
        env["GLOO_SOCKET_IFNAME"] = _gloo_data_interface(order, node_plan)
    interfaces = [] if settings.loopback else [f"{i.netdev}={i.peer}" for i in node_plan.interfaces]
    return [
        "env",
        *(f"{k}={v}" for k, v in sorted(env.items())),
        python,
        "-W",
        "ignore",
        "-m",
        WORKER_MODULE,
        "run",
        "--node",
        node,
        "--rank",
        str(order.index(node)),
        "--size",
        str(len(order)),
        "--master",
        master_address(plan, settings.loopback),
        "--port",
        str(settings.port),
        "--backend",
        backend,
        "--sizes",
        ",".join(str(s) for s in sizes),
        "--iterations",
        str(settings.iterations),
        "--warmup",
        str(settings.warmup),
        *(["--checks"] if settings.checks else []),
        "--counter-bytes",
        str(0 if settings.loopback else settings.counter_bytes),
        *(arg for item in interfaces for arg in ("--iface", item)),
        # torch's own timeout is twice the liveness: the silent (hung) node is named first
        "--liveness",
        str(2 * settings.liveness_s),
        "--heartbeat",
        str(defaults.FABRIC_TEST_HEARTBEAT_S),
    ]


def _gloo_data_interface(order: list[str], node_plan: NodePlan) -> str:
    """The cable interface gloo's data takes on this node: the one facing the next rank (root
    A), so the test's bytes cross the cables. The plan's GLOO_SOCKET_IFNAME is the control
    interface, right for an engine's bootstrap; on a cluster with a management LAN it would
    carry the whole test there and leave every cable idle."""
    following = order[(order.index(node_plan.node) + 1) % len(order)]
    interfaces = node_plan.interfaces
    facing = [i for i in interfaces if i.peer == following] or list(interfaces)
    return min(facing, key=lambda i: i.root).netdev


def gloo_cables_unreachable(plan: FabricPlan, backend: str, loopback: bool) -> str | None:
    """Why gloo cannot carry the test over this cluster's cables, or None. Gloo binds one
    address a rank and every rank connects to every other's: a cable address is reachable by
    the neighbour on that cable only, unless the plan routes the control plane over the cables
    (no management LAN: every node's cable address reached through its neighbours). Two ranks
    share their one cable."""
    if backend != "gloo" or loopback or len(plan.rank_order) <= 2:
        return None
    if plan.control_plane == "fabric":
        return None
    return (
        f"gloo cannot put this test's data on the cables of {len(plan.rank_order)} nodes with a "
        "management LAN: it binds one address a rank, and a cable address is reached only by "
        "the neighbour on that cable — run it with NCCL on the GPU nodes (`--backend nccl`), "
        "or test the cables over the fabric control plane (a cluster file without management "
        "addresses, each node reached by its `ssh` field)"
    )


def decide_backend(
    probes: dict[str, dict[str, Any]], asked: str, master_node: str, port: int
) -> str:
    """gloo or nccl from what every node has; every refusal names the node and the fix."""
    missing = [node for node, found in probes.items() if not found.get("torch")]
    if missing:
        raise FabricError(
            f"torch is not installed on {', '.join(missing)} — install it there: "
            f"{defaults.COLLECTIVES_INSTALL_HINT} (on this project's test machine: "
            "pip install torch==2.13.0)"
        )
    versions = {node: str(found["torch"]) for node, found in probes.items()}
    if len(set(versions.values())) > 1:
        listed = ", ".join(f"{node} {version}" for node, version in versions.items())
        raise FabricError(
            f"torch differs across nodes ({listed}) — install one version on every node, e.g. "
            f"pip install torch=={next(iter(versions.values())).split('+')[0]}"
        )
    if probes[master_node].get("port_error") == "EADDRNOTAVAIL":
        raise FabricError(
            f"{master_node} (rank 0, the master) does not hold its control address — apply the "
            "fabric first: sparkrig fabric apply CLUSTER.toml --apply"
        )
    if probes[master_node].get("port_free") is False:
        raise PortInUseError(
            f"port {port} on {master_node} (rank 0, the master) is in use — pass --port with "
            "a free port, or stop what holds it"
        )
    without_gpu = [node for node, found in probes.items() if not found.get("gpus")]
    if asked == "nccl" and without_gpu:
        raise UsageError(
            f"--backend nccl needs a GPU on every node; torch sees none on "
            f"{', '.join(without_gpu)} — use --backend gloo (or auto)"
        )
    if asked in ("gloo", "nccl"):
        return asked
    if asked != "auto":
        raise UsageError(f"--backend {asked} is not known — use auto, gloo or nccl")
    return "gloo" if without_gpu else "nccl"


def receipt_update(
    receipt: FabricTestReceipt, plan: FabricPlan, events: dict[str, list[dict[str, Any]]]
) -> FabricTestReceipt:
    """The receipt with every result all ranks have reported so far."""
    order = ring_of(plan)
    ranks = len(order)
    checks = [
        CheckCount(node=node, rank=order.index(node), passed=e["passed"], failed=e["failed"])
        for node in order
        for e in events.get(node, [])
        if e["event"] == "checks"
    ]
    timings: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for node in order:
        for e in events.get(node, []):
            if e["event"] == "point":
                timings[e["collective"], e["implementation"], e["size_bytes"]].append(e["seconds"])
    points: list[Point] = [
        make_point(collective, impl, size, ranks, max(seconds))
        for (collective, impl, size), seconds in timings.items()
        if len(seconds) == ranks
    ]
    return receipt.model_copy(
        update={"checks": checks, "points": points, "cable_loads": cable_loads(plan, events)}
    )


def cable_loads(plan: FabricPlan, events: dict[str, list[dict[str, Any]]]) -> list[CableLoad]:
    """Per node and neighbour: bytes sent on the rails towards it (tx), and what the neighbour's
    rails from this node received (rx), for each counted collective."""
    peer_of = {(n.node, i.netdev): i.peer for n in plan.nodes for i in n.interfaces}
    sent: dict[tuple[str, str, int, str, str], int] = defaultdict(int)
    got: dict[tuple[str, str, int, str, str], int] = defaultdict(int)
    for node, node_events in events.items():
        for e in node_events:
            if e["event"] != "counters":
                continue
            for netdev, (rx, tx) in e["interfaces"].items():
                peer = peer_of.get((node, netdev))
                if peer is None:
                    continue
                key = (e["collective"], e["implementation"], e["size_bytes"])
                sent[(*key, node, peer)] += tx
                got[(*key, peer, node)] += rx
    return [
        CableLoad(
            collective=c,
            implementation=i,
            size_bytes=s,
            src=src,
            dst=dst,
            tx_bytes=tx,
            rx_bytes_at_dst=got.get((c, i, s, src, dst)),
        )
        for (c, i, s, src, dst), tx in sorted(sent.items())
    ]
