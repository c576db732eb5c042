"""`sparkrig engine install / info`: the embedded llama.cpp build."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from sparkrig.cli.common import (
    JsonFlag,
    _print_json,
    app,
    console,
)

engine_app = typer.Typer(help="The embedded llama.cpp engine: build it, show what is built.")
app.add_typer(engine_app, name="engine")


@engine_app.command("install")
def engine_install(
    force: Annotated[bool, typer.Option("--force", help="rebuild even if a build exists")] = False,
) -> None:
    """Build llama-server and ggml-rpc-server from llama.cpp source (once per version)."""
    from sparkrig.report.build_progress import install_engine_with_progress

    found = install_engine_with_progress(console, force=force)
    console.print(f"llama-server ready: {found.server_binary}")


@engine_app.command("info")
def engine_info(as_json: JsonFlag = False) -> None:
    """Show where the embedded engine is, its version and its build flags."""
    from sparkrig.engines.llamacpp.build import find_installed, install_dir
    from sparkrig.engines.llamacpp.version import server_version

    found = find_installed()
    if found is None:
        info: dict[str, Any] = {"installed": False, "expected_at": str(install_dir())}
    else:
        info = {"installed": True, **found.model_dump(mode="json")}
        info["server_binary"] = str(found.server_binary)
        info["rpc_binary"] = str(found.rpc_binary) if found.rpc_binary.exists() else None
        info["version"] = server_version(found.server_binary)
    if as_json:
        _print_json(info)
        return
    if not info["installed"]:
        console.print(
            f"not built yet (would live in {info['expected_at']}) — run `sparkrig engine install`"
        )
        raise typer.Exit(1)
    table = Table(show_header=False)
    for key in ("version", "server_binary", "rpc_binary", "source", "built_at", "build_seconds"):
        table.add_row(key, str(info.get(key)))
    table.add_row("flags", " ".join(info.get("flags") or []) or "—")
    console.print(table)
