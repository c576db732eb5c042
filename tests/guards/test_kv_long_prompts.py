"""KV integrity's long-prompt scenario: documents sized from the server's context catch a
corruption of long prompts under concurrency that block-sized documents never trigger."""

from __future__ import annotations

import pytest

from sparkrig import defaults
from sparkrig.client import EndpointClient
from sparkrig.client.probe import first_model_id
from sparkrig.gateway import Fault, GatewayConfig, running_gateway
from sparkrig.guards.baseline import Baseline
from sparkrig.guards.context import CheckSettings, GuardContext
from sparkrig.guards.kv_integrity import block_scenario
from sparkrig.guards.kv_long_prompts import long_document_tokens, long_prompt_scenario
from sparkrig.launch.local import LocalInstance


def test_long_documents_are_the_context_less_the_allowance_up_to_the_cap() -> None:
    # the embedded test server: 1,024 tokens a slot
    assert long_document_tokens(1024, 64, 3) == (
        1024 - defaults.CHECK_KV_LONG_ALLOWANCE_TOKENS,
        "sized from the server's context of 1024 tokens",
    )
    assert long_document_tokens(131_072, 64, 3)[0] == defaults.CHECK_KV_LONG_DOCUMENT_TOKENS


def test_no_long_documents_without_a_context_or_room_beyond_the_blocks() -> None:
    assert long_document_tokens(None, 64, 3) == (
        None,
        "not run: the server does not say its context per request",
    )
    tokens, why = long_document_tokens(800, 256, 3)  # 672 tokens: less than 3 x 256
    assert tokens is None
    assert "no document longer than 3 blocks of 256" in why


@pytest.mark.engine
async def test_block_sized_documents_miss_what_context_sized_ones_catch(
    llama_server: LocalInstance,
) -> None:
    """vLLM's 64-token blocks made documents of about 650 characters; a corruption of prompts
    of 1,500 characters or more with 3 in flight (the gateway's default) passed them, and the
    long documents (896 tokens, about 2,500 characters here) fail on it."""
    config = GatewayConfig(faults=[Fault.BLOCK_CORRUPTION])
    assert config.long_prompt_chars == 1500
    settings = CheckSettings(kv_block_tokens=64)
    async with running_gateway(llama_server.base_url, config) as url, EndpointClient(url) as client:
        context = GuardContext(client, await first_model_id(client), settings, Baseline(model=""))
        blocks = await block_scenario(context, 64, "set by the test")
        assert blocks.verdict == "PASS", blocks.evidence
        assert blocks.details["prompt_chars"] < config.long_prompt_chars
        long = await long_prompt_scenario(context, 64)
    assert long.verdict == "FAIL", long.evidence
    assert "3 long documents in flight with a short request" in long.evidence
    assert long.details["prompt_chars"] >= config.long_prompt_chars
