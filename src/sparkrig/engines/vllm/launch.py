"""vLLM across nodes: the `vllm serve` (and `ray start`) command lines and environment per node.

mp backend (vLLM's multi-node docs, eugr's launcher): every node runs `vllm serve` with
`--nnodes N --node-rank r --master-addr HEAD --master-port P`; workers add `--headless`.
Ray backend: `ray start --head` on the head, `ray start --address HEAD:PORT` on the workers,
then `vllm serve --distributed-executor-backend ray` on the head.
"""

from __future__ import annotations

import json

from sparkrig import defaults
from sparkrig.config.serving import EngineSettings, ServingProfile
from sparkrig.engines.launch_spec import (
    LaunchContext,
    LaunchNode,
    ProcessSpec,
    order_processes,
)
from sparkrig.engines.vllm.capture_sizes import derived_capture_size
from sparkrig.fabric.plan_model import EnvVar

# The seven JIT and workspace caches a shared HF cache put in one tree (field notes:
# jit-cache-node-local): each variable and its folder under the node-local cache root.
JIT_CACHES: tuple[tuple[str, str], ...] = (
    ("VLLM_CACHE_ROOT", ""),
    ("DG_JIT_CACHE_DIR", "deepgemm-cache"),
    ("FLASHINFER_WORKSPACE_BASE", "flashinfer"),
    ("TILELANG_CACHE_DIR", "tilelang"),
    ("TORCHINDUCTOR_CACHE_DIR", "torchinductor-cache"),
    ("TRITON_CACHE_DIR", "triton-cache"),
    ("TORCH_EXTENSIONS_DIR", "torch_extensions"),
)
_JIT_REASON = (
    "node-local JIT cache: ranks compiling into one shared tree corrupt each other "
    "(FileExistsError, DeepGEMM runtime != nullptr, ABI-mismatched sampling.so; "
    "docs/field-notes.md#jit-cache-node-local)"
)


def jit_cache_env(root: str) -> list[EnvVar]:
    root = root.rstrip("/")
    return [
        EnvVar(name=name, value=f"{root}/{sub}" if sub else root, reason=_JIT_REASON)
        for name, sub in JIT_CACHES
    ]


def capture_size_for(profile: ServingProfile) -> int | None:
    """The profile's --max-cudagraph-capture-size, else one whose captured graphs really hold a
    full batch of k+1-token verify steps (field notes: capture-size-seqs-k1; vLLM's own grid and
    rounding in `capture_sizes`)."""
    spec = profile.speculative
    return derived_capture_size(
        profile.max_num_seqs,
        spec.num_speculative_tokens if spec else None,
        profile.max_cudagraph_capture_size,
        profile.max_num_batched_tokens,
    )


def api_args(engine: EngineSettings) -> list[str]:
    """Flags only the API process (the head) takes."""
    return ["--reasoning-parser", engine.reasoning_parser] if engine.reasoning_parser else []


def profile_args(profile: ServingProfile) -> list[str]:
    """The serving flags every `vllm serve` of the cluster shares."""
    args: list[str] = []
    scalar_flags = (
        ("--max-model-len", profile.max_model_len),
        ("--pipeline-parallel-size", profile.pipeline_parallel_size),
        ("--max-num-seqs", profile.max_num_seqs),
        ("--max-num-batched-tokens", profile.max_num_batched_tokens),
        ("--kv-cache-dtype", profile.kv_cache_dtype),
        ("--block-size", profile.block_size),
        ("--gpu-memory-utilization", profile.gpu_memory_utilization),
        ("--max-cudagraph-capture-size", capture_size_for(profile)),
    )
    for flag, value in scalar_flags:
        if value is not None:
            args += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    if profile.speculative is not None:
        args += ["--speculative-config", profile.speculative.as_json()]
    if profile.generation_overrides:
        args += ["--override-generation-config", _json(profile.generation_overrides)]
    if profile.default_chat_template_kwargs:
        args += ["--default-chat-template-kwargs", _json(profile.default_chat_template_kwargs)]
    return args + list(profile.extra_args)


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _serve_head_args(context: LaunchContext) -> list[str]:
    return [
        context.engine_binary,
        "serve",
        context.model_path,
        "--served-model-name",
        context.model.api_name,
        "--host",
        context.engine.api_host,
        "--port",
        str(context.engine.port),
        "--tensor-parallel-size",
        str(_tp(context)),
        *api_args(context.engine),
    ]


def _tp(context: LaunchContext) -> int:
    return context.profile.tensor_parallel_for(len(context.nodes))


def device_env(engine: EngineSettings, profile: ServingProfile) -> list[EnvVar]:
    """What vLLM's CPU build needs on every node (vllm/platforms/cpu.py, vllm/envs.py); nothing
    for the GPU build."""
    if engine.device != "cpu":
        return []
    space = profile.cpu_kvcache_gib or defaults.VLLM_CPU_KVCACHE_GIB
    return [
        EnvVar(
            name="VLLM_TARGET_DEVICE",
            value="cpu",
            reason="vLLM's CPU build; without it a build whose metadata lacks '+cpu' cannot "
            "tell its device ('Failed to infer device type')",
        ),
        EnvVar(
            name="VLLM_CPU_KVCACHE_SPACE",
            value=str(space),
            reason="KV cache in GiB on the CPU build, where gpu_memory_utilization counts the "
            "host's whole memory (defaults.VLLM_CPU_KVCACHE_GIB)",
        ),
    ]


def render_vllm(context: LaunchContext) -> list[ProcessSpec]:
    """Processes in start order (workers first unless engine.start_order says otherwise)."""
    if context.engine.backend == "ray":
        return _render_ray(context)
    engine_env = [
        *jit_cache_env(context.engine.jit_cache_dir),
        *device_env(context.engine, context.profile),
    ]
    if len(context.nodes) == 1:
        # one node: a plain `vllm serve`, no --nnodes/--master-addr (nothing to rendezvous with)
        argv = [*_serve_head_args(context), *profile_args(context.profile)]
        return [_head(context.head, argv, engine_env, context)]
    head = context.head
    processes = []
    for node in context.nodes:
        distributed = [
            "--distributed-executor-backend",
            "mp",
            "--nnodes",
            str(len(context.nodes)),
            "--node-rank",
            str(node.rank),
            "--master-addr",
            head.control_address,
            "--master-port",
            str(context.engine.master_port),
        ]
        if node.rank == 0:
            argv = [*_serve_head_args(context), *distributed, *profile_args(context.profile)]
            processes.append(_head(node, argv, engine_env, context))
        else:
            argv = [
                context.engine_binary,
                "serve",
                context.model_path,
                "--tensor-parallel-size",
                str(_tp(context)),
                *distributed,
                "--headless",
                *profile_args(context.profile),
            ]
            processes.append(
                ProcessSpec(
                    node=node.name,
                    role="worker",
                    name="vllm",
                    argv=argv,
                    env=node.env_with(engine_env),
                    ready_when="alive",
                )
            )
    return order_processes(processes, context)


def _head(
    node: LaunchNode, argv: list[str], engine_env: list[EnvVar], context: LaunchContext
) -> ProcessSpec:
    return ProcessSpec(
        node=node.name,
        role="head",
        name="vllm",
        argv=argv,
        env=node.env_with(engine_env),
        port=context.engine.port,
        ready_when="health",
    )


def _render_ray(context: LaunchContext) -> list[ProcessSpec]:
    engine_env = [
        *jit_cache_env(context.engine.jit_cache_dir),
        *device_env(context.engine, context.profile),
    ]
    head = context.head
    ray_port = str(context.engine.ray_port)
    ray_head = ProcessSpec(
        node=head.name,
        role="head",
        name="ray",
        argv=[
            "ray",
            "start",
            "--head",
            "--block",
            "--port",
            ray_port,
            "--node-ip-address",
            head.control_address,
        ],
        env=head.env_with(engine_env),
        port=context.engine.ray_port,
        ready_when="port",
    )
    ray_workers = [
        ProcessSpec(
            node=node.name,
            role="worker",
            name="ray",
            argv=[
                "ray",
                "start",
                "--block",
                "--address",
                f"{head.control_address}:{ray_port}",
                "--node-ip-address",
                node.control_address,
            ],
            env=node.env_with(engine_env),
            ready_when="alive",
        )
        for node in context.workers
    ]
    serve = [
        *_serve_head_args(context),
        "--distributed-executor-backend",
        "ray",
        *profile_args(context.profile),
    ]
    # Ray needs its head before workers can join; the serving process still starts last.
    return [ray_head, *ray_workers, _head(head, serve, engine_env, context)]
