"""Send a sample's concurrent streams from one event loop, or from several worker processes.

One asyncio loop handles every stream's events in turn: at hundreds of streams that emit in
step, an event waits behind the others and the client adds milliseconds to each token's time
(docs/metrics.md). Past `defaults.BENCH_CLIENT_STREAMS_PER_PROCESS` streams a sample's requests
are split over worker processes, each with its own loop and EndpointClient. Records are stamped
with `time.perf_counter_ns()`, which on Linux is CLOCK_MONOTONIC, one clock for every process
of the host, so records from different workers merge as if one process had taken them.

Each sender also reports how busy each client process was (CPU seconds over the sample's wall
time, from `os.times()`) and how long its event loop's thread waited for a core that other
work held (`/proc/thread-self/schedstat`, Linux), so a point whose client was runnable nearly
all the time, on a core or queued for one, says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import math
import multiprocessing
import os
import signal
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.client import ChatRequest, CompletionRequest, EndpointClient, RequestRecord
from sparkrig.errors import EndpointError, UsageError
from sparkrig.outside_numbers import int_or_none

Request = ChatRequest | CompletionRequest
T = TypeVar("T")
_NS_PER_MS = 1_000_000
_PR_SET_PDEATHSIG = 1


class ClientLoad(BaseModel):
    """How busy the client's processes were while one batch of requests ran."""

    processes: int = Field(description="client processes that sent the batch")
    busy: list[float] = Field(
        description="per process: CPU seconds (user + system) over the batch's wall seconds; "
        "1.0 is one full core, all an event loop can use"
    )
    queued: list[float] | None = Field(
        default=None,
        description="per process: seconds its event loop's thread was ready to run but waited "
        "for a core, over the batch's wall seconds (Linux schedstat); None where unknown",
    )
    scheduled_s: list[float] | None = Field(
        default=None,
        description="with --arrivals: per request, its send offset from the batch's start",
    )
    late_ms: list[float] | None = Field(
        default=None,
        description="with --arrivals: per request, how late the client sent it against its "
        "offset (ms)",
    )

    @property
    def runnable(self) -> list[float]:
        """Per process, the share of the batch it was on a core or queued for one: never idle."""
        queued = self.queued or [0.0] * len(self.busy)
        return [busy + wait for busy, wait in zip(self.busy, queued, strict=False)]

    @property
    def busiest(self) -> float:
        return max(self.runnable, default=0.0)

    @property
    def saturated(self) -> bool:
        return self.busiest >= defaults.BENCH_CLIENT_BUSY_LIMIT


class SendAll(Protocol):
    async def __call__(
        self, requests: Sequence[Request], offsets_s: Sequence[float] | None = None
    ) -> tuple[list[RequestRecord], ClientLoad]: ...


def _cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def queued_ns() -> int | None:
    """This thread's time ready to run but waiting for a core (schedstat's second field)."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as stats:
            return int_or_none(stats.read().split()[1], minimum=0)
    except (OSError, IndexError, ValueError):
        return None


def usable_cores() -> int:
    """Cores this process may run on (a taskset or cgroup cpuset narrows them)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def shared_clock() -> bool:
    """perf_counter is the system-wide CLOCK_MONOTONIC here, so worker stamps can be merged."""
    perf = time.get_clock_info("perf_counter").implementation
    mono = time.get_clock_info("monotonic").implementation
    return perf == mono == "clock_gettime(CLOCK_MONOTONIC)"


def processes_for(streams: int, *, cores: int, forced: int | None) -> int:
    """Client processes for a batch of `streams`: `forced` (capped at one per stream), or
    min(cores, ceil(streams / streams-per-process)); 1 means the calling process alone."""
    if streams <= 1:
        return 1
    if forced is not None:
        return max(1, min(forced, streams))
    return max(1, min(cores, math.ceil(streams / defaults.BENCH_CLIENT_STREAMS_PER_PROCESS)))


def split(requests: Sequence[T], parts: int) -> list[list[T]]:
    """Contiguous, near-equal parts: concatenating their records keeps the requests' order."""
    size = len(requests)
    return [list(requests[size * i // parts : size * (i + 1) // parts]) for i in range(parts)]


async def _send_at(client: EndpointClient, request: Request, due_ns: int) -> RequestRecord:
    wait_ns = due_ns - time.perf_counter_ns()
    if wait_ns > 0:
        await asyncio.sleep(wait_ns / 1e9)
    return await client.send(request)


async def send_in_process(
    client: EndpointClient,
    requests: Sequence[Request],
    offsets_s: Sequence[float] | None = None,
    start_ns: int | None = None,
) -> tuple[list[RequestRecord], ClientLoad]:
    """Every request at once, or each at its offset (s) from `start_ns` (default: now)."""
    start, cpu_start, queued_start = time.perf_counter(), _cpu_s(), queued_ns()
    if offsets_s is None:
        records = list(await asyncio.gather(*(client.send(request) for request in requests)))
        due: list[int] = []
    else:
        origin = start_ns if start_ns is not None else time.perf_counter_ns()
        due = [origin + round(offset * 1e9) for offset in offsets_s]
        sends = (_send_at(client, r, at) for r, at in zip(requests, due, strict=True))
        records = list(await asyncio.gather(*sends))
    wall_s = time.perf_counter() - start
    queued_end = queued_ns()
    schedule: dict[str, Any] = {}
    if offsets_s is not None:
        schedule["scheduled_s"] = list(offsets_s)
        schedule["late_ms"] = [
            (r.send_ns - at) / _NS_PER_MS for r, at in zip(records, due, strict=True)
        ]
    if wall_s <= 0:
        return records, ClientLoad(processes=1, busy=[0.0], queued=[0.0], **schedule)
    busy = (_cpu_s() - cpu_start) / wall_s
    queued = None
    if queued_start is not None and queued_end is not None:
        queued = [(queued_end - queued_start) / 1e9 / wall_s]
    return records, ClientLoad(processes=1, busy=[busy], queued=queued, **schedule)


# --- the worker process ----------------------------------------------------------------------


def _die_with_parent() -> None:
    """Linux: the kernel ends this worker if the process that started it dies, even by SIGKILL."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def worker_main(conn: Connection, base_url: str, client_options: dict[str, Any]) -> None:
    """Worker entry: answer (start_at_ns, requests) with (records, busy) until told to stop.

    Ctrl-C goes to the whole process group; the parent alone handles it and ends the workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()

    async def serve() -> None:
        async with EndpointClient(base_url, **client_options) as client:
            conn.send(("ready", None, None))
            while True:
                try:
                    job = await asyncio.to_thread(conn.recv)
                except EOFError:
                    return
                if job is None:
                    return
                start_at_ns, requests, offsets = job
                await asyncio.sleep(max(0, start_at_ns - time.perf_counter_ns()) / 1e9)
                try:
                    records, load = await send_in_process(client, requests, offsets, start_at_ns)
                    conn.send(("ok", records, load))
                except Exception as exc:  # noqa: BLE001 - a process boundary: the parent says it in one line
                    conn.send(("error", f"{type(exc).__name__}: {exc}", None))

    asyncio.run(serve())


# --- the parent's side -----------------------------------------------------------------------


class ShardedSender:
    """Worker processes started on first need and kept for the run; `send_all` splits a batch
    over as many as its stream count needs. Use as `async with ShardedSender(...) as send_all`.

    Leaving the block (normally, on an error or on Ctrl-C) ends every worker."""

    def __init__(
        self,
        client: EndpointClient,
        *,
        api_key: str | None = None,
        client_options: dict[str, Any] | None = None,
        forced: int | None = None,
        cores: int | None = None,
    ) -> None:
        if forced is not None and forced < 1:
            raise UsageError(f"client processes must be 1 or more, not {forced} — e.g. 4")
        self.client = client
        self.client_options: dict[str, Any] = {"api_key": api_key, **(client_options or {})}
        self.forced = forced
        self.cores = cores or usable_cores()
        self.workers: list[tuple[BaseProcess, Connection]] = []
        self.warnings: list[str] = []

    async def __aenter__(self) -> ShardedSender:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __call__(
        self, requests: Sequence[Request], offsets_s: Sequence[float] | None = None
    ) -> tuple[list[RequestRecord], ClientLoad]:
        wanted = processes_for(len(requests), cores=self.cores, forced=self.forced)
        if wanted > 1 and not shared_clock():
            self._warn_once(
                "client processes not used: perf_counter is not CLOCK_MONOTONIC here, so their "
                "timestamps could not be merged — run on Linux"
            )
            wanted = 1
        if wanted == 1:
            return await send_in_process(self.client, requests, offsets_s)
        try:
            await self._start(wanted)
            offsets = split(offsets_s, wanted) if offsets_s is not None else [None] * wanted
            replies = await self._send_parts(
                list(zip(split(requests, wanted), offsets, strict=True))
            )
        except BaseException:  # Ctrl-C or a failure: no worker may keep a stale reply
            self.close()
            raise
        records: list[list[RequestRecord]] = []
        for status, payload, _ in replies:
            if status != "ok":
                self.close()
                raise EndpointError(
                    f"a client process failed: {payload} — rerun with --client-processes 1 to "
                    "send from this process alone"
                )
            records.append(payload)
        loads: list[ClientLoad] = [load for _, _, load in replies]
        queued = [load.queued[0] for load in loads if load.queued]
        schedule: dict[str, Any] = {}
        if offsets_s is not None:
            schedule["scheduled_s"] = [t for load in loads for t in load.scheduled_s or []]
            schedule["late_ms"] = [t for load in loads for t in load.late_ms or []]
        return (
            [record for part in records for record in part],
            ClientLoad(
                processes=wanted,
                busy=[load.busy[0] for load in loads],
                queued=queued if len(queued) == len(loads) else None,
                **schedule,
            ),
        )

    async def _send_parts(
        self, parts: list[tuple[list[Request], list[float] | None]]
    ) -> list[tuple[str, Any, Any]]:
        """Every worker gets its part (and its offsets, from the one shared start) and starts
        at one moment, after all have theirs."""
        start_at_ns = time.perf_counter_ns() + defaults.BENCH_CLIENT_START_LEAD_MS * _NS_PER_MS
        for (process, conn), (part, offsets) in zip(self.workers, parts, strict=False):
            try:
                conn.send((start_at_ns, part, offsets))
            except OSError as exc:  # it died since the last batch
                raise EndpointError(
                    f"client process {process.pid} is gone (exit code {process.exitcode}: "
                    f"{exc}) — rerun with --client-processes 1 to send from this process alone"
                ) from exc
        return list(
            await asyncio.gather(
                *(self._reply(process, conn) for process, conn in self.workers[: len(parts)])
            )
        )

    async def _reply(self, process: BaseProcess, conn: Connection) -> tuple[str, Any, Any]:
        try:
            reply: tuple[str, Any, Any] = await asyncio.to_thread(conn.recv)
        except EOFError:
            return ("error", f"worker {process.pid} exited (code {process.exitcode})", None)
        return reply

    async def _start(self, wanted: int) -> None:
        """Start workers up to `wanted` and wait until each has its client open: a process
        takes a second or more to start, and no batch may start before all its workers can."""
        context = multiprocessing.get_context("spawn")
        started = len(self.workers)
        while len(self.workers) < wanted:
            parent_end, child_end = context.Pipe(duplex=True)
            process = context.Process(
                target=worker_main,
                args=(child_end, self.client.base_url, self.client_options),
                daemon=True,
                name=f"sparkrig-client-{len(self.workers) + 1}",
            )
            process.start()
            child_end.close()
            self.workers.append((process, parent_end))
        for worker, conn in self.workers[started:]:
            status, payload, _ = await self._reply(worker, conn)
            if status != "ready":
                raise EndpointError(
                    f"a client process did not start: {payload} — rerun with "
                    "--client-processes 1 to send from this process alone"
                )

    def close(self) -> None:
        """Ask every worker to stop, then end those that do not within the grace time."""
        for _, conn in self.workers:
            with contextlib.suppress(OSError, ValueError):
                conn.send(None)
        deadline = time.monotonic() + defaults.BENCH_CLIENT_STOP_GRACE_S
        for process, conn in self.workers:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()
            conn.close()
        self.workers.clear()

    def _warn_once(self, warning: str) -> None:
        if warning not in self.warnings:
            self.warnings.append(warning)
