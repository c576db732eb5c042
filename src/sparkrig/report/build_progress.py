"""A progress bar over the embedded engine's build."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from sparkrig.engines.llamacpp.build import EngineInstall, find_installed, install


def install_engine_with_progress(console: Console, *, force: bool = False) -> EngineInstall:
    """Find the cached llama-server, or build it while showing phase and percentage."""
    if not force and (found := find_installed()) is not None:
        return found
    console.print(
        "[bold]building llama.cpp (llama-server, ggml-rpc-server)[/] — once per version; "
        "about 4–7 minutes on 2 cores"
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

        return install(report, force=force)
