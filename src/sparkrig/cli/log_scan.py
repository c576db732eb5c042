"""`sparkrig logs [CLUSTER.toml] --scan`: every rank's log (and kernel log) read for the
catalogued signatures, with boot phases; exit 1 when a signature is found or no log was read.
`sparkrig logs --scan FILE` (or `-` for standard input) reads a log the user holds: one copied
from a node, a container's log, journal output."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

from sparkrig.cli.common import console, print_json
from sparkrig.errors import SparkrigError


def scan_logs(state: Any, *, as_json: bool) -> None:
    from sparkrig.cli.views.forensics_view import forensics_view
    from sparkrig.launch.forensics import read_forensics

    if not state.started:
        raise SparkrigError(
            f"{state.cluster}: no process was started, so there is no log to scan — "
            "`sparkrig up … --apply` first"
        )
    report = asyncio.run(read_forensics(state))
    if as_json:
        print_json(report.model_dump(mode="json") | {"hits": [h.model_dump() for h in report.hits]})
    else:
        errors = [f"{r.key}: {r.read_error}" for r in report.ranks if r.read_error]
        notes = [k.note for k in report.kernels if not k.readable]
        console.print(forensics_view(report.hits, notes, report.boot(), errors), highlight=False)
    if all(rank.read_error for rank in report.ranks):
        raise SparkrigError(
            f"{state.cluster}: no rank's log could be read — check the nodes answer "
            "(`sparkrig status`) and the log paths exist"
        )
    if report.hits:
        raise typer.Exit(1)


def scan_cluster_logs(path: Path, *, as_json: bool) -> None:
    from sparkrig.cli.cluster import state_for

    cluster, state = state_for(path)
    if state is None:
        raise SparkrigError(
            f"{cluster.name}: nothing recorded — start it with `sparkrig up {path} --apply`"
        )
    scan_logs(state, as_json=as_json)


def scan_log_file(path: Path, *, as_json: bool) -> None:
    """One log the user holds, its last FORENSICS_LOG_LINES lines, for every engine's
    signatures and the kernel's (what kind of log it is, sparkrig cannot know)."""
    import sys

    from sparkrig import defaults
    from sparkrig.cli.views.forensics_view import forensics_view
    from sparkrig.json_files import read_bytes_file
    from sparkrig.launch.log_signatures import KERNEL, scan_lines

    if str(path) == "-":
        raw, where = sys.stdin.buffer.read(), "stdin"
    else:
        fix = "give a log file (copied from a node, `docker logs`, `journalctl -u UNIT`)"
        raw, where = read_bytes_file(path, what="log", fix=fix), path.name
    lines = raw.decode("utf-8", errors="replace").splitlines()[-defaults.FORENSICS_LOG_LINES :]
    if not any(line.strip() for line in lines):
        raise SparkrigError(f"{where} holds no line to scan — give the engine's log itself")
    found = [*scan_lines(lines, None, where), *scan_lines(lines, KERNEL, where)]
    unique = list({hit.signature: hit for hit in found}.values())  # kernel-and-engine ones once
    if as_json:
        print_json({"file": where, "lines": len(lines), "hits": [h.model_dump() for h in unique]})
    else:
        scanned = f"{len(lines):,} line{'' if len(lines) == 1 else 's'}"
        console.print(f"{where}: {scanned} scanned", highlight=False)
        console.print(forensics_view(unique, [], {}, []), highlight=False)
    if unique:
        raise typer.Exit(1)
