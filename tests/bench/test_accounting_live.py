"""The bench refuses inflated token counts and passes honest ones: the real llama-server
behind the gateway's inflated-counts fault (every count ×1.25, text and logprobs untouched),
against the same server clean."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from sparkrig.bench.point import BenchSettings
from sparkrig.bench.point_result import INVALID_COUNTS, PointResult, count_findings
from sparkrig.bench.receipt import BenchReceipt, load_receipt
from sparkrig.bench.run import run_bench
from sparkrig.cli.views.bench_table import bench_table
from sparkrig.gateway import Fault, GatewayConfig, running_gateway
from sparkrig.launch.local import LocalInstance

pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="session")]

TOKENS = 32
SETTINGS = BenchSettings(
    max_samples=2,
    min_samples=2,
    warmup_requests=0,
    decode_tokens=TOKENS,
    concurrency=[2],
    precision=0.5,
    rounds=1,
)


async def _bench(url: str, out: Path, settings: BenchSettings = SETTINGS) -> BenchReceipt:
    suites = ["decode", "concurrency"] if settings is SETTINGS else ["concurrency"]
    receipt = await run_bench(url, suites=suites, settings=settings, out_path=out)
    assert not [w for w in receipt.warnings if "tokenize" in w]  # the text was re-tokenized
    assert load_receipt(out) == receipt  # the witness and the notes survive the receipt file
    return receipt


async def _one_point_behind(
    fault: Fault, llama_server: LocalInstance, tmp_path: Path
) -> PointResult:
    """The one cold concurrency point measured through the gateway injecting `fault`."""
    settings = SETTINGS.model_copy(update={"cached_replays": False})
    async with running_gateway(llama_server.base_url, GatewayConfig(faults=[fault])) as url:
        receipt = await run_bench(
            url, suites=["concurrency"], settings=settings, out_path=tmp_path / f"{fault}.json"
        )
    (point,) = receipt.points
    return point


def _witnessed_honestly(point: PointResult) -> None:
    """The point's witness was read and held: every logprobs entry a claimed token."""
    witness = point.witness
    assert witness is not None, point.name
    assert witness.read, point.warnings
    assert witness.claimed == witness.logprob_entries == TOKENS
    assert witness.findings == []


async def test_counts_of_the_clean_server_hold(llama_server: LocalInstance, tmp_path: Path) -> None:
    async with running_gateway(llama_server.base_url) as url:
        receipt = await _bench(url, tmp_path / "clean.json")
    assert [p.name for p in receipt.points if p.invalid] == []
    assert [count_findings(p) for p in receipt.points if count_findings(p)] == []
    for point in receipt.points:
        _witnessed_honestly(point)
        assert not [w for w in point.warnings if "witness" in w]
    checked = [r for p in receipt.points for s in p.samples for r in s.requests]
    assert checked
    assert all(r.retokenized_tokens is not None for r in checked)  # not vacuous: each was counted


async def test_inflated_counts_make_every_point_invalid_with_both_numbers(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    config = GatewayConfig(faults=[Fault.INFLATED_COUNTS])
    out = tmp_path / "inflated.json"
    async with running_gateway(llama_server.base_url, config) as url:
        receipt = await _bench(url, out)
    assert all(point.invalid for point in receipt.points)
    inflated = TOKENS * 5 // 4  # 40 claimed for 32 generated
    for point in receipt.points:
        text = " ".join(count_findings(point))
        assert point.witness is not None
        # the gateway inflates usage and timings, never the logprobs: one entry per real token
        assert (point.witness.claimed, point.witness.logprob_entries) == (inflated, TOKENS)
        assert (
            f"logprobs witness: token count: the server claimed {inflated} completion tokens, "
            f"its reply carried {TOKENS} logprobs entries"
        ) in text, point.name
        assert f"for max_tokens {TOKENS}" in text, point.name
        assert "/metrics counted" in text, point.name
        assert "re-tokenizes" not in text  # the text judges nothing
    # the inflated rate is never shown as a figure
    assert all(INVALID_COUNTS in point.invalid_reasons for point in receipt.points)
    console = Console(record=True, width=300)
    console.print(bench_table(receipt))
    table = console.export_text()
    assert table.count("INVALID: token counts do not hold") == len(receipt.points)
    rows = [line.split("│") for line in table.splitlines() if "INVALID" in line]
    assert [row[4].strip() for row in rows] == ["—"] * len(receipt.points)  # the tok/s column
    assert all(point.summary is not None for point in receipt.points)  # there was a figure


async def test_a_stream_that_claims_fewer_tokens_than_its_events_makes_the_point_invalid(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    """undercounted-stream halves the usage of streamed replies only: every timed request
    streams, so each claims 16 tokens for the 32 content events it delivered."""
    point = await _one_point_behind(Fault.UNDERCOUNTED_STREAM, llama_server, tmp_path)
    assert INVALID_COUNTS in point.invalid_reasons
    text = " ".join(count_findings(point))
    assert f"{TOKENS} content events carried {TOKENS // 2} claimed tokens" in text


async def test_counts_hold_up_a_concurrency_ladder(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    """Streams past the server's 4 slots queue and share batches: still every count holds."""
    # cold only: the cached replays send the same requests again (108 s with them on 2 cores)
    settings = SETTINGS.model_copy(update={"concurrency": [1, 4, 16], "cached_replays": False})
    async with running_gateway(llama_server.base_url) as url:
        receipt = await _bench(url, tmp_path / "ladder.json", settings)
    assert [p.name for p in receipt.points] == [f"c={c} cold" for c in (1, 4, 16)]
    assert [p.name for p in receipt.points if p.invalid] == []
    for point in receipt.points:
        assert count_findings(point) == []
        _witnessed_honestly(point)
        assert len(point.samples[0].requests) == int(point.name[2:].split()[0])


async def test_a_witness_reply_that_disagrees_with_itself_makes_the_point_invalid(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    """The gateway's top-mismatch fault moves the sampled token's own top_logprobs entry 0.5
    nats from its logprob; the text and the counts stay right, so only the witness sees it."""
    from sparkrig.bench.point_result import INVALID_INCONSISTENT

    point = await _one_point_behind(Fault.TOP_MISMATCH, llama_server, tmp_path)
    assert point.invalid_reasons == [INVALID_INCONSISTENT]
    assert point.witness is not None
    assert "in its own top_logprobs" in point.witness.inconsistent[0]
