"""Determinism over occupancy: a reply that changes only when the server's slots are all busy
passes every other determinism scenario and fails at full occupancy, temperature 0 and seeded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from sparkrig import defaults
from sparkrig.client import EndpointClient
from sparkrig.client.probe import first_model_id
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.gateway import Fault, GatewayConfig, running_gateway
from sparkrig.gateway.ledger import ServingLedger
from sparkrig.gateway.plan import in_flight_at_arrival
from sparkrig.guards.baseline import Baseline
from sparkrig.guards.context import CheckSettings, GuardContext
from sparkrig.guards.determinism import PROMPTS, SCENARIOS, both_paths, path_label
from sparkrig.guards.divergence import first_divergence
from sparkrig.guards.occupancy import (
    occupancy_levels,
    occupancy_outcomes,
    seeded_outcomes,
    slot_count,
)
from sparkrig.launch.local import LocalInstance
from tests.own_server import own_llama_server

WIDE_SLOTS = 16  # more than the 13 requests the other determinism scenarios send at once


def test_occupancy_is_half_and_all_of_the_slots_above_one() -> None:
    assert occupancy_levels(4) == (2, 4)
    assert occupancy_levels(16) == (8, 16)
    assert occupancy_levels(3) == (3,)
    assert occupancy_levels(1) == ()


def test_in_flight_at_arrival_counts_the_earlier_requests_still_running() -> None:
    ledger = ServingLedger()
    first = ledger.arrive(10, 1000)
    second = ledger.arrive(10, 1000)
    ledger.depart(first)
    third = ledger.arrive(10, 1000)
    assert [in_flight_at_arrival(r) for r in (first, second, third)] == [1, 2, 2]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def wide_server(engine: EngineInstall, bundled_model: Path) -> AsyncIterator[LocalInstance]:
    """The embedded engine with 16 slots of 1,024 tokens (the session server has 4)."""
    async with own_llama_server(
        engine, bundled_model, parallel_slots=WIDE_SLOTS, context_tokens=WIDE_SLOTS * 1024
    ) as server:
        yield server


@pytest.mark.engine
async def test_a_reply_that_changes_only_when_full_fails_only_at_full_occupancy(
    wide_server: LocalInstance,
) -> None:
    config = GatewayConfig(faults=[Fault.DIVERGE_WHEN_FULL], full_at_requests=WIDE_SLOTS)
    async with running_gateway(wide_server.base_url, config) as url, EndpointClient(url) as client:
        context = GuardContext(
            client, await first_model_id(client), CheckSettings(), Baseline(model="")
        )
        slots, source = await slot_count(context)
        assert (slots, source) == (WIDE_SLOTS, "the server's /props total_slots")
        requests = [context.chat(p, logprobs=defaults.CHECK_TOP_LOGPROBS) for p in PROMPTS]
        reference = [await context.send(r) for r in requests]
        mixed = both_paths(requests)
        doubled = [reference[i // 2] for i in range(len(mixed))]
        labels = [path_label(i) for i in range(len(mixed))]
        # the widest of the other scenarios: 12 requests beside a long prompt
        beside = await SCENARIOS["beside a long prompt"](context, mixed)
        assert all(
            first_divergence(d, r).kind != "defect" for r, d in zip(beside, doubled, strict=True)
        )
        outcomes = await occupancy_outcomes(context, mixed, doubled, labels, slots)
        sampled, note = await seeded_outcomes(context, PROMPTS, slots)
    kinds = {name: {d.kind for _, d in rows} for name, rows in outcomes.items()}
    assert kinds[f"occupancy 8 of {slots} slots"] <= {"identical", "near_tie"}
    assert "defect" in kinds[f"occupancy 16 of {slots} slots"]
    assert note.startswith("seeded sampling (seed"), note
    (rows,) = sampled.values()
    assert "defect" in {d.kind for _, d in rows}
