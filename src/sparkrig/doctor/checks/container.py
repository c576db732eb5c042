"""The container path (`[engine.container]` runtime docker or podman): the runtime answers, GPUs
and RDMA devices reach a container, the image store has room, one runtime version everywhere.
Every check here is quiet on a cluster file that runs the engine on the host (the probes it reads
are collected only for a contained engine)."""

from __future__ import annotations

from collections.abc import Mapping

from sparkrig import defaults
from sparkrig.doctor.checks.cluster import stack_differences
from sparkrig.doctor.container_info import RuntimeInfo, gpu_support, runtime_info
from sparkrig.doctor.model import NodeCapture
from sparkrig.doctor.parse import first_filesystem
from sparkrig.doctor.registry import Hit, NodeContext, cluster_check, node_check
from sparkrig.launch.containers import RDMA_DEVICES, runtime_refusal
from sparkrig.outside_numbers import count_or_none

SOURCE = "docs/launch.md (containers)"


def contained(context: NodeContext) -> bool:
    """The cluster file runs the engine from an image (runtime docker or podman)."""
    return context.container_runtime is not None


def _info(capture: NodeCapture) -> RuntimeInfo:
    return runtime_info(capture.text("container_info") or "")


def _said(capture: NodeCapture) -> str:
    output = capture.outputs.get("container_info")
    lines = [line.strip() for line in (output.stderr if output else "").splitlines()]
    said = next((line for line in reversed(lines) if line), "")
    return said[:300] or "nothing on stderr"


@node_check(
    "container-runtime",
    summary="the container runtime is installed and `RUNTIME info` answers",
    why="`up` runs every engine process through the runtime; a daemon that does not answer, or a "
    "socket the serving user may not open, refuses the start on that node",
    source=SOURCE,
    applies=contained,
    needs=("container_info",),
)
def container_runtime(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    runtime = context.container_runtime
    info = _info(capture)
    if runtime is None or info.answered:
        return []
    said = _said(capture)
    cause, fix = runtime_refusal(runtime, said, info.exit_code)
    code = "cut short" if info.exit_code is None else f"exit {info.exit_code}"
    return [Hit("error", f"{runtime} {cause}: `{runtime} info` {code}: {said}", fix)]


def _gpu_hit(runtime: str, capture: NodeCapture) -> Hit | None:
    support = gpu_support(capture.text("container_gpu") or "")
    if runtime == "podman":
        if support.cdi_specs:
            return None
        return Hit(
            "error",
            "no CDI spec names nvidia.com/gpu (none under /etc/cdi or /var/run/cdi): podman's "
            "`--device nvidia.com/gpu=all` has no GPU to give",
            "install nvidia-container-toolkit and `sudo nvidia-ctk cdi generate "
            "--output=/etc/cdi/nvidia.yaml` (again after each driver update)",
        )
    info = _info(capture)
    if "nvidia" in info.runtimes or support.nvidia_ctk:
        return None
    listed = ", ".join(sorted(info.runtimes)) or "none listed"
    return Hit(
        "error",
        f"docker has no nvidia runtime (Runtimes: {listed}) and nvidia-ctk is not on PATH: "
        "`--gpus all` fails",
        "install nvidia-container-toolkit, then `sudo nvidia-ctk runtime configure "
        "--runtime=docker` and `sudo systemctl restart docker`",
    )


@node_check(
    "container-gpu-support",
    summary="a container can be given the GPUs (docker: the NVIDIA container toolkit; podman: a "
    "CDI spec naming nvidia.com/gpu)",
    why="with gpus = all every engine container asks for the GPUs; without the toolkit or the "
    "CDI spec the runtime refuses to start it",
    source=SOURCE,
    applies=contained,
    needs=("container_info", "container_gpu"),
)
def container_gpu_support(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    runtime = context.container_runtime
    if runtime is None or not context.container_gpus or not _info(capture).answered:
        return []  # container-runtime says why the runtime does not answer
    hit = _gpu_hit(runtime, capture)
    return [hit] if hit is not None else []


@node_check(
    "container-rdma-devices",
    summary=f"{RDMA_DEVICES} exists where the container binds it (vLLM over RDMA)",
    why=f"the engine container is started with `--device {RDMA_DEVICES}` when the plan runs NCCL "
    "over RDMA (or rdma_devices = true); a node without it refuses the start",
    source=SOURCE,
    applies=contained,
    needs=("rdma_limits", "container_info"),
)
def container_rdma_devices(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    if not context.container_binds_rdma:
        return []
    for line in (capture.text("rdma_limits") or "").splitlines():
        kind, _, value = line.partition(" ")
        if kind == "devices" and value.split():
            return []
    return [
        Hit(
            "error",
            f"{RDMA_DEVICES} is missing or empty on the node; the container is started with "
            f"`--device {RDMA_DEVICES}`",
            "load the RDMA modules (`sudo modprobe ib_uverbs mlx5_ib rdma_ucm`, `sudo apt "
            "install rdma-core`), or set engine.container.rdma_devices = false to run NCCL "
            "over TCP",
        )
    ]


@node_check(
    "container-store-space",
    summary="the runtime's image store has room for an engine image",
    why="a vLLM image is tens of GB and a new build is pulled beside the old one; a full store "
    "fails the pull or the container's first write on that node only",
    source=SOURCE,
    applies=contained,
    needs=("container_info", "findmnt_container_store"),
)
def container_store_space(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    if context.container_runtime is None:
        return []
    system = first_filesystem(capture.text("findmnt_container_store") or "")
    avail = count_or_none(system.get("avail"))
    floor = defaults.DOCTOR_CONTAINER_STORE_MIN_FREE_BYTES
    if avail is None or avail >= floor:
        return []
    target = system.get("target") if isinstance(system.get("target"), str) else "?"
    root = _info(capture).store_root
    return [
        Hit(
            "warning",
            f"{avail / 1000**3:.1f} GB free on {target} (the {context.container_runtime} image "
            f"store {root}); wants {floor / 1000**3:.0f} GB",
            f"remove unused images (`{context.container_runtime} image prune -a`), or move the "
            "store to a larger local disk",
        )
    ]


@cluster_check(
    "container-runtime-version-same",
    summary="every node runs the same container runtime version",
    why="runtimes of different versions differ in how they pass GPUs, devices and ulimits; one "
    "qualified combination runs on every node",
    source=SOURCE,
    applies=contained,
    needs=("container_info",),
)
def container_runtime_version_same(
    captures: Mapping[str, NodeCapture], contexts: Mapping[str, NodeContext]
) -> list[Hit]:
    runtimes = {c.container_runtime for c in contexts.values() if c.container_runtime}
    if not runtimes:
        return []
    runtime = sorted(runtimes)[0]
    versions = {n: v for n, c in captures.items() if (v := _info(c).version)}
    if len(set(versions.values())) <= 1:
        return []
    listed = ", ".join(f"{node} {version}" for node, version in sorted(versions.items()))
    return [
        Hit(
            "warning",
            f"{runtime} version differs — {listed}",
            f"install the same {runtime} release on every node (`sudo apt install "
            f"{runtime}=<version>`), the one the image was qualified with",
        )
    ]


@cluster_check(
    "same-image-python-stack",
    summary="the engine image holds the same vLLM, torch, NCCL, FlashInfer, Triton on every node",
    why="the builds that run are the ones inside the image, not a host venv; one tag pulled at "
    "another time, or a local rebuild, gives one rank other kernel libraries, silently",
    source=f"{SOURCE}; docs/field-notes.md (one stack on every node)",
    applies=contained,
    needs=("image_python",),
)
def same_image_python_stack(
    captures: Mapping[str, NodeCapture], contexts: Mapping[str, NodeContext]
) -> list[Hit]:
    differ = stack_differences({n: c.text("image_python") or "" for n, c in captures.items()})
    if not differ:
        return []
    return [
        Hit(
            "error",
            "in the engine image: " + "; ".join(differ),
            "make every node hold the one image build: pin engine.container.image by digest "
            "(name@sha256:…) and run `sparkrig sync`, then doctor again",
        )
    ]
