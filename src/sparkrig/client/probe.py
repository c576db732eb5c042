"""One-shot uses of the client for the CLI: ask one question, scrape /metrics once."""

from __future__ import annotations

import aiohttp

from sparkrig.client.endpoint import ChatRequest, EndpointClient, api_key_from_env
from sparkrig.client.metrics import MetricsSnapshot, parse_metrics
from sparkrig.client.records import RequestRecord
from sparkrig.errors import EndpointError


async def first_model_id(client: EndpointClient) -> str:
    try:
        listing = await client.get_json("/v1/models")
        return str(listing["data"][0]["id"])
    except (aiohttp.ClientError, TimeoutError, KeyError, IndexError, TypeError, ValueError) as exc:
        raise EndpointError(
            f"could not read a model id from {client.base_url}/v1/models ({_reason(exc)}) — "
            "check the URL, or pass --model"
        ) from exc


async def ask_once(
    url: str, prompt: str, *, model: str | None, max_tokens: int, stream: bool, api_key_env: str
) -> RequestRecord:
    async with EndpointClient(url, api_key=api_key_from_env(api_key_env)) as client:
        model_id = model or await first_model_id(client)
        request = ChatRequest(
            model=model_id,
            messages=[{"role": "user", "content": prompt}],
            max_tokens=max_tokens,
            stream=stream,
        )
        return await client.send(request)


async def scrape_once(url: str) -> MetricsSnapshot:
    async with EndpointClient(url) as client:
        try:
            text = await client.get_text("/metrics")
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise EndpointError(
                f"could not read {client.base_url}/metrics ({_reason(exc)}) — check the URL and "
                "that the engine exposes metrics (llama-server needs --metrics)"
            ) from exc
    return parse_metrics(text)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"HTTP {exc.status}"
    if isinstance(exc, aiohttp.ClientConnectorError) and exc.os_error is not None:
        return exc.os_error.strerror or str(exc)
    return exc.__class__.__name__ if not str(exc) else str(exc)
