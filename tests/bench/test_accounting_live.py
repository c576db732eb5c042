"""The bench refuses inflated token counts: the real llama-server behind the gateway's
inflated-counts fault (every count ×1.25, text untouched), against the same server clean."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from sparkrig.bench.point import INVALID_COUNTS, BenchSettings
from sparkrig.bench.receipt import load_receipt
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


async def _bench(url: str, out: Path) -> list[tuple[str, bool, list[str]]]:
    receipt = await run_bench(
        url, suites=["decode", "concurrency"], settings=SETTINGS, out_path=out
    )
    assert not [w for w in receipt.warnings if "tokenize" in w]  # the text check ran
    return [
        (f"{p.suite}/{p.name}", p.invalid, [f for s in p.samples for f in s.accounting])
        for p in receipt.points
    ]


async def test_counts_of_the_clean_server_hold(llama_server: LocalInstance, tmp_path: Path) -> None:
    async with running_gateway(llama_server.base_url) as url:
        points = await _bench(url, tmp_path / "clean.json")
    assert [name for name, invalid, _ in points if invalid] == []
    assert all(findings == [] for _, _, findings in points)
    receipt = load_receipt(tmp_path / "clean.json")
    checked = [r for p in receipt.points for s in p.samples for r in s.requests]
    assert checked
    assert all(r.retokenized_tokens is not None for r in checked)  # not vacuous: each was counted


async def test_inflated_counts_make_every_point_invalid_with_both_numbers(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    config = GatewayConfig(faults=[Fault.INFLATED_COUNTS])
    out = tmp_path / "inflated.json"
    async with running_gateway(llama_server.base_url, config) as url:
        points = await _bench(url, out)
    assert all(invalid for _, invalid, _ in points), points
    inflated = TOKENS * 5 // 4  # 40 claimed for 32 in the text
    for name, _, findings in points:
        text = " ".join(findings)
        assert f"claimed {inflated} completion tokens, its text re-tokenizes to" in text, name
        assert f"for max_tokens {TOKENS}" in text, name
        assert "/metrics counted" in text, name
    # the inflated rate is never shown as a figure
    receipt = load_receipt(out)
    assert all(INVALID_COUNTS in point.invalid_reasons for point in receipt.points)
    console = Console(record=True, width=300)
    console.print(bench_table(receipt))
    table = console.export_text()
    assert table.count("INVALID: token counts do not hold") == len(receipt.points)
    for point in receipt.points:
        assert point.summary is not None
        assert f"{point.summary.median:.1f}" not in table
