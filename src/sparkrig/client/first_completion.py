"""The first completion: an engine is ready only when it answers one real completion with tokens."""

from __future__ import annotations

from sparkrig.client.endpoint import ChatRequest, EndpointClient
from sparkrig.errors import LaunchError

_PROBE_TOKENS = 4


async def answer_one_completion(base_url: str, model: str) -> None:
    """Raise LaunchError unless the server streams back a real completion with tokens."""
    request = ChatRequest(
        model=model, messages=[{"role": "user", "content": "Say hello."}], max_tokens=_PROBE_TOKENS
    )
    async with EndpointClient(base_url) as client:
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
