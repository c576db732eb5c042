"""llama.cpp across nodes: `ggml-rpc-server` on every worker, `llama-server --rpc` on the head.

The head loads the model and offloads its layers to the RPC devices (`--n-gpu-layers` all), so
the weights and the KV cache are split across the workers; the head's own CPU keeps only what
llama.cpp leaves on the host.

The RPC connections carry the tensors, so a worker listens on its address on the cable to the
head when it has one (the direct fabric link), not on a management LAN; a worker with no cable
to the head (the opposite node of a 4-ring) listens on its control address, reached by relay.
`engine.rpc_network = "control"` puts every worker on its control address instead.
"""

from __future__ import annotations

from pathlib import Path

from sparkrig.engines.launch_spec import LaunchContext, LaunchNode, ProcessSpec, order_processes
from sparkrig.engines.llamacpp.server import LlamaServerSpec, llama_server_argv

# More layers than any model has: every layer goes to the RPC devices.
ALL_LAYERS = "999"


def rpc_address(node: LaunchNode, network: str) -> str:
    if network == "fabric" and node.head_facing_address is not None:
        return node.head_facing_address
    return node.control_address


def render_llamacpp(context: LaunchContext) -> list[ProcessSpec]:
    rpc_binary = context.rpc_binary or "ggml-rpc-server"
    port = context.engine.rpc_port
    workers = [
        ProcessSpec(
            node=node.name,
            role="worker",
            name="rpc",
            argv=[
                rpc_binary,
                "--host",
                rpc_address(node, context.engine.rpc_network),
                "--port",
                str(port),
                "--threads",
                str(context.engine.threads),
            ],
            env=list(node.user_env),
            port=port,
            ready_when="port",
        )
        for node in context.workers
    ]
    servers = ",".join(
        f"{rpc_address(node, context.engine.rpc_network)}:{port}" for node in context.workers
    )
    rpc_args = ["--rpc", servers, "--n-gpu-layers", ALL_LAYERS] if servers else []
    spec = LlamaServerSpec(
        binary=Path(context.engine_binary),
        model=Path(context.model_path),
        alias=context.model.api_name,
        host=context.engine.api_host,
        port=context.engine.port,
        parallel_slots=context.profile.parallel_slots,
        context_tokens=context.profile.context_tokens,
        threads=context.engine.threads,
        speculative=None,
        extra_args=[*rpc_args, *context.engine_args, *context.profile.extra_args],
    )
    head = ProcessSpec(
        node=context.head.name,
        role="head",
        name="llama-server",
        argv=llama_server_argv(spec),
        env=list(context.head.user_env),
        port=context.engine.port,
        ready_when="health",
    )
    return order_processes([*workers, head], context)
