"""What a fabric plan holds: ranks, cables with their subnets, per-node interfaces, routes and
environment. Versioned pydantic models, so `--json` and the journal never hand-build dicts."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, field_serializer

from sparkrig.frozen_model import FrozenModel
from sparkrig.secret_names import HIDDEN, is_secret_name


class RailEnd(FrozenModel):
    node: str
    port: str
    netdev: str
    rdma: str
    address: ipaddress.IPv4Interface


class Rail(FrozenModel):
    """One PCIe function's link on a cable: its own subnet, one address per end."""

    root: int = Field(description="0 for the port's first function (root A), 1 for the second")
    subnet: ipaddress.IPv4Network
    ends: list[RailEnd]


class CablePlan(FrozenModel):
    index: int = Field(description="position in the plan: ring order first, then file order")
    label: str = Field(description="the cable as the file writes it")
    rails: list[Rail]


class InterfacePlan(FrozenModel):
    netdev: str
    rdma: str
    address: ipaddress.IPv4Interface
    mtu: int
    port: str
    root: int
    peer: str = Field(description="node at the other end")


class Route(FrozenModel):
    """A host route to another node's control address, when no shared subnet reaches it."""

    node: str = Field(description="node the route is installed on")
    target: str = Field(description="node whose control address it reaches")
    destination: ipaddress.IPv4Address
    via: ipaddress.IPv4Address
    dev: str
    src: ipaddress.IPv4Address
    path: list[str] = Field(description="nodes from `node` to `target`; relays in between")

    @property
    def relays(self) -> list[str]:
        return self.path[1:-1]


class EnvVar(FrozenModel):
    """One variable of a process's environment. A secret's value (by its name: HF_TOKEN,
    VLLM_API_KEY) is the real one in memory, for the process, and hidden wherever the model is
    written out: the plan's JSON, the launch state."""

    name: str
    value: str
    reason: str = Field(description="why, with the field report that shows it")

    @property
    def shown_value(self) -> str:
        return HIDDEN if is_secret_name(self.name) else self.value

    @field_serializer("value")
    def _written(self, value: str) -> str:
        return self.shown_value


class NodePlan(FrozenModel):
    node: str
    rank: int
    prev: str | None = Field(description="previous rank's node in cable order")
    next: str | None = Field(description="next rank's node in cable order")
    control_address: ipaddress.IPv4Address
    control_interface: str
    interfaces: list[InterfacePlan]
    routes: list[Route]
    forwarding: bool = Field(description="relays TCP control for non-neighbours")
    env: list[EnvVar]
    nccl_graph_xml: str | None = None

    @property
    def node_files(self) -> dict[str, str]:
        """Path -> text of every file on the node that a rank reads: the NCCL graph XML, at the
        path NCCL_GRAPH_FILE names. `fabric apply` writes them, doctor compares them, a
        container binds them."""
        path = next((var.value for var in self.env if var.name == "NCCL_GRAPH_FILE"), None)
        if path is None or self.nccl_graph_xml is None:
            return {}
        return {path: self.nccl_graph_xml}


class FabricPlan(FrozenModel):
    version: Literal[1] = 1
    cluster: str
    topology: str
    rank_order: list[str]
    tensor_parallel: list[str] = Field(description="nodes of the tensor-parallel group")
    control_plane: Literal["fabric", "management"]
    mtu: int
    subnet_pool: ipaddress.IPv4Network
    cables: list[CablePlan]
    nodes: list[NodePlan]
    warnings: list[str] = Field(default_factory=list)

    def node(self, name: str) -> NodePlan:
        return next(n for n in self.nodes if n.node == name)

    @property
    def routes(self) -> list[Route]:
        return [route for node in self.nodes for route in node.routes]
