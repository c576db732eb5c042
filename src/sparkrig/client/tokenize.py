"""The server's own tokenizer through `/tokenize` and `/detokenize` (llama.cpp and vLLM both
have them)."""

from __future__ import annotations

from typing import Any

import aiohttp

from sparkrig.client.endpoint import EndpointClient
from sparkrig.errors import EndpointError


async def server_tokenize(client: EndpointClient, model: str, text: str) -> list[int]:
    """Token ids of `text` as the server counts them, without special tokens.

    llama.cpp reads `content`, vLLM reads `prompt` (and `model`); each ignores the other's key.
    """
    body = {"content": text, "prompt": text, "model": model, "add_special_tokens": False}
    reply = await _post_json(
        client,
        "/tokenize",
        body,
        refused="has no tokenizer endpoint; prompt lengths will be estimated",
        failed="prompt lengths will be estimated",
    )
    tokens = reply.get("tokens") if isinstance(reply, dict) else None
    if not isinstance(tokens, list) or not all(isinstance(token, int) for token in tokens):
        raise EndpointError(
            f"{client.base_url}/tokenize gave no token list — prompt lengths will be estimated"
        )
    return tokens


async def server_detokenize(client: EndpointClient, model: str, tokens: list[int]) -> str:
    """The text of `tokens` as the server decodes it.

    Both engines read `tokens`; llama.cpp answers `content`, vLLM `prompt` (and reads `model`).
    """
    body = {"tokens": tokens, "model": model}
    cannot = "cannot turn tokens back into text"
    reply = await _post_json(
        client, "/detokenize", body, refused=cannot, failed=f"this server {cannot}"
    )
    text = _detokenized_text(reply)
    if text is None:
        raise EndpointError(
            f"{client.base_url}/detokenize gave no text (neither content nor prompt)"
        )
    return text


def _detokenized_text(reply: Any) -> str | None:
    if not isinstance(reply, dict):
        return None
    for key in ("content", "prompt"):
        if isinstance(reply.get(key), str):
            return str(reply[key])
    return None


async def _post_json(
    client: EndpointClient, path: str, body: dict[str, Any], *, refused: str, failed: str
) -> Any:
    """The JSON reply of POST `path`; an EndpointError saying what follows (`refused` after an
    HTTP error, `failed` after no usable reply)."""
    try:
        async with client.session.post(f"{client.base_url}{path}", json=body) as response:
            if response.status >= 400:
                raise EndpointError(
                    f"{client.base_url}{path} answered HTTP {response.status} — this server "
                    f"{refused}"
                )
            return await response.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise EndpointError(
            f"{client.base_url}{path} failed ({exc.__class__.__name__}) — {failed}"
        ) from exc
