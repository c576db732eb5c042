"""A progress bar over the embedded engine's build; the command that builds passes its callbacks
on to the installer (this module only draws)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

BUILD_ANNOUNCEMENT = (
    "[bold]building llama.cpp (llama-server, ggml-rpc-server)[/] — once per version; "
    "about 4–7 minutes on 2 cores, then a self-test on the bundled model"
)

PhaseCallback = Callable[[str, float | None], None]
"""A build phase and its fraction done (None: unknown); the installer's `ProgressCallback`."""
LineCallback = Callable[[str], None]
"""One line printed above the bar; the installer's `NoteCallback`."""


@contextmanager
def build_progress(console: Console) -> Iterator[tuple[PhaseCallback, LineCallback]]:
    """A bar showing phase and percentage while the block runs; yields the callbacks that move
    it and print a line above it."""
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("preparing", total=None)

        def show_phase(phase: str, fraction: float | None) -> None:
            if fraction is None:
                progress.update(task, description=phase, total=None)
            else:
                progress.update(task, description=phase, total=1.0, completed=fraction)

        def show_line(line: str) -> None:
            progress.console.print(line, highlight=False)

        yield show_phase, show_line
