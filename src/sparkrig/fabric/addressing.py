"""Subnets per cable, host addresses per end, control addresses and relay routes.

Each cable carries one /24 per PCIe function (root), so NCCL's subnet-aware routing can tell
which device faces which peer (docs/field-notes.md#nccl-subnet-aware-routing). TCP control
between nodes without a cable goes through static host routes via the next neighbour; the RoCE
data plane is never routed.
"""

from __future__ import annotations

import ipaddress
from collections import deque
from collections.abc import Iterator

from sparkrig import defaults
from sparkrig.config.cluster import Cable, Cluster, PortRef
from sparkrig.errors import CablingError
from sparkrig.fabric.plan_model import CablePlan, Rail, RailEnd, Route
from sparkrig.fabric.topology import Topology


def subnets_from_pool(cluster: Cluster, needed: int) -> list[ipaddress.IPv4Network]:
    """The first `needed` subnets of the pool, after checking it overlaps no management LAN."""
    pool = cluster.fabric.subnet_pool
    for node in cluster.nodes:
        if node.management is not None and node.management.network.overlaps(pool):
            raise CablingError(
                f"subnet pool {pool} overlaps the management network {node.management.network} "
                f"of node {node.name} — set fabric.subnet_pool to a range outside it, e.g. "
                f"{defaults.FABRIC_SUBNET_POOL}"
            )
    prefix = defaults.FABRIC_SUBNET_PREFIX
    available = 2 ** (prefix - pool.prefixlen)
    if needed > available:
        raise CablingError(
            f"subnet pool {pool} holds {available} /{prefix} subnets but the cables need "
            f"{needed} — set fabric.subnet_pool to a larger range, e.g. "
            f"{defaults.FABRIC_SUBNET_POOL}"
        )
    subnets = pool.subnets(new_prefix=prefix)
    return [next(subnets) for _ in range(needed)]


def _host(subnet: ipaddress.IPv4Network, number: int) -> ipaddress.IPv4Interface:
    return ipaddress.IPv4Interface(f"{subnet.network_address + number}/{subnet.prefixlen}")


def plan_cables(cluster: Cluster, topology: Topology) -> list[CablePlan]:
    if topology.kind == "switched":
        return _plan_switched(cluster, topology)
    rank = {name: r for r, name in enumerate(topology.rank_order)}
    cables = [cluster.cables[i] for i in topology.cable_order]
    width = max((_function_count(cluster, c) for c in cables), default=0)
    subnets = subnets_from_pool(cluster, len(cables) * max(width, 2))
    plans = []
    for index, cable in enumerate(cables):
        low, high = sorted((cable.a, cable.b), key=lambda end: rank[end.node])
        rails = []
        for root in range(_function_count(cluster, cable)):
            subnet = subnets[index * max(width, 2) + root]
            ends = [
                _rail_end(cluster, end, root, _host(subnet, host))
                for host, end in ((1, low), (2, high))
            ]
            rails.append(Rail(root=root, subnet=subnet, ends=ends))
        plans.append(CablePlan(index=index, label=str(cable), rails=rails))
    return plans


def _function_count(cluster: Cluster, cable: Cable) -> int:
    """Rails on a cable: the functions both ends have (a 1-function port limits it to one)."""
    counts = []
    for end in (cable.a, cable.b):
        node = cluster.node(end.node)
        port = node.port(end.port) if node else None
        if port is not None:
            counts.append(len(port.functions))
    return min(counts)


def _rail_end(
    cluster: Cluster, end: PortRef, root: int, address: ipaddress.IPv4Interface
) -> RailEnd:
    node = cluster.node(end.node)
    port = node.port(end.port) if node else None
    assert port is not None  # check_cabling ran first
    function = port.functions[root]
    return RailEnd(
        node=end.node, port=end.port, netdev=function.netdev, rdma=function.rdma, address=address
    )


def _plan_switched(cluster: Cluster, topology: Topology) -> list[CablePlan]:
    """Behind a switch every node shares one subnet per (plane, root); plane k is each node's
    k-th cable to the switch. Host number = rank + 1."""
    switch = cluster.switch.name if cluster.switch else ""
    plane_of: list[int] = []
    seen: dict[str, int] = {}
    for cable in cluster.cables:
        end = cable.a if cable.b.node == switch else cable.b
        plane_of.append(seen.get(end.node, 0))
        seen[end.node] = plane_of[-1] + 1
    planes = max(plane_of, default=-1) + 1
    subnets = subnets_from_pool(cluster, planes * 2)
    rank = {name: r for r, name in enumerate(topology.rank_order)}
    plans = []
    for index, cable in enumerate(cluster.cables):
        end = cable.a if cable.b.node == switch else cable.b
        node = cluster.node(end.node)
        port = node.port(end.port) if node else None
        assert port is not None
        rails = []
        for root in range(len(port.functions)):
            subnet = subnets[plane_of[index] * 2 + root]
            address = _host(subnet, rank[end.node] + 1)
            rails.append(
                Rail(root=root, subnet=subnet, ends=[_rail_end(cluster, end, root, address)])
            )
        plans.append(CablePlan(index=index, label=str(cable), rails=rails))
    return plans


def rail_ends_of(cables: list[CablePlan], node: str) -> Iterator[tuple[CablePlan, Rail, RailEnd]]:
    for cable in cables:
        for rail in cable.rails:
            for end in rail.ends:
                if end.node == node:
                    yield cable, rail, end


def _peer_end(rail: Rail, node: str) -> RailEnd | None:
    return next((end for end in rail.ends if end.node != node), None)


def fabric_control_address(
    cables: list[CablePlan], node: str, next_node: str | None
) -> RailEnd | None:
    """A node's control address on the fabric: root A of its cable to the next rank, else of
    its first cable."""
    first: RailEnd | None = None
    for _, rail, end in rail_ends_of(cables, node):
        if rail.root != 0:
            continue
        peer = _peer_end(rail, node)
        if next_node is not None and peer is not None and peer.node == next_node:
            return end
        first = first or end
    return first


def _canonical_path(topology: Topology, start: str, goal: str) -> list[str]:
    """Shortest cable path; among equals the one leaving towards the next rank. Computed from
    the lower rank and reversed for the other direction, so both directions use the same
    relay (strict reverse-path filters stay happy)."""
    order = topology.rank_order
    rank = {name: r for r, name in enumerate(order)}
    if rank[start] > rank[goal]:
        return list(reversed(_canonical_path(topology, goal, start)))
    came_from: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        if current == goal:
            break
        ahead = sorted(
            topology.neighbours[current],
            key=lambda other: (rank[other] - rank[current]) % len(order),
        )
        for other in ahead:
            if other not in came_from:
                came_from[other] = current
                queue.append(other)
    path = [goal]
    while (step := came_from[path[-1]]) is not None:
        path.append(step)
    return list(reversed(path))


def relay_routes_for(
    node: str,
    topology: Topology,
    cables: list[CablePlan],
    control: dict[str, ipaddress.IPv4Address],
) -> list[Route]:
    """Host routes from `node` to every control address no shared subnet reaches."""
    own_subnets = [rail.subnet for _, rail, _ in rail_ends_of(cables, node)]
    routes = []
    for target in topology.rank_order:
        destination = control[target]
        if target == node or any(destination in subnet for subnet in own_subnets):
            continue
        path = _canonical_path(topology, node, target)
        hop = path[1]
        for _, rail, end in rail_ends_of(cables, node):
            peer = _peer_end(rail, node)
            if rail.root == 0 and peer is not None and peer.node == hop:
                routes.append(
                    Route(
                        node=node,
                        target=target,
                        destination=destination,
                        via=peer.address.ip,
                        dev=end.netdev,
                        src=control[node],
                        path=path,
                    )
                )
                break
    return routes
