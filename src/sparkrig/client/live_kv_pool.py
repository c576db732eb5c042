"""The KV pool a running server has this boot (it varies per boot: field notes:
kv-pool-per-boot), asked of the server itself: vLLM's `vllm:cache_config_info` labels on
/metrics, else llama-server's `/slots` (the sum of every slot's context)."""

from __future__ import annotations

import aiohttp

from sparkrig.client.endpoint import EndpointClient
from sparkrig.client.metrics import parse_metrics
from sparkrig.errors import EndpointError, MetricsError
from sparkrig.launch.kv_pool import kv_pool_from_cache_config, kv_pool_from_slots


async def live_kv_pool(base_url: str) -> tuple[int, str]:
    """(tokens, where it was read); EndpointError when the server says neither."""
    async with EndpointClient(base_url) as client:
        try:
            snapshot = parse_metrics(await client.get_text("/metrics"))
        except (aiohttp.ClientError, TimeoutError, MetricsError, EndpointError):
            snapshot = None
        info = snapshot.samples.get("vllm:cache_config_info", []) if snapshot else []
        if info and (tokens := kv_pool_from_cache_config(info[0].labels)) is not None:
            return tokens, f"{client.base_url}/metrics vllm:cache_config_info"
        try:
            slots = await client.get_json("/slots")
        except (aiohttp.ClientError, TimeoutError, ValueError, EndpointError):
            slots = None
        if (tokens := kv_pool_from_slots(slots)) is not None:
            return tokens, f"{client.base_url}/slots (sum of n_ctx)"
    raise EndpointError(
        f"{base_url} reports no KV pool (no vllm:cache_config_info on /metrics, no /slots) — "
        "give the pool in profile.kv_pool_tokens, or start llama-server with --slots"
    )
