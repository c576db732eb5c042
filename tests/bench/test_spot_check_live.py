"""A bench point that measures nonsense is invalid: the real llama-server behind the gateway's
cross-talk fault (another request's text spliced into a reply that arrived beside it), whose
replies alone are right and at c = 2 are not, against the same server clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.bench.point import BenchSettings
from sparkrig.bench.point_result import INVALID_NONSENSE
from sparkrig.bench.run import run_bench
from sparkrig.bench.spot_check import spot_check
from sparkrig.client import EndpointClient
from sparkrig.client.probe import first_model_id
from sparkrig.gateway import Fault, GatewayConfig, running_gateway
from sparkrig.launch.local import LocalInstance

pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="session")]

SETTINGS = BenchSettings(
    max_samples=2,
    min_samples=2,
    warmup_requests=0,
    decode_tokens=16,
    concurrency=[2],
    precision=0.5,
    rounds=1,
    cached_replays=False,
)


async def test_the_clean_engine_answers_the_spot_check_at_its_slots(
    llama_server: LocalInstance,
) -> None:
    async with EndpointClient(llama_server.base_url) as client:
        check = await spot_check(client, await first_model_id(client), 4)
    assert check.right_alone == [True, True]  # the bundled model answers both alone
    assert check.wrong_under_load == []
    assert not check.nonsense


async def test_a_point_whose_replies_go_wrong_at_its_load_is_invalid(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    config = GatewayConfig(faults=[Fault.CROSS_TALK])
    async with running_gateway(llama_server.base_url, config) as url:
        receipt = await run_bench(
            url, suites=["concurrency"], settings=SETTINGS, out_path=tmp_path / "b.json"
        )
    (point,) = receipt.points
    assert point.spot_check is not None
    assert point.spot_check.right_alone == [True, True]  # alone, nothing overlaps: right
    assert point.invalid
    assert point.invalid_reasons == [INVALID_NONSENSE]  # nothing else in the bench sees it
    assert point.spot_check.wrong_in_every_reply == ["Count from 1 to 10, separated by commas."]
    assert any("spot check" in warning for warning in point.warnings)
