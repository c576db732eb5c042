"""vLLM as an `EngineAdapter`: `vllm serve` (mp or Ray) on every node, the `vllm:` metrics.

No self-test: vLLM needs a GPU and real weights, so a vLLM install is proven by `sparkrig up`
reaching readiness and by `sparkrig check`, not before.
"""

from __future__ import annotations

from pathlib import Path

from sparkrig.config.serving import EngineSettings
from sparkrig.engines.adapter import LocalEngine, SelfTestOutcome
from sparkrig.engines.launch_spec import LaunchContext, ProcessSpec
from sparkrig.engines.metric_map import EngineMetricMap
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
    serves_slots = False  # no /slots: its pool is on /metrics (cache_config_info)

    def backend(self, engine: EngineSettings) -> str:
        return engine.backend

    def binaries(self, engine: EngineSettings, local: LocalEngine) -> tuple[str, str | None]:
        return engine.binary or DEFAULT_BINARY, None

    def version_command(self, engine: EngineSettings) -> str | None:
        return engine.binary or DEFAULT_BINARY

    def python_command(self, engine: EngineSettings) -> str | None:
        return engine.binary or DEFAULT_BINARY

    def render(self, context: LaunchContext) -> list[ProcessSpec]:
        return render_vllm(context)

    def local_engine(self, model_path: str) -> LocalEngine:
        return LocalEngine()  # sparkrig builds no vLLM; the nodes bring their own

    def self_test(self, binary: Path, log_stem: Path) -> SelfTestOutcome | None:
        return None


VLLM = VllmAdapter()
