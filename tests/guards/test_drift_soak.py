"""`check --repeat-every` compares each drift repeat with the probes taken when the battery
opened: the real llama-server behind the gateway, whose drift-after fault fires only once the
battery is over."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sparkrig.gateway import Fault, GatewayConfig, running_gateway
from sparkrig.guards.context import CheckSettings
from sparkrig.guards.soak import check_with_soak
from sparkrig.guards.verdict import GuardResult
from sparkrig.launch.local import LocalInstance

pytestmark = pytest.mark.engine

# the battery's drift guard sends 24 requests: its 6 probes (2 chat prompts and 1 completions
# prompt, each streamed and whole) twice when it opens, and twice at its end
BATTERY_REQUESTS = 24
WANTED = ["drift", "margin", "drift"]  # the battery, then one soak repeat


async def soaked(url: str, tmp_path: Path) -> list[GuardResult]:
    results: list[GuardResult] = []
    enough = asyncio.Event()

    def show(result: GuardResult) -> None:
        results.append(result)
        if len(results) >= len(WANTED):
            enough.set()

    soak = asyncio.create_task(
        check_with_soak(
            url,
            0.1,
            show=show,
            say=lambda _: None,
            settings=CheckSettings(quick=True),
            out_path=tmp_path / "check.json",
            guards=["drift"],
            baseline_path=tmp_path / "baseline.json",
        )
    )
    try:
        await asyncio.wait_for(enough.wait(), timeout=300)
    finally:
        soak.cancel()
        await asyncio.gather(soak, return_exceptions=True)
    return results[: len(WANTED)]


@pytest.mark.parametrize("faulty", [False, True], ids=["clean", "drift-after"])
async def test_each_soak_repeat_is_compared_with_the_opening(
    llama_server: LocalInstance, tmp_path: Path, faulty: bool
) -> None:
    faults = [Fault.DRIFT_AFTER] if faulty else []
    config = GatewayConfig(faults=faults, after_requests=BATTERY_REQUESTS)
    async with running_gateway(llama_server.base_url, config) as url:
        results = await soaked(url, tmp_path)
    assert [r.guard for r in results] == WANTED
    evidence = [r.evidence for r in results]
    # the battery ran before the fault fired; the margin repeat after, and it cannot see it
    assert [r.verdict for r in results[:2]] == ["PASS", "PASS"], evidence
    assert results[2].verdict == ("FAIL" if faulty else "PASS"), evidence
    if faulty:
        assert "same text, but the logprob" in results[2].evidence
