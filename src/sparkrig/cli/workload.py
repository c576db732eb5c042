"""`sparkrig workload import TRACE --out FILE`: a public trace (Mooncake, OpenTelemetry GenAI
spans) or a workload log as the workload JSONL that `soak --replay` reads, its timing kept
(wire/trace_import.py); prints what it read: requests, skipped spans, time span, token totals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sparkrig import defaults
from sparkrig.cli.common import (
    COUNT,
    ForceFlag,
    JsonFlag,
    console,
    print_json,
    ranged,
    refuse_to_replace,
)

workload_app = typer.Typer(
    help="Workload files for `soak --replay`: import a public trace (docs/gateway.md).",
    no_args_is_help=True,
)


@workload_app.command("import")
def workload_import(
    trace: Annotated[
        Path,
        typer.Argument(help="a Mooncake trace (JSONL), an OTLP JSON export, or a workload log"),
    ],
    out: Annotated[Path, typer.Option(help="the workload JSONL to write")],
    trace_format: Annotated[
        str,
        typer.Option(
            "--format", help="auto, sparkrig, mooncake or otel; auto tells by the first record"
        ),
    ] = "auto",
    block_tokens: Annotated[
        int, ranged("tokens per Mooncake hash block", COUNT)
    ] = defaults.TRACE_MOONCAKE_BLOCK_TOKENS,
    force: ForceFlag = False,
    json_output: JsonFlag = False,
) -> None:
    """Convert TRACE into a workload file; `soak URL --replay FILE [--paced]` replays it."""
    from sparkrig.json_files import write_text_atomically
    from sparkrig.wire.trace_import import describe, import_trace, trace_summary

    refuse_to_replace(out, force=force)
    imported = import_trace(trace, trace_format, block_tokens=block_tokens)
    lines = "".join(record.model_dump_json(exclude_none=True) + "\n" for record in imported.records)
    write_text_atomically(lines, out)
    summary = trace_summary(imported)
    if json_output:
        print_json({"trace": str(trace), "out": str(out), **summary.model_dump()})
        return
    console.print(f"{trace}: {describe(summary)} -> {out}", highlight=False)
