"""`sparkrig lint / plan-capacity CLUSTER.toml`: what a cluster file says, read without touching
a host: the field reports' pitfalls it holds, and the KV pool math of a serving profile."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from sparkrig.cli.common import POSITIVE, JsonFlag, app, console, print_json, ranged
from sparkrig.errors import UsageError


@app.command()
def lint(
    cluster_file: Annotated[Path, typer.Argument(help="cluster TOML to check")],
    profile: Annotated[
        str | None, typer.Option(help="check only the table profiles.NAME (default: every profile)")
    ] = None,
    server: Annotated[
        str | None,
        typer.Option(help="a running server's URL: use the KV pool it has this boot"),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Check a cluster file against the field reports' pitfalls; exit 1 on any error.

    Rules: cudagraph sizes, DSpark k,
    memory on unified memory, JIT caches on NFS, TP on the cables, …); each finding names its
    fix and its source. Exits 1 on any error."""
    from sparkrig.config import load_cluster
    from sparkrig.lint import lint_cluster

    cluster = load_cluster(cluster_file)
    if server is not None:
        from sparkrig.cli.live_pool import with_server_pool

        cluster, note = with_server_pool(cluster, profile, server)
        if not as_json:
            console.print(f"[yellow]note[/]: {escape(note)}", highlight=False)
    try:
        findings = lint_cluster(cluster, profile)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if as_json:
        print_json([finding.__dict__ for finding in findings])
    else:
        for finding in findings:
            style = "red" if finding.severity == "error" else "yellow"
            rest = escape(finding.line().split(" ", 1)[1])
            console.print(f"[{style}]{finding.severity}[/] {rest}", highlight=False, soft_wrap=True)
        errors = sum(f.severity == "error" for f in findings)
        console.print(
            f"{cluster_file}: {errors} errors, {len(findings) - errors} warnings", highlight=False
        )
    if any(f.severity == "error" for f in findings):
        raise typer.Exit(1)


@app.command("plan-capacity")
def plan_capacity(
    cluster_file: Annotated[Path, typer.Argument(help="cluster TOML with a profile table")],
    profile: Annotated[str | None, typer.Option(help="the table profiles.NAME instead")] = None,
    steps_per_second: Annotated[
        float | None, ranged("measured decode steps/s, for the spec-decode ceiling", POSITIVE)
    ] = None,
    server: Annotated[
        str | None,
        typer.Option(help="a running server's URL: use the KV pool it has this boot"),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """KV pool math of a serving profile: what fits, per sequence, and the spec ceiling.

    Full-length requests that fit (pool / max_model_len), tokens per sequence
    with every sequence live, and the speculative ceiling steps/s × (k+1)."""
    from sparkrig.config import load_cluster
    from sparkrig.config.capacity import plan_capacity as capacity_of

    cluster = load_cluster(cluster_file)
    try:
        chosen = cluster.chosen_profile(profile)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    notes = []
    if server is not None:
        from sparkrig.cli.live_pool import with_server_pool

        cluster, note = with_server_pool(cluster, profile, server)
        chosen, notes = cluster.chosen_profile(profile), [note]
    capacity = capacity_of(chosen, steps_per_second)
    capacity.notes[:0] = notes
    if as_json:
        print_json(capacity.model_dump(mode="json"))
        return
    for field, value in capacity.model_dump().items():
        if field != "notes":
            console.print(f"{field.replace('_', ' ')}: {'—' if value is None else value}")
    for note in capacity.notes:
        console.print(f"[yellow]note[/]: {escape(note)}", highlight=False)
