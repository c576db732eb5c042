"""Boot phases and the KV pool from real engine logs: vLLM 0.26.0's serve log and the embedded
llama-server's (tests/fixtures/vllm/README.md, tests/fixtures/llamacpp/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from sparkrig.launch.boot_phases import BootPhase, boot_phases, slowest_phase
from sparkrig.launch.kv_pool import (
    kv_pool_from_cache_config,
    kv_pool_from_log,
    kv_pool_from_slots,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
VLLM_LOG = (FIXTURES / "vllm" / "serve.log").read_text().splitlines()
LLAMA_LOG = (FIXTURES / "llamacpp" / "serve.log").read_text().splitlines()


def test_vllm_phases_from_its_own_stamps() -> None:
    phases = boot_phases(VLLM_LOG, "vllm")
    # first stamp 20:41:11; weights 20:42:06, KV 20:42:34, graphs 20:42:37, warmed up 20:42:58,
    # API 20:42:59
    assert [(p.name, p.at_s, p.took_s) for p in phases] == [
        ("weights loaded", 55.0, 55.0),
        ("KV cache sized", 83.0, 28.0),
        ("graphs captured", 86.0, 3.0),
        ("engine warmed up", 107.0, 21.0),
        ("API up", 108.0, 1.0),
    ]
    assert "GPU KV cache size: 1,923,456 tokens" in phases[1].line


def test_llamacpp_phases_from_its_own_stamps() -> None:
    phases = boot_phases(LLAMA_LOG, "llamacpp")
    assert [(p.name, p.at_s) for p in phases] == [
        ("slots sized", 0.309),
        ("model loaded", 0.312),
        ("API up", 0.312),
    ]


def test_a_log_cut_short_has_only_the_phases_it_reached() -> None:
    cut = VLLM_LOG[: next(i for i, line in enumerate(VLLM_LOG) if "GPU KV cache size" in line)]
    assert [p.name for p in boot_phases(cut, "vllm")] == ["weights loaded"]
    assert boot_phases(LLAMA_LOG, "vllm") == []  # another engine's stamps are not read
    assert boot_phases(VLLM_LOG, "sglang") == []


def test_the_slowest_phase_over_ranks() -> None:
    def phase(name: str, took: float) -> BootPhase:
        return BootPhase(name=name, at_s=took, took_s=took, line="")

    by_rank = {
        "a/vllm": [phase("weights loaded", 38.4)],
        "b/vllm": [phase("weights loaded", 30.0), phase("graphs captured", 107.2)],
    }
    assert slowest_phase(by_rank) == ("b/vllm", by_rank["b/vllm"][1])
    assert slowest_phase({}) is None


def test_kv_pool_from_the_vllm_log_and_cache_config() -> None:
    assert kv_pool_from_log(VLLM_LOG, "vllm") == 1923456
    metrics = (FIXTURES / "vllm" / "metrics_idle.txt").read_text()
    labels = next(
        sample.labels
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
        if sample.name == "vllm:cache_config_info"
    )
    assert kv_pool_from_cache_config(labels) == 1923456
    assert kv_pool_from_cache_config({"num_gpu_blocks": "120216", "block_size": "16"}) == 1923456
    assert kv_pool_from_cache_config({"block_size": "16"}) is None


def test_kv_pool_from_llamacpp_log_and_slots() -> None:
    assert kv_pool_from_log(LLAMA_LOG, "llamacpp") == 4096  # 4 slots × 1024
    slots = json.loads((FIXTURES / "llamacpp" / "slots.json").read_text())
    assert kv_pool_from_slots(slots) == 4096
    assert kv_pool_from_slots([{"id": 0}]) is None
    assert kv_pool_from_slots([]) is None
    assert kv_pool_from_log(VLLM_LOG, "llamacpp") is None
