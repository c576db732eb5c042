"""What an engine adapter hands the launcher: one process to start on one node, with its
environment (each variable with its reason) and how to tell that it is ready.

Pure data: the engine adapters (`engines.vllm.launch`, `engines.llamacpp.rpc`) build it from the
cluster file and the fabric plan; `sparkrig.launch` starts, watches and stops it.
"""

from __future__ import annotations

import shlex
from typing import Literal

from pydantic import Field, field_serializer

from sparkrig.config.serving import EngineSettings, ModelSettings, ServingProfile
from sparkrig.fabric.plan_model import EnvVar
from sparkrig.frozen_model import FrozenModel
from sparkrig.secret_names import hide_secret_args

ReadySignal = Literal["alive", "port", "health"]


class ContainerRun(FrozenModel):
    """How a process runs in a container: the runtime and image, the name and labels it gets,
    and the host paths whose content must match on every node before it starts."""

    runtime: Literal["docker", "podman"]
    runtime_args: list[str] = Field(default_factory=list)
    image: str
    name: str = Field(description="container name: sparkrig-CLUSTER-NODE-PROCESS")
    labels: dict[str, str]
    verified_paths: list[str] = Field(
        default_factory=list, description="bind sources hashed on every node before start"
    )
    created_paths: list[str] = Field(
        default_factory=list, description="bind sources made on the node when missing (caches)"
    )

    def command(self, *args: str) -> list[str]:
        """`RUNTIME [runtime args] ARGS…` on the node."""
        return [self.runtime, *self.runtime_args, *args]


class ProcessSpec(FrozenModel):
    node: str
    role: Literal["head", "worker"]
    name: str = Field(description="what the process is: vllm, ray, rpc, llama-server")
    argv: list[str]
    env: list[EnvVar] = Field(default_factory=list)
    port: int | None = Field(default=None, description="the port it listens on, when it does")
    ready_when: ReadySignal = Field(
        description="alive: running is all it does before the head needs it (a vLLM headless "
        "worker waits for the head); port: its port is open; health: the API answers /health"
    )
    container: ContainerRun | None = Field(
        default=None, description="set when argv runs the engine in a container (its `run`)"
    )

    @property
    def key(self) -> str:
        return f"{self.node}/{self.name}"

    @field_serializer("argv")
    def _written_argv(self, argv: list[str]) -> list[str]:
        return hide_secret_args(argv)  # the process gets the key; the plan and state do not

    def shell_line(self) -> str:
        """The command as a person would type it on the node, with secrets hidden."""
        assignments = [f"{var.name}={shlex.quote(var.shown_value)}" for var in self.env]
        prefix = ["env", *assignments] if assignments else []
        return " ".join([*prefix, shlex.join(hide_secret_args(self.argv))])

    def shell_lines(self) -> list[str]:
        """The same command to read and paste: `env`, one variable a line, then the command and
        one option with its value a line, every line but the last ending in a backslash."""
        env = [f"{var.name}={shlex.quote(var.shown_value)}" for var in self.env]
        lines = ["env", *env] if env else []
        groups: list[list[str]] = []
        for word in hide_secret_args(self.argv):
            is_option = word.startswith("-") and len(word) > 1 and not word[1].isdigit()
            last = groups[-1] if groups else None
            # an option takes at most one value; the words before the first option stay together
            joins = last is not None and (not last[0].startswith("-") or len(last) == 1)
            if is_option or not joins:
                groups.append([word])
            else:
                assert last is not None
                last.append(word)
        lines += [shlex.join(group) for group in groups]
        return [f"{line} \\" if n < len(lines) - 1 else line for n, line in enumerate(lines)]


def merge_env(*layers: list[EnvVar]) -> list[EnvVar]:
    """Later layers win by name; the first layer's order is kept, new names are appended."""
    merged: dict[str, EnvVar] = {}
    for layer in layers:
        for var in layer:
            merged[var.name] = var
    return list(merged.values())


class LaunchNode(FrozenModel):
    """One node of the serving group, as the adapters see it."""

    name: str
    rank: int
    control_address: str = Field(description="address every other node reaches this one at")
    head_facing_address: str | None = Field(
        default=None,
        description="this node's address on a cable to the head (the port's first function), "
        "where a star-shaped data path from the head should go; None without such a cable",
    )
    fabric_env: list[EnvVar] = Field(description="from the fabric plan (NCCL, Gloo, host IP)")
    user_env: list[EnvVar] = Field(
        description="the file's [env], then the node's own env; wins over everything else"
    )

    def env_with(self, engine_env: list[EnvVar]) -> list[EnvVar]:
        return merge_env(self.fabric_env, engine_env, self.user_env)


class LaunchContext(FrozenModel):
    """Everything an adapter needs to render the processes of one cluster."""

    cluster: str
    engine: EngineSettings
    model: ModelSettings
    profile: ServingProfile
    nodes: list[LaunchNode] = Field(description="the serving group in rank order; head first")
    engine_binary: str
    rpc_binary: str | None = None
    model_path: str = Field(description="the model as the engine is given it")
    engine_args: list[str] = Field(
        default_factory=list,
        description="arguments the engine binary itself needs to run (the embedded build's "
        "--no-repack when its self-test needed it)",
    )

    @property
    def head(self) -> LaunchNode:
        return self.nodes[0]

    @property
    def workers(self) -> list[LaunchNode]:
        return self.nodes[1:]


def order_processes(processes: list[ProcessSpec], context: LaunchContext) -> list[ProcessSpec]:
    """Workers first, unless `engine.start_order` puts the head first."""
    heads = [p for p in processes if p.role == "head"]
    workers = [p for p in processes if p.role == "worker"]
    if context.engine.start_order == "head-first":
        return heads + workers
    return workers + heads
