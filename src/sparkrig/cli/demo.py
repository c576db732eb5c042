"""`sparkrig demo`: the whole loop on the embedded default, on this machine.

Build or find llama-server, serve the bundled SmolLM2 (or a given GGUF), run the smoke workload
through sparkrig's own client, a short bench and the quick guard battery, print the tables,
write the JSON records and the HTML report, stop the engine.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from sparkrig.bench.point import BenchSettings
from sparkrig.bench.run import run_bench
from sparkrig.bench.smoke import SmokeReceipt, SmokeResult, run_smoke, save_smoke_receipt
from sparkrig.cli.embedded import embedded_engine
from sparkrig.cli.receipt_files import write_report
from sparkrig.cli.views.bench_table import bench_table, spec_table
from sparkrig.cli.views.check_table import check_table, result_line
from sparkrig.cli.views.smoke_table import metrics_line, smoke_table
from sparkrig.client import EndpointClient
from sparkrig.client.metrics import metrics_delta, try_scrape_metrics
from sparkrig.engines.llamacpp.server import SpeculativeOptions
from sparkrig.guards.baseline import default_baseline_path
from sparkrig.guards.battery import run_battery
from sparkrig.guards.context import CheckSettings
from sparkrig.guards.receipt import CheckReceipt
from sparkrig.launch.state import recorded_engine_build

# short enough for a first look (about 20 s on 2 cores); `sparkrig bench --local` goes further
DEMO_BENCH = BenchSettings(
    max_samples=3, min_samples=3, decode_tokens=64, concurrency=[1, 2], precision=0.05, rounds=1
)


def demo_receipts(out_path: Path) -> tuple[Path, Path]:
    """The bench and check receipts a demo writes beside its record (the bench's page beside
    the bench receipt)."""
    return (
        out_path.with_name(out_path.stem + ".bench.json"),
        out_path.with_name(out_path.stem + ".check.json"),
    )


async def run_demo(
    console: Console,
    *,
    model: Path | None,
    out_path: Path,
    speculative: SpeculativeOptions | None = None,
) -> SmokeReceipt:
    bench_path, check_path = demo_receipts(out_path)
    async with embedded_engine(console, model=model, speculative=speculative) as record:
        console.print("running the smoke workload")
        receipt = SmokeReceipt(
            base_url=record.base_url,
            model=record.alias,
            engine="llama.cpp",
            engine_binary=record.argv[0],
            engine_build=recorded_engine_build(record.base_url),
        )
        await _smoke(receipt, out_path)
        console.print("running a short bench (decode by content type, concurrency 1 and 2)")
        bench = await run_bench(
            record.base_url,
            suites=["decode", "concurrency"] + (["spec"] if speculative else []),
            settings=DEMO_BENCH,
            out_path=bench_path,
        )
        console.print("running the quick guard battery (sparkrig check --quick)")
        check = await _quick_check(console, record.base_url, record.alias, check_path)
        receipt.check_failed = [result.guard for result in check.failed]
        receipt.close()
        _save_record(receipt, out_path)
    console.print(smoke_table(receipt))
    console.print(metrics_line(receipt.metrics_delta))
    console.print(bench_table(bench))
    if (acceptance := spec_table(bench)) is not None:
        console.print(acceptance)
    console.print(check_table(check))
    page = write_report(bench_path, bench, also=[(check_path, check)])
    console.print(f"record written to {out_path}; bench receipt {bench_path}; check {check_path}")
    console.print(f"report: {page.resolve().as_uri()}", highlight=False)
    return receipt


def _save_record(receipt: SmokeReceipt, out_path: Path) -> None:
    save_smoke_receipt(receipt, out_path)


async def _quick_check(console: Console, base_url: str, model: str, out_path: Path) -> CheckReceipt:
    """The quick battery. On the first demo there is no baseline for the embedded engine yet:
    this clean run records it (the table says so), and later runs are judged against it."""
    baseline = default_baseline_path("embedded", model)
    return await run_battery(
        base_url,
        settings=CheckSettings(quick=True),
        out_path=out_path,
        model=model,
        baseline_path=baseline,
        record_baseline=not baseline.exists(),
        on_result=lambda result: console.print(result_line(result), highlight=False),
    )


async def _smoke(receipt: SmokeReceipt, out_path: Path) -> None:
    out_path.parent.mkdir(parents=True, exist_ok=True)

    def save(_: SmokeResult | None = None) -> None:
        save_smoke_receipt(receipt, out_path)

    async with EndpointClient(receipt.base_url) as client:
        before = await try_scrape_metrics(client)
        await run_smoke(client, receipt, save)
        after = await try_scrape_metrics(client)
        if before is not None and after is not None:
            receipt.metrics_delta = metrics_delta(before, after)
        else:
            receipt.warnings.append("server metrics could not be read before and after the run")
    save()
