"""A rich progress bar over a bench run: points done of points planned, and the live point."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)


class BenchProgress:
    """Use as a context; pass `plan`, `sample` and `point_done` to run_bench as callbacks."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._task = self._progress.add_task("bench", total=None)
        self._planned = 0
        self._started = False

    def __enter__(self) -> BenchProgress:
        return self  # the bar appears once there is a plan: a bad URL prints only its error

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._started:
            self._progress.stop()

    def plan(self, points: int) -> None:
        """More points to measure (a second engine adds its own)."""
        if not self._started:
            self._progress.start()
            self._started = True
        self._planned += points
        self._progress.update(self._task, total=self._planned)

    def sample(self, point: Any) -> None:
        n = point.summary.n if point.summary else 0
        median = f"{point.summary.median:.1f}" if point.summary else "—"
        self._progress.update(
            self._task, description=f"{point.suite}/{point.name}: n={n}, median {median}"
        )

    def point_done(self, point: Any) -> None:
        self._progress.advance(self._task)
        self.sample(point)
