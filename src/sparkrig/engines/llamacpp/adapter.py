"""llama.cpp as an `EngineAdapter`: `ggml-rpc-server` workers and a `llama-server` head, the
`llamacpp:` metrics, sparkrig's own build and its self-test on the bundled model."""

from __future__ import annotations

from pathlib import Path

from sparkrig.config.serving import EngineSettings
from sparkrig.engines.adapter import BUNDLED_MODEL, LocalEngine, SelfTestOutcome
from sparkrig.engines.launch_spec import LaunchContext, ProcessSpec
from sparkrig.engines.llamacpp.build import find_installed, prove_binary
from sparkrig.engines.llamacpp.gguf_model import resolve_model
from sparkrig.engines.llamacpp.metric_names import LLAMACPP_METRICS, PREFIX
from sparkrig.engines.llamacpp.rpc import render_llamacpp
from sparkrig.engines.metric_map import EngineMetricMap

DEFAULT_BINARIES = ("llama-server", "ggml-rpc-server")


class LlamacppAdapter:
    kind = "llamacpp"
    metrics_name = "llama.cpp"
    metric_prefix = PREFIX
    metric_map: EngineMetricMap = LLAMACPP_METRICS
    # vLLM's flags; llama-server sizes with context_tokens / parallel_slots (speculative is
    # refused outright when the cluster file loads)
    unsupported_settings = frozenset(
        {
            "max_model_len",
            "max_num_seqs",
            "max_num_batched_tokens",
            "kv_cache_dtype",
            "block_size",
            "gpu_memory_utilization",
            "max_cudagraph_capture_size",
            "generation_overrides",
            "default_chat_template_kwargs",
            "speculative",
        }
    )
    jit_caches: tuple[tuple[str, str], ...] = ()
    collectives_over_nccl = False  # RPC is plain TCP
    every_rank_loads_weights = False  # RPC workers get their tensors from the head
    model_folder_files: tuple[str, ...] = ()  # one GGUF file
    serves_slots = True

    def backend(self, engine: EngineSettings) -> str:
        return "rpc"

    def binaries(self, engine: EngineSettings, local: LocalEngine) -> tuple[str, str | None]:
        server, rpc = local.binaries if local.binaries is not None else DEFAULT_BINARIES
        return engine.binary or server, engine.rpc_binary or rpc

    def version_command(self, engine: EngineSettings) -> str | None:
        return engine.binary  # the embedded build: sparkrig installs the same one everywhere

    def python_command(self, engine: EngineSettings) -> str | None:
        return None  # one static binary

    def render(self, context: LaunchContext) -> list[ProcessSpec]:
        return render_llamacpp(context)

    def local_engine(self, engine: EngineSettings, model_path: str) -> LocalEngine:
        found = find_installed()
        return LocalEngine(
            binaries=(str(found.server_binary), str(found.rpc_binary)) if found else None,
            server_args=tuple(found.server_args) if found else (),
            bundled_model=resolve_model(None) if model_path == BUNDLED_MODEL else None,
        )

    def self_test(self, binary: Path, log_stem: Path) -> SelfTestOutcome | None:
        # the build's own proof: with weight repacking, else without (docs/engine.md)
        return prove_binary(binary, log_stem)[-1]


LLAMACPP = LlamacppAdapter()
