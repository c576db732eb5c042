"""A slow-starting engine, as a freshly started one decoding ~30% slower for its first requests
(docs/field-notes.md#warmup-penalty): the real llama-server behind `gateway serve --stretch 1
--stretch-first 1`, whose first reply arrives at half speed. The bench's cold flag fires on it
and not on the same server without the slow start, and `--warmup-steady` records the slow
generation and keeps warming past it."""

from __future__ import annotations

from sparkrig.bench.point import BenchSettings, measure_point
from sparkrig.bench.point_result import PointResult
from sparkrig.bench.steady_warmup import agreed, steady_warmup
from sparkrig.bench.suites import single_decode_rate
from sparkrig.bench.workloads import chat
from sparkrig.client import EndpointClient
from sparkrig.gateway.serve import running_serving_gateway
from sparkrig.gateway.serve_config import ServeConfig
from sparkrig.launch.local import LocalInstance

SLOW_START = ServeConfig(stretch=1.0, stretch_first=1)


async def _decode_point(url: str, model: str) -> PointResult:
    async with EndpointClient(url) as client:
        return await measure_point(
            client,
            PointResult(suite="decode", name="warm", metric="tok/s"),
            make_requests=lambda: [chat(model, "Count from 1 to 60, separated by commas.", 48)],
            value_of=single_decode_rate,
            settings=BenchSettings(min_samples=3, max_samples=3, warmup_requests=1, rounds=1),
            check_text=lambda text: [],
            on_sample=lambda point: None,
        )


async def test_the_cold_flag_fires_on_a_slow_start_and_not_on_a_warm_engine(
    llama_server: LocalInstance,
) -> None:
    async with running_serving_gateway(llama_server.base_url, SLOW_START) as (url, _):
        slow = await _decode_point(url, llama_server.alias)
    async with running_serving_gateway(llama_server.base_url, ServeConfig()) as (url, _):
        warm = await _decode_point(url, llama_server.alias)
    assert slow.cold_start, (slow.warmup_values, slow.summary)
    assert any("cold engine" in warning for warning in slow.warnings)
    assert not warm.cold_start, (warm.warmup_values, warm.summary)


async def test_a_steady_warmup_records_the_slow_start_and_warms_past_it(
    llama_server: LocalInstance,
) -> None:
    settings = BenchSettings(warmup_steady=True, steady_warmup_tokens=48)
    async with (
        running_serving_gateway(llama_server.base_url, SLOW_START) as (url, _),
        EndpointClient(url) as client,
    ):
        warmup = await steady_warmup(client, llama_server.alias, settings)
    first, later = warmup.rates[0], warmup.rates[1:]
    assert later, warmup.note  # one slow generation is never steady on its own
    assert first < 0.75 * max(later), warmup.rates  # the slow start is on the record
    assert warmup.steady == agreed(warmup.rates, warmup.band)
    assert warmup.note
