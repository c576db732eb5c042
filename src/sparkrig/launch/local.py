"""Serve a GGUF with the embedded llama-server on this machine: a one-node launch plan run by
the local executor, started, watched, read and stopped by `lifecycle` like any cluster."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import aiohttp
from pydantic import BaseModel

from sparkrig import defaults
from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.engines.llamacpp.server import LlamaServerSpec, SpeculativeOptions, llama_server_argv
from sparkrig.errors import PortInUseError
from sparkrig.fabric.runner import ExecutorSpec
from sparkrig.launch.cluster_plan import LaunchPlan, NodeAccess
from sparkrig.launch.lifecycle import bring_down, bring_up, launch_status, runners_for
from sparkrig.launch.readiness import CompletionProbe, Phase
from sparkrig.launch.state import (
    LaunchState,
    load_local_state,
    load_local_states,
    local_dir,
    process_start_ticks,
)
from sparkrig.local_process import free_port

_SLOTS_TIMEOUT_S = 2.0


def embedded_server(
    engine: EngineInstall,
    model: Path,
    *,
    alias: str = defaults.BUNDLED_MODEL_ALIAS,
    port: int | None = None,
    parallel_slots: int = defaults.LOCAL_PARALLEL_SLOTS,
    context_tokens: int = defaults.LOCAL_CONTEXT_TOKENS,
    threads: int = defaults.LOCAL_THREADS,
    speculative: SpeculativeOptions | None = None,
    extra_args: Sequence[str] = (),
) -> LlamaServerSpec:
    """The one way a local llama-server is specified: `up --local`, the embedded engine (demo,
    bench --local) and the test fixtures all build theirs here. No port: a free one.
    `extra_args` go after the arguments the build itself needs."""
    return LlamaServerSpec(
        binary=engine.server_binary,
        model=model,
        alias=alias,
        port=port if port is not None else free_port(defaults.LOCAL_HOST),
        parallel_slots=parallel_slots,
        context_tokens=context_tokens,
        threads=threads,
        speculative=speculative,
        extra_args=[*engine.server_args, *extra_args],
    )


def check_port_free(host: str, port: int) -> None:
    """Whether a server could listen on the port now. SO_REUSEADDR, as llama-server and vLLM set
    it: a port whose last server stopped a moment ago (its connections in TIME_WAIT for a minute)
    is free to them, and only a listener makes it busy."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise PortInUseError(
                f"port {port} on {host} is already in use — pick another with --port, "
                "or omit --port to let sparkrig choose a free one"
            ) from exc


def plan_local(
    server: LlamaServerSpec,
    *,
    port_was_chosen: bool,
    engine_build: str | None = None,
    ready_timeout_s: float = defaults.READY_TIMEOUT_S,
) -> LaunchPlan:
    """One node, named local-PORT, reached by the local executor; ready like a cluster head."""
    name = f"local-{server.port}"
    if name in {state.cluster for state in load_local_states()}:
        raise PortInUseError(
            f"an instance named {name} is already recorded — stop it with `sparkrig down "
            f"--name {name} --apply`, or choose another --port"
        )
    if not port_was_chosen:
        check_port_free(server.host, server.port)
    process = ProcessSpec(
        node=name,
        role="head",
        name="llama-server",
        argv=llama_server_argv(server),
        port=server.port,
        ready_when="health",
    )
    access = NodeAccess(node=name, executor=ExecutorSpec(kind="local"), log_dir=str(local_dir()))
    return LaunchPlan(
        cluster=name,
        engine="llamacpp",
        backend="local",
        head=name,
        api_url=f"http://{server.host}:{server.port}",
        model_name=server.alias,
        processes=[process],
        access=[access],
        stall_window_s=defaults.LAUNCH_STALL_WINDOW_S,
        ready_timeout_s=ready_timeout_s,
        server=server,
        engine_build=engine_build,
    )


class LocalInstance(BaseModel):
    """A local server as its users see it (where it answers, which process it is): a view of
    its LaunchState, never stored on its own."""

    name: str
    pid: int
    pid_start_ticks: int
    argv: list[str]
    host: str
    port: int
    model: str
    alias: str
    engine_build: str | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @classmethod
    def of(cls, state: LaunchState) -> LocalInstance:
        server, started = state.server, state.started[0]
        assert server is not None
        return cls(
            name=state.cluster,
            pid=started.pid,
            pid_start_ticks=started.pid_start_ticks,
            argv=started.process.argv,
            host=server.host,
            port=server.port,
            model=str(server.model),
            alias=server.alias,
            engine_build=state.engine_build,
        )


def is_running(instance: LocalInstance) -> bool:
    """True only if the recorded pid is alive and is the very process sparkrig started."""
    return process_start_ticks(instance.pid) == instance.pid_start_ticks


async def start_local(plan: LaunchPlan, probe: CompletionProbe) -> LocalInstance:
    """Start, record at once, and return when ready: alive, `/health` 200, one real completion.
    If it never gets there, it is stopped and forgotten, and the error names why."""
    state = await bring_up(plan, runners_for(plan), probe, lambda _line: None)
    return LocalInstance.of(state)


async def stop_local(instance: LocalInstance) -> str:
    """Stop the instance if it is still the process sparkrig started; forget it."""
    state = load_local_state(instance.name)
    if state is None:
        return "already forgotten"
    return (await bring_down(state))[0][1]


class InstanceStatus(BaseModel):
    name: str
    state: Literal["running", "not answering", "exited"]
    pid: int | None
    base_url: str
    alias: str
    model: str
    uptime_s: float
    slots_total: int | None = None
    slots_busy: int | None = None
    speculative: str | None = None
    log_path: str


async def instance_status(state: LaunchState, probe: CompletionProbe) -> InstanceStatus:
    """The launch's status (alive, healthy, one completion), with llama-server's slot use."""
    launch, server = await launch_status(state, probe), state.server
    assert server is not None
    started = state.started[0] if state.started else None  # None: `up` killed before it started
    exited = launch.rows[0].phase in {Phase.EXITED, Phase.NOT_STARTED}
    status = InstanceStatus(
        name=state.cluster,
        state="exited" if exited else "running" if launch.ready else "not answering",
        pid=started.pid if started else None,
        base_url=state.api_url,
        alias=server.alias,
        model=str(server.model),
        uptime_s=started.uptime_s() if started else 0.0,
        speculative=server.speculative.spec_type if server.speculative else None,
        log_path=started.log_path if started else "",
    )
    if status.state == "running":
        timeout = aiohttp.ClientTimeout(total=_SLOTS_TIMEOUT_S)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(f"{state.api_url}/slots") as response,
            ):
                slots: Any = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError):
            return status
        if isinstance(slots, list):
            status.slots_total = len(slots)
            status.slots_busy = sum(1 for slot in slots if slot.get("is_processing"))
    return status


__all__ = [
    "InstanceStatus",
    "LocalInstance",
    "check_port_free",
    "embedded_server",
    "free_port",
    "instance_status",
    "is_running",
    "plan_local",
    "start_local",
    "stop_local",
]
