"""The bench against the real llama-server: samples, foreign traffic, invalid output, Ctrl-C."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sparkrig.bench.corpus import corpus_sha256
from sparkrig.bench.point import BenchSettings, measure_point
from sparkrig.bench.point_result import PointResult
from sparkrig.bench.receipt import load_receipt
from sparkrig.bench.run import run_bench
from sparkrig.bench.suites import prefill_rate, single_decode_rate
from sparkrig.bench.workloads import chat
from sparkrig.client import ChatRequest, CompletionRequest, EndpointClient
from sparkrig.launch.local import LocalInstance

pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="session")]

QUICK = BenchSettings(
    max_samples=3, min_samples=3, decode_tokens=32, concurrency=[1, 2], precision=0.5, rounds=1
)


async def test_bench_writes_a_complete_receipt(llama_server: LocalInstance, tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    receipt = await run_bench(
        llama_server.base_url, suites=["decode", "concurrency"], settings=QUICK, out_path=out
    )
    assert receipt.complete
    assert receipt.engine == "llama.cpp"
    names = [(point.suite, point.name) for point in receipt.points]
    assert ("decode", "count") in names
    assert ("concurrency", "c=2 cold") in names
    assert ("concurrency", "c=2 cached") in names
    for point in receipt.points:
        assert point.summary is not None
        assert point.summary.n >= QUICK.min_samples
        assert point.summary.median > 0
        for sample in point.samples:
            assert all(r.completion_tokens == QUICK.decode_tokens for r in sample.requests)
    stored = load_receipt(out)
    assert stored.points[0].summary == receipt.points[0].summary


async def test_rounds_add_samples_to_the_same_points(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    settings = QUICK.model_copy(update={"rounds": 2, "concurrency": [1]})
    receipt = await run_bench(
        llama_server.base_url,
        suites=["concurrency"],
        settings=settings,
        out_path=tmp_path / "rounds.json",
    )
    assert [point.name for point in receipt.points] == ["c=1 cold", "c=1 cached"]
    assert {sample.round for sample in receipt.points[0].samples} == {1, 2}
    assert receipt.points[0].summary is not None
    cold, cached = receipt.points
    # the engine is warm after round 1: only the cache-priming warm-up runs again
    assert cold.requests_sent == 1 + 3 + 3
    assert cached.requests_sent == (1 + 3) * 2
    assert receipt.points[0].summary.n == len(receipt.points[0].samples)


async def test_a_sample_with_foreign_traffic_is_discarded_and_retaken(
    llama_server: LocalInstance,
) -> None:
    fired: list[asyncio.Task[object]] = []

    async with EndpointClient(llama_server.base_url) as client:

        def make_requests() -> list[ChatRequest]:
            if not fired:  # during the first sample only, someone else uses the server
                stranger = chat(llama_server.alias, "Tell me about whales.", 64)
                fired.append(asyncio.ensure_future(client.send(stranger)))
            return [chat(llama_server.alias, "Count from 1 to 50.", 32)]

        point = await measure_point(
            client,
            PointResult(suite="test", name="foreign", metric="tok/s"),
            make_requests=make_requests,
            value_of=single_decode_rate,
            settings=BenchSettings(max_samples=2, warmup_requests=0, precision=0.5, rounds=1),
            check_text=lambda text: [],
            on_sample=lambda point: None,
        )
        await asyncio.gather(*fired)
    assert point.discarded
    assert "foreign traffic" in point.discarded[0].reason
    assert len(point.samples) == 2


async def test_degenerate_output_marks_the_point_invalid(llama_server: LocalInstance) -> None:
    async with EndpointClient(llama_server.base_url) as client:
        point = await measure_point(
            client,
            PointResult(suite="test", name="nonsense", metric="tok/s"),
            make_requests=lambda: [chat(llama_server.alias, "Say hi.", 16)],
            value_of=single_decode_rate,
            settings=BenchSettings(max_samples=2, warmup_requests=0, precision=0.5, rounds=1),
            check_text=lambda text: ["loop: flagged by the test's detector"],
            on_sample=lambda point: None,
        )
    assert point.invalid
    assert point.samples[0].degenerate == ["loop: flagged by the test's detector"]


async def test_prefill_prompts_have_exact_depths_and_replays_hit_the_cache(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    settings = BenchSettings(max_samples=3, prefill_depths=[64, 192], precision=0.5, rounds=1)
    receipt = await run_bench(
        llama_server.base_url, suites=["prefill"], settings=settings, out_path=tmp_path / "p.json"
    )
    assert not receipt.warnings
    by_name = {point.name: point for point in receipt.points}
    for depth in (64, 192):
        cold, cached = by_name[f"{depth} cold"], by_name[f"{depth} cached"]
        prompts = {r.prompt_tokens for s in cold.samples for r in s.requests}
        assert prompts == {depth}
        assert len({r.prompt_sha256 for s in cold.samples for r in s.requests}) == len(
            cold.samples
        )  # a fresh salt every time
        assert cold.cold_cache is not None
        assert cold.cold_cache.verdict == "confirmed", cold.cold_cache.note  # llama.cpp's counters
        assert cached.cold_cache is None  # a cached point claims nothing
        for point in (cold, cached):  # real text by default, cut exactly through /tokenize
            assert point.prompt_text is not None
            assert point.prompt_text.text == "corpus"
            assert point.prompt_text.method == "cut, re-tokenized"
            assert point.prompt_text.exact
            assert set(point.prompt_text.prompt_tokens) == {depth}
            assert corpus_sha256() in point.prompt_text.source
        cold_ttft = min(r.ttft_s or 1e9 for s in cold.samples for r in s.requests)
        cached_ttft = max(r.ttft_s or 0 for s in cached.samples for r in s.requests)
        assert not cached.cold_start
        if depth == 192:
            assert cached_ttft < cold_ttft  # the replay skips the prefill


async def test_a_cold_point_the_cache_served_is_called_not_cold(
    llama_server: LocalInstance,
) -> None:
    """The fault: a "cold" point whose prompt is the same every time (the salt lost), so the
    server's own prompt-cache counter shows the prefill came from its cache."""
    prompt = "Describe the water cycle in simple words. " * 12
    async with EndpointClient(llama_server.base_url) as client:
        point = await measure_point(
            client,
            PointResult(suite="prefill", name="lost salt", metric="tok/s", expects_cold=True),
            make_requests=lambda: [
                CompletionRequest(model=llama_server.alias, prompt=prompt, max_tokens=1)
            ],
            value_of=prefill_rate,
            settings=BenchSettings(max_samples=2, min_samples=2, warmup_requests=1, rounds=1),
            check_text=lambda text: [],
            on_sample=lambda point: None,
        )
    assert point.cold_cache is not None
    assert point.cold_cache.verdict == "not cold", point.cold_cache.note
    assert any("NOT cold" in warning for warning in point.warnings)


async def test_a_point_takes_its_minimum_before_it_looks(llama_server: LocalInstance) -> None:
    """Precise from its second sample on (a loose precision), the point still takes its minimum
    of 3 before it may look; tests/bench/test_statistics.py shows it never stops between looks."""
    async with EndpointClient(llama_server.base_url) as client:
        point = await measure_point(
            client,
            PointResult(suite="test", name="looks", metric="tok/s"),
            make_requests=lambda: [chat(llama_server.alias, "Count from 1 to 50.", 16)],
            value_of=single_decode_rate,
            settings=BenchSettings(
                min_samples=3,
                max_samples=6,
                precision_checks=[5],
                warmup_requests=0,
                precision=0.99,
                rounds=1,
            ),
            check_text=lambda text: [],
            on_sample=lambda point: None,
        )
    assert len(point.samples) == 3
    assert not point.imprecise


async def test_a_point_that_ends_at_its_cap_short_of_precision_is_imprecise(
    llama_server: LocalInstance,
) -> None:
    async with EndpointClient(llama_server.base_url) as client:
        point = await measure_point(
            client,
            PointResult(suite="test", name="cap", metric="tok/s"),
            make_requests=lambda: [chat(llama_server.alias, "Count from 1 to 50.", 16)],
            value_of=single_decode_rate,
            settings=BenchSettings(
                min_samples=2, max_samples=3, warmup_requests=0, precision=1e-9, rounds=1
            ),  # a real rate never varies by under a billionth
            check_text=lambda text: [],
            on_sample=lambda point: None,
        )
    assert len(point.samples) == 3
    assert point.imprecise
    assert any("imprecise: round 1 ended at 3 samples with ±" in w for w in point.warnings)


@pytest.mark.parametrize(("precision", "imprecise"), [(1e-9, True), (0.99, False)])
async def test_with_rounds_a_point_is_judged_on_all_its_samples_after_its_last_round(
    llama_server: LocalInstance, precision: float, imprecise: bool
) -> None:
    """A round's few samples are not meant to be precise alone: no flag after round 1 of 2,
    whatever its interval; after round 2 the flag follows the interval over all 4 samples."""
    settings = BenchSettings(
        min_samples=2, max_samples=2, warmup_requests=0, precision=precision, rounds=2
    )
    point = PointResult(suite="test", name="rounds", metric="tok/s")
    async with EndpointClient(llama_server.base_url) as client:
        for round_index in (1, 2):
            await measure_point(
                client,
                point,
                make_requests=lambda: [chat(llama_server.alias, "Count from 1 to 50.", 16)],
                value_of=single_decode_rate,
                settings=settings,
                check_text=lambda text: [],
                on_sample=lambda point: None,
                round_index=round_index,
            )
            if round_index == 1:
                assert not point.imprecise
    assert len(point.samples) == 4
    assert point.imprecise is imprecise
    flagged = [w for w in point.warnings if w.startswith("imprecise: 2 rounds ended at 4 samples")]
    assert len(flagged) == int(imprecise)


async def test_concurrency_prompts_are_cold_and_distinct_and_replays_are_their_own_point(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    settings = BenchSettings(
        max_samples=3,
        decode_tokens=16,
        concurrency=[2],
        prompt_tokens=192,
        precision=0.5,
        rounds=1,
    )
    receipt = await run_bench(
        llama_server.base_url,
        suites=["concurrency"],
        settings=settings,
        out_path=tmp_path / "c.json",
    )
    assert not receipt.warnings
    by_name = {point.name: point for point in receipt.points}
    assert list(by_name) == ["c=2 cold", "c=2 cached"]
    cold, cached = by_name["c=2 cold"], by_name["c=2 cached"]
    assert "fresh 192-token prompt" in cold.metric
    assert "replayed" in cached.metric
    for point in (cold, cached):
        assert {r.prompt_tokens for s in point.samples for r in s.requests} == {192}
        assert all(len({r.prompt_sha256 for r in s.requests}) == 2 for s in point.samples)
    cold_prompts = [r.prompt_sha256 for s in cold.samples for r in s.requests]
    assert len(set(cold_prompts)) == len(cold_prompts)  # every stream of every sample: fresh
    replayed = {tuple(sorted(r.prompt_sha256 for r in s.requests)) for s in cached.samples}
    assert len(replayed) == 1  # the same two prompts every sample
    cold_ttft = min(r.ttft_s or 1e9 for s in cold.samples for r in s.requests)
    cached_ttft = max(r.ttft_s or 0 for s in cached.samples for r in s.requests)
    assert cached_ttft < cold_ttft  # the replay skips the prefill; the cold point does not


async def test_streams_sent_from_two_client_processes_give_the_same_receipt_shape(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    """The concurrency suite with its streams split over two worker processes: every request
    is counted, checked against /tokenize and /metrics, and timed on the one shared clock."""
    settings = BenchSettings(
        max_samples=2,
        min_samples=2,
        decode_tokens=16,
        concurrency=[2],
        cached_replays=False,
        precision=0.5,
        client_processes=2,
    )
    receipt = await run_bench(
        llama_server.base_url,
        suites=["concurrency"],
        settings=settings,
        out_path=tmp_path / "sharded.json",
    )
    assert not receipt.warnings
    point = receipt.points[0]
    assert point.name == "c=2 cold"
    assert not point.invalid, point.invalid_reasons
    assert point.summary is not None
    assert point.summary.median > 0
    assert point.requests_sent == 2 * (settings.warmup_requests + len(point.samples))
    assert not point.request_errors
    for sample in point.samples:
        assert sample.client is not None
        assert sample.client.processes == 2
        assert not sample.accounting
        assert sample.metrics is not None  # /metrics agreed with the merged counts
        assert [r.completion_tokens for r in sample.requests] == [16, 16]
        assert all(r.retokenized_tokens is not None for r in sample.requests)
        for request in sample.requests:
            assert request.first_output_ns is not None
            assert request.last_output_ns is not None
            assert request.first_output_ns < request.last_output_ns
