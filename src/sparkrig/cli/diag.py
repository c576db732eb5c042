"""`sparkrig diag [CLUSTER.toml] --out FILE.tar.gz`: one archive for a bug report (what goes in
and what is removed: `doctor/diag_bundle.py`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from sparkrig import defaults
from sparkrig.cli.common import COUNT, app, console, ranged, refuse_to_replace
from sparkrig.errors import SparkrigError


@app.command()
def diag(
    cluster_file: Annotated[
        Path | None, typer.Argument(help="cluster TOML (none: the --local instances)")
    ] = None,
    out: Annotated[Path, typer.Option(help="the archive to write (.tar.gz)")] = Path(
        "sparkrig-diag.tar.gz"
    ),
    doctor: Annotated[
        Path | None, typer.Option(help="a folder `sparkrig doctor --out` wrote")
    ] = None,
    receipts: Annotated[Path | None, typer.Option(help="the folder of your receipts")] = None,
    latest: Annotated[int, ranged("how many of the newest receipts", COUNT)] = 5,
    lines: Annotated[
        int, ranged("lines of each rank's log", COUNT, "-n", "--lines")
    ] = defaults.DIAG_LOG_LINES,
    force: Annotated[
        bool, typer.Option("--force", help="let --out replace a file that is not a diag archive")
    ] = False,
) -> None:
    """Bundle the launch state, every rank's log end and scan, doctor's captures, the latest
    receipts and the fabric plan into one archive, with keys, tokens and prompts removed. An
    earlier diag archive at --out is replaced; any other file only with --force."""
    from sparkrig.doctor.diag_bundle import (
        Bundle,
        add_doctor,
        add_file_json,
        add_launch,
        add_receipts,
        is_diag_archive,
        latest_receipts,
        write_bundle,
    )
    from sparkrig.launch.forensics import read_forensics

    what = "a sparkrig diag archive"
    refuse_to_replace(out, force=force, ours=is_diag_archive, what=what)

    bundle = Bundle()
    states: list[Any] = []
    if cluster_file is not None:
        from sparkrig.config import load_cluster
        from sparkrig.fabric.apply import journal_path
        from sparkrig.fabric.plan import plan_fabric
        from sparkrig.launch.state import load_state

        cluster = load_cluster(cluster_file)
        name = cluster.name or cluster_file.stem
        try:
            bundle.json("fabric/plan.json", plan_fabric(cluster).model_dump(mode="json"))
        except SparkrigError as exc:
            bundle.missing.append(f"fabric plan: {exc}")
        add_file_json(bundle, "fabric/applied.json", journal_path(name), "fabric apply record")
        state = load_state(name)
        if state is None:
            bundle.missing.append(f"launch state: {name} is not recorded as up")
        else:
            states.append(state)
    else:
        from sparkrig.launch.state import load_local_states

        states = load_local_states()
        if not states:
            bundle.missing.append("launch state: no --local instance is recorded")
    for state in states:
        add_launch(bundle, state, asyncio.run(read_forensics(state)), lines)
    if doctor is not None:
        add_doctor(bundle, doctor)
    else:
        bundle.missing.append("doctor captures: none given (`sparkrig doctor --out DIR`)")
    if receipts is not None:
        add_receipts(bundle, latest_receipts(receipts, latest))
    else:
        bundle.missing.append("receipts: none given (--receipts FOLDER)")
    written = write_bundle(bundle, out)
    console.print(
        f"wrote {written}: {len(bundle.members)} files; not included: {len(bundle.missing)} "
        "(listed in manifest.json); keys, tokens and prompt text removed",
        highlight=False,
    )
