"""The multiturn suite on the real llama-server: conversations that grow by the model's own
replies find the conversation so far in the prefix cache from turn 2 on, as the server's own
cached counts say; behind the gateway's stamp-first-message fault (a per-request stamp at the
top of the system prompt) every turn is prefilled again, and the suite says so.

What the pinned llama.cpp does (measured here, 4 slots, its default cache_prompt and 8 GiB host
prompt cache): a conversation's next turn goes to the slot whose cached tokens share the longest
prefix with it (slot selection by LCP similarity above 0.1), so turn n+1 reuses turn n's prompt
and reply; it reports the reuse as usage.prompt_tokens_details.cached_tokens and timings.cache_n.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from sparkrig import defaults
from sparkrig.bench.point import BenchSettings
from sparkrig.bench.receipt import BenchReceipt, load_receipt
from sparkrig.bench.run import run_bench
from sparkrig.cli.views.multiturn_table import multiturn_table
from sparkrig.gateway import Fault, GatewayConfig, running_gateway
from sparkrig.launch.local import LocalInstance
from sparkrig.report.html_report import render_report

pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="session")]

SETTINGS = BenchSettings(
    conversations=2,
    turns=3,
    decode_tokens=8,
    opening_tokens=24,
    min_samples=2,
    max_samples=2,
    warmup_requests=0,
    precision=0.5,
    rounds=1,
)


async def _multiturn(url: str, out: Path, settings: BenchSettings = SETTINGS) -> BenchReceipt:
    receipt = await run_bench(url, suites=["multiturn"], settings=settings, out_path=out)
    assert load_receipt(out) == receipt
    [point] = receipt.points
    assert len(point.samples) == 2, point.discarded
    assert point.multiturn is not None
    assert len(point.multiturn.sessions) == 4  # 2 samples × 2 conversations
    for session in point.multiturn.sessions:
        assert None not in session.prompt_tokens  # every turn counted by the server
    return receipt


async def test_later_turns_are_served_from_the_prefix_cache(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    receipt = await _multiturn(llama_server.base_url, tmp_path / "clean.json")
    [point] = receipt.points
    figures = point.multiturn
    assert figures is not None
    assert not point.invalid, point.invalid_reasons
    assert figures.verdict == "reused", figures.note
    assert not [w for w in point.warnings if w.startswith("prefix reuse")]
    first, *later = figures.per_turn
    assert first.cached_tokens is not None  # salted: no more than a template's head
    assert first.cached_tokens.max <= defaults.BENCH_COLD_CACHE_ALLOWANCE_TOKENS
    for turn in later:
        assert turn.reported == turn.requests == 4  # llama.cpp says, on every reply
        assert (turn.cached_share or 0) > 0.5, turn
    for session in figures.sessions:
        assert (session.hit_rate or 0) > 0.5, session
    # real growth: each turn re-sends the one before, the model's reply and a new message
    for sample in point.samples:
        for at in range(0, len(sample.requests), SETTINGS.turns):
            turns = sample.requests[at : at + SETTINGS.turns]
            for before, after in itertools.pairwise(turns):
                sent_before = before.prompt_tokens or 0
                assert (after.prompt_tokens or 0) > sent_before + (before.completion_tokens or 0)
                assert (after.cached_prompt_tokens or 0) >= sent_before - 1
    assert (figures.reused_of_previous or 0) > 0.9
    assert multiturn_table(point) is not None
    assert "turn-N TTFT" in render_report([receipt])


async def test_a_stamped_first_message_defeats_reuse_and_the_suite_says_so(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    config = GatewayConfig(faults=[Fault.STAMP_FIRST_MESSAGE])
    two_turns = SETTINGS.model_copy(update={"turns": 2})  # every prompt is prefilled: keep it short
    async with running_gateway(llama_server.base_url, config) as url:
        receipt = await _multiturn(url, tmp_path / "stamped.json", two_turns)
    [point] = receipt.points
    figures = point.multiturn
    assert figures is not None
    assert figures.verdict == "missed", figures.note
    assert figures.reused_of_previous is not None
    assert figures.reused_of_previous < 0.1
    for turn in figures.per_turn:
        assert turn.reported == turn.requests  # llama.cpp still says: the head, no more
        assert turn.cached_tokens is not None
        assert turn.cached_tokens.max <= defaults.BENCH_COLD_CACHE_ALLOWANCE_TOKENS, turn
    assert [w for w in point.warnings if w.startswith("prefix reuse MISSED")] == [figures.note]
