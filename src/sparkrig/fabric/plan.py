"""The planner: a `Cluster` in, a `FabricPlan` out. Pure; nothing here touches a host."""

from __future__ import annotations

import ipaddress

from sparkrig.config.cluster import Cluster
from sparkrig.errors import CablingError
from sparkrig.fabric.addressing import (
    fabric_control_address,
    plan_cables,
    rail_ends_of,
    relay_routes_for,
)
from sparkrig.fabric.graph_xml import ring_graph_xml
from sparkrig.fabric.nccl_env import graph_file_path, node_env
from sparkrig.fabric.plan_model import CablePlan, FabricPlan, InterfacePlan, NodePlan, Route
from sparkrig.fabric.topology import Topology, check_tensor_parallel, topology_of

LOOPBACK = ipaddress.IPv4Address("127.0.0.1")


def plan_fabric(cluster: Cluster, tensor_parallel_size: int | None = None) -> FabricPlan:
    """`tensor_parallel_size` overrides the file's `fabric.tensor_parallel_size`."""
    topology = topology_of(cluster)
    size = tensor_parallel_size or cluster.fabric.tensor_parallel_size
    group = check_tensor_parallel(topology, size)
    cables = plan_cables(cluster, topology)
    control_plane, control = _control_addresses(cluster, topology, cables)
    forwarding_nodes: set[str] = set()
    routes_by_node: dict[str, list[Route]] = {}
    for name in topology.rank_order:
        routes = []
        if control_plane == "fabric":
            routes = relay_routes_for(
                name, topology, cables, {n: a for n, (a, _) in control.items()}
            )
        routes_by_node[name] = routes
        for route in routes:
            forwarding_nodes.update(route.relays)
    nodes = [
        _plan_node(
            cluster,
            topology=topology,
            cables=cables,
            name=name,
            control=control,
            routes_by_node=routes_by_node,
            forwarding_nodes=forwarding_nodes,
        )
        for name in topology.rank_order
    ]
    warnings = []
    if not topology.closed:
        warnings.append(
            f"{topology.kind}: the ends have no cable, so only 2 neighbouring nodes can form a "
            "tensor-parallel group; TCP control still reaches every node through relays"
        )
    return FabricPlan(
        cluster=cluster.name or "cluster",
        topology=topology.kind,
        rank_order=list(topology.rank_order),
        tensor_parallel=list(group),
        control_plane=control_plane,
        mtu=cluster.fabric.mtu,
        subnet_pool=cluster.fabric.subnet_pool,
        cables=cables,
        nodes=nodes,
        warnings=warnings,
    )


def _control_addresses(
    cluster: Cluster, topology: Topology, cables: list[CablePlan]
) -> tuple[str, dict[str, tuple[ipaddress.IPv4Address, str]]]:
    with_lan = [n.name for n in cluster.nodes if n.management is not None]
    if with_lan and len(with_lan) < len(cluster.nodes):
        without = [n.name for n in cluster.nodes if n.management is None]
        raise CablingError(
            f"nodes {', '.join(with_lan)} have a management address but "
            f"{', '.join(without)} not — give every node one (TCP control then uses the "
            "management LAN) or none (TCP control relays over the fabric)"
        )
    if with_lan:
        return "management", {
            n.name: (n.management.ip, n.control_interface_default)
            for n in cluster.nodes
            if n.management is not None
        }
    order = topology.rank_order
    control = {}
    for rank, name in enumerate(order):
        following = order[(rank + 1) % len(order)] if len(order) > 1 else None
        end = fabric_control_address(cables, name, following)
        control[name] = (end.address.ip, end.netdev) if end else (LOOPBACK, "lo")
    return "fabric", control


def _plan_node(
    cluster: Cluster,
    *,
    topology: Topology,
    cables: list[CablePlan],
    name: str,
    control: dict[str, tuple[ipaddress.IPv4Address, str]],
    routes_by_node: dict[str, list[Route]],
    forwarding_nodes: set[str],
) -> NodePlan:
    order = topology.rank_order
    rank = order.index(name)
    ring = topology.is_ring
    prev = order[rank - 1] if rank > 0 or (ring and len(order) > 1) else None
    following = order[(rank + 1) % len(order)] if rank + 1 < len(order) or ring else None
    interfaces = []
    for _, rail, end in rail_ends_of(cables, name):
        peer = next(
            (e.node for e in rail.ends if e.node != name),
            cluster.switch.name if cluster.switch else "",
        )
        interfaces.append(
            InterfacePlan(
                netdev=end.netdev,
                rdma=end.rdma,
                address=end.address,
                mtu=cluster.fabric.mtu,
                port=end.port,
                root=rail.root,
                peer=peer,
            )
        )
    graph_xml = graph_file = None
    if cluster.fabric.nccl_graph and ring and len(order) >= 4:
        hcas = list(dict.fromkeys(i.rdma for i in interfaces))
        prev_devices = [i.rdma for i in interfaces if i.peer == prev]
        next_devices = [i.rdma for i in interfaces if i.peer == following]
        graph_xml = ring_graph_xml(hcas, prev_devices, next_devices)
        graph_file = graph_file_path(cluster.fabric.node_dir, name)
    address, interface = control[name]
    env = node_env(
        interfaces=interfaces,
        control_address=str(address),
        control_interface=interface,
        ring_size=len(order) if ring else None,
        merge_nics=cluster.fabric.nccl_merge_nics,
        graph_file=graph_file,
    )
    return NodePlan(
        node=name,
        rank=rank,
        prev=prev,
        next=following,
        control_address=address,
        control_interface=interface,
        interfaces=interfaces,
        routes=routes_by_node[name],
        forwarding=name in forwarding_nodes,
        env=env,
        nccl_graph_xml=graph_xml,
    )
