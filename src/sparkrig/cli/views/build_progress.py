"""A progress bar over the embedded engine's build, and one line on how its self-test went."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from sparkrig.engines.llamacpp.build import EngineInstall, find_installed
from sparkrig.engines.llamacpp.source_build import ProgressCallback

Installer = Callable[..., EngineInstall]
"""`sparkrig.engines.llamacpp.build.install`, passed in: this module only renders."""


def install_engine_with_progress(
    console: Console, installer: Installer, *, force: bool = False, portable: bool = False
) -> EngineInstall:
    """Find the cached llama-server, or build it while showing phase and percentage."""
    found = find_installed()
    if not force and not portable and found is not None and found.self_tests:
        return found
    if found is None or force or portable:
        console.print(
            "[bold]building llama.cpp (llama-server, ggml-rpc-server)[/] — once per version; "
            "about 4–7 minutes on 2 cores, then a self-test on the bundled model"
        )
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("preparing", total=None)

        def report(phase: str, fraction: float | None) -> None:
            if fraction is None:
                progress.update(task, description=phase, total=None)
            else:
                progress.update(task, description=phase, total=1.0, completed=fraction)

        callback: ProgressCallback = report
        return installer(
            callback,
            force=force,
            portable=portable,
            note=lambda line: progress.console.print(line, highlight=False),
        )
