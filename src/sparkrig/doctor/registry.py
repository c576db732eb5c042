"""The check registry and the runner. A check is a pure function registered with
`@node_check` (one node's capture in) or `@cluster_check` (every node's capture in); adding a
check is adding a function. It returns `Hit`s; the runner adds the check's name, why and source.

A check runs only where the probes it `needs` were collected. A probe skipped on a node (tool
missing, command failed) becomes one `Skipped` line naming every check it held back; output a
parser cannot read (`Unreadable`) does the same; every other check still runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sparkrig.doctor.model import DoctorFinding, DoctorReport, NodeCapture, Severity, Skipped
from sparkrig.doctor.parse import Unreadable
from sparkrig.fabric.plan_model import FabricPlan, NodePlan
from sparkrig.registry import Registry


@dataclass(frozen=True)
class RayNode:
    """One node of a Ray launch as `up` renders it (engine.backend ray)."""

    node_ip_address: str
    """`ray start --node-ip-address`: Ray names the node's `node:<ip>` resource after it"""
    host_ip: str | None
    """VLLM_HOST_IP where vLLM's get_ip() runs on this node (the head: `vllm serve`, the
    driver; a worker: its `ray start`, whose Ray workers inherit it); None when unset or empty"""
    driver: bool
    """the head, where `vllm serve` builds the placement group"""
    peer_addresses: frozenset[str] = frozenset()
    """every other node's --node-ip-address and VLLM_HOST_IP"""


@dataclass(frozen=True)
class NodeContext:
    """What a node is meant to be: its part of the fabric plan, its engine environment."""

    node: str
    plan: FabricPlan | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    """the engine environment the cluster file gives this node ([env] and the node's env)"""
    gpu_memory_utilization: float = 0.85
    model_dir: str = ""
    jit_dir: str = ""
    vllm_version: str | None = None
    """the vLLM release the cluster file names (engine.version or its default); None: not vLLM"""
    reasoning_parser: str | None = None
    """vLLM's --reasoning-parser from the cluster file; None: none, or not vLLM"""
    container_runtime: str | None = None
    """docker or podman when engine.container runs the engine from an image; None: the host"""
    container_gpus: bool = False
    """engine.container.gpus is all"""
    container_binds_rdma: bool = False
    """the engine container is started with `--device /dev/infiniband` (engine.container.
    rdma_devices, by default when vLLM's plan runs NCCL over RDMA: NCCL_IB_HCA)"""

    engine_backend: str | None = None
    """vLLM's multi-node backend (mp or ray) when the cluster file runs vLLM; None otherwise"""
    ray: RayNode | None = None
    """this node's part of the Ray launch; None without one"""
    ray_unplanned: str | None = None
    """why a Ray cluster's node has no `ray`: no launch plan, or not in the serving group"""

    @property
    def node_plan(self) -> NodePlan | None:
        if self.plan is None:
            return None
        return next((n for n in self.plan.nodes if n.node == self.node), None)


@dataclass(frozen=True)
class Hit:
    severity: Severity
    seen: str
    fix: str
    node: str | None = None
    """cluster checks name the node; node checks leave it to the runner"""


NodeCheck = Callable[[NodeCapture, NodeContext], list[Hit]]
Applies = Callable[[NodeContext], bool]
SkipWhen = Callable[[NodeContext], str | None]
ClusterCheck = Callable[[Mapping[str, NodeCapture], Mapping[str, NodeContext]], list[Hit]]


@dataclass(frozen=True)
class Check:
    name: str
    summary: str
    why: str
    source: str
    needs: tuple[str, ...]
    needs_plan: bool
    node_function: NodeCheck | None = None
    cluster_function: ClusterCheck | None = None
    applies: Applies | None = None
    """where it runs at all (the container checks: a contained engine); None: everywhere"""
    skip_when: SkipWhen | None = None
    """where it applies but cannot judge: the reason, said once as a skipped line for the
    cluster (the Ray check under the mp backend)"""

    def runs_for(self, context: NodeContext) -> bool:
        return self.applies is None or self.applies(context)


CHECKS: Registry[Check] = Registry("doctor check")
# output a check cannot read: `Unreadable` from the parsers, or a shape they let through
_UNREADABLE = (Unreadable, ValueError, KeyError, IndexError, TypeError)


def node_check(
    name: str,
    *,
    summary: str,
    why: str,
    source: str,
    needs: tuple[str, ...],
    needs_plan: bool = False,
    applies: Applies | None = None,
    skip_when: SkipWhen | None = None,
) -> Callable[[NodeCheck], NodeCheck]:
    def register(function: NodeCheck) -> NodeCheck:
        check = Check(
            name,
            summary,
            why,
            source,
            needs,
            needs_plan,
            node_function=function,
            applies=applies,
            skip_when=skip_when,
        )
        CHECKS.add(name, check)
        return function

    return register


def cluster_check(
    name: str,
    *,
    summary: str,
    why: str,
    source: str,
    needs: tuple[str, ...],
    applies: Applies | None = None,
) -> Callable[[ClusterCheck], ClusterCheck]:
    def register(function: ClusterCheck) -> ClusterCheck:
        check = Check(
            name, summary, why, source, needs, False, cluster_function=function, applies=applies
        )
        CHECKS.add(name, check)
        return function

    return register


def checks() -> list[Check]:
    """Every registered check (importing `sparkrig.doctor.checks` registers them)."""
    import sparkrig.doctor.checks  # noqa: F401, PLC0415 - registers; checks import this module

    return CHECKS.entries()


def _finding(check: Check, node: str, hit: Hit) -> DoctorFinding:
    return DoctorFinding(
        check=check.name,
        severity=hit.severity,
        node=hit.node or node,
        seen=hit.seen,
        why=check.why,
        source=check.source,
        fix=hit.fix,
    )


def _blocked(capture: NodeCapture, needs: tuple[str, ...]) -> str | None:
    """The reason a needed probe gave nothing, or None when all answered."""
    for probe in needs:
        output = capture.outputs.get(probe)
        if output is not None and output.skipped is not None:
            return output.skipped
    return None


def _unreachable(name: str, capture: NodeCapture) -> DoctorFinding:
    said, _, fix = str(capture.unreachable).partition(" — ")
    return DoctorFinding(
        check="node-reachable",
        severity="error",
        node=name,
        seen=f"no command ran through {capture.reached_by}: {said}",
        why="every other check of this node needs its tools' output, and every step of "
        "sparkrig reaches the node this way (ssh in batch mode: keys, no password prompt)",
        source="docs/doctor.md#what-each-node-needs",
        fix=fix or "reach the node by hand the same way (ssh, netns) and fix what stops it",
    )


class _Run:
    """One pass of the checks: findings, the skipped checks by (node, reason), checks run."""

    def __init__(self) -> None:
        self.findings: list[DoctorFinding] = []
        self.held: dict[tuple[str, str], list[str]] = {}
        self.ran = 0

    def node(self, check: Check, name: str, capture: NodeCapture, context: NodeContext) -> None:
        assert check.node_function is not None
        if (check.needs_plan and context.node_plan is None) or not check.runs_for(context):
            return
        if check.skip_when is not None and (reason := check.skip_when(context)) is not None:
            held = self.held.setdefault(("cluster", reason), [])
            if check.name not in held:
                held.append(check.name)
            return
        if any(probe not in capture.outputs for probe in check.needs):
            return  # not collected here (a fixture that holds other tools only)
        if (reason := _blocked(capture, check.needs)) is not None:
            self.held.setdefault((name, reason), []).append(check.name)
            return
        try:
            hits = check.node_function(capture, context)
        except _UNREADABLE as exc:
            reason = f"output unreadable: {exc} — run the tool by hand on the node"
            self.held.setdefault((name, reason), []).append(check.name)
            return
        self.ran += 1
        self.findings += [_finding(check, name, hit) for hit in hits]

    def cluster(
        self,
        check: Check,
        reachable: Mapping[str, NodeCapture],
        contexts: Mapping[str, NodeContext],
    ) -> None:
        assert check.cluster_function is not None
        collected = {
            n: c
            for n, c in reachable.items()
            if check.runs_for(contexts[n]) and all(p in c.outputs for p in check.needs)
        }
        usable = {n: c for n, c in collected.items() if _blocked(c, check.needs) is None}
        if len(collected) >= 2:
            # a node left out of a comparison is said, not silently passed over
            for name in [n for n in collected if n not in usable]:
                reason = _blocked(collected[name], check.needs)
                self.held.setdefault((name, str(reason)), []).append(check.name)
        if len(usable) < 2:
            return
        try:
            hits = check.cluster_function(usable, contexts)
        except _UNREADABLE as exc:
            self.held.setdefault(("cluster", f"output unreadable: {exc}"), []).append(check.name)
            return
        self.ran += 1
        self.findings += [_finding(check, "cluster", hit) for hit in hits]


def run_checks(
    captures: Mapping[str, NodeCapture],
    contexts: Mapping[str, NodeContext],
    *,
    cluster: str | None = None,
    only: list[str] | None = None,
) -> DoctorReport:
    run = _Run()
    reachable = {n: c for n, c in captures.items() if c.unreachable is None}
    run.findings += [_unreachable(n, c) for n, c in captures.items() if c.unreachable is not None]
    for check in checks():
        if only is not None and check.name not in only:
            continue
        if check.node_function is not None:
            for name, capture in reachable.items():
                run.node(check, name, capture, contexts[name])
        else:
            run.cluster(check, reachable, contexts)
    skipped = [
        Skipped(node=node, checks=names, reason=reason)
        for (node, reason), names in run.held.items()
    ]
    return DoctorReport(
        cluster=cluster,
        nodes=list(captures),
        findings=run.findings,
        skipped=skipped,
        checks_run=run.ran,
    )
