"""The KV pool a running server has this boot (it varies per boot: field notes:
kv-pool-per-boot), asked of the server itself: vLLM's `vllm:cache_config_info` labels on
/metrics, else llama-server's `/slots` (the sum of every slot's context). `plan-capacity
--server` and `lint --server` use it, and so do the bench and check receipts of a server
sparkrig did not start (one it started has the pool of its boot log in `startup`)."""

from __future__ import annotations

import aiohttp
from pydantic import Field

from sparkrig.client.endpoint import EndpointClient
from sparkrig.client.http_failures import describe_client_error
from sparkrig.client.metrics import MetricsSnapshot, parse_metrics
from sparkrig.engines.registry import adapter_by_metrics_name
from sparkrig.errors import EndpointError, MetricsError
from sparkrig.frozen_model import FrozenModel
from sparkrig.launch.kv_pool import kv_pool_from_cache_config, kv_pool_from_slots


class LiveKvPool(FrozenModel):
    """The KV pool as the server reported it, and where it was read."""

    tokens: int = Field(description="tokens of KV cache the engine holds this boot")
    source: str = Field(
        description="where it was read: URL/metrics vllm:cache_config_info (kv_cache_size_tokens, "
        "or num_gpu_blocks × block_size), or URL/slots (sum of n_ctx)"
    )


async def read_kv_pool(
    client: EndpointClient, snapshot: MetricsSnapshot | None = None
) -> LiveKvPool | None:
    """The pool the server reports, None where it reports none. `snapshot`: a /metrics scrape
    already taken (it is scraped here otherwise)."""
    if snapshot is None:
        try:
            snapshot = parse_metrics(await client.get_text("/metrics"))
        except (aiohttp.ClientError, TimeoutError, MetricsError, EndpointError):
            snapshot = None
    info = snapshot.samples.get("vllm:cache_config_info", []) if snapshot else []
    if info and (tokens := kv_pool_from_cache_config(info[0].labels)) is not None:
        return LiveKvPool(tokens=tokens, source=f"{client.base_url}/metrics vllm:cache_config_info")
    adapter = adapter_by_metrics_name(snapshot.engine) if snapshot is not None else None
    if adapter is not None and not adapter.serves_slots:
        return None  # no /slots there; asking would only log a 404 on the server
    try:
        slots = await client.get_json("/slots")
    except (aiohttp.ClientError, TimeoutError, ValueError, EndpointError):
        slots = None
    if (tokens := kv_pool_from_slots(slots)) is not None:
        return LiveKvPool(tokens=tokens, source=f"{client.base_url}/slots (sum of n_ctx)")
    return None


async def live_kv_pool(base_url: str) -> tuple[int, str]:
    """(tokens, where it was read); EndpointError when the server says neither."""
    async with EndpointClient(base_url) as client:
        try:
            snapshot: MetricsSnapshot | None = parse_metrics(await client.get_text("/metrics"))
        except (aiohttp.ClientConnectionError, TimeoutError) as exc:  # no HTTP reply at all
            raise EndpointError(describe_client_error(exc, f"{client.base_url}/metrics")) from exc
        except (aiohttp.ClientError, MetricsError, EndpointError):
            snapshot = None  # it answers, without metrics: /slots may say
        pool = await read_kv_pool(client, snapshot) if snapshot else await read_kv_pool(client)
    if pool is None:
        raise EndpointError(
            f"{base_url} reports no KV pool (no vllm:cache_config_info on /metrics, no /slots) — "
            "give the pool in profile.kv_pool_tokens, or start llama-server with --slots"
        )
    return pool.tokens, pool.source
