"""The cluster file's models: nodes, their ports, the cables between ports, fabric settings.

These models check what one value or one table can say on its own (names, ranges, duplicates
inside a node). Whether the cables form a usable fabric is the planner's job
(`sparkrig.fabric.topology`), because that needs the whole graph.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Self

from pydantic import Field, field_validator, model_validator

from sparkrig import defaults
from sparkrig.config.serving import (
    EngineSettings,
    EnvName,
    ExecutorSettings,
    ModelSettings,
    RecipeInfo,
    ServingProfile,
)
from sparkrig.frozen_model import FrozenModel

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
_CABLE_SPLIT = re.compile(r"\s*(?:<->|↔)\s*")

Name = Annotated[str, Field(pattern=NAME_PATTERN, max_length=63)]
# Linux caps interface names at 15 bytes (IFNAMSIZ minus the terminating NUL).
Netdev = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=15)]


class PortFunction(FrozenModel):
    """One PCIe function behind a QSFP port: the netdev that carries IP and its RDMA device."""

    netdev: Netdev = Field(description="Linux network interface of this function")
    rdma: Name = Field(description="RDMA device of this function (for NCCL_IB_HCA)")


class Port(FrozenModel):
    """A QSFP cage. On a DGX Spark each cage is two PCIe functions on two roots."""

    name: Name = Field(description="port name used in cables, e.g. p0")
    functions: list[PortFunction] = Field(
        min_length=1,
        max_length=2,
        description="the port's PCIe functions, root A first; each gets its own subnet per cable",
    )


def dgx_spark_ports() -> list[Port]:
    return [
        Port(
            name=name,
            functions=[PortFunction(netdev=netdev, rdma=rdma) for netdev, rdma in functions],
        )
        for name, functions in defaults.DGX_SPARK_PORTS.items()
    ]


class Node(FrozenModel):
    """One box. Without `ports` it gets a DGX Spark's two cages (p0, p1)."""

    name: Name = Field(description="node name used in cables and in the plan")
    management: ipaddress.IPv4Interface | None = Field(
        default=None,
        description="address/prefix on the management LAN; when every node has one, TCP "
        "control (NCCL bootstrap, Gloo, vLLM) runs there instead of relaying over the fabric",
    )
    management_interface: Netdev | None = Field(
        default=None,
        description="interface holding the management address (default: the DGX Spark's "
        f"{defaults.DGX_SPARK_MANAGEMENT_INTERFACE})",
    )
    ssh: str | None = Field(
        default=None, description="ssh destination for the ssh executor (default: management IP)"
    )
    ports: list[Port] = Field(default_factory=dgx_spark_ports, description="the node's cable ports")
    executor: ExecutorSettings | None = Field(
        default=None, description="how sparkrig reaches the node (default: the file's [executor])"
    )
    env: dict[EnvName, str] = Field(
        default_factory=dict, description="environment for this node only; wins over [env]"
    )

    @model_validator(mode="after")
    def _unique_ports_and_netdevs(self) -> Self:
        _no_duplicates([p.name for p in self.ports], f"node {self.name} has port", "rename one")
        netdevs = [f.netdev for p in self.ports for f in p.functions]
        _no_duplicates(netdevs, f"node {self.name} lists netdev", "each function has its own")
        rdmas = [f.rdma for p in self.ports for f in p.functions]
        _no_duplicates(rdmas, f"node {self.name} lists RDMA device", "each function has its own")
        return self

    @property
    def control_interface_default(self) -> str:
        return self.management_interface or defaults.DGX_SPARK_MANAGEMENT_INTERFACE

    def port(self, name: str) -> Port | None:
        return next((p for p in self.ports if p.name == name), None)


class PortRef(FrozenModel):
    node: str
    port: str

    def __str__(self) -> str:
        return f"{self.node}.{self.port}"


class Cable(FrozenModel):
    """A direct cable between two ports, written `nodeA.port <-> nodeB.port` in the file."""

    a: PortRef
    b: PortRef

    def __str__(self) -> str:
        return f"{self.a} <-> {self.b}"

    @classmethod
    def parse(cls, text: str) -> Cable:
        ends = _CABLE_SPLIT.split(text.strip())
        if len(ends) != 2:
            raise ValueError(
                f"cable {text!r} is not `node.port <-> node.port` — write e.g. "
                "'spark1.p0 <-> spark2.p1'"
            )
        refs = []
        for end in ends:
            node, dot, port = end.partition(".")
            if not dot or not re.match(NAME_PATTERN, node) or not re.match(NAME_PATTERN, port):
                raise ValueError(
                    f"cable end {end!r} in {text!r} is not `node.port` — write e.g. 'spark1.p0'"
                )
            refs.append(PortRef(node=node, port=port))
        return cls(a=refs[0], b=refs[1])


class Switch(FrozenModel):
    """A switch in the data path. Cables to it name it like a node: `sw.port1`."""

    name: Name = Field(description="switch name used in cables")


class FabricSettings(FrozenModel):
    subnet_pool: ipaddress.IPv4Network = Field(
        default=ipaddress.IPv4Network(defaults.FABRIC_SUBNET_POOL),
        description="pool the per-cable /24 subnets are drawn from, two per cable",
    )
    mtu: int = Field(default=defaults.FABRIC_MTU, description="MTU of every fabric interface")
    head: Name | None = Field(
        default=None, description="rank 0 and master address (default: the first node)"
    )
    tensor_parallel_size: int | None = Field(
        default=None,
        ge=1,
        description="nodes in the tensor-parallel group, counted from the head in cable order "
        "(default: every node when the cables close a collective)",
    )
    nccl_graph: bool = Field(
        default=True,
        description="write an NCCL ring graph XML per rank on rings of 4 or more nodes",
    )
    nccl_merge_nics: bool = Field(
        default=False,
        description="NCCL_IB_MERGE_NICS: 0 keeps each PCIe function a separate NIC so "
        "subnet-aware routing can pick the one facing the peer",
    )
    node_dir: str = Field(
        default=defaults.FABRIC_NODE_DIR,
        max_length=4096,
        description="folder on every node for the files its ranks read (the NCCL graph XML); "
        "`fabric apply` writes them there",
    )

    @field_validator("mtu")
    @classmethod
    def _mtu_in_range(cls, mtu: int) -> int:
        low, high = defaults.FABRIC_MTU_MIN, defaults.FABRIC_MTU_MAX
        if not low <= mtu <= high:
            raise ValueError(
                f"mtu {mtu} is out of range {low}–{high} — use {defaults.FABRIC_MTU} "
                "(jumbo frames, docs/field-notes.md#triangle-management-lan) or a value in "
                "that range"
            )
        return mtu

    @field_validator("node_dir")
    @classmethod
    def _node_dir_absolute(cls, node_dir: str) -> str:
        # a comma would split the container runtime's `--mount source=…,target=…` option
        if not node_dir.startswith("/") or "," in node_dir:
            raise ValueError(
                f"node_dir {node_dir!r} is not an absolute path without commas — write one "
                f"such as {defaults.FABRIC_NODE_DIR!r}"
            )
        return node_dir.rstrip("/") or "/"

    @field_validator("subnet_pool")
    @classmethod
    def _pool_holds_subnets(cls, pool: ipaddress.IPv4Network) -> ipaddress.IPv4Network:
        if pool.prefixlen > defaults.FABRIC_SUBNET_PREFIX - 1:
            raise ValueError(
                f"subnet_pool {pool} is smaller than two /{defaults.FABRIC_SUBNET_PREFIX} "
                "subnets — use a /23 or larger, e.g. " + defaults.FABRIC_SUBNET_POOL
            )
        return pool


class Cluster(FrozenModel):
    """A cluster file: `name`, `cables`, `[[nodes]]`, optional `[switch]` and `[fabric]`; for
    serving, `[engine]`, `[model]`, `[profile]` (and named `[profiles.NAME]`), `[env]` and a
    default `[executor]`. Any unknown key is an error, so a typo never passes silently.
    """

    version: int = Field(default=1, ge=1, le=1, description="cluster file format version")
    name: Name | None = Field(default=None, description="cluster name (default: file stem)")
    nodes: list[Node] = Field(min_length=1, description="the boxes, head first by default")
    cables: list[Cable] = Field(default_factory=list, description="`a.p0 <-> b.p1` strings")
    switch: Switch | None = Field(default=None, description="a switch, when there is one")
    fabric: FabricSettings = Field(
        default_factory=FabricSettings, description="how the cables are addressed and used"
    )
    engine: EngineSettings | None = Field(default=None, description="the engine to launch")
    model: ModelSettings | None = Field(default=None, description="the model it serves")
    profile: ServingProfile = Field(
        default_factory=ServingProfile, description="the serving profile `up` starts by default"
    )
    profiles: dict[Name, ServingProfile] = Field(
        default_factory=dict, description="named alternatives to [profile], for --profile"
    )
    env: dict[EnvName, str] = Field(
        default_factory=dict, description="environment for every node's engine process"
    )
    executor: ExecutorSettings | None = Field(
        default=None, description="executor of every node without its own"
    )
    recipe: RecipeInfo | None = Field(
        default=None, description="catalog entries only: title and the source of each value"
    )

    @field_validator("cables", mode="before")
    @classmethod
    def _parse_cables(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [Cable.parse(item) if isinstance(item, str) else item for item in value]
        return value

    @model_validator(mode="after")
    def _check_names(self) -> Self:
        names = [n.name for n in self.nodes]
        _no_duplicates(names, "node", "node names must be unique; rename one")
        if self.switch is not None and self.switch.name in names:
            raise ValueError(
                f"switch {self.switch.name} has the name of a node — rename the switch"
            )
        if self.fabric.head is not None and self.fabric.head not in names:
            raise ValueError(
                f"fabric.head {self.fabric.head} is not a node — use one of {', '.join(names)}"
            )
        if (self.engine is None) != (self.model is None):
            present, absent = ("engine", "model") if self.model is None else ("model", "engine")
            raise ValueError(f"[{present}] needs a [{absent}] table too — add [{absent}]")
        llamacpp = self.engine is not None and self.engine.kind == "llamacpp"
        if llamacpp and self.profile.speculative is not None:
            raise ValueError(
                "profile.speculative is a vLLM setting — remove it for engine.kind = 'llamacpp'"
            )
        return self

    def executor_of(self, node: Node) -> ExecutorSettings | None:
        return node.executor or self.executor

    def chosen_profile(self, name: str | None) -> ServingProfile:
        if name is None:
            return self.profile
        if name not in self.profiles:
            known = ", ".join(self.profiles) or "none defined"
            raise ValueError(f"profile {name} is not in [profiles] ({known}) — add or pick one")
        return self.profiles[name]

    def node(self, name: str) -> Node | None:
        return next((n for n in self.nodes if n.name == name), None)

    @property
    def head(self) -> str:
        return self.fabric.head or self.nodes[0].name


def _no_duplicates(values: list[str], what: str, fix: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{what} {value} twice — {fix}")
        seen.add(value)
