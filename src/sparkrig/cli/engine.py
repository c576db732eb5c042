"""`sparkrig engine install / info`: the embedded llama.cpp build."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from sparkrig.cli.common import (
    JsonFlag,
    app,
    console,
    print_json,
)

if TYPE_CHECKING:
    from rich.console import Console

    from sparkrig.engines.llamacpp.build import EngineInstall

engine_app = typer.Typer(help="The embedded llama.cpp engine: build it, show what is built.")
app.add_typer(engine_app, name="engine")


def find_or_build_engine(
    console: Console, *, force: bool = False, portable: bool = False
) -> EngineInstall:
    """The cached, self-tested llama-server; or build and self-test it with a progress bar."""
    from sparkrig.cli.views.build_progress import BUILD_ANNOUNCEMENT, build_progress
    from sparkrig.engines.llamacpp.build import find_installed, install

    found = find_installed()
    if not force and not portable and found is not None and found.self_tests:
        return found
    if found is None or force or portable:
        console.print(BUILD_ANNOUNCEMENT)
    with build_progress(console) as (show_phase, show_line):
        return install(show_phase, force=force, portable=portable, note=show_line)


@engine_app.command("install")
def engine_install(
    rebuild: Annotated[
        bool, typer.Option("--rebuild", "--force", help="rebuild even if a proven build exists")
    ] = False,
    portable: Annotated[
        bool,
        typer.Option(
            "--portable",
            help="build for the architecture's baseline instead of this CPU's extras (no "
            "AVX-512, no AMX): the build to use when the native one dies by SIGILL",
        ),
    ] = False,
) -> None:
    """Build llama-server and ggml-rpc-server from llama.cpp source (once per version and CPU).

    Every build is self-tested on the bundled model (one real completion) before it is recorded.
    If the native build cannot run here, sparkrig retries it without weight repacking, then
    builds the portable variant, and says which one passed."""
    found = find_or_build_engine(console, force=rebuild, portable=portable)
    console.print(f"llama-server ready: {found.server_binary} ({found.label})")


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
        info["label"] = found.label
    if as_json:
        print_json(info)
        return
    if not info["installed"]:
        console.print(
            f"not built yet (would live in {info['expected_at']}) — run `sparkrig engine install`"
        )
        raise typer.Exit(1)
    table = Table(show_header=False)
    info["build"] = found.label if found is not None else None
    for key in ("version", "build", "server_binary", "rpc_binary", "source", "cpu"):
        table.add_row(key, str(info.get(key)))
    table.add_row("self-test", str(info.get("note") or "not run yet"))
    for key in ("built_at", "build_seconds"):
        table.add_row(key, str(info.get(key)))
    table.add_row("flags", " ".join(info.get("flags") or []) or "—")
    console.print(table)
