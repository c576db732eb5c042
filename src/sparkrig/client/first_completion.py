"""The first completion: an engine is ready only when it answers one real completion with tokens."""

from __future__ import annotations

from sparkrig.client.endpoint import ChatRequest, EndpointClient
from sparkrig.client.probe import model_ids
from sparkrig.errors import EndpointError, LaunchError

_PROBE_TOKENS = 4


async def answer_one_completion(base_url: str, model: str) -> None:
    """Raise LaunchError unless the server lists `model` on /v1/models and streams back a real
    completion with tokens. The list tells our engine from another server on the same port."""
    request = ChatRequest(
        model=model, messages=[{"role": "user", "content": "Say hello."}], max_tokens=_PROBE_TOKENS
    )
    async with EndpointClient(base_url) as client:
        try:
            served = await model_ids(client)
        except EndpointError as exc:
            raise LaunchError(f"the engine answers /health but not /v1/models: {exc}") from exc
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
