"""What `sparkrig bench` prints and checks around a run: its tables, where the paired receipt
goes, and the failures that end a run that measured nothing usable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.markup import escape

from sparkrig.cli.common import console, print_json, refuse_to_replace
from sparkrig.errors import SparkrigError


def show_receipt(receipt: Any, out_path: Path) -> None:
    """The bench table, warnings and report page of one receipt."""
    from sparkrig.cli.receipt_files import write_report
    from sparkrig.cli.views.bench_table import bench_table, spec_table
    from sparkrig.cli.views.multiturn_table import multiturn_tables

    console.print(bench_table(receipt))
    if (acceptance := spec_table(receipt)) is not None:
        console.print(acceptance)
    for table in multiturn_tables(receipt):
        console.print(table)
    for point in receipt.points:
        if point.arrivals is not None:
            line = f"{point.suite}/{point.name}: {point.arrivals.describe()}"
            console.print(escape(line), highlight=False)
    if receipt.max_load is not None:
        console.print(f"[bold]{escape(receipt.max_load.describe())}[/]", highlight=False)
    for warning in receipt.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    for point in receipt.points:
        for warning in point.warnings:
            console.print(f"[yellow]{point.suite}/{point.name}:[/] {warning}", highlight=False)
    page = write_report(out_path, receipt)
    console.print(f"receipt written to {out_path}; report {page}", highlight=False)


def show_bench(result: Any, out_path: Path, second_path: Path | None, *, as_json: bool) -> None:
    """What a bench run prints and how it ends: one receipt, or both of a paired run; a run
    that measured nothing, or no valid point, fails here after its receipt is shown."""
    if second_path is not None:
        show_paired(result, (out_path, second_path), as_json=as_json)
        return
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        show_receipt(result, out_path)
    fail_when_nothing_measured(result, out_path)
    fail_when_no_valid_point(result, out_path)


def show_paired(receipts: Any, paths: tuple[Path, Path], *, as_json: bool) -> None:
    """Both receipts of a paired run, each as a plain run shows one, then how to compare."""
    if as_json:
        print_json([receipt.model_dump(mode="json") for receipt in receipts])
    else:
        for receipt, path in zip(receipts, paths, strict=True):
            console.print(f"[bold]{escape(receipt.base_url)}[/]", highlight=False)
            show_receipt(receipt, path)
        console.print(
            f"paired run {receipts[0].pairing}: `sparkrig compare {paths[0]} {paths[1]}` "
            "judges it on paired rounds",
            highlight=False,
        )
    for receipt, path in zip(receipts, paths, strict=True):
        fail_when_nothing_measured(receipt, path)
    for receipt, path in zip(receipts, paths, strict=True):
        fail_when_no_valid_point(receipt, path)


def paired_receipt_path(
    out_path: Path, paired_with: str | None, paired_out: Path | None, *, force: bool
) -> Path | None:
    """Where the --paired-with server's receipt goes; None for a plain run."""
    if paired_with is None:
        return None
    from sparkrig.bench.paired import check_paired_paths, paired_path

    second_path = paired_out or paired_path(out_path)
    check_paired_paths(out_path, second_path)
    refuse_to_replace(second_path, force=force, flag="--paired-out")
    return second_path


def fail_when_nothing_measured(receipt: Any, out_path: Path) -> None:
    if not receipt.measured:
        discarded = next((d.reason for p in receipt.points for d in p.discarded), None)
        if receipt.requests_failed() == 0 and discarded is not None:
            raise SparkrigError(  # every request answered: the samples were ruled out
                f"nothing was measured: every sample was discarded (first: {discarded}) — fix "
                f"what that names and rerun; {out_path} records the failed run"
            )
        first = receipt.first_error or "no request was sent"
        raise SparkrigError(
            f"nothing was measured: {receipt.requests_failed()} of {receipt.requests_sent} "
            f"requests failed (first: {first.split(' — ')[0]}) — fix what the first error names "
            f"and rerun; {out_path} records the failed run"
        )


def fail_when_no_valid_point(receipt: Any, out_path: Path) -> None:
    """Something was measured, but every point that was is INVALID: no figure stands."""
    from sparkrig.bench.point_result import invalid_reasons

    measured = [point for point in receipt.points if point.samples]
    if not measured or any(not point.invalid for point in measured):
        return
    first = measured[0]
    raise SparkrigError(
        f"no valid point: all {len(measured)} measured points are INVALID (first, "
        f"{first.suite}/{first.name}: {'; '.join(invalid_reasons(first))}) — fix what it names "
        f"and rerun (--max-error-rate sets the failed-request ceiling); {out_path} records "
        "the run"
    )
