"""The KV pool this boot actually got, read from the engine (pure): it is a per-boot figure
(field notes: kv-pool-per-boot), so the capacity math takes it from the engine, not the user.

vLLM prints `GPU KV cache size: 1,923,456 tokens` in its boot log (0.26.0, the same number as
`vllm:cache_config_info`'s `kv_cache_size_tokens`; its CPU build, 0.32.0, `CPU KV cache size:
46,592 tokens`); llama-server prints `n_slots = 4,
n_ctx_slot = 1024` and answers `/slots` with each slot's `n_ctx`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sparkrig.outside_numbers import count_or_none, int_or_none

_VLLM_KV = re.compile(r"[GC]PU KV cache size: ([\d,]+) tokens")  # the CPU build says CPU
_LLAMA_SLOTS = re.compile(r"n_slots = (\d+), n_ctx_slot = (\d+)")


def kv_pool_from_log(lines: Sequence[str], engine: str) -> int | None:
    """The KV pool in tokens from a boot log; the last boot's when the log holds several."""
    found: int | None = None
    for line in lines:
        if engine == "vllm" and (match := _VLLM_KV.search(line)):
            found = int_or_none(match.group(1).replace(",", ""), minimum=0) or found
        elif engine == "llamacpp" and (match := _LLAMA_SLOTS.search(line)):
            slots = int_or_none(match.group(1), minimum=0)
            per_slot = int_or_none(match.group(2), minimum=0)
            if slots is not None and per_slot is not None:
                found = slots * per_slot
    return found


def kv_pool_from_slots(slots: object) -> int | None:
    """llama-server's `/slots` reply (parsed JSON): the sum of every slot's context."""
    if not isinstance(slots, list) or not slots:
        return None
    sizes = [count_or_none(slot.get("n_ctx")) if isinstance(slot, dict) else None for slot in slots]
    if any(size is None for size in sizes):
        return None
    return sum(size for size in sizes if size is not None)


def kv_pool_from_cache_config(labels: dict[str, str]) -> int | None:
    """vLLM's `vllm:cache_config_info` labels: `kv_cache_size_tokens`, or num_gpu_blocks ×
    block_size when only those are given."""
    if (tokens := labels.get("kv_cache_size_tokens")) is not None:
        return int_or_none(tokens, minimum=0)
    blocks = int_or_none(labels.get("num_gpu_blocks", ""), minimum=0)
    size = int_or_none(labels.get("block_size", ""), minimum=1)
    return blocks * size if blocks is not None and size is not None else None
