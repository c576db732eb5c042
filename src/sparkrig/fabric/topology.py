"""The cable graph: check the cabling, name the topology, walk the ring for the rank order.

Pure functions over a `Cluster`. Every error names the cause and the fix.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass

from sparkrig.config.cluster import Cable, Cluster, PortRef
from sparkrig.errors import CablingError


@dataclass(frozen=True)
class Topology:
    kind: str
    """single, pair-1-cable, pair-2-cables, triangle, ring-N, line-N, mesh-N or switched"""
    rank_order: tuple[str, ...]
    """node names; rank r is rank_order[r], following the cables from the head"""
    cable_order: tuple[int, ...]
    """indices into `cluster.cables`: cables in walk order, then the rest in file order"""
    neighbours: dict[str, tuple[str, ...]]
    """directly cabled nodes of each node (a switch makes every node a neighbour)"""
    closed: bool
    """whether every node's ring neighbours are cabled (pair, triangle, ring, mesh, switch)"""

    @property
    def is_ring(self) -> bool:
        return self.kind == "triangle" or self.kind.startswith("ring-")


def check_cabling(cluster: Cluster) -> None:
    """Unknown nodes or ports, self-loops and ports in two cables, in file order."""
    switch = cluster.switch.name if cluster.switch else None
    used: dict[tuple[str, str], Cable] = {}
    for cable in cluster.cables:
        # first: a cable from a port to itself would otherwise read as that port in two cables
        if cable.a.node == cable.b.node:
            what = f"port {cable.a}" if cable.a.port == cable.b.port else f"node {cable.a.node}"
            raise CablingError(
                f"cable '{cable}' is a self-loop: it joins {what} to itself — connect it to "
                "another node's port"
            )
        for end in (cable.a, cable.b):
            if end.node == switch:
                continue
            _check_port_exists(cluster, cable, end)
            key = (end.node, end.port)
            if key in used:
                raise CablingError(
                    f"port {end} is in two cables, '{used[key]}' and '{cable}' — a port takes "
                    "one cable; fix one of them"
                )
            used[key] = cable
        if switch is not None and switch not in (cable.a.node, cable.b.node):
            raise CablingError(
                f"cable '{cable}' bypasses switch {switch} — with a [switch], every cable "
                f"runs from a node port to {switch}.<port>"
            )


def _port_named(cluster: Cluster, end: PortRef) -> str:
    """`node.port` for a cable end written with one of the port's netdevs; else as written."""
    node = cluster.node(end.node)
    for port in node.ports if node is not None else []:
        if any(f.netdev == end.port for f in port.functions):
            return f"{end.node}.{port.name}"
    return str(end)


def _check_port_exists(cluster: Cluster, cable: Cable, end: PortRef) -> None:
    node = cluster.node(end.node)
    if node is None:
        known = ", ".join(n.name for n in cluster.nodes)
        raise CablingError(
            f"cable '{cable}' names node {end.node}, which is not in [[nodes]] — add it or use "
            f"one of {known}"
        )
    if node.port(end.port) is None:
        known = ", ".join(p.name for p in node.ports)
        owner = next(
            (p for p in node.ports if any(f.netdev == end.port for f in p.functions)), None
        )
        if owner is not None:  # the netdev a node shows, in place of the cage's name
            written = " <-> ".join(_port_named(cluster, e) for e in (cable.a, cable.b))
            raise CablingError(
                f"cable '{cable}' names {end.port}, the netdev of one function of port "
                f"{owner.name} on {end.node}: a cable names the cage, whose functions each get "
                f"their own subnet — write '{written}'"
            )
        raise CablingError(
            f"cable '{cable}' names port {end.port}, which node {end.node} does not have — use "
            f"one of {known} or add the port to the node"
        )


def topology_of(cluster: Cluster) -> Topology:
    """The cluster's topology class, rank order and cable walk, after checking the cabling."""
    check_cabling(cluster)
    names = [n.name for n in cluster.nodes]
    if cluster.switch is not None:
        return _switched(cluster, names)
    neighbours = _neighbour_sets(cluster)
    _check_connected(cluster, neighbours)
    kind = _classify(names, neighbours, len(cluster.cables))
    order = _rank_order(cluster, kind, neighbours)
    cable_order = _cable_walk_order(cluster, order, kind)
    closed = not kind.startswith("line-")
    return Topology(
        kind=kind,
        rank_order=tuple(order),
        cable_order=tuple(cable_order),
        neighbours={name: tuple(sorted(neighbours[name])) for name in names},
        closed=closed,
    )


def _neighbour_sets(cluster: Cluster) -> dict[str, set[str]]:
    neighbours: dict[str, set[str]] = {n.name: set() for n in cluster.nodes}
    for cable in cluster.cables:
        neighbours[cable.a.node].add(cable.b.node)
        neighbours[cable.b.node].add(cable.a.node)
    return neighbours


def _check_connected(cluster: Cluster, neighbours: dict[str, set[str]]) -> None:
    head = cluster.head
    seen = {head}
    queue = deque([head])
    while queue:
        for other in neighbours[queue.popleft()]:
            if other not in seen:
                seen.add(other)
                queue.append(other)
    cut_off = [n.name for n in cluster.nodes if n.name not in seen]
    if cut_off:
        raise CablingError(
            f"node{'s' if len(cut_off) > 1 else ''} {', '.join(cut_off)} "
            f"{'have' if len(cut_off) > 1 else 'has'} no cable path to {head} — cable "
            f"{'them' if len(cut_off) > 1 else 'it'} to the rest or remove "
            f"{'them' if len(cut_off) > 1 else 'it'} from [[nodes]]"
        )


def _classify(names: list[str], neighbours: dict[str, set[str]], cable_count: int) -> str:
    count = len(names)
    degrees = [len(neighbours[name]) for name in names]
    if count == 1:
        return "single"
    if count == 2:
        return "pair-1-cable" if cable_count == 1 else f"pair-{cable_count}-cables"
    if all(d == 2 for d in degrees):
        return "triangle" if count == 3 else f"ring-{count}"
    if all(d == count - 1 for d in degrees):
        return f"mesh-{count}"
    if sorted(degrees) == [1, 1] + [2] * (count - 2):
        return f"line-{count}"
    busiest = max(names, key=lambda name: len(neighbours[name]))
    raise CablingError(
        f"the cables form no ring, line or full mesh ({busiest} has "
        f"{len(neighbours[busiest])} neighbours) — cable the nodes in a ring "
        "(port 0 of each node to port 1 of the next, closing the loop)"
    )


def _rank_order(cluster: Cluster, kind: str, neighbours: dict[str, set[str]]) -> list[str]:
    names = [n.name for n in cluster.nodes]
    head = cluster.head
    if kind.startswith("mesh-"):
        return [head] + [name for name in names if name != head]
    if kind.startswith("line-"):
        ends = [name for name in names if len(neighbours[name]) == 1]
        start = head if head in ends else ends[0]
    else:
        start = head
    order = [start]
    current = start
    while len(order) < len(names):
        step = _next_along_cables(cluster, current, set(order))
        if step is None:
            break
        current = step
        order.append(current)
    return order


def _next_along_cables(cluster: Cluster, current: str, visited: set[str]) -> str | None:
    """Leave `current` by its first port (in the node's port order) whose cable leads to a node
    not yet visited: the head's first cabled port decides the ring's direction."""
    node = cluster.node(current)
    assert node is not None
    for port in node.ports:
        for cable in cluster.cables:
            for mine, theirs in ((cable.a, cable.b), (cable.b, cable.a)):
                if mine == PortRef(node=current, port=port.name) and theirs.node not in visited:
                    return theirs.node
    return None


def _cable_walk_order(cluster: Cluster, order: list[str], kind: str) -> list[int]:
    hops = list(itertools.pairwise(order))
    if kind == "triangle" or kind.startswith("ring-"):
        hops.append((order[-1], order[0]))
    walked: list[int] = []
    for left, right in hops:
        for index, cable in enumerate(cluster.cables):
            if index not in walked and {cable.a.node, cable.b.node} == {left, right}:
                walked.append(index)
                break
    return walked + [i for i in range(len(cluster.cables)) if i not in walked]


def _switched(cluster: Cluster, names: list[str]) -> Topology:
    cabled = {end.node for cable in cluster.cables for end in (cable.a, cable.b)}
    missing = [name for name in names if name not in cabled]
    if missing:
        raise CablingError(
            f"node{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"{'have' if len(missing) > 1 else 'has'} no cable to the switch — add "
            f"'{missing[0]}.p0 <-> {cluster.switch.name if cluster.switch else 'switch'}.port1'"
        )
    head = cluster.head
    order = [head] + [name for name in names if name != head]
    return Topology(
        kind="switched",
        rank_order=tuple(order),
        cable_order=tuple(range(len(cluster.cables))),
        neighbours={name: tuple(n for n in names if n != name) for name in names},
        closed=True,
    )


def check_tensor_parallel(topology: Topology, size: int | None) -> tuple[str, ...]:
    """The tensor-parallel group: the first `size` ranks, which must close a collective on
    these cables. Without a size, every node when the cables close one, else none."""
    order = topology.rank_order
    if size is None:
        return order if topology.closed else ()
    if size > len(order):
        raise CablingError(
            f"tensor_parallel_size {size} needs {size} nodes but the cluster has {len(order)} "
            f"— lower fabric.tensor_parallel_size to {len(order)} or fewer, or add nodes"
        )
    group = order[:size]
    if size <= 1:
        return group
    for left, right in itertools.pairwise(group):
        if right not in topology.neighbours[left]:  # only on lines; walks follow cables
            raise CablingError(
                f"ranks {left} and {right} have no cable — tensor parallelism needs "
                "neighbouring ranks cabled"
            )
    if size >= 3 and group[0] not in topology.neighbours[group[-1]]:
        raise CablingError(
            f"nodes {','.join(group)} form a line, not a closed collective: {group[-1]} has no "
            f"cable to {group[0]} — use fabric.tensor_parallel_size {len(order)} (every node) "
            f"{'or 2 ' if len(order) > 2 else ''}on these cables, or recable the {size} nodes "
            "as a closed ring"
        )
    return group
