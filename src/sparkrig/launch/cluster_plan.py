"""The launch plan of a cluster: which process starts on which node, in which order, with what
environment, reached by which executor. Pure: nothing here touches a host.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import Field

from sparkrig.config.cluster import Cluster, Node
from sparkrig.config.container import BindMount
from sparkrig.config.serving import ServingProfile
from sparkrig.engines.adapter import BUNDLED_MODEL, EngineAdapter, LocalEngine
from sparkrig.engines.launch_spec import LaunchContext, LaunchNode, ProcessSpec
from sparkrig.engines.llamacpp.server import LlamaServerSpec
from sparkrig.engines.registry import adapter_for
from sparkrig.errors import ConfigError
from sparkrig.fabric.plan import plan_fabric
from sparkrig.fabric.plan_model import EnvVar, FabricPlan
from sparkrig.fabric.runner import ExecutorSpec
from sparkrig.frozen_model import FrozenModel
from sparkrig.launch.containers import binds_rdma, containerize, pin_warning
from sparkrig.launch.node_executors import executor_spec


class NodeAccess(FrozenModel):
    node: str
    executor: ExecutorSpec
    log_dir: str


class LaunchPlan(FrozenModel):
    """What `sparkrig up` prints, and with `--apply` does, in order."""

    version: int = 1
    cluster: str
    engine: str
    backend: str
    head: str
    api_url: str = Field(description="where sparkrig (and clients) reach the head's API")
    api_on_cables: bool = Field(
        default=False,
        description="the API address is a cable's: only the cluster's nodes reach it (`up` "
        "asks this machine's routes before it warns)",
    )
    model_name: str = Field(description="model id the API answers with")
    processes: list[ProcessSpec] = Field(description="in start order")
    access: list[NodeAccess]
    stall_window_s: float
    ready_timeout_s: float
    warnings: list[str] = Field(default_factory=list)
    server: LlamaServerSpec | None = Field(
        default=None, description="a one-node local launch: the llama-server it runs"
    )
    engine_build: str | None = Field(default=None, description="the embedded build, when known")
    model_path: str | None = Field(default=None, description="the weights' path on the nodes")
    weight_nodes: list[str] = Field(
        default_factory=list, description="nodes that read the weights from their own disk"
    )
    model_folder_files: list[str] = Field(
        default_factory=list,
        description="files a model folder must hold on those nodes (vLLM: config.json)",
    )

    def access_of(self, node: str) -> NodeAccess:
        return next(a for a in self.access if a.node == node)

    def log_path(self, process: ProcessSpec) -> str:
        return f"{self.access_of(process.node).log_dir}/{process.node}-{process.name}.log"


def plan_launch(
    cluster: Cluster,
    *,
    profile_name: str | None = None,
    local_state_dir: Path,
    default_binaries: tuple[str, str] | None = None,
    default_server_args: tuple[str, ...] = (),
    bundled_model: Path | None = None,
    require_executors: bool = True,
) -> LaunchPlan:
    """`default_binaries`: the embedded llama-server and ggml-rpc-server, for llamacpp nodes
    that name none, and `default_server_args` what that llama-server needs to run here (the
    self-test's `--no-repack`). `bundled_model`: what `model.path = "bundled"` means."""
    if cluster.engine is None or cluster.model is None:
        raise ConfigError(
            f"cluster {cluster.name} has no [engine] and [model] tables — add them to launch "
            "(see examples/pair-vllm.toml)"
        )
    try:
        profile = cluster.chosen_profile(profile_name)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    fabric = plan_fabric(cluster, _nodes_spanned(profile))
    engine = cluster.engine
    adapter = adapter_for(engine.kind)
    nodes = [_launch_node(cluster, fabric, name, rank) for rank, name in _group(fabric)]
    if len(nodes) == 1:
        # one box: no cable carries a collective, so no socket or HCA settings; the fabric
        # plan's control interface (a DGX Spark's enP7s7 by default) may not exist here at all
        nodes = [nodes[0].model_copy(update={"fabric_env": []})]
    binary, rpc_binary = adapter.binaries(engine, LocalEngine(binaries=default_binaries))
    model_path = cluster.model.path
    if model_path == BUNDLED_MODEL:
        if bundled_model is None:
            raise ConfigError("model.path = 'bundled' needs the bundled model — install it")
        model_path = str(bundled_model)
    context = LaunchContext(
        cluster=cluster.name or "cluster",
        engine=engine,
        model=cluster.model,
        profile=profile,
        nodes=nodes,
        engine_binary=binary,
        rpc_binary=rpc_binary,
        model_path=model_path,
        engine_args=list(default_server_args) if engine.binary is None else [],
    )
    processes = adapter.render(context)
    container = engine.container
    if container.contained:
        auto = _plan_mounts(model_path, engine.jit_cache_dir if adapter.jit_caches else None)
        rdma = binds_rdma(
            container,
            over_nccl=adapter.collectives_over_nccl,
            fabric_env=(var.name for node in nodes for var in node.fabric_env),
        )
        processes = [
            containerize(p, container, cluster=context.cluster, auto_mounts=auto, rdma=rdma)
            for p in processes
        ]
    image_warning = pin_warning(container)
    access = [
        NodeAccess(
            node=node.name,
            executor=executor_spec(cluster, node),
            log_dir=_log_dir(cluster, node, local_state_dir),
        )
        for node in cluster.nodes
        if node.name in {n.name for n in nodes}
        and (require_executors or cluster.executor_of(node) is not None)
    ]
    head_node = cluster.node(nodes[0].name)
    api_address = engine.api_address or (
        str(head_node.management.ip)
        if head_node is not None and head_node.management is not None
        else nodes[0].control_address
    )
    return LaunchPlan(
        cluster=context.cluster,
        engine=engine.kind,
        backend=adapter.backend(engine),
        head=nodes[0].name,
        api_url=f"http://{api_address}:{engine.port}",
        api_on_cables=_on_cables(fabric, api_address),
        model_name=cluster.model.api_name,
        model_path=model_path,
        weight_nodes=[n.name for n in nodes] if adapter.every_rank_loads_weights else [],
        model_folder_files=list(adapter.model_folder_files),
        processes=processes,
        access=access,
        stall_window_s=engine.stall_window_s,
        ready_timeout_s=engine.ready_timeout_s,
        warnings=[
            *fabric.warnings,
            *_ignored_settings(adapter, profile),
            *([image_warning] if image_warning else []),
        ],
    )


def _on_cables(fabric: FabricPlan, address: str) -> bool:
    """The address lies in a cable's subnet: only the nodes at that cable's ends hold one, and
    only the cluster's nodes route to it. A host name is not judged."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in rail.subnet for cable in fabric.cables for rail in cable.rails)


def _plan_mounts(model_path: str, jit_root: str | None) -> list[BindMount]:
    """What a contained engine needs bound at the same path: the model (its folder, or the
    folder of a single-file model), read-only and not hashed (weights are `sync`'s to prove),
    and the node-local JIT cache root, read-write (field notes: jit-cache-node-local)."""
    mounts = []
    if model_path.startswith("/"):
        is_file = model_path.rsplit("/", 1)[-1].endswith((".gguf", ".safetensors", ".bin"))
        folder = model_path.rsplit("/", 1)[0] or "/" if is_file else model_path.rstrip("/")
        mounts.append(BindMount(source=folder, verify=False))
    if jit_root is not None:
        mounts.append(BindMount(source=jit_root.rstrip("/"), read_only=False, verify=False))
    return mounts


def _ignored_settings(adapter: EngineAdapter, profile: ServingProfile) -> list[str]:
    """Profile keys the chosen engine has no flag for: said, not silently dropped."""
    return [
        f"profile.{key} does not apply to {adapter.kind} and is ignored — remove it"
        for key in sorted(adapter.unsupported_settings & profile.model_fields_set)
    ]


def _nodes_spanned(profile: ServingProfile) -> int | None:
    """How many nodes the engine's ranks span, one rank a node: tensor × pipeline stages, when
    the profile names a tensor-parallel size (else the fabric's group, every node)."""
    if profile.tensor_parallel_size is None:
        return None
    return profile.tensor_parallel_size * (profile.pipeline_parallel_size or 1)


def _group(fabric: FabricPlan) -> list[tuple[int, str]]:
    return list(enumerate(fabric.tensor_parallel))


def _launch_node(cluster: Cluster, fabric: FabricPlan, name: str, rank: int) -> LaunchNode:
    node_plan = fabric.node(name)
    node = cluster.node(name)
    own = node.env if node is not None else {}
    user = [
        EnvVar(name=k, value=v, reason="[env] of the cluster file") for k, v in cluster.env.items()
    ]
    user += [EnvVar(name=k, value=v, reason=f"env of node {name}") for k, v in own.items()]
    head = fabric.rank_order[0] if fabric.rank_order else None
    facing = [i for i in node_plan.interfaces if i.peer == head and i.root == 0]
    return LaunchNode(
        name=name,
        rank=rank,
        control_address=str(node_plan.control_address),
        head_facing_address=str(facing[0].address.ip) if facing else None,
        fabric_env=list(node_plan.env),
        user_env=user,
    )


def _log_dir(cluster: Cluster, node: Node, local_state_dir: Path) -> str:
    assert cluster.engine is not None
    if cluster.engine.log_dir is not None:
        return cluster.engine.log_dir
    settings = cluster.executor_of(node)
    if settings is not None and settings.kind == "ssh":
        return f".sparkrig/{cluster.name}"  # relative: the remote user's home
    return str(local_state_dir / "clusters" / (cluster.name or "cluster") / "logs")
