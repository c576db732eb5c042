"""Engine processes in containers: the `run` command each process becomes, and pure readers of
what the runtime says about images and containers. Nothing here touches a host.

A process runs attached (`RUNTIME run … IMAGE ARGV`, no `-d`) under the launcher's usual
wrapper, so liveness, the log and the exit status work as for a host process: the client's
SIGTERM reaches the container (the runtime proxies signals) and its exit code is the
container's. The container is named and labelled by sparkrig, so `down` and a second `up`
touch only containers carrying the labels.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from sparkrig import defaults
from sparkrig.config.container import BindMount, ContainerSettings
from sparkrig.engines.launch_spec import ContainerRun, ProcessSpec
from sparkrig.outside_numbers import count_or_none

HF_HOME: Final = "HF_HOME"
RDMA_DEVICES: Final = "/dev/infiniband"
# files on the node that a rank opens by the path its environment names (`fabric apply` writes
# them: NodePlan.node_files)
NODE_FILE_VARIABLES: Final = ("NCCL_GRAPH_FILE",)
# The image config fields that decide what a container runs; their digest is sparkrig's config
# digest (the image ID cannot be compared: it differs by snapshotter on the same image).
IDENTITY_CONFIG_FIELDS: Final = ("Entrypoint", "Cmd", "Env", "WorkingDir", "User", "Labels")


def container_name(cluster: str, node: str, process: str) -> str:
    return f"sparkrig-{cluster}-{node}-{process}"


def containerize(
    process: ProcessSpec,
    settings: ContainerSettings,
    *,
    cluster: str,
    auto_mounts: list[BindMount],
    rdma: bool,
) -> ProcessSpec:
    """The process as a `run` of the image. `auto_mounts`: what the plan itself needs bound
    (the model's folder, the JIT cache root); `rdma`: bind the RDMA devices (`binds_rdma`)."""
    runtime = settings.runtime
    if runtime == "host" or settings.image is None:
        return process
    name = container_name(cluster, process.node, process.name)
    labels = {
        defaults.CONTAINER_LABEL_CLUSTER: cluster,
        defaults.CONTAINER_LABEL_NODE: process.node,
        defaults.CONTAINER_LABEL_PROCESS: process.name,
    }
    mounts = _all_mounts(settings, auto_mounts)
    env = [var.name for var in process.env]
    extra_env = {HF_HOME: settings.hf_cache} if settings.hf_cache is not None else {}
    args = ["run", "--name", name]
    for key, value in labels.items():
        args += ["--label", f"{key}={value}"]
    args += ["--network", "host"]
    if settings.ipc_host:
        args += ["--ipc", "host"]
    args += _gpu_args(runtime, settings.gpus)
    for limit, value in settings.ulimits.items():
        args += ["--ulimit", f"{limit}={value}"]
    if rdma:
        # registering RDMA memory pins pages: CAP_IPC_LOCK, outside docker's default set
        args += ["--device", RDMA_DEVICES, "--cap-add", "IPC_LOCK"]
    for mount in mounts:
        suffix = ":ro" if mount.read_only else ""
        args += ["--volume", f"{mount.source}:{mount.inside}{suffix}"]
    args += _node_file_binds(process, mounts)
    for variable in env:
        args += ["--env", variable]  # the value comes from the client's environment, not argv
    for variable, value in extra_env.items():
        args += ["--env", f"{variable}={value}"]
    args += [*settings.run_args, settings.image, *process.argv]
    run = ContainerRun(
        runtime=runtime,
        runtime_args=list(settings.runtime_args),
        image=settings.image,
        name=name,
        labels=labels,
        verified_paths=[m.source for m in mounts if m.verify],
        created_paths=[m.source for m in mounts if not m.read_only],
    )
    return process.model_copy(update={"argv": run.command(*args), "container": run})


def binds_rdma(settings: ContainerSettings, *, over_nccl: bool, fabric_env: Iterable[str]) -> bool:
    """Whether a contained engine gets the RDMA devices: `rdma_devices` when set, else an
    engine whose ranks talk through NCCL (`collectives_over_nccl`) under a fabric plan that
    gives NCCL RDMA devices (NCCL_IB_HCA among `fabric_env`'s names). One rule for `up` and
    doctor's container-rdma-devices."""
    if settings.rdma_devices is not None:
        return settings.rdma_devices
    return over_nccl and "NCCL_IB_HCA" in set(fabric_env)


def _all_mounts(settings: ContainerSettings, auto_mounts: list[BindMount]) -> list[BindMount]:
    """The user's mounts, then the plan's where no user mount already binds that target."""
    mounts = list(settings.mounts)
    if settings.hf_cache is not None:
        mounts.append(BindMount(source=settings.hf_cache, read_only=False, verify=False))
    taken = {mount.inside for mount in mounts}
    for mount in auto_mounts:
        if mount.inside not in taken and not _under_any(mount.inside, taken):
            mounts.append(mount)
            taken.add(mount.inside)
    return mounts


def _node_file_binds(process: ProcessSpec, mounts: list[BindMount]) -> list[str]:
    """Each node file the process's environment names (the NCCL graph XML), read-only at the
    same path, unless a mount already binds it. `--mount`, not `--volume`: a file missing on
    the node stops the container with the runtime's error, where docker's `--volume` would
    make an empty folder at that path for the rank to read. Per node, so never hashed across
    nodes: doctor's nccl-graph-file compares it with the plan."""
    taken = {mount.inside for mount in mounts}
    args = []
    for var in process.env:
        path = var.value
        if var.name not in NODE_FILE_VARIABLES or not path.startswith("/"):
            continue
        if path in taken or _under_any(path, taken):
            continue
        if "," in path:  # `--mount` splits its options on commas
            args += ["--volume", f"{path}:{path}:ro"]
        else:
            args += ["--mount", f"type=bind,source={path},target={path},readonly"]
    return args


def _under_any(path: str, folders: set[str]) -> bool:
    return any(path.startswith(folder.rstrip("/") + "/") for folder in folders)


def _gpu_args(runtime: str, gpus: str) -> list[str]:
    if gpus == "none":
        return []
    # docker: the NVIDIA container toolkit's --gpus; podman: the toolkit's CDI spec
    return ["--gpus", "all"] if runtime == "docker" else ["--device", "nvidia.com/gpu=all"]


def runtime_refusal(runtime: str, said: str, exit_code: int | None) -> tuple[str, str]:
    """(cause, fix) for a runtime whose `info` failed, from what it said: one reading for `up`'s
    preflight and doctor's container-runtime check."""
    lowered = said.lower()
    if "permission denied" in lowered:
        if runtime == "docker":
            return "refused its socket", (
                "add the serving user to the docker group (`sudo usermod -aG docker $USER`, "
                "then log in again) or run through sudo"
            )
        return "was refused", "run as a user podman may use (`podman system migrate`), or as root"
    if exit_code == 127 or "not found" in lowered:
        return "is not installed", f"install {runtime} on the node (`sudo apt install {runtime}`)"
    if "cannot connect" in lowered or "daemon running" in lowered:
        return "has no daemon answering", (
            f"start it (`sudo systemctl enable --now {runtime}`) and run `sparkrig doctor`"
        )
    return "failed", f"run `{runtime} info` by hand on the node and fix what it says"


def pin_warning(settings: ContainerSettings) -> str | None:
    if not settings.contained or settings.pinned:
        return None
    return (
        f"engine.container.image {settings.image} is a tag, not a digest: a tag can name "
        "another build on another node (field notes: patch-on-every-node) — pin it as "
        "name@sha256:…; sparkrig still compares the image's layers on every node before start"
    )


class ImageIdentity(BaseModel):
    """What proves two nodes hold the same image: its layers' content digests (RootFS diff
    IDs) and a digest of the config fields that decide what it runs."""

    model_config = ConfigDict(frozen=True)

    layers: list[str]
    config_digest: str
    image_id: str = ""  # shown, never compared

    def differences(self, other: ImageIdentity) -> list[str]:
        out = []
        if self.layers != other.layers:
            first = next(
                (
                    i
                    for i, (a, b) in enumerate(zip(self.layers, other.layers, strict=False))
                    if a != b
                ),
                min(len(self.layers), len(other.layers)),
            )
            out.append(
                f"{len(other.layers)} layers vs {len(self.layers)}, first different at layer "
                f"{first + 1} ({_short(_at(other.layers, first))} vs "
                f"{_short(_at(self.layers, first))})"
            )
        if self.config_digest != other.config_digest:
            out.append(
                f"config {_short(other.config_digest)} vs {_short(self.config_digest)} "
                f"(entrypoint, command, env, workdir, user or labels differ)"
            )
        return out


def _at(items: list[str], index: int) -> str:
    return items[index] if index < len(items) else "none"


def _short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:12] or "none"


def parse_image_identity(stdout: str) -> ImageIdentity | None:
    """`RUNTIME image inspect IMAGE` (a JSON list of one object) → its identity; None when the
    output holds no image. Field types are checked, never trusted."""
    try:
        parsed = json.loads(stdout)
    except json.JSONDecodeError:
        return None
    image = parsed[0] if isinstance(parsed, list) and parsed else parsed
    if not isinstance(image, dict):
        return None
    rootfs = image.get("RootFS")
    layers = rootfs.get("Layers") if isinstance(rootfs, dict) else None
    if not isinstance(layers, list) or not all(isinstance(layer, str) for layer in layers):
        return None
    config = image.get("Config")
    fields = (
        {key: config.get(key) for key in IDENTITY_CONFIG_FIELDS} if isinstance(config, dict) else {}
    )
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    image_id = image.get("Id")
    return ImageIdentity(
        layers=list(layers),
        config_digest="sha256:" + hashlib.sha256(canonical.encode()).hexdigest(),
        image_id=image_id if isinstance(image_id, str) else "",
    )


class ContainerState(BaseModel):
    """What `RUNTIME container inspect NAME` says about one container."""

    model_config = ConfigDict(frozen=True)

    name: str
    labels: dict[str, str]
    status: str = "unknown"
    running: bool = False
    exit_code: int | None = None
    oom_killed: bool = False
    restart_count: int = 0
    started_at: str = ""
    image: str = ""

    def ours(self, cluster: str) -> bool:
        return self.labels.get(defaults.CONTAINER_LABEL_CLUSTER) == cluster

    def describe(self) -> str:
        """`running since …, 0 restarts` / `exited 137, OOMKilled`."""
        if self.running:
            words = f"running since {self.started_at or '?'}"
        else:
            code = "" if self.exit_code is None else f" {self.exit_code}"
            words = f"{self.status}{code}"
        if self.oom_killed:
            words += ", OOMKilled"
        if self.restart_count:
            words += f", {self.restart_count} restarts"
        return words


def parse_container_state(stdout: str) -> ContainerState | None:
    """`RUNTIME container inspect NAME` (JSON list) → its state; None when there is none."""
    item = _first_object(stdout)
    if item is None:
        return None
    state = _object(item.get("State"))
    labels = _object(_object(item.get("Config")).get("Labels"))
    exit_code = state.get("ExitCode")
    return ContainerState(
        name=_text(item.get("Name")).lstrip("/"),
        labels={str(k): v for k, v in labels.items() if isinstance(v, str)},
        status=_text(state.get("Status")) or "unknown",
        running=state.get("Running") is True,
        exit_code=exit_code
        if isinstance(exit_code, int) and not isinstance(exit_code, bool)
        else None,
        oom_killed=state.get("OOMKilled") is True,
        restart_count=count_or_none(item.get("RestartCount")) or 0,
        started_at=_text(state.get("StartedAt")),
        image=_text(item.get("ImageName")),
    )


def _first_object(stdout: str) -> dict[str, Any] | None:
    """The first object of an `inspect` answer (a JSON list), or None."""
    try:
        parsed = json.loads(stdout)
    except json.JSONDecodeError:
        return None
    item = parsed[0] if isinstance(parsed, list) and parsed else parsed
    return item if isinstance(item, dict) else None


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
