"""`[engine.container]`: run the engine from a container image instead of a host install.

The run settings are the ones the field reports' containers and NVIDIA's DGX Spark images use:
host network and IPC, the GPUs, unlimited locked memory and a 64 MiB stack, the RDMA devices when
the fabric carries RDMA, the Hugging Face cache, and a node-local JIT cache volume (field notes:
jit-cache-node-local). Bind-mounted files are proven identical on every node before start
(field notes: patch-on-every-node).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Self

from pydantic import Field, field_validator, model_validator

from sparkrig import defaults
from sparkrig.frozen_model import FrozenModel

ContainerRuntime = Literal["host", "docker", "podman"]
_ULIMIT_NAME = r"^[a-z]+$"
_ULIMIT_VALUE = re.compile(r"^(-1|\d+)(:(-1|\d+))?$")
AbsolutePath = Annotated[str, Field(pattern=r"^/", max_length=4096)]


class BindMount(FrozenModel):
    """A host path bound into the container. Files and folders are hashed on every node before
    start: a patch missing or different on one node runs that rank unpatched, silently."""

    source: AbsolutePath = Field(description="absolute path on every node")
    target: AbsolutePath | None = Field(
        default=None, description="path inside the container (default: the same as source)"
    )
    read_only: bool = Field(default=True, description="bind it read-only")
    verify: bool = Field(
        default=True,
        description="prove the same content (sha256) on every node before start; turn off for "
        "large or per-node folders (a cache, a scratch disk)",
    )

    @property
    def inside(self) -> str:
        return self.target or self.source


class ContainerSettings(FrozenModel):
    """How the engine's processes run: on the host, or in a container of `image`."""

    runtime: ContainerRuntime = Field(
        default="host", description="host: the engine installed on each node; docker or podman"
    )
    image: str | None = Field(
        default=None,
        min_length=1,
        max_length=512,
        description="the engine image on every node; pin it by digest (name@sha256:…): a tag "
        "can point at another build on another node",
    )
    gpus: Literal["all", "none"] = Field(
        default="all",
        description="all: every GPU (docker --gpus all; podman the CDI device nvidia.com/gpu="
        "all); none: a CPU-only engine",
    )
    ipc_host: bool = Field(
        default=True, description="--ipc host: NCCL's and the engine's shared memory"
    )
    ulimits: dict[Annotated[str, Field(pattern=_ULIMIT_NAME)], str] = Field(
        default_factory=lambda: dict(defaults.CONTAINER_ULIMITS),
        description="--ulimit NAME=SOFT[:HARD]; -1 is unlimited. A runtime without the right "
        "to raise a limit (no CAP_SYS_RESOURCE) refuses values above the host's hard limit",
    )
    rdma_devices: bool | None = Field(
        default=None,
        description="bind /dev/infiniband (default: when the fabric plan uses RDMA for NCCL)",
    )
    hf_cache: AbsolutePath | None = Field(
        default=None,
        description="the nodes' Hugging Face cache, bound read-write at the same path and "
        "named by HF_HOME; keep it owned by the container's user (field notes: "
        "hf-cache-ownership)",
    )
    mounts: list[BindMount] = Field(
        default_factory=list, description="files and folders to bind: patches, the model"
    )
    run_args: list[str] = Field(
        default_factory=list, description="more `run` options, passed as written"
    )
    runtime_args: list[str] = Field(
        default_factory=list,
        description="options before `run` (podman --runtime runc, docker --context …)",
    )

    @field_validator("ulimits")
    @classmethod
    def _ulimit_values(cls, ulimits: dict[str, str]) -> dict[str, str]:
        for name, value in ulimits.items():
            if not _ULIMIT_VALUE.match(value):
                raise ValueError(
                    f"ulimit {name} = {value!r} is not SOFT[:HARD] — write e.g. '-1' or "
                    "'67108864' or '1024:4096'"
                )
        return ulimits

    @model_validator(mode="after")
    def _image_when_contained(self) -> Self:
        if self.runtime != "host" and self.image is None:
            raise ValueError(
                f"engine.container.runtime = {self.runtime!r} needs an image — add "
                "engine.container.image (name@sha256:… pins one build)"
            )
        if self.runtime == "host" and self.image is not None:
            raise ValueError(
                "engine.container.image is set but runtime is 'host' — set runtime to "
                "'docker' or 'podman', or remove the image"
            )
        targets = [mount.inside for mount in self.mounts]
        if len(set(targets)) != len(targets):
            raise ValueError("two engine.container.mounts bind the same target — drop one")
        return self

    @property
    def contained(self) -> bool:
        return self.runtime != "host"

    @property
    def pinned(self) -> bool:
        return self.image is not None and "@sha256:" in self.image
