"""Which executor reaches which node: one pure function from a cluster file and the command
line's executor options to an `ExecutorSpec` per node. Every command that reaches nodes (fabric
apply / discover / test, doctor, bench and check telemetry, up) asks here, with or without a
cluster file; nothing is run.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from sparkrig.config.cluster import Cluster, Node
from sparkrig.config.serving import ExecutorSettings
from sparkrig.errors import ConfigError, UsageError
from sparkrig.fabric.runner import ExecutorSpec


@dataclass(frozen=True)
class ExecutorChoice:
    """The command line's say in how nodes are reached. `kind=None`: the cluster file decides
    (each node's `executor`, else the file's `[executor]`)."""

    kind: str | None = None
    netns: tuple[str, ...] = field(default=())
    """`NODE=NAMESPACE` pairs (`--netns`)"""
    netns_prefix: str | None = None
    """namespace = prefix + node name (`--netns-prefix`)"""
    node: str | None = None
    """the node this machine is, for the local executor (`--node`)"""
    loopback: bool = False
    """the local executor stands for every node of the file, each run here on 127.0.0.1 (the
    fabric test's rehearsal of a cluster on one machine), not for the one node this machine is"""
    this_machine: str = "local"
    """the name of the one node reached when there is no cluster file (doctor: the host name);
    `node` wins over it"""
    no_executor_fix: str = (
        "give it one (ssh), pass --executor ssh or netns, or check only this machine as one node "
        "with --node NAME"
    )
    """what to do when neither the file nor the command line names an executor (each command
    has its own ways out)"""


def resolve_executors(cluster: Cluster | None, choice: ExecutorChoice) -> dict[str, ExecutorSpec]:
    """The executor of each node reached. The local executor reaches one node (this machine),
    or every node with `loopback`; netns and ssh reach every node. Without a kind, the file's
    executors are used, and a file that names none is one local node. Without a cluster file,
    this machine is the one node, reached locally (the executor options then have no nodes to
    reach, and are not read)."""
    if cluster is None:
        return {choice.node or choice.this_machine: ExecutorSpec(kind="local")}
    if choice.kind is None:
        if choice.netns or choice.netns_prefix is not None:
            return _named(cluster, "netns", choice)
        if all(cluster.executor_of(n) is None for n in cluster.nodes):
            if choice.node is None and len(cluster.nodes) > 1:
                raise UsageError(f"the cluster file has no [executor] — {choice.no_executor_fix}")
            return _named(cluster, "local", choice)
        return {n.name: executor_spec(cluster, n) for n in cluster.nodes}
    return _named(cluster, choice.kind, choice)


def every_node_here(specs: Mapping[str, ExecutorSpec]) -> bool:
    """Every node reached by the local executor: all of them are processes of this machine, so
    no cable lies between them (the fabric test's rehearsal on loopback)."""
    return bool(specs) and all(spec.kind == "local" for spec in specs.values())


def node_python(spec: ExecutorSpec) -> str:
    """The python that runs sparkrig's probes and workers on a node: this interpreter where the
    node is this machine (local, or a namespace of it), `python3` on an ssh node's PATH, unless
    the cluster file's [executor] table names its `python`."""
    if spec.python is not None:
        return spec.python
    return "python3" if spec.kind == "ssh" else sys.executable


def _named(cluster: Cluster, kind: str, choice: ExecutorChoice) -> dict[str, ExecutorSpec]:
    names = [n.name for n in cluster.nodes]
    if kind == "local" and choice.loopback:
        return {name: ExecutorSpec(kind="local") for name in names}
    if kind == "local":
        return _local(names, choice.node)
    if kind == "netns":
        return _netns(names, choice.netns, choice.netns_prefix)
    if kind == "ssh":
        return {n.name: _ssh_spec(cluster, n) for n in cluster.nodes}
    raise UsageError(f"--executor {kind} is not known — use local, netns or ssh")


def _ssh_spec(cluster: Cluster, node: Node) -> ExecutorSpec:
    """`--executor ssh` on a node the file already reaches over ssh keeps the file's settings
    (its ssh_config, connect timeout, python); otherwise the node's `ssh` or management address."""
    settings = cluster.executor_of(node)
    if settings is not None and settings.kind == "ssh":
        return executor_spec(cluster, node)
    return ExecutorSpec(kind="ssh", target=_ssh_destination(node))


def _local(names: list[str], node: str | None) -> dict[str, ExecutorSpec]:
    if node is None and len(names) > 1:
        raise UsageError(
            "the local executor changes only this machine — name it with --node "
            f"(one of {', '.join(names)}), or use --executor ssh / netns for all nodes"
        )
    chosen = node or names[0]
    if chosen not in names:
        raise UsageError(f"--node {chosen} is not a node — use one of {', '.join(names)}")
    return {chosen: ExecutorSpec(kind="local")}


def _netns(names: list[str], pairs: tuple[str, ...], prefix: str | None) -> dict[str, ExecutorSpec]:
    mapping: dict[str, str] = {}
    for item in pairs:
        name, equals, namespace = item.partition("=")
        if not equals or name not in names or not namespace:
            raise UsageError(
                f"--netns {item!r} is not NODE=NAMESPACE for a known node — write e.g. "
                f"--netns {names[0]}=ns-{names[0]}"
            )
        mapping[name] = namespace
    for name in names:
        if name not in mapping:
            if prefix is None:
                raise UsageError(
                    f"node {name} has no namespace — add --netns {name}=NAME or "
                    "--netns-prefix PREFIX"
                )
            mapping[name] = prefix + name
    return {name: ExecutorSpec(kind="netns", target=mapping[name]) for name in names}


def _ssh_destination(node: Node) -> str:
    destination = node.ssh or (str(node.management.ip) if node.management else None)
    if destination is None:
        raise UsageError(
            f"node {node.name} has no ssh destination — add `ssh = "
            '"user@host"` or a management address to it'
        )
    return destination


def executor_spec(cluster: Cluster, node: Node) -> ExecutorSpec:
    """The executor the cluster file gives one node (its own, else the file's `[executor]`)."""
    settings = cluster.executor_of(node)
    if settings is None:
        raise ConfigError(
            f'node {node.name} has no executor — add `executor = {{ kind = "ssh" }}` (or '
            "local / netns) to it, or an [executor] table for every node"
        )
    return ExecutorSpec(
        kind=settings.kind,
        target=_target(node, settings),
        connect_timeout_s=settings.connect_timeout_s if settings.kind == "ssh" else None,
        ssh_config=settings.ssh_config if settings.kind == "ssh" else None,
        python=settings.python,
    )


def _target(node: Node, settings: ExecutorSettings) -> str | None:
    if settings.kind == "local":
        return None
    if settings.kind == "netns":
        if settings.target is None:
            raise ConfigError(
                f"node {node.name}: the netns executor needs a namespace — add "
                f'`executor = {{ kind = "netns", target = "NAME" }}`'
            )
        return settings.target
    target = settings.target or node.ssh or (str(node.management.ip) if node.management else None)
    if target is None:
        raise ConfigError(
            f"node {node.name}: the ssh executor has no destination — set executor.target, the "
            "node's `ssh` field, or its management address"
        )
    return target
