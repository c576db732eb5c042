"""What a server says about its own shape: the context per request and the number of slots.

llama.cpp answers both in /props (`default_generation_settings.n_ctx` is per slot,
`total_slots` the slot count); vLLM gives `max_model_len` in /v1/models and does not expose
`max_num_seqs`, so its slots come from a setting (sparkrig.defaults.CHECK_SLOTS_FALLBACK)."""

from __future__ import annotations

import contextlib
from typing import Any

import aiohttp

from sparkrig.guards.context import GuardContext
from sparkrig.outside_numbers import count_or_none

_UNREADABLE = (aiohttp.ClientError, TimeoutError, ValueError, AttributeError)


async def _props(context: GuardContext) -> dict[str, Any]:
    with contextlib.suppress(*_UNREADABLE):
        props = await context.client.get_json("/props")
        if isinstance(props, dict):
            return props
    return {}


def context_in_props(props: dict[str, Any]) -> int | None:
    settings = props.get("default_generation_settings")
    return count_or_none(settings.get("n_ctx")) if isinstance(settings, dict) else None


def slots_in_props(props: dict[str, Any]) -> int | None:
    return count_or_none(props.get("total_slots"))


def context_in_models(models: Any, model: str) -> int | None:
    """vLLM's max_model_len of `model` in a /v1/models reply."""
    entries = models.get("data", []) if isinstance(models, dict) else []
    for entry in entries:
        if isinstance(entry, dict) and entry.get("id") == model:
            length = count_or_none(entry.get("max_model_len"))
            if length is not None:
                return length
    return None


async def context_tokens(context: GuardContext) -> int | None:
    """The server's context per request: llama.cpp's /props n_ctx, vLLM's max_model_len. What
    the battery read once (`server_context`) stands; a guard run alone asks the server."""
    if context.server_context is not None:
        return context.server_context
    if (n_ctx := context_in_props(await _props(context))) is not None:
        return n_ctx
    with contextlib.suppress(*_UNREADABLE):
        return context_in_models(await context.client.get_json("/v1/models"), context.model)
    return None


async def server_slots(context: GuardContext) -> int | None:
    """How many requests the server decodes at once, where it says (llama.cpp /props)."""
    return slots_in_props(await _props(context))
