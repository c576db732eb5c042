"""Start one fabric-test worker per node through its executor, follow their JSON lines, name a
node that dies or goes silent, and leave nothing running.

Each worker prints a heartbeat every second from a thread, so a worker blocked on a hung peer
still shows it is alive; the one whose heartbeats stop is the hung one. A worker that exits
before `done` without reporting an error died; one that reports an error is named with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sparkrig.errors import FabricError, PortInUseError

Event = dict[str, Any]


@dataclass
class Worker:
    node: str
    rank: int
    argv: list[str]
    events: list[Event] = field(default_factory=list)
    stderr_tail: list[str] = field(default_factory=list)
    process: subprocess.Popen[str] | None = None
    last_seen: float = 0.0
    finished: bool = False


def _read_lines(worker: Worker, lines: queue.Queue[tuple[Worker, str | None]]) -> None:
    assert worker.process is not None
    assert worker.process.stdout is not None
    for line in worker.process.stdout:
        lines.put((worker, line))
    lines.put((worker, None))


def _keep_stderr(worker: Worker) -> None:
    assert worker.process is not None
    assert worker.process.stderr is not None
    for line in worker.process.stderr:
        if line.strip() and "Warning" not in line:
            worker.stderr_tail = [*worker.stderr_tail[-5:], line.rstrip()]


def run_workers(
    workers: list[Worker],
    liveness_s: float,
    on_event: Callable[[Worker, Event], None],
    env: dict[str, str] | None = None,
) -> None:
    """Run every worker to `done`; raise naming the node when one dies, hangs or fails. Every
    process is killed (its whole session) before this returns or raises."""
    lines: queue.Queue[tuple[Worker, str | None]] = queue.Queue()
    try:
        for worker in workers:
            worker.process = subprocess.Popen(
                worker.argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
                env={**os.environ, **(env or {})},
            )
            worker.last_seen = time.monotonic()
            threading.Thread(target=_read_lines, args=(worker, lines), daemon=True).start()
            threading.Thread(target=_keep_stderr, args=(worker,), daemon=True).start()
        _follow(workers, lines, liveness_s, on_event)
    finally:
        _stop_all(workers)


def _follow(
    workers: list[Worker],
    lines: queue.Queue[tuple[Worker, str | None]],
    liveness_s: float,
    on_event: Callable[[Worker, Event], None],
) -> None:
    while not all(w.finished for w in workers):
        try:
            worker, line = lines.get(timeout=0.2)
        except queue.Empty:
            worker, line = None, ""
        if worker is not None:
            worker.last_seen = time.monotonic()
            if line is None:
                _ended(worker, workers, lines)
            elif line.startswith("{"):
                event = json.loads(line)
                if event["event"] == "error":
                    _failed(worker, event, workers, lines)
                if event["event"] == "done":
                    worker.finished = True
                if event["event"] != "heartbeat":
                    worker.events.append(event)
                    on_event(worker, event)
        now = time.monotonic()
        for silent in workers:
            if not silent.finished and now - silent.last_seen > liveness_s:
                raise FabricError(
                    f"node {silent.node} (rank {silent.rank}) stopped answering: no heartbeat "
                    f"for {liveness_s:g} s — check that node (a hung process or host); every "
                    "worker was stopped"
                )


def _ended(
    worker: Worker, workers: list[Worker], lines: queue.Queue[tuple[Worker, str | None]]
) -> None:
    assert worker.process is not None
    status = worker.process.wait()
    if worker.finished and status == 0:
        return
    # a peer's death makes its neighbours fail too; wait a moment so the one that died
    # without a word is the one named
    _drain(lines, workers)
    detail = worker.stderr_tail[-1] if worker.stderr_tail else "no output"
    raise FabricError(
        f"node {worker.node} (rank {worker.rank}) died: exit status {status} ({detail}) — "
        "read its log with --debug, check the node; every worker was stopped"
    )


def _failed(
    worker: Worker,
    event: Event,
    workers: list[Worker],
    lines: queue.Queue[tuple[Worker, str | None]],
) -> None:
    message = str(event.get("message", ""))
    if event.get("kind") == "port_in_use":
        raise PortInUseError(
            f"the master port on node {worker.node} is in use ({message}) — pass --port with "
            "a free port"
        )
    _drain(lines, workers)
    raise FabricError(
        f"node {worker.node} (rank {worker.rank}) failed: {message} — check that node and its "
        "neighbours; every worker was stopped"
    )


def _drain(lines: queue.Queue[tuple[Worker, str | None]], workers: list[Worker]) -> None:
    """Look half a second further for a worker that died without reporting: it is the cause."""
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        try:
            other, line = lines.get(timeout=0.05)
        except queue.Empty:
            continue
        if line is None and other.process is not None:
            status = other.process.wait()
            reported = any(e["event"] == "error" for e in other.events)
            if status != 0 and not reported and not other.finished:
                raise FabricError(
                    f"node {other.node} (rank {other.rank}) died: exit status {status} — check "
                    "that node; every worker was stopped"
                )
        elif line and '"error"' in line:
            other.events.append(json.loads(line))


def _stop_all(workers: list[Worker]) -> None:
    """SIGKILL each worker's session (a stopped process ignores SIGTERM until continued)."""
    for worker in workers:
        process = worker.process
        if process is None or process.poll() is not None:
            continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
