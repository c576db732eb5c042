"""One-shot uses of the client for the CLI: ask one question, scrape /metrics once."""

from __future__ import annotations

import json

import aiohttp

from sparkrig.client.endpoint import ChatRequest, EndpointClient, api_key_from_env, read_at_most
from sparkrig.client.http_failures import describe_client_error, not_http, web_page_title
from sparkrig.client.metrics import MetricsSnapshot, parse_metrics
from sparkrig.client.records import RequestRecord
from sparkrig.errors import EndpointError, excerpt

_MODEL_LIST_BYTES = 4 * 1024 * 1024  # a long list of models, but never an endless body


async def first_model_id(client: EndpointClient) -> str:
    """The first model the server lists; EndpointError naming why there is none."""
    return (await model_ids(client))[0]


async def model_ids(client: EndpointClient) -> list[str]:
    """Every model id the server lists (at least one); EndpointError naming why there is none."""
    url = f"{client.base_url}/v1/models"
    try:
        async with client.session.get(url) as response:
            body = await read_at_most(response, _MODEL_LIST_BYTES)
            status = response.status
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise EndpointError(describe_client_error(exc, url)) from exc
    if (title := web_page_title(body)) is not None:
        raise EndpointError(
            f"{url} answered a web page titled {title!r} where a JSON model list belongs — point "
            "the URL at the OpenAI-compatible server, not a web UI, login page or proxy"
        )
    if status >= 400:
        raise EndpointError(
            f"{url} answered HTTP {status}: {excerpt(body.decode(errors='replace'))!r} — check "
            "the URL (and the API key), or pass --model"
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:  # json.loads would call this "not JSON"
        raise EndpointError(
            f"{url} answered a model list that is not UTF-8 text (byte "
            f"0x{body[exc.start]:02x} at offset {exc.start}) — the server or a proxy in front of "
            "it mangled the reply; check its version and encoding, or pass --model"
        ) from exc
    try:
        listing = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise EndpointError(
            f"{url} did not answer JSON ({excerpt(body.decode(errors='replace'), 80)!r}) — "
            "check the URL points at an OpenAI-compatible server, or pass --model"
        ) from exc
    entries = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(entries, list):
        raise EndpointError(
            f"{url} answered JSON without a `data` list of models — check the URL points at an "
            "OpenAI-compatible server, or pass --model"
        )
    if not entries:
        raise EndpointError(
            f"{url} lists no models — load a model on the server first, or pass --model"
        )
    first = entries[0]
    model_id = first.get("id") if isinstance(first, dict) else None
    if not isinstance(model_id, str) or not model_id:
        raise EndpointError(
            f"{url}: the first model has no string `id` (got {excerpt(repr(first), 60)}) — "
            "pass --model"
        )
    others = [e.get("id") for e in entries[1:] if isinstance(e, dict)]
    return [model_id, *(i for i in others if isinstance(i, str) and i)]


async def ask_once(
    url: str,
    prompt: str,
    *,
    model: str | None,
    max_tokens: int,
    stream: bool,
    api_key_env: str | None,
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
        except aiohttp.ClientResponseError as exc:
            if not_http(exc):
                raise EndpointError(describe_client_error(exc, client.base_url)) from exc
            raise EndpointError(
                f"{client.base_url}/metrics answered HTTP {exc.status} — check that the engine "
                "exposes metrics (llama-server needs --metrics)"
            ) from exc
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise EndpointError(describe_client_error(exc, f"{client.base_url}/metrics")) from exc
    return parse_metrics(text)
