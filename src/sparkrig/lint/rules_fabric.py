"""Rules about the group of nodes: the cables, the tensor-parallel collective and the start
order."""

from __future__ import annotations

from sparkrig.config.cluster import Cluster
from sparkrig.config.serving import ServingProfile
from sparkrig.errors import CablingError
from sparkrig.fabric.plan import plan_fabric
from sparkrig.fabric.topology import check_cabling
from sparkrig.lint.findings import LintFinding, rule


@rule(
    "cables-valid",
    "every cable joins two ports the nodes have, each port in one cable",
    "docs/field-notes.md#two-subnets-per-cable",
)
def cables_valid(cluster: Cluster, profile: ServingProfile, key: str) -> list[LintFinding]:
    if key != "profile":  # the cables are the file's, not a profile's: said once
        return []
    try:
        check_cabling(cluster)
    except CablingError as exc:
        what, _, fix = str(exc).partition(" — ")
        source = "docs/field-notes.md#two-subnets-per-cable"
        return [LintFinding("cables-valid", "error", "cables", what, fix, source)]
    return []


@rule(
    "tp-closed-collective",
    "the TP group is a closed collective on the cables",
    "docs/field-notes.md#ring-tp3-is-a-line",
)
def tp_closed_collective(cluster: Cluster, profile: ServingProfile, key: str) -> list[LintFinding]:
    try:
        check_cabling(cluster)
    except CablingError:
        return []  # cables-valid names it: no TP size fixes a cable the nodes cannot have
    try:
        plan_fabric(cluster, profile.tensor_parallel_size)
    except CablingError as exc:
        return [
            LintFinding(
                "tp-closed-collective",
                "error",
                f"{key}.tensor_parallel_size",
                str(exc).split(" — ")[0],
                "pick a TP size whose nodes the cables close (2 neighbours, a triangle, the whole "
                "ring), or recable",
                "docs/field-notes.md#ring-tp3-is-a-line",
            )
        ]
    return []


@rule(
    "workers-first",
    "workers start before the head",
    "docs/field-notes.md#worker-first",
)
def workers_first(cluster: Cluster, profile: ServingProfile, key: str) -> list[LintFinding]:
    if cluster.engine is None or cluster.engine.start_order == "workers-first":
        return []
    return [
        LintFinding(
            "workers-first",
            "error",
            "engine.start_order",
            "head-first with a fixed stagger races the TCPStore (workers exit, a half-assembled "
            "pair is reported up); the two-node recipe starts the worker before the head to avoid "
            "that race",
            "remove start_order (workers-first is the default)",
            "docs/field-notes.md#worker-first (MiaAI#38; luxingcom's "
            "head-first launch with a 20 s stagger between workers)",
        )
    ]
