"""The first completion: an engine is ready only when it answers one real completion with tokens."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sparkrig.client.endpoint import ChatRequest, EndpointClient
from sparkrig.client.probe import model_ids
from sparkrig.errors import EndpointError, LaunchError

_PROBE_TOKENS = 4


async def answer_one_completion(base_url: str, model: str, api_key: str | None = None) -> None:
    """Raise LaunchError unless the server lists `model` on /v1/models and streams back a real
    completion with tokens. The list tells our engine from another server on the same port.
    `api_key` goes out as a bearer token (vLLM started with --api-key / VLLM_API_KEY answers
    /health without it and 401s everything under /v1); it is never printed."""
    request = ChatRequest(
        model=model, messages=[{"role": "user", "content": "Say hello."}], max_tokens=_PROBE_TOKENS
    )
    async with EndpointClient(base_url, api_key=api_key) as client:
        try:
            served = await model_ids(client)
        except EndpointError as exc:
            hint = (
                " — the engine wants an API key: export it in the variable engine.api_key_env "
                "names (default VLLM_API_KEY) where sparkrig runs"
                if "401" in str(exc) and api_key is None
                else ""
            )
            raise LaunchError(
                f"the engine answers /health but not /v1/models: {exc}{hint}"
            ) from exc
        if model not in served:
            raise LaunchError(
                f"{base_url}/v1/models serves {', '.join(served)}, not {model} — another server "
                "may answer on this port, or set model.served_name to what the engine serves"
            )
        record = await client.send(request)
    if record.error is not None:
        raise LaunchError(
            f"the engine is up but its first completion failed: {record.error.message}"
        )
    if not record.completion_tokens:
        raise LaunchError(
            "the engine is up but its first completion carried no tokens — check the model loads "
            "and the server log for errors"
        )


def completion_probe(api_key: str | None) -> Callable[[str, str], Awaitable[None]]:
    """`answer_one_completion` with the engine's API key bound: the readiness probe `up` and
    `status` run (the key stays in this closure, off every record)."""

    async def probe(base_url: str, model: str) -> None:
        await answer_one_completion(base_url, model, api_key)

    return probe
